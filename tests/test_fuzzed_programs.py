"""Random programs from the three generators outside hypothesis, on fixed seeds, in every mode.

``program_fuzzer.py`` nests blocks in blocks; ``program_families.py`` draws programs of the
families issue 12 §5 and issues 19/20 list (linear algebra, axis reductions, fancy
indexing, writes, views, ``out=``, layer lists, calls through ``partial`` and ``map`` …);
``program_constructs.py`` chains constructs neither draws (closures and small classes,
comprehensions and builtins, ``np.r_``, repeated indices, sorting, ``try``, parameter dicts,
complex intermediates, matrices built from vectors).
Each program is checked in ``s2s``, ``tape`` and ``auto`` on its first and second call,
plus ``jvp`` and ``hvp``, against Richardson-extrapolated differences; a check may be right or a
refusal that names the program's file and line, never wrong, a crash or an unlocated
refusal. The seeds that once found a bug stay in the list.

``FUZZ_PROGRAMS=N FUZZ_START=S`` checks N programs of each generator from seed S instead;
``python tests/program_families.py N S log.jsonl`` runs thousands with a table.
"""

import os
import sys

import program_constructs
import program_families
import program_fuzzer
import pytest

COUNT = os.environ.get("FUZZ_PROGRAMS")
START = int(os.environ.get("FUZZ_START", 0))
# 11: nested while loops once shared their counter (a program that never ended);
# 21: a jump's guard was pushed after the jump
NESTED = range(START, START + int(COUNT)) if COUNT else [*range(12), 21]
# one of each family (the seed picks the family); 39: a starred rest of non-arrays; 65,
# 153 (nested blocks): a None cotangent's tangent in an unpacking, under hvp; 5037: the
# items of a range rebound in a loop, under hvp; 11549: a list bound twice in one branch;
# 100847 (nested blocks): a range loop's counter, active through another loop that reuses
# its name, had no tangent in the hvp's code (UnboundLocalError); 900259: the jvp of a
# starred call dropped the tangent of a keyword argument
FAMILIES = (
    range(START, START + int(COUNT))
    if COUNT
    else [*range(len(program_families.NAMES)), 39, 65, 153, 5037, 11549, 100847, 900259]
)
# two programs of each construct family (what the first runs found has tests of its own:
# test_complex_flow, test_loop_variable_reuse, test_lambda_shadowing)
CONSTRUCTS = range(START, START + int(COUNT)) if COUNT else range(2 * len(program_constructs.NAMES))


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzzed_programs")
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))


def _failures(outcomes: dict[str, str]) -> dict[str, str]:
    return {k: o for k, o in outcomes.items() if o.startswith(("WRONG", "CRASH", "unclear"))}


@pytest.mark.parametrize("seed", NESTED)
def test_nested_program_is_right_or_refused_in_every_mode(seed, directory):
    outcomes = program_fuzzer.check(seed, directory)
    bad = {m: o for m, o in outcomes.items() if o.startswith(("WRONG", "CRASH"))}
    assert not bad, f"{bad}\n{program_fuzzer.program(seed)}"


@pytest.mark.parametrize("seed", FAMILIES)
def test_program_of_a_family_is_right_or_refused_clearly(seed, directory):
    family, source, _ = program_families.family_program(seed)
    outcomes = program_families.check(seed, directory)
    assert not outcomes.get("all", "").startswith("skip"), f"{family}: {outcomes}\n{source}"
    assert not _failures(outcomes), f"{family}: {_failures(outcomes)}\n{source}"


@pytest.mark.parametrize("seed", CONSTRUCTS)
def test_program_of_constructs_is_right_or_refused_clearly(seed, directory):
    family, source, _ = program_constructs.construct_program(seed)
    folder = directory / "constructs"  # its own files: a family program has the same names
    folder.mkdir(exist_ok=True)
    outcomes = program_families.check(seed, folder, program_constructs.construct_program)
    assert not outcomes.get("all", "").startswith("skip"), f"{family}: {outcomes}\n{source}"
    assert not _failures(outcomes), f"{family}: {_failures(outcomes)}\n{source}"

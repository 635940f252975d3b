"""Random programs of ``return``/``break``/``continue`` nested in ``if``, ``for``, ``while``,
``with`` and ``try`` blocks (``program_jumps.py``), on a few fixed seeds, in every mode:
each check right, or a refusal naming the program's file and line, never wrong, a crash
or an unlocated refusal. Seed 11 once found a function with code left dead after a
``return`` refused as an edited file (``test_dead_code_after_return.py``).

``python tests/program_jumps.py N S log.jsonl`` runs many with a table.
"""

import sys

import program_families
import program_jumps
import pytest

# 1: a loop's else after continue; 4: a return inside try/finally in a loop; 11: dead code
SEEDS = [1, 4, 11]


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    folder = tmp_path_factory.mktemp("jump_programs")
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))


@pytest.mark.parametrize("seed", SEEDS)
def test_program_of_jumps_is_right_or_refused_clearly(seed, directory):
    family, source, _ = program_jumps.jump_program(seed)
    outcomes = program_families.check(seed, directory, program_jumps.jump_program)
    assert not outcomes.get("all", "").startswith("skip"), f"{family}: {outcomes}\n{source}"
    bad = {
        key: outcome
        for key, outcome in outcomes.items()
        if outcome.startswith(("WRONG", "CRASH", "unclear")) or "was edited" in outcome
    }
    assert not bad, f"{family}: {bad}\n{source}"


def test_every_family_is_drawn_and_compiles():
    for seed in range(2 * len(program_jumps.NAMES)):
        family, source, _ = program_jumps.jump_program(seed)
        assert family == program_jumps.NAMES[seed % len(program_jumps.NAMES)]
        compile(source, f"jump_program_{seed}.py", "exec")

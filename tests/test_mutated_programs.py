"""The from-scratch models of ``model_zoo.py`` rewritten the way another person would write
them (``program_mutations.py``: subexpressions named first or moved into helpers, methods
called as NumPy functions, unpacking by indexing, arithmetic in other words, ``for`` loops
as ``while`` loops, ``+=`` on arrays the function made, results written into buffers, dead
code), each differentiated in ``s2s``, ``tape`` and ``auto`` on a first and a second call
against central differences of the rewritten model: right, or refused naming the line.

``MUTATED_PROGRAMS=N MUTATED_START=S`` checks N rewritten models from seed S instead;
``python tests/program_mutations.py N S log.jsonl`` runs hundreds with a table.
"""

import os
import sys

import program_mutations
import pytest
from collector import older_objects_frozen

COUNT = os.environ.get("MUTATED_PROGRAMS")
START = int(os.environ.get("MUTATED_START", 0))


def _first_seed_of(kind: str) -> int:
    """The first seed whose rewrites are of ``kind`` and rewrote something (the seed picks
    the model and the kind: a model may have no place for a kind)."""
    cases, kinds = len(program_mutations.CASES), len(program_mutations.REWRITES)
    first = program_mutations.REWRITES.index(kind) * cases
    for block in range(first, first + 10 * cases * kinds, cases * kinds):
        for seed in range(block, block + cases):
            if any(a.startswith(kind) for a in program_mutations.mutated_zoo(seed)[3]):
                return seed
    raise AssertionError(f"no seed rewrites {kind}")


# one rewritten model of each kind of rewrite, its seed found when the test runs (finding
# it rewrites the zoo several times, which at collection every xdist worker paid for)
SEEDS_OR_KINDS = range(START, START + int(COUNT)) if COUNT else program_mutations.REWRITES


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mutated_programs")
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))


@pytest.mark.parametrize("seed_or_kind", SEEDS_OR_KINDS)
def test_rewritten_model_is_right_or_refused_clearly(seed_or_kind, directory):
    seed = seed_or_kind if isinstance(seed_or_kind, int) else _first_seed_of(seed_or_kind)
    kind, case, source, applied = program_mutations.mutated_zoo(seed)
    outcomes = program_mutations.check(seed, directory)
    assert not outcomes.get("all", "").startswith("skip"), f"{kind}, {case}: {outcomes}"
    bad = {k: o for k, o in outcomes.items() if o.startswith(("WRONG", "CRASH", "unclear"))}
    assert not bad, f"{kind}, {case}: {bad}\nrewrites: {applied}"
    assert any(a.startswith(kind) for a in applied), f"no {kind} rewrite in {case}"
    assert outcomes["auto"] in ("right", "fallback"), outcomes


def test_rewrites_keep_what_the_model_computes():
    """Every kind of rewrite leaves each model's loss as it was (the rewrites are meant to
    change the form, not the meaning: a difference would be a bug of the generator).

    A seed rewrites every model of the zoo at once, so each rewritten zoo is checked on all
    its models: three zoos of each kind (three rates drawn) cover every (kind, model) pair
    three times, for a ninth of the rewriting that one zoo per pair cost."""
    import model_zoo
    import numpy as np

    cases = len(program_mutations.CASES)
    # older objects frozen: the trees the rewriting keeps start full collections, which
    # late in a worker walked every object earlier tests kept (19 s of CPU in the suite);
    # nothing here transforms a function
    with older_objects_frozen():
        for kind in range(len(program_mutations.REWRITES)):
            for seed in range(kind * cases, kind * cases + 3):
                _, _, source, _ = program_mutations.mutated_zoo(seed)
                namespace: dict = {"__name__": f"mutated_{seed}"}
                exec(compile(source, f"mutated_{seed}.py", "exec"), namespace)  # noqa: S102
                for case in program_mutations.CASES:
                    loss, args, _ = namespace["CASES"][case](np.random.default_rng(1))
                    original, original_args, _ = model_zoo.CASES[case](np.random.default_rng(1))
                    np.testing.assert_allclose(
                        loss(*args), original(*original_args), rtol=1e-10, err_msg=f"{seed}, {case}"
                    )

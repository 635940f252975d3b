"""What the probe reads off the raw code before it runs (``specialize/broadcasts.py``):
the names whose values may be broadcasts, found by passes in the code's order, must be the
least closed set whatever the order (loops make later statements feed earlier ones)."""

import random

import gast

from s2sgrad.compiler.specialize.broadcasts import near_broadcasts, raw_facts


def _closure(made):
    """The least set holding each name made from a broadcast or from one of the set."""
    near = set()
    while True:
        grown = {t for t, broadcast, names in made if broadcast or names & near} | near
        if grown == near:
            return near
        near = grown


def test_near_broadcasts_is_the_least_closed_set_in_any_order():
    rng = random.Random(7)
    for _ in range(300):
        count = rng.randint(1, 30)
        names = [f"n{i}" for i in range(count)]
        made = [
            (
                rng.choice(names),
                rng.random() < 0.1,
                set(rng.sample(names, rng.randint(0, min(3, count)))),
            )
            for _ in range(rng.randint(1, 40))
        ]
        assert near_broadcasts(made) == _closure(made)


def test_a_chain_written_backwards_needs_the_users_worklist():
    made = [(f"n{i}", False, {f"n{i + 1}"}) for i in range(10)] + [("n10", True, set())]
    assert near_broadcasts(made) == {f"n{i}" for i in range(11)}


def test_raw_facts_sets_aside_what_reads_the_callers_frame():
    function = gast.parse(
        "def f(x):\n    a = locals\n    b = vars()\n    c = x\n    return c"
    ).body[0]
    facts = raw_facts(function)
    assert facts.bound == {"a", "b", "c"}
    assert sorted(type(n).__name__ for n in facts.checked) == ["Assign", "Call", "FunctionDef"]

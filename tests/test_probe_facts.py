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


def test_the_probe_passes_the_assignments_in_the_code_order(monkeypatch):
    """``copy_with_facts`` lists assignments in the code's order: passed on as they are, one
    pass over them finds a chain of broadcasts' users (reversed, it found one link a pass)."""
    from s2sgrad.compiler.specialize import broadcasts
    from s2sgrad.compiler.specialize.probe_copy import copy_with_facts

    lines = ["def f(x):", "    n0 = np.broadcast_to(x, (3,))"]
    lines += [f"    n{i} = n{i - 1} * x" for i in range(1, 12)]
    lines.append("    return n11")
    _, facts, _ = copy_with_facts(gast.parse("\n".join(lines)).body[0])
    seen = []
    original = broadcasts.near_broadcasts
    monkeypatch.setattr(
        broadcasts, "near_broadcasts", lambda made: seen.append(made) or original(made)
    )
    quiet = broadcasts.quiet_arithmetic(facts.assignments, facts.arithmetic, {})
    assert [target for target, _, _ in seen[0]] == [f"n{i}" for i in range(12)]
    assert quiet == set()  # every product is near the broadcast

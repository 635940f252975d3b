"""Three shapes of branches are transformed in time linear in their number, counted in
work, not time: ifs nested deep (the walks over nested blocks hand each statement up once,
not once per block around it), a loop whose body is many ``if/else`` statements (the names
read outside each branch are counted once per body, not read again for every branch), and
many value-tested ``if``s emptied by specialisation (each is settled in one walk down the
block, not by reading on to the end of it)."""

import sys
from pathlib import Path

import numpy as np
from oracle import assert_close, calls_counted, numeric_grad
from written_source import function_in_file

import s2sgrad as sg
from s2sgrad.compiler import in_place_writes, steps
from s2sgrad.compiler.optimize import saves
from s2sgrad.compiler.passes import jumps, library_writes
from s2sgrad.compiler.reverse import facts, shape_saves


def _nested_ifs(depth: int) -> list[str]:
    lines = ["def f(x, s):", "    y = x"]
    for k in range(depth):
        indent = "    " * (k + 1)
        lines += [f"{indent}if s > {k}:", f"{indent}    y = np.sin(y) * 1.01 + 0.1"]
    return [*lines, "    return np.sum(y)"]


def _steps_in(modules, work) -> int:
    """How many times code of ``modules`` starts or resumes (a generator handing up an item
    through each generator around it counts once per generator) while ``work()`` runs."""
    files = {Path(module.__file__).resolve() for module in modules}
    codes: dict = {}
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event == "call":
            code = frame.f_code
            inside = codes.get(code)
            if inside is None:
                inside = codes[code] = Path(code.co_filename).resolve() in files
            count += inside

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(previous)
    return count


def test_nested_ifs_are_walked_a_bounded_number_of_times_per_statement(tmp_path):
    x = np.array([0.3, -0.2, 0.7])
    walkers = (jumps, shape_saves, library_writes, in_place_writes, steps)
    counted = []
    for depth in (20, 40):
        f = function_in_file(tmp_path, f"nested_{depth}", _nested_ifs(depth))

        def gradients(f=f, depth=depth):
            g = sg.grad(f, mode="s2s")
            for s in (depth / 2 + 0.5, depth + 1.0):  # some ifs entered, then all of them
                assert_close(g(x, s), numeric_grad(f, (x, s), 0), rtol=1e-4)

        counted.append(_steps_in(walkers, gradients))
    # linear: twice the depth, about twice the steps (nested generators made it 3.3 times)
    assert counted[1] < 2.3 * counted[0], counted


def _branches_in_a_loop(count: int) -> list[str]:
    lines = ["def f(x):", "    y = x", "    for _ in range(3):"]
    for k in range(count):
        lines += [f"        if y[0] > {k % 5 - 2} * 0.1:", "            y = np.sin(y) * 1.01 + 0.1"]
        lines += ["        else:", "            y = y * 0.9"]
    return [*lines, "    return np.sum(y)"]


def test_a_loop_body_of_branches_reads_each_statement_a_bounded_number_of_times(
    tmp_path, monkeypatch
):
    # which variables are local to one pass of the loop: each branch asks whether a name
    # is read outside it, answered from one reading of each statement
    asked = calls_counted(monkeypatch, facts, "names_read")
    x = np.array([0.3, -0.2, 0.7])
    counted = [
        len(_asked_for(tmp_path, "looped", _branches_in_a_loop, n, x, asked)[1]) for n in (20, 40)
    ]
    # linear: twice the branches, about twice the reads (every other statement read again
    # for each branch was 3.7 times)
    assert 0 < counted[1] < 2.3 * counted[0], counted


def _asked_for(tmp_path, name, lines_of, count, x, asked):
    """The gradient of the program ``lines_of(count)``, checked against central differences
    at ``x`` and ``-x``, and what ``asked`` recorded while it was made and run."""
    f = function_in_file(tmp_path, f"{name}_{count}", lines_of(count))
    asked.clear()
    g = sg.grad(f, mode="s2s")
    for sign in (1.0, -1.0):
        assert_close(g(sign * x), numeric_grad(f, (sign * x,), 0), rtol=1e-4)
    return g, list(asked)


def _emptied_ifs(count: int) -> list[str]:
    # each if tests a value whose shape the paths keep: specialised, the forward ifs are
    # emptied and dropped, since the backward sweep tests the same name again
    lines = [
        "def f(a):",
        "    b = a * 2",
        "    while np.linalg.norm(b) < 1000:",
        "        b = b * 2",
    ]
    for k in range(count):
        lines += [
            f"    if b.sum() > {k}:",
            f"        c{k} = b",
            "    else:",
            f"        c{k} = 100 * b",
        ]
    return [*lines, "    return " + " + ".join(f"np.sum(c{k})" for k in range(count))]


def test_emptied_ifs_tested_again_are_settled_in_one_walk(tmp_path, monkeypatch):
    asked = calls_counted(monkeypatch, saves, "names_written")
    a = np.abs(np.random.default_rng(0).normal(size=4)) * 0.1 + 0.05
    counted = []
    for count in (10, 20):
        g, calls = _asked_for(tmp_path, "emptied", _emptied_ifs, count, a, asked)
        counted.append(len(calls))
        code = sg.source(g)
        assert code.count("if t") == count  # the backward sweep's only: forward ones dropped
    # linear: twice the ifs, about twice the statements asked about (3.7 times when every
    # emptied if read on to the end of the block)
    assert 0 < counted[1] < 2.3 * counted[0], counted

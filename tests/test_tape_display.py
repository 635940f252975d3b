"""``GradientTape.show``: the recording printed in the order the operations ran."""

import io

import numpy as np

import s2sgrad as sg


def _shown(tape) -> list[str]:
    out = io.StringIO()
    tape.show(file=out)
    return [line.split("#")[0].strip() for line in out.getvalue().splitlines()]


def test_show_lists_each_recorded_operation_once_in_order():
    x = sg.constant(np.array([1.0, 2.0, 3.0]))
    w = sg.Variable(np.ones(3), name="w")
    with sg.GradientTape() as tape:
        tape.watch(x)
        np.sum(np.sin(x) * w) + 2.0
        np.tanh(x)[:2] @ np.ones(2)
    assert _shown(tape) == [
        "GradientTape: 8 operations",
        "v2 = sin(v1)",
        "v3 = read(w)",
        "v4 = v2 * v3",
        "v5 = sum(v4)",
        "v6 = v5 + 2.0",
        "v7 = tanh(v1)",
        "v8 = v7[:2]",
        "v9 = v8 @ [1., 1.]",
    ]


def test_show_names_results_of_multi_output_operations_and_their_shapes():
    x = sg.constant(np.arange(5.0))
    with sg.GradientTape() as tape:
        tape.watch(x)
        a, b = np.split(x, [2])
    out = io.StringIO()
    tape.show(file=out)
    last = out.getvalue().splitlines()[-1]
    assert last.split("#")[0].strip() == "v2, v3 = split(v1, [2])"
    assert last.endswith("# shape (2,), (3,)")


def test_an_empty_tape_says_so():
    with sg.GradientTape() as tape:
        pass
    assert _shown(tape) == ["GradientTape: 0 operations"]

"""The package's layers: no import cycles between modules, no import from a lower layer to a
higher one.

Every ``import`` of every module counts, the ones inside functions too (an import deferred to
run time is still a dependency). The layer order is :data:`LAYERS`, the one place it is
written; ``docs/design.md`` draws it.
"""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

from collector import older_objects_frozen

import s2sgrad

PACKAGE = pathlib.Path(s2sgrad.__file__).parent

# Lowest first. A module may import its own layer and the layers below it. A module belongs
# to the layer of the longest prefix below that names it (a package's name covers its
# modules).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # what every layer may ask: errors and messages, signatures, pytrees, where running
    # generated code came from
    (
        "base",
        (
            "s2sgrad.errors",
            "s2sgrad.naming",
            "s2sgrad.numpy_signatures",
            "s2sgrad.pytrees",
            "s2sgrad.running",
        ),
    ),
    # the one rule registry (the package `rules` only re-exports it)
    ("registry", ("s2sgrad.rules", "s2sgrad.rules.registry")),
    # what generated code calls; its helpers register their own rules
    ("runtime", ("s2sgrad.runtime",)),
    # the plain-NumPy rule bodies, written with the runtime's helpers
    (
        "rules",
        (
            "s2sgrad.rules.elementwise",
            "s2sgrad.rules.reductions",
            "s2sgrad.rules.linalg",
            "s2sgrad.rules.shapes",
            "s2sgrad.rules.gradient_coordinates",
            "s2sgrad.rules.scientific",
            "s2sgrad.rules.statistics",
            "s2sgrad.rules.ufunc_methods",
            "s2sgrad.rules.eig",
            "s2sgrad.rules.fft",
            "s2sgrad.rules.complex",
            "s2sgrad.rules.nan_reductions",
            "s2sgrad.rules.array_api",
            "s2sgrad.rules.more_numpy",
            "s2sgrad.rules.polynomials",
            "s2sgrad.rules.histograms",
            "s2sgrad.rules.histograms_grid",
            "s2sgrad.rules.numpy_pieces",
            "s2sgrad.rules.python_math",
            "s2sgrad.rules.real_if_close",
            "s2sgrad.rules.pad_statistics",
            # the optional SciPy rule set, imported when SciPy is (rules/registry.py)
            "s2sgrad.rules.scipy_special",
            "s2sgrad.rules.scipy_special_more",
            "s2sgrad.rules.scipy_special_extra",
            "s2sgrad.rules.scipy_special_closed_forms",
            "s2sgrad.rules.scipy_stats",
            "s2sgrad.rules.scipy_stats_location_scale",
            "s2sgrad.rules.scipy_stats_tails",
            "s2sgrad.rules.scipy_stats_multivariate",
            "s2sgrad.rules.scipy_stats_quantiles",
            "s2sgrad.rules.scipy_linalg",
            "s2sgrad.rules.scipy_linalg_factors",
            "s2sgrad.rules.scipy_linalg_structured",
            "s2sgrad.rules.scipy_linalg_numpy_forms",
            "s2sgrad.rules.scipy_linalg_twins",
            "s2sgrad.rules.scipy_signal",
            "s2sgrad.rules.scipy_linalg_lstsq",
            "s2sgrad.rules.scipy_linalg_lu",
            "s2sgrad.rules.scipy_linalg_polar",
            "s2sgrad.rules.scipy_spatial_distance",
            "s2sgrad.rules.scipy_special_integrals",
            "s2sgrad.rules.scipy_special_spherical",
            "s2sgrad.rules.scipy_stats_moments",
            "s2sgrad.rules.scipy_special_complex",
            "s2sgrad.rules.scipy_stats_shapes",
            "s2sgrad.rules.scipy_stats_shape_quantiles",
        ),
    ),
    # the runtime tape: records NumPy calls on its values, asks the registry for rules
    ("tape", ("s2sgrad.tape",)),
    # the source transformer: reads rules, emits calls of the runtime, refers to tape values
    ("compiler", ("s2sgrad.compiler",)),
    # argument handling and the vjp/jvp engines: source transformation or the tape per mode
    ("engines", ("s2sgrad.engines",)),
    # batched Jacobians (the engines' generated code run on batches) and vmap
    ("batching", ("s2sgrad.batching",)),
    # what users call
    (
        "public",
        (
            "s2sgrad.api",
            "s2sgrad.controls",
            "s2sgrad.inspection",
            "s2sgrad.checking",
            "s2sgrad.tracing",
            "s2sgrad.optimizers",
            "s2sgrad.display",
        ),
    ),
    ("package", ("s2sgrad", "s2sgrad.__main__")),
)


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, pathlib.Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _layer_of(module: str) -> int | None:
    best, found = -1, None
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), rank
    return found


def _imports(modules: dict[str, pathlib.Path]) -> list[tuple[str, str, str]]:
    """``(importer, imported, "file:line")`` for every import of one package module by
    another, at any depth of the importing file."""
    found = []
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                # `from package import module` imports the module
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            else:
                continue
            where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
            for target in targets:
                while target and target not in modules:  # `import a.b.c` of a name inside
                    target = target.rpartition(".")[0]
                if target and target != module:
                    found.append((module, target, where))
    return found


def test_every_module_has_a_layer():
    missing = [m for m in _modules() if _layer_of(m) is None]
    assert not missing, f"modules in no layer of LAYERS: {missing}"


def test_no_import_reaches_a_higher_layer():
    """Older objects frozen while the modules' trees are read: the nodes kept start full
    collections, which late in a worker walked every object earlier tests kept (24 s of
    CPU in the suite, 2 s alone; 3.6 s to 1.9 s after two files); nothing here transforms a
    function."""
    upward = []
    with older_objects_frozen():
        found = list(_imports(_modules()))
    for importer, imported, where in found:
        low, high = _layer_of(importer), _layer_of(imported)
        if low is not None and high is not None and high > low:
            upward.append(
                f"{where}: {importer} ({LAYERS[low][0]}) imports {imported} ({LAYERS[high][0]})"
            )
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(upward)


def test_no_import_cycles():
    imports: dict[str, dict[str, str]] = {}
    with older_objects_frozen():  # as the test above
        found = list(_imports(_modules()))
    for importer, imported, where in found:
        imports.setdefault(importer, {}).setdefault(imported, where)
    cycles = []
    for component in _strongly_connected(imports):
        if len(component) > 1:
            edges = [
                f"  {imports[a][b]}: {a} -> {b}"
                for a in sorted(component)
                for b in sorted(imports.get(a, {}))
                if b in component
            ]
            cycles.append(f"{len(component)} modules import each other:\n" + "\n".join(edges))
    assert not cycles, "\n".join(cycles)


def _strongly_connected(graph: dict[str, dict[str, str]]) -> list[set[str]]:
    """Tarjan's algorithm, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    nodes = set(graph) | {b for targets in graph.values() for b in targets}
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, {}))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, {})))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    components.append(component)
    return components


def test_the_check_finds_a_cycle_and_an_upward_import():
    """The checks themselves can fail: a planted cycle and a planted upward import."""
    graph = {"a": {"b": "a.py:1"}, "b": {"c": "b.py:1"}, "c": {"a": "c.py:1"}, "d": {}}
    assert {"a", "b", "c"} in _strongly_connected(graph)
    assert _layer_of("s2sgrad.runtime.core") < _layer_of("s2sgrad.compiler.pipeline")
    assert _layer_of("s2sgrad.rules.registry") < _layer_of("s2sgrad.runtime")
    assert _layer_of("s2sgrad.runtime") < _layer_of("s2sgrad.rules.linalg")


def test_importing_any_module_first_wires_the_layers():
    """Whatever a user imports first, the registrations the lower layers rely on are made
    (the package's __init__ runs first and imports every provider)."""
    check = (
        "import sys; import {module}; "
        "from s2sgrad.runtime import hooks; from s2sgrad.tape import TapeValue, in_place; "
        "from s2sgrad.compiler.pipeline import derivative; from s2sgrad.batching import values; "
        "assert hooks.TapeValue is TapeValue and hooks.derivative is derivative; "
        "assert in_place._facts is not None and values._RULES.apply_ufunc is not None; "
        "assert all(f's2sgrad.rules.{{m}}' in sys.modules "
        "for m in ('elementwise', 'reductions', 'linalg', 'shapes'))"
    )
    for module in ("s2sgrad.runtime", "s2sgrad.tape", "s2sgrad.rules.registry", "s2sgrad"):
        subprocess.run(
            [sys.executable, "-c", check.format(module=module)],
            cwd=PACKAGE.parent,
            check=True,
        )


def test_the_design_page_draws_these_layers():
    """docs/design.md's picture names the layers of LAYERS, lowest at the bottom."""
    text = (PACKAGE.parent / "docs" / "design.md").read_text()
    picture = text.split("## Layers", 1)[1].split("```", 2)[1]
    drawn = [line.split()[0] for line in picture.splitlines() if line and not line[0].isspace()]
    assert drawn[::-1] == [name for name, _ in LAYERS]

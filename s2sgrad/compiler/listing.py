"""The text of generated code as people read it: a function with the generated functions
it calls, callees first."""

from __future__ import annotations

from s2sgrad.compiler.codegen import GeneratedFunction, generated_of, to_source

__all__ = ["with_dependencies", "listing"]


def with_dependencies(generated: GeneratedFunction) -> list[GeneratedFunction]:
    """``generated`` and every generated function it calls, callees first.

    Example::

        [part.name for part in with_dependencies(generated)]  # ['layer_vjp', 'dloss']
    """
    ordered: list[GeneratedFunction] = []
    seen: set[int] = set()

    def visit(item: GeneratedFunction) -> None:
        if id(item) in seen:
            return
        seen.add(id(item))
        for obj in item.namespace.values():
            dependency = generated_of(obj) if callable(obj) else None
            if dependency is not None:
                visit(dependency)
        if item.companion is not None:
            item.function  # noqa: B018  (compiling links the backward function to it)
            visit(item.companion)
        ordered.append(item)

    visit(generated)
    return ordered


def listing(generated: GeneratedFunction, optimize: bool = True) -> str:
    """The source of ``generated`` and its callees; ``optimize=False`` gives each one
    before tidying.

    Example::

        print(listing(derivative(f, ("x",), "grad")))
    """
    parts = with_dependencies(generated)
    if optimize:
        texts = [part.source for part in parts]
    else:
        texts = [
            part.source if part.raw_node is None else to_source(part.raw_node) for part in parts
        ]
    loops = [_loop_bodies(part) for part in parts]  # checkpointed loops' bodies, callees too
    texts = [text for bodies, text in zip(loops, texts) for text in (*bodies, text)]
    return "\n\n".join(text.rstrip() + "\n" for text in texts)


def _loop_bodies(part: GeneratedFunction) -> list[str]:
    """The step functions of the checkpointed loops ``part`` runs
    (``passes/checkpointed_loops.py``), as they read."""
    found = (getattr(obj, "checkpointed_loop_listing", None) for obj in part.namespace.values())
    return [text for text in found if isinstance(text, str)]

"""The source transformer: a user function in, derivative source code out.

``pipeline.derivative`` runs the stages in this order; each folder or module is one::

    frontend/ ─► passes/ ─► reverse/ · forward/ ─► finishing.py ─► codegen.py
    read and     the        the derivative,       specialize/ and   source text and
    resolve      normal     statement by          optimize/, in     a live function
    the source   form       statement             one ordered list

Beside the stages:

* what a statement computes, and its rule: ``operations.py`` (``classify``), ``inline.py``
  (a rule's body inlined with the call site's names), ``steps.py`` (the record each sweep
  keeps of a statement);
* refusals: ``checks.py`` (before any code is built), ``effects.py`` and
  ``in_place_writes.py`` (calls neither sweep follows), ``complex_values.py``;
* the derivative of a function as a whole: ``assemble.py`` (reverse mode's three shapes),
  ``custom.py`` (a user's ``@derivative``), ``purity.py`` (calls code may move or drop);
* the generated code's life: ``cache.py`` (the one cache), ``freshness.py`` and
  ``free_names.py`` (what it assumes about the names it reads), ``listing.py`` (its text
  for people), ``python_ast.py`` and ``syntax.py`` (trees), ``annotations.py`` (the facts
  passes leave on nodes), ``tape_facts.py`` (what the tape asks of the source analysis).

To change the derivative of a kind of statement, start at ``reverse/adjoints.py`` (and
``forward/tangents.py`` for forward mode).
"""

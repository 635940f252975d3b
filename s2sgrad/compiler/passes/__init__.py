"""The normal form: small rewrites of a parsed function, run in this order by the pipeline.

1. ``desugar`` (desugar.py): augmented assignment, chained comparisons, unpacking,
   ``match``; ``np.add.at``, ``ufunc.at`` and ``np.fill_diagonal`` as item writes
   (library_writes.py); in-place updates of arrays other names may share are refused
   (aliases.py, on sharing.py, fresh_results.py and list_entries.py).
2. ``normalise_loops`` (loops.py): local functions and partials only called are inlined
   (local_functions.py, inline_locals.py), comprehensions and ``map`` become loops
   (comprehensions.py), every ``for`` runs over a ``range`` by index.
3. ``structure_jumps`` (jumps.py): one ``return``, structured ``break``/``continue``.
4. ``to_anf`` (anf.py): every operand a name.
5. ``rename_reassignments`` (rename.py): one name per value in straight-line code.
6. ``join_sequences`` (anf.py): ``+`` of lists or tuples as ``concatenated``.
7. ``analyse_activity`` (activity.py): what depends on the inputs and reaches the output.

mutation.py tells which parameters a called helper changes in place; names.py hands out
fresh names to all of them.
"""

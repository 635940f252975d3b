"""The source transformer: a user function in, derivative source code out.

The modules follow the pipeline (``pipeline.derivative`` runs it)::

    frontend ─► passes ─► reverse / forward ─► specialize ─► optimize ─► codegen
    (source)    (normal    (derivative per      (first call's (tidying)   (text and a
                 form)      statement, rules     shapes)                   live function)
                            inlined by inline)
"""

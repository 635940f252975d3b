"""Everything generated code may call besides NumPy.

Exported gradient modules import only ``numpy`` and this package, so every helper a
derivative rule uses lives in one of the submodules re-exported here. (:mod:`hooks` is not
re-exported: it is how the layers above hand the runtime what it asks of them.)
"""

from s2sgrad.runtime import (
    answering_objects,
    array_receivers,
    attribute_stores,
    callables,
    caller_entries,
    core,
    dict_entries,
    dispatch,
    elementwise,
    entry_saves,
    fft,
    histograms,
    keyword_arguments,
    linalg,
    list_pops,
    objects,
    orderings,
    private_copies,
    records,
    reductions,
    scientific,
    shapes,
    special_functions,
    states_left,
    ufunc_methods,
    unraised,
)
from s2sgrad.runtime.answering_objects import *  # noqa: F403
from s2sgrad.runtime.array_receivers import *  # noqa: F403
from s2sgrad.runtime.attribute_stores import *  # noqa: F403
from s2sgrad.runtime.callables import *  # noqa: F403
from s2sgrad.runtime.caller_entries import *  # noqa: F403
from s2sgrad.runtime.core import *  # noqa: F403
from s2sgrad.runtime.dict_entries import *  # noqa: F403
from s2sgrad.runtime.dispatch import *  # noqa: F403
from s2sgrad.runtime.elementwise import *  # noqa: F403
from s2sgrad.runtime.entry_saves import *  # noqa: F403
from s2sgrad.runtime.fft import *  # noqa: F403
from s2sgrad.runtime.histograms import *  # noqa: F403
from s2sgrad.runtime.keyword_arguments import *  # noqa: F403
from s2sgrad.runtime.linalg import *  # noqa: F403
from s2sgrad.runtime.list_pops import *  # noqa: F403
from s2sgrad.runtime.objects import *  # noqa: F403
from s2sgrad.runtime.orderings import *  # noqa: F403
from s2sgrad.runtime.private_copies import *  # noqa: F403
from s2sgrad.runtime.records import *  # noqa: F403
from s2sgrad.runtime.reductions import *  # noqa: F403
from s2sgrad.runtime.revolve import run_checkpointed  # noqa: F401 (in __all__)
from s2sgrad.runtime.scientific import *  # noqa: F403
from s2sgrad.runtime.shapes import *  # noqa: F403
from s2sgrad.runtime.special_functions import *  # noqa: F403
from s2sgrad.runtime.states_left import *  # noqa: F403
from s2sgrad.runtime.ufunc_methods import *  # noqa: F403
from s2sgrad.runtime.unraised import *  # noqa: F403

# the star imports name them (what a type checker reads); __all__ lists them once each
__all__ = list(
    dict.fromkeys(
        [
            *core.__all__,
            *elementwise.__all__,
            *reductions.__all__,
            *linalg.__all__,
            *shapes.__all__,
            *list_pops.__all__,
            *dict_entries.__all__,
            *entry_saves.__all__,
            *callables.__all__,
            *caller_entries.__all__,
            *fft.__all__,
            *histograms.__all__,
            *keyword_arguments.__all__,
            *states_left.__all__,
            *scientific.__all__,
            *special_functions.__all__,
            *ufunc_methods.__all__,
            *dispatch.__all__,
            *objects.__all__,
            *orderings.__all__,
            *private_copies.__all__,
            *records.__all__,
            *attribute_stores.__all__,
            *unraised.__all__,
            *array_receivers.__all__,
            *answering_objects.__all__,
            "run_checkpointed",
        ]
    )
)

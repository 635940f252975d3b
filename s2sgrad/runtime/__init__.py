"""Everything generated code may call besides NumPy.

Exported gradient modules import only ``numpy`` and this package, so every helper a
derivative rule uses lives in one of the submodules re-exported here.
"""

from s2sgrad.runtime.core import *  # noqa: F403
from s2sgrad.runtime.core import __all__ as _core_all

__all__ = list(_core_all)

for _module_name in ("elementwise", "reductions", "linalg", "shapes", "dispatch"):
    try:
        _module = __import__(f"s2sgrad.runtime.{_module_name}", fromlist=["__all__"])
    except ModuleNotFoundError as error:  # a submodule not written yet
        if error.name != f"s2sgrad.runtime.{_module_name}":
            raise
        continue
    for _name in getattr(_module, "__all__", []):
        globals()[_name] = getattr(_module, _name)
        __all__.append(_name)

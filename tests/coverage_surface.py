"""The public surface the coverage test (tests/test_coverage.py) holds s2sgrad to.

``public_surface()`` enumerates the public callables of ``numpy``, ``numpy.linalg``,
``numpy.fft`` and, when SciPy is importable, ``scipy.special`` and the methods of the
``scipy.stats`` distributions issue 13 lists. ``REFUSED`` says, for every one of them that
has no rule, why: each is refused where it meets a differentiated value. docs/writing-rules.md
lists the same table (``python tests/coverage_surface.py`` prints it).
"""

from __future__ import annotations

import inspect
import sys

MODULES = ("numpy", "numpy.linalg", "numpy.fft")
SCIPY_MODULES = ("scipy.special",)
DISTRIBUTIONS = (
    "norm",
    "t",
    "beta",
    "gamma",
    "chi2",
    "poisson",
    "dirichlet",
    "multivariate_normal",
)
METHODS = ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf", "pmf", "logpmf")
METHODS += ("entropy",)


def _public(module) -> dict:
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    found = {}
    for name in sorted(set(names)):
        value = getattr(module, name, None)
        if name.startswith("_") or inspect.ismodule(value) or not callable(value):
            continue
        found[f"{module.__name__}.{name}"] = value
    return found


def public_surface() -> dict:
    """Qualified name → callable, for every public callable the coverage test covers.

    Example::

        public_surface()["numpy.sin"] is np.sin  # True
    """
    import importlib

    surface = {}
    for name in MODULES:
        surface.update(_public(importlib.import_module(name)))
    try:
        import scipy.special  # noqa: F401
        import scipy.stats as stats
    except ImportError:
        return surface
    for name in SCIPY_MODULES:
        surface.update(_public(importlib.import_module(name)))
    for distribution in DISTRIBUTIONS:
        for method in METHODS:
            bound = getattr(getattr(stats, distribution), method, None)
            if bound is not None:
                surface[f"scipy.stats.{distribution}.{method}"] = bound
    return surface


def _names(text: str) -> list:
    return text.split()


# Why a public callable has no rule. Every entry is a claim the coverage test checks: the
# function is refused (s2sgrad.errors.S2SGradError naming the user's line) where it is
# applied to a differentiated value.
_GROUPS = {
    "a type, a dtype or a scalar class: not a function of values": _names(
        """bool bool_ byte bytes_ cdouble character clongdouble complex128 complex192
        complex256 complex64 complexfloating csingle datetime64 dtype flexible float128
        float96 floating generic inexact int16 int32 int64 int8
        int_ intc integer intp long longdouble longlong number object_ short signedinteger
        str_ timedelta64 ubyte uint uint16 uint32 uint64 uint8 uintc uintp ulong
        ulonglong unsignedinteger ushort void ndarray matrix memmap recarray record flatiter
        broadcast busdaycalendar ufunc poly1d nditer ndenumerate ndindex errstate
        printoptions vectorize finfo iinfo linalg.LinAlgError"""
    ),
    "input, output, printing or configuration: no numbers to differentiate": _names(
        """array2string array_repr array_str base_repr binary_repr format_float_positional
        format_float_scientific load loadtxt save savetxt savez savez_compressed fromfile
        frombuffer fromregex fromstring genfromtxt fromiter from_dlpack get_include
        get_printoptions set_printoptions getbufsize setbufsize geterr seterr geterrcall
        seterrcall info show_config show_runtime test typename datetime_as_string
        datetime_data busday_count busday_offset is_busday isnat"""
    ),
    "a question about types, memory or layout: answered without a derivative": _names(
        """can_cast common_type isdtype iscomplexobj isrealobj isfortran isscalar iterable
        may_share_memory shares_memory min_scalar_type mintypecode promote_types
        broadcast_shapes"""
    ),
    "integer or boolean results (indices, counts, sets, bits): no derivative to give": _names(
        """bitwise_count digitize lexsort searchsorted packbits unpackbits
        ravel_multi_index unravel_index diag_indices tril_indices triu_indices mask_indices
        isin iscomplex
        isreal array_equal array_equiv allclose histogram_bin_edges fft.fftfreq fft.rfftfreq"""
    ),
    "values chosen by sorting or set membership, with no rule yet: use np.sort or indexing": (
        _names(
            """unique_all unique_counts unique_inverse unique_values intersect1d in1d
            setdiff1d setxor1d union1d trim_zeros sort_complex"""
        )
    ),
    "window functions and grids of a length: write the formula with np.cos / np.arange": _names(
        "bartlett blackman hamming hanning kaiser fromfunction"
    ),
    "takes a Python function or writes into its argument; write the loop or the update "
    "with indexing instead": _names(
        """apply_along_axis apply_over_axes frompyfunc piecewise nested_iters copyto
        fill_diagonal place put put_along_axis putmask"""
    ),
    "an array maker or view with no rule yet: use np.asarray, np.concatenate or "
    "np.broadcast_to": _names("""asarray_chkfinite asmatrix require bmat"""),
    # present in NumPy 1.26 only (the suite runs on 1.26 and 2.x); np.float_ is np.float64
    # there, which has a rule
    "a NumPy 1.x name that NumPy 2 removed: use its NumPy 2 form (np.prod, np.all, np.round, "
    "np.vstack, np.sort, np.asarray, np.complex128, ...)": _names(
        """AxisError ComplexWarning DataSource ModuleDeprecationWarning RankWarning TooHardError
        VisibleDeprecationWarning add_docstring add_newdoc add_newdoc_ufunc alltrue asfarray
        byte_bounds cfloat chararray clongfloat compare_chararrays complex_ cumproduct
        deprecate deprecate_with_doc disp fastCopyAndTranspose find_common_type
        format_parser get_array_wrap geterrobj issctype issubclass_ issubsctype longcomplex
        longfloat lookfor mat maximum_sctype msort obj2sctype product recfromcsv recfromtxt
        round_ safe_eval sctype2char set_numeric_ops set_string_function seterrobj
        singlecomplex sometrue source string_ unicode_ who"""
    ),
}


def refused_numpy() -> dict:
    """Qualified name → why, for every NumPy callable declared refused."""
    reasons = {}
    for reason, names in _GROUPS.items():
        for name in names:
            reasons[f"numpy.{name}"] = reason
    return reasons


SCIPY_REASON = "no rule yet (scipy.special has rules for the functions issue 13 lists)"
STATS_REASON = (
    "no rule yet: inverse distribution functions (ppf, isf), log survival functions, the "
    "entropies of univariate distributions, Poisson's cdf and sf, the multivariate normal's cdf"
)


def refused_reason(name: str) -> str | None:
    """Why the callable named ``name`` (qualified) has no rule, or None if not declared."""
    if name.startswith("scipy.special."):
        return SCIPY_REASON
    if name.startswith("scipy.stats."):
        return STATS_REASON
    return refused_numpy().get(name)


def markdown_table(surface: dict, has_rule) -> str:
    """The table of functions without a rule, grouped by reason, for docs/writing-rules.md."""
    by_reason: dict = {}
    for name, function in surface.items():
        if not has_rule(function):
            reason = refused_reason(name) or "UNDECLARED"
            by_reason.setdefault(reason, []).append(name)
    lines = ["| why there is no rule | functions |", "|---|---|"]
    for reason, names in by_reason.items():
        if names[0].startswith("scipy.special."):
            shown = f"{len(names)} functions of scipy.special"
        else:
            shown = ", ".join(f"`{n.replace('numpy.', 'np.')}`" for n in names)
        lines.append(f"| {reason} | {shown} |")
    return "\n".join(lines)


if __name__ == "__main__":
    import s2sgrad  # noqa: F401  (registers the rules)
    from s2sgrad.rules import get_rule

    print(markdown_table(public_surface(), lambda f: get_rule(f) is not None))
    sys.exit(0)

"""Every target the benchmark judges, tallied in one place so that the last line of a run
says whether all of them were met (time, memory, statement counts, transformation).

>>> judge("demo", True)
'PASS'
"""

from __future__ import annotations

JUDGED: list[tuple[str, bool]] = []


def judge(what: str, ok: bool) -> str:
    """Record one target's outcome under ``what``; return ``PASS`` or ``MISS`` for printing."""
    JUDGED.append((what, ok))
    return "PASS" if ok else "MISS"


def summary() -> str:
    """One paragraph: how many targets were met, and the name of each one missed."""
    missed = [what for what, ok in JUDGED if not ok]
    text = f"targets met: {len(JUDGED) - len(missed)} of {len(JUDGED)}"
    if missed:
        text += "; missed: " + ", ".join(missed)
    return text

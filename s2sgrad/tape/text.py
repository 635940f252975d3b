"""Text written from a value being differentiated on the tape (``str(x)``, ``f"{x:.3f}"``).

It prints and compares as the plain text does; only reading a number back out of it
(``float(str(x))``), which would drop the derivative without a word, is refused, by the
value it was written from.

Example::

    text = DifferentiatedText("1.5", origin)  # origin: the tape value written
    print(text)  # 1.5
    float(text)  # refused while origin is being differentiated
"""

from __future__ import annotations

from typing import Any

__all__ = ["DifferentiatedText"]

_READ_BACK = "{kind}() of the text (str(x), repr(x), f'{{x}}')"


class DifferentiatedText(str):
    """A ``str`` that remembers the tape value it was written from."""

    origin: Any

    def __new__(cls, text: str, origin: Any) -> DifferentiatedText:
        made = super().__new__(cls, text)
        made.origin = origin
        return made

    def __float__(self) -> float:
        self._refuse("float")
        return float(str(self))

    def __complex__(self) -> complex:
        self._refuse("complex")
        return complex(str(self))

    def _refuse(self, kind: str) -> None:
        # once the tape is done, what it leaves in the user's containers is plain again
        refuse = getattr(self.origin, "_refuse_plain", None)
        if refuse is not None:
            refuse(_READ_BACK.format(kind=kind))

"""How generated code looks on a screen: ANSI colours in a terminal, HTML in a notebook.

``sg.show`` colours its listing in a colour terminal and renders it as highlighted HTML in
Jupyter; a transform (``sg.grad(f)``) shows its generated code when a notebook displays it
(:class:`NotebookDisplay`). Highlighting uses Pygments when it is installed, else a plain
``<pre>`` block.

Example::

    print(highlight("def f(x):\\n    return x  # done\\n"))
"""

from __future__ import annotations

import html
import io
import keyword
import sys
import token
import tokenize

__all__ = ["highlight", "html_listing", "in_notebook", "NotebookDisplay"]

_COLOURS = {
    "keyword": "\033[1;34m",
    "comment": "\033[2;32m",
    "string": "\033[33m",
    "number": "\033[36m",
    "definition": "\033[1;35m",
}
_RESET = "\033[0m"


def highlight(text: str) -> str:
    """Colour Python source with ANSI escapes (keywords, comments, strings, numbers).

    Example::

        print(highlight("def f(x):\\n    return x  # done\\n"))
    """
    result = []
    position = (1, 0)
    lines = text.splitlines(True)
    previous = None
    for item in tokenize.generate_tokens(io.StringIO(text).readline):
        if item.type == token.ENDMARKER:
            break
        result.append(_between(lines, position, item.start))
        kind = None
        if item.type == token.NAME and keyword.iskeyword(item.string):
            kind = "keyword"
        elif item.type == token.NAME and previous == "def":
            kind = "definition"
        elif item.type == tokenize.COMMENT:
            kind = "comment"
        elif item.type == token.STRING:
            kind = "string"
        elif item.type == token.NUMBER:
            kind = "number"
        result.append(f"{_COLOURS[kind]}{item.string}{_RESET}" if kind else item.string)
        position = item.end
        if item.type == token.NAME:
            previous = item.string
    result.append(_between(lines, position, (len(lines) + 1, 0)))
    return "".join(result)


def _between(lines, start, end) -> str:
    (start_row, start_col), (end_row, end_col) = start, end
    if start_row == end_row:
        return lines[start_row - 1][start_col:end_col] if start_row <= len(lines) else ""
    parts = [lines[start_row - 1][start_col:]] if start_row <= len(lines) else []
    parts += lines[start_row : end_row - 1]
    if end_row <= len(lines):
        parts.append(lines[end_row - 1][:end_col])
    return "".join(parts)


def html_listing(text: str) -> str:
    """Python source as highlighted HTML (Pygments when installed, else a ``<pre>`` block).

    Example::

        html_listing("x = 1\\n")  # '<div class="highlight">...'
    """
    try:
        from pygments import highlight as pygments_highlight  # optional
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return f'<pre class="s2sgrad-listing">{html.escape(text)}</pre>'
    formatter = HtmlFormatter(noclasses=True, nobackground=True)
    return pygments_highlight(text, PythonLexer(), formatter)


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (which renders HTML output).

    Example::

        in_notebook()  # False in a terminal
    """
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def show_in_notebook(text: str) -> None:
    """Display Python source as highlighted HTML in the running notebook.

    Example::

        show_in_notebook("def f(x):\\n    return x\\n")
    """
    from IPython.display import HTML, display  # in_notebook() said IPython is running

    display(HTML(html_listing(text)))


class NotebookDisplay:
    """Shows the generated code of a transform in Jupyter and IPython.

    A subclass provides ``_listing()``: the source to show, or ``None`` when there is
    none (a function differentiated on the tape), in which case ``repr`` is shown.

    Example::

        dloss = sg.grad(loss)
        dloss  # in a notebook cell: the generated gradient, highlighted
    """

    def _listing(self) -> str | None:
        raise NotImplementedError

    def _repr_html_(self) -> str:
        text = self._listing()
        return html_listing(text) if text is not None else html.escape(repr(self))

    def _repr_markdown_(self) -> str:
        text = self._listing()
        return f"```python\n{text}```\n" if text is not None else repr(self)

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        text = None if cycle else self._listing()
        printer.text(text.rstrip("\n") if text is not None else repr(self))

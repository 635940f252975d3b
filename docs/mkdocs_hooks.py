"""MkDocs hook: code fences tagged for tests/test_docs.py (```python generated) render as
plain Python code on the site."""

import re

_TAGGED_FENCE = re.compile(r"^(\s*```python)[ \t]+\S[^\n]*$", re.MULTILINE)


def on_page_markdown(markdown, **_):
    return _TAGGED_FENCE.sub(r"\1", markdown)

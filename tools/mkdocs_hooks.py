"""MkDocs hooks of the documentation site (mkdocs.yml's ``hooks``).

The generated tables escape a pipe inside a code span as ``\\|``: GitHub's tables need it there, and show a
pipe. Python-Markdown's tables already keep a code span's pipes in their cell and would show the backslash, so
the site takes the escapes out of a table row's code spans before rendering.
"""

from __future__ import annotations

import re
from typing import Any

# A code span: a run of backticks, its text, the same run again (CommonMark's rule, as the generators write it).
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")


def unescape_table_code(markdown: str) -> str:
    """``markdown`` with ``\\|`` read as ``|`` inside the code spans of table rows."""
    lines = []
    for line in markdown.split("\n"):
        if line.startswith("|"):
            line = CODE_SPAN.sub(lambda span: span[1] + span[2].replace("\\|", "|") + span[1], line)
        lines.append(line)
    return "\n".join(lines)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs' hook: each page's markdown before it is rendered."""
    return unescape_table_code(markdown)

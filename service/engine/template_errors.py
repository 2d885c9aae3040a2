"""A chat template's errors as a client reads them: the template's own words, bounded, without its source."""

from __future__ import annotations

import re

# A template's error reaches the client: this much of it, without the template source minja quotes.
MAX_ERROR_CHARS = 400


class TemplateError(Exception):
    """The chat template refused the conversation (its own ``raise_exception``, or a rendering error)."""


# openvino_genai wraps minja's own words ("Minja's error: ... at row R, column C:" and the template source)
# in advice and the C++ source's location on the build machine.
_MINJA_ERROR = re.compile(r"Minja's error: (.*?)(?: at row (\d+), column (\d+):|\n|$)", re.DOTALL)
_BUILD_LOCATION = re.compile(r"Exception from \S+:\d+:\s*")


def error_message(error: BaseException) -> str:
    """What went wrong in the template, in one bounded line: its own message and where, not the template
    source minja quotes after it, nor a build machine's paths."""
    text = str(error)
    if found := _MINJA_ERROR.search(text):
        words, row, column = found.groups()
        text = f"{words.strip()} (template row {row}, column {column})" if row else words
    text = _BUILD_LOCATION.sub("", text).strip()
    first = text.splitlines()[0].strip() if text else type(error).__name__
    return first if len(first) <= MAX_ERROR_CHARS else first[: MAX_ERROR_CHARS - 3] + "..."

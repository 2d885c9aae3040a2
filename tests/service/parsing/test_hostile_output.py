"""A model's output is untrusted text: every tool format reads hostile markup as content, never an error.

Deep nesting raises RecursionError (not ValueError) in Python's json and ast parsers, about a thousand levels
down; a decoder that let it through ended the turn's parsing with an error. Each registered format is fed its
own call opening followed by such payloads, whole and in pieces.
"""

from __future__ import annotations

import json

import pytest

from ovserve.service.parsing import TOOL_PARSERS, OutputFormat
from ovserve.service.parsing.detection import PROBE_NAME

FORMATS = list({id(fmt): name for name, fmt in reversed(TOOL_PARSERS.items())}.values())[::-1]
PAYLOADS = {
    "lists": "[" * 5000,
    "objects": '{"a": ' * 3000,
    "closed lists": "[" * 3000 + "]" * 3000,
    "python": "f(x=" * 3000,
}


@pytest.mark.parametrize("payload", list(PAYLOADS))
@pytest.mark.parametrize("name", FORMATS)
def test_deep_nesting_in_a_call_is_content(name: str, payload: str) -> None:
    markup = TOOL_PARSERS[name].markup
    text = markup.opening + markup.begin(PROBE_NAME, 0) + PAYLOADS[payload] + markup.call_end + markup.closing
    for step in (len(text), 997):
        parser = OutputFormat(name).parser(tools=True)
        for start in range(0, len(text), step):
            parser.feed(text[start : start + step])
        parser.finish()  # no RecursionError (the test fails on any exception)
        # What is read back is valid: no call holds the payload (a lenient format may read an empty call), but
        # as the text of a command line, which CWM's closed blocks hold as written (vLLM's {"command": BODY}).
        calls = [call for call in parser.result.calls if json.loads(call.arguments) != {"command": PAYLOADS[payload]}]
        assert all(len(call.arguments) < 100 for call in calls), (name, payload)

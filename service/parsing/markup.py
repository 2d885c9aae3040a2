"""What each output format writes around tool calls and reasoning, as data.

A parser reads this markup; the grammar that forces a tool call
(``service.api.structured``) writes it, so a forced call comes out in the
served model's own format and its parser reads it back (vLLM's
``ToolParser.get_structure_info`` plays this part there). Special tokens
(``<|python_tag|>``, ``[TOOL_CALLS]``) are left out: the parsers accept the
markup without them, and a grammar is text.
"""

from __future__ import annotations

import json
import keyword
from dataclasses import dataclass

# CallMarkup.name_form -> how a function name is written in a call's opening text.
NAME_FORMS = {
    "json": lambda name: json.dumps(name, ensure_ascii=False),  # a JSON string: "get_weather"
    "bare": lambda name: name,  # the name as it is: get_weather(...), functions.get_weather
}
# CallMarkup.arguments -> the name form that dialect writes unless the markup says otherwise.
DEFAULT_NAME_FORMS = {"json": "json", "python": "bare"}


@dataclass(frozen=True)
class CallMarkup:
    """How a tool format writes a list of calls: ``opening call (separator call)* closing``.

    A call is ``begin(name)``, the arguments, then ``call_end``. ``arguments``
    is the dialect they are written in: ``"json"``, a JSON object; ``"python"``,
    keyword arguments with Python literal values (``city="Paris", days=3``).
    """

    opening: str  # before the first call
    call_begin: str  # before a call's arguments; "{name}" stands for the function's name
    call_end: str  # after a call's arguments
    separator: str  # between two calls
    closing: str  # after the last call
    arguments: str = "json"  # a key of NAME_FORMS
    tag: str = ""  # the tag every call opens with, when calls are tagged blocks amid free text
    name: str = ""  # a key of NAME_FORMS; "" for the arguments dialect's own (DEFAULT_NAME_FORMS)

    @property
    def name_form(self) -> str:
        """How this markup writes a function's name (a key of NAME_FORMS)."""
        return self.name or DEFAULT_NAME_FORMS[self.arguments]

    def begin(self, name: str) -> str:
        """The text that opens a call of function ``name``, up to its arguments."""
        return self.call_begin.replace("{name}", NAME_FORMS[self.name_form](name))

    def name_problem(self, name: str) -> str | None:
        """Why this markup cannot write a call of ``name``; None when it can."""
        if self.arguments == "python" and (not name.isidentifier() or keyword.iskeyword(name)):
            return f"{json.dumps(name)} is not a Python identifier, and this model writes calls as Python"
        return None


@dataclass(frozen=True)
class ThinkMarkup:
    """The delimiters of a reasoning block at the start of the output."""

    begin: str
    end: str


# The markup of each family, as its decoder in service.parsing.calls reads it.
HERMES = CallMarkup("", '<tool_call>\n{"name": {name}, "arguments": ', "}\n</tool_call>", "\n", "", tag="<tool_call>")
LLAMA3_JSON = CallMarkup("", '{"name": {name}, "parameters": ', "}", "; ", "")
PYTHONIC = CallMarkup("[", "{name}(", ")", ", ", "]", arguments="python")
MISTRAL = CallMarkup("[", '{"name": {name}, "arguments": ', "}", ", ", "]")
THINK = ThinkMarkup("<think>", "</think>")

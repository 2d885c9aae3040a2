"""A custom tool's input format -> the grammar of its call's arguments, when the call is guided.

The chat template knows function calls only, so a custom tool is offered as a function of one string parameter,
``input`` (``INPUT_SCHEMA``), and its call is guided as that function's: arguments ``{"input": "..."}`` whose
string holds, in its JSON-escaped form, text of the tool's format: any text (``text``), a regular expression's
full match (``regex``, ovserve's regex subset: ``regex_grammar``) or a Lark grammar's language (``lark``:
``lark_grammar``). A grammar format needs a model whose calls write JSON arguments (Hermes, Llama 3, Mistral...):
formats that write arguments as raw text or Python literals escape differently, and are refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ovserve.service.structured.json_grammar import JSON, GrammarBuilder, SchemaError
from ovserve.service.structured.lark_grammar import LarkError, lark_rules
from ovserve.service.structured.regex_grammar import PatternError, regex_expression

INPUT = "input"  # the one parameter the chat template sees
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {INPUT: {"type": "string"}},
    "required": [INPUT],
    "additionalProperties": False,
}
SYNTAXES = ("lark", "regex")
# The key of a custom tool's CustomFormat in the tools output_plan guides (the template never sees it).
CUSTOM_FORMAT = "ovserve_custom_format"


@dataclass(frozen=True)
class CustomFormat:
    """A custom tool's input format: ``syntax`` text | lark | regex, its ``definition``, the request field that
    holds the definition (named when it is refused), and the field of the tool's name (``tools[2].custom.name`` on
    chat, ``tools[2].name`` on Responses: named when the model's markup cannot write it)."""

    syntax: str
    definition: str = ""
    field: str = ""
    name_field: str = ""


def custom_arguments(grammar: GrammarBuilder, fmt: CustomFormat, prefix: str) -> str:
    """The rule of a custom call's arguments in ``grammar`` (its rules named under ``prefix``); raises SchemaError
    (its path empty: the caller names ``fmt.field``) when the format cannot be guided."""
    if fmt.syntax == "text":
        return grammar.add(INPUT_SCHEMA)
    if grammar.dialect is not JSON:
        raise SchemaError((), "a grammar format needs a model whose tool calls write JSON arguments")
    try:
        if fmt.syntax == "regex":
            contents = f"({regex_expression(fmt.definition)})"
        else:
            start, rules = lark_rules(fmt.definition, prefix)
            for name, body in rules.items():
                grammar.define(name, body)
            contents = start
    except (LarkError, PatternError) as error:
        raise SchemaError((), str(error)) from None
    marker = f"ovserve-custom-{prefix}"
    grammar.contents[marker] = contents
    schema = {**INPUT_SCHEMA, "properties": {INPUT: {"type": "string", "format": marker}}}
    return grammar.add(schema)

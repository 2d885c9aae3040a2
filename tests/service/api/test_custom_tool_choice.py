"""Custom tools beside function tools: a tool choice names a tool of its own type, a custom tool's name problem
is reported at its own field, and a grammar the compiler refuses is blamed on the custom tool's format.

Chat's custom tool nests under ``custom`` (``tools[i].custom.name``); the Responses API's is flat (``tools[i].name``).
Planned without a server (output_plan); the compiler's verdict from a stand-in engine.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from ovserve.clients.v1 import chat_pb2, response_pb2
from ovserve.service.api.custom_tools import custom_tool
from ovserve.service.engine.sampling import OutputConstraint
from ovserve.service.errors import FieldViolation, InvalidArgument
from ovserve.service.parsing.markup import HERMES, PYTHONIC
from ovserve.service.structured.custom_input import CustomFormat
from ovserve.service.structured.output import check_compiles, output_plan
from tests.rpc import parse

FUNCTION = {"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}
REGEX = {"type": "grammar", "grammar": {"syntax": "regex", "definition": "[0-9]{1,3}"}}


def chat_tools(*tools: dict[str, Any]) -> list[dict[str, Any]]:
    """A chat request's tools in the chat template's form, as chat.prepare hands them to output_plan."""
    request = parse(chat_pb2.CreateChatCompletionRequest, {"model": "m", "tools": list(tools)})
    violations: list[FieldViolation] = []
    formed = [
        custom_tool(tool.custom, f"tools[{i}].custom", violations) if tool.type == "custom" else dict(FUNCTION)
        for i, tool in enumerate(request.tools)
    ]
    assert not violations, violations
    return formed


def chat_plan(body: dict[str, Any], tools: list[dict[str, Any]], markup: Any = HERMES) -> list[FieldViolation]:
    violations: list[FieldViolation] = []
    request = parse(chat_pb2.CreateChatCompletionRequest, {"model": "m", **body})
    output_plan(request, violations, tools=tools, markup=markup)
    return violations


def responses_plan(body: dict[str, Any], tools: list[dict[str, Any]], markup: Any = HERMES) -> list[FieldViolation]:
    violations: list[FieldViolation] = []
    request = parse(response_pb2.CreateResponseRequest, {"model": "m", **body})
    output_plan(
        request, violations, tools=tools, markup=markup, named_field="tool_choice",
        parameters_field="tools[{}].parameters",
    )  # fmt: skip
    return violations


def fields(violations: list[FieldViolation]) -> list[str]:
    return [violation.field for violation in violations]


CUSTOM = {"type": "custom", "custom": {"name": "count", "format": REGEX}}


@pytest.mark.parametrize(
    ("choice", "field", "said"),
    [
        ({"type": "custom", "custom": {"name": "weather"}}, "named_tool_choice.type", "a function tool"),
        ({"type": "function", "function": {"name": "count"}}, "named_tool_choice.type", "a custom tool"),
        (
            {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
                {"type": "function", "function": {"name": "count"}}]}},
            "named_tool_choice.allowed_tools.tools[0].type", "a custom tool",
        ),
    ],
)  # fmt: skip
def test_chat_tool_choice_names_a_tool_of_its_own_type(choice: dict[str, Any], field: str, said: str) -> None:
    tools = chat_tools({"type": "function", "function": FUNCTION["function"]}, CUSTOM)
    violations = chat_plan({"named_tool_choice": choice}, tools)
    assert fields(violations) == [field] and said in violations[0].description, violations


@pytest.mark.parametrize("choice", [{"type": "custom", "custom": {"name": "count"}}, {"type": "function",
                                    "function": {"name": "weather"}}])  # fmt: skip
def test_chat_tool_choice_of_the_right_type_plans(choice: dict[str, Any]) -> None:
    tools = chat_tools({"type": "function", "function": FUNCTION["function"]}, CUSTOM)
    assert chat_plan({"named_tool_choice": choice}, tools) == []


def test_responses_tool_choice_names_a_tool_of_its_own_type() -> None:
    tools = chat_tools({"type": "function", "function": FUNCTION["function"]}, CUSTOM)
    violations = responses_plan({"named_tool_choice": {"type": "function", "name": "count"}}, tools)
    assert fields(violations) == ["tool_choice.type"], violations
    assert responses_plan({"named_tool_choice": {"type": "custom", "name": "count"}}, tools) == []


def test_a_custom_tools_name_problem_names_its_own_field() -> None:
    """A pythonic model cannot write a call of a name that is no identifier: the custom tool's name is blamed."""
    violations: list[FieldViolation] = []
    chat = [custom_tool(parse(chat_pb2.ChatTool, CUSTOM).custom, "tools[0].custom", violations)]
    chat[0]["function"]["name"] = "my-count"
    assert fields(chat_plan({"tool_choice": "required"}, chat, PYTHONIC)) == ["tools[0].custom.name"]
    flat = [custom_tool(parse(chat_pb2.ChatTool, CUSTOM).custom, "tools[0]", violations)]  # the Responses form
    flat[0]["function"]["name"] = "my-count"
    assert fields(responses_plan({"tool_choice": "required"}, flat, PYTHONIC)) == ["tools[0].name"]
    assert not violations


class Compiler:
    """A stand-in engine whose grammar compiler refuses any grammar holding ``refused``."""

    def __init__(self, refused: str) -> None:
        self.refused = refused
        self.checked: list[str] = []
        self.engine = SimpleNamespace(check_constraint=self.check_constraint)

    async def check_constraint(self, constraint: OutputConstraint) -> str | None:
        self.checked.append(constraint.value)
        return "too slow" if self.refused in constraint.value else None


def refusal(compiler: Compiler, constraint: OutputConstraint, suspects: list[CustomFormat]) -> InvalidArgument:
    with pytest.raises(InvalidArgument) as caught:
        asyncio.run(check_compiles(compiler, constraint, suspects))  # type: ignore[arg-type]
    return caught.value


def test_a_refused_grammar_is_blamed_on_the_custom_format_refused_alone() -> None:
    good = CustomFormat("regex", "[a-c]", "tools[0].custom.format.grammar.definition")
    bad = CustomFormat("regex", "[x-z]{2}", "tools[1].custom.format.grammar.definition")
    constraint = OutputConstraint("grammar", "root ::= [a-c] | [x-z]{2}", "tool_choice")
    compiler = Compiler("[x-z]")
    said = refusal(compiler, constraint, [good, bad])
    assert [v.field for v in said.violations] == [bad.field] and "too slow" in str(said), said
    assert len(compiler.checked) == 3  # the whole, then each format alone until one is refused


def test_a_refused_grammar_none_of_whose_formats_fails_alone_names_the_guide() -> None:
    fmt = CustomFormat("regex", "[a-c]", "tools[0].custom.format.grammar.definition")
    said = refusal(Compiler("refused"), OutputConstraint("grammar", 'root ::= "refused"', "tool_choice"), [fmt])
    assert [v.field for v in said.violations] == ["tool_choice"], said

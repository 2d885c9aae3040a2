"""Free-form grammars (GBNF / EBNF, vLLM's structured_outputs), custom tools' Lark and regex formats, and the
function role: the translations on OpenAI's and llama.cpp's own examples, their bounds, and the gRPC face.

The language a translated grammar accepts is checked independently: ``to_regex`` inlines its rules into a Python
regex. A custom call's input sits in a JSON string, so what the grammar accepts is the input's escaped form.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from typing import Any

import grpc
import pytest

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, completion_pb2, completion_pb2_grpc
from ovserve.service.engine.grammar import GrammarChecker
from ovserve.service.engine.sampling import OutputConstraint
from ovserve.service.errors import FieldViolation
from ovserve.service.parsing.markup import HERMES
from ovserve.service.structured import output
from ovserve.service.structured.custom_input import CUSTOM_FORMAT, INPUT_SCHEMA, CustomFormat
from ovserve.service.structured.gbnf import (
    MAX_FREE_GRAMMAR_BYTES,
    MAX_FREE_GRAMMAR_RULES,
    GrammarTextError,
    check_grammar,
    with_empty_alternatives,
)
from ovserve.service.structured.lark_grammar import LarkError, lark_rules
from ovserve.service.structured.output import output_plan
from tests.conftest import TINY_CHAT
from tests.rpc import failure, parse
from tests.service.api.ebnf import to_regex

# OpenAI's custom tool examples (the GPT-5 guide): arithmetic and SQL in Lark.
MATH = """start: expr
expr: term (SP ADD SP term)* -> add
| term
term: factor (SP MUL SP factor)* -> mul
| factor
factor: INT
SP: " "
ADD: "+"
MUL: "*"
%import common.INT
"""
SQL = """start: "SELECT" SP select_list SP "FROM" SP table SP "WHERE" SP condition SP "LIMIT" SP NUMBER ";"
select_list: column ("," SP column)*
column: IDENTIFIER
table: IDENTIFIER
condition: column SP "=" SP (NUMBER | STRING)
SP: " "
STRING: "'" /[A-Za-z0-9 ]*/ "'"
IDENTIFIER: /[A-Za-z_][A-Za-z0-9_]*/
%import common.NUMBER
"""
# llama.cpp's grammars/json.gbnf as it ships (its ws rule begins with an empty alternative), and list.gbnf.
LLAMA_JSON = r"""root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
"""
LLAMA_LIST = r"""root ::= item+

# Excludes various line break characters
item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"
"""


def language(definition: str) -> re.Pattern[str]:
    """The escaped inputs a Lark grammar's translation accepts, as a Python regex."""
    start, rules = lark_rules(definition, "c0")
    grammar = "\n".join([f"root ::= {start}", *(f"{name} ::= {body}" for name, body in rules.items())])
    return re.compile(to_regex(grammar))


def escaped(text: str) -> str:
    """``text`` as a JSON string holds it."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def test_openai_math_example_translates() -> None:
    accepts = language(MATH)
    for good in ("7", "1 + 2", "2 * 3 + 40 * 5"):
        assert accepts.fullmatch(good), good
    for bad in ("1+2", "1 + ", "a", ""):
        assert not accepts.fullmatch(bad), bad


def test_openai_sql_example_translates() -> None:
    accepts = language(SQL)
    assert accepts.fullmatch("SELECT a, b FROM t WHERE a = 5 LIMIT 10;")
    assert accepts.fullmatch("SELECT name FROM people WHERE name = 'Ann Lee' LIMIT 1;")
    assert not accepts.fullmatch("SELECT a FROM t WHERE a = 5 LIMIT 10")  # no ";"


def test_lark_literals_are_written_escaped() -> None:
    """A quote, a backslash and a newline in a literal: the grammar writes them as a JSON string holds them."""
    accepts = language('start: "say \\"hi\\"" "\\n" "a\\\\b"')
    raw = 'say "hi"\na\\b'
    assert accepts.fullmatch(escaped(raw)) and not accepts.fullmatch(raw)


def test_lark_ranges_repeats_and_options() -> None:
    accepts = language('start: "a".."c" ~ 2..3 ["!"] ("x" | "y")+')
    for good in ("abx", "cca!yx"):
        assert accepts.fullmatch(good), good
    for bad in ("ax", "abcax", "ab!"):
        assert not accepts.fullmatch(bad), bad


@pytest.mark.parametrize(
    ("definition", "fragment"),
    [
        ('%ignore " "\nstart: "a"', "%ignore"),
        ('start: "a"i', "flags"),
        ("start: /a/i", "flags"),
        ("start: /a(?=b)/", "lookarounds"),
        ('start: x\nx: "a" | y', "not defined"),
        ('a: "x"', "start rule is required"),
        ('start: _t{"a"}\n_t{x}: x', "templates"),
        ("start: (", "not a Lark grammar"),
    ],
)
def test_lark_outside_the_subset_is_refused(definition: str, fragment: str) -> None:
    with pytest.raises(LarkError, match=re.escape(fragment)):
        lark_rules(definition, "c0")


def test_lark_bounds() -> None:
    with pytest.raises(LarkError, match="bytes"):
        lark_rules('start: "' + "a" * MAX_FREE_GRAMMAR_BYTES + '"', "c0")
    many = "start: r0\n" + "".join(f'r{i}: "x"\n' for i in range(MAX_FREE_GRAMMAR_RULES + 1))
    with pytest.raises(LarkError, match="rules"):
        lark_rules(many, "c0")


def test_gbnf_empty_alternatives_become_empty_strings() -> None:
    assert with_empty_alternatives('ws ::= | " "') == 'ws ::= "" | " "'
    assert with_empty_alternatives('a ::= ( | "x" | ) "|" [|] # c | d\n') == 'a ::= ( "" | "x" | "" ) "|" [|] # c | d\n'
    assert with_empty_alternatives('a ::= "x" |\nb ::= "y" |') == 'a ::= "x" |\n"" b ::= "y" | ""'
    assert with_empty_alternatives(LLAMA_LIST) == LLAMA_LIST  # nothing to change


def test_gbnf_bounds() -> None:
    for text, fragment in [
        ("", "empty"),
        ('root ::= "' + "a" * MAX_FREE_GRAMMAR_BYTES + '"', "bytes"),
        ("".join(f'r{i} ::= "x"\n' for i in range(MAX_FREE_GRAMMAR_RULES + 1)), "rules"),
        ('root ::= "a', "not closed"),
    ]:
        with pytest.raises(GrammarTextError, match=fragment):
            check_grammar(text)


@pytest.fixture(scope="module")
def checker() -> Any:
    grammars = GrammarChecker(TINY_CHAT, timeout=60)
    yield grammars
    grammars.close()


@pytest.mark.parametrize("text", [LLAMA_JSON, LLAMA_LIST, 'root ::= "a" | ', 'root ::= my-rule\nmy-rule ::= "x"'])
def test_llama_cpp_grammars_compile(checker: GrammarChecker, text: str) -> None:
    verdict = asyncio.run(checker.check(OutputConstraint("grammar", check_grammar(text), "grammar")))
    assert verdict is None, verdict


def test_translated_lark_compiles(checker: GrammarChecker) -> None:
    for definition in (MATH, SQL):
        start, rules = lark_rules(definition, "c0")
        grammar = "\n".join([f"root ::= {start}", *(f"{name} ::= {body}" for name, body in rules.items())])
        assert asyncio.run(checker.check(OutputConstraint("grammar", grammar, "x"))) is None


def plan(body: dict[str, Any]) -> tuple[Any, list[FieldViolation]]:
    violations: list[FieldViolation] = []
    guide = output_plan(parse(completion_pb2.CreateCompletionRequest, body), violations)
    return guide, violations


@pytest.mark.parametrize(
    ("body", "field", "kind"),
    [
        ({"grammar": 'root ::= "a" | '}, "grammar", "grammar"),
        ({"guided_grammar": "root ::= [0-9]+"}, "guided_grammar", "grammar"),
        ({"structured_outputs": {"choice": ["x", "y"]}}, "structured_outputs.choice", "grammar"),
        ({"structured_outputs": {"regex": "a+"}}, "structured_outputs.regex", "regex"),
        ({"structured_outputs": {"json": {"type": "object"}}}, "structured_outputs.json", "grammar"),
    ],
)
def test_each_spelling_is_one_guide(body: dict[str, Any], field: str, kind: str) -> None:
    guide, violations = plan(body)
    assert not violations and (guide.field, guide.kind) == (field, kind)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"structured_outputs": {"regex": "a", "choice": ["b"]}}, "structured_outputs"),
        ({"structured_outputs": {}}, "structured_outputs"),
        ({"grammar": 'root ::= "a"', "guided_grammar": 'root ::= "b"'}, "guided_grammar"),
        ({"grammar": 'root ::= "a"', "response_format": {"type": "json_object"}}, "grammar"),
        ({"structured_outputs": {"choice": ["a", ""]}}, "structured_outputs.choice[1]"),
    ],
)
def test_conflicts_and_bad_values_name_the_field(body: dict[str, Any], field: str) -> None:
    guide, violations = plan(body)
    assert guide is None and field in [violation.field for violation in violations], violations


# ---- the gRPC face ----


def custom_tool(name: str, syntax: str, definition: str) -> dict[str, Any]:
    fmt = {"type": "grammar", "grammar": {"syntax": syntax, "definition": definition}}
    return {"type": "custom", "custom": {"name": name, "format": fmt}}


def test_grpc_custom_tool_call(chat: chat_pb2_grpc.ChatServiceStub) -> None:
    request = parse(chat_pb2.CreateChatCompletionRequest, {
        "model": "tiny-chat", "messages": [{"role": "user", "content": "When?"}], "max_tokens": 300, "seed": 2,
        "tools": [custom_tool("when", "regex", "(May|June) [1-9]")],
        "named_tool_choice": {"type": "custom", "custom": {"name": "when"}},
    })  # fmt: skip
    message = chat.CreateChatCompletion(request).choices[0].message
    (call,) = message.tool_calls
    assert call.type == "custom" and call.custom.name == "when" and not call.HasField("function")
    assert re.fullmatch("(May|June) [1-9]", call.custom.input), call.custom.input


def test_grpc_bad_custom_grammar_names_its_field(chat: chat_pb2_grpc.ChatServiceStub) -> None:
    request = parse(chat_pb2.CreateChatCompletionRequest, {
        "model": "tiny-chat", "messages": [{"role": "user", "content": "x"}], "max_tokens": 4,
        "tools": [custom_tool("t", "lark", "%ignore \" \"\nstart: \"a\"")], "tool_choice": "required",
    })  # fmt: skip
    with pytest.raises(grpc.RpcError) as caught:
        chat.CreateChatCompletion(request)
    said = failure(caught.value)
    assert said.code == grpc.StatusCode.INVALID_ARGUMENT
    assert said.fields == ["tools[0].custom.format.grammar.definition"], said


def test_grpc_function_role_answers_the_last_call_of_its_name(chat: chat_pb2_grpc.ChatServiceStub) -> None:
    request = parse(chat_pb2.CreateChatCompletionRequest, {
        "model": "tiny-chat", "max_tokens": 4, "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
            {"role": "function", "name": "weather", "content": "sunny"},
        ],
    })  # fmt: skip
    assert chat.CreateChatCompletion(request).choices[0].message.HasField("content")


def test_grpc_grammar_that_does_not_compile(completions: completion_pb2_grpc.CompletionServiceStub) -> None:
    request = parse(completion_pb2.CreateCompletionRequest, {
        "model": "tiny-chat", "prompt": "x", "max_tokens": 4, "guided_grammar": "root ::= missing",
    })  # fmt: skip
    with pytest.raises(grpc.RpcError) as caught:
        completions.CreateCompletion(request)
    said = failure(caught.value)
    assert said.fields == ["guided_grammar"] and 'Rule "missing" is not defined' in said.message, said


def test_a_lark_custom_tool_is_planned_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lark reads a grammar with its imports in milliseconds: the plan is made in a worker thread."""
    threads: list[threading.Thread] = []
    real = output.output_plan

    def recorded(*args: Any, **options: Any) -> Any:
        threads.append(threading.current_thread())
        return real(*args, **options)

    monkeypatch.setattr(output, "output_plan", recorded)
    tool = {"type": "function", "function": {"name": "math", "parameters": INPUT_SCHEMA},
            CUSTOM_FORMAT: CustomFormat("lark", MATH, "tools[0].custom.format.grammar.definition")}  # fmt: skip
    request = parse(chat_pb2.CreateChatCompletionRequest, {"model": "m", "tool_choice": "required"})
    violations: list[FieldViolation] = []
    guide = asyncio.run(output.output_constraint(request, violations, tools=[tool], markup=HERMES))
    assert guide is not None and not violations
    assert threads and threads[0] is not threading.main_thread()
    assert "c0_r_start" in guide.value  # the tool's grammar is in the forced call's

"""Custom tools, free-form grammars and the function role, end to end on tiny-chat through the openai client.

A custom tool reaches the chat template as a function of one string, ``input``; its call comes back as
``{"type": "custom", "custom": {"name", "input"}}``, and when the call is guided (a named tool choice here) the
input follows the tool's Lark or regex grammar. ``grammar`` (llama.cpp's GBNF) and ``structured_outputs``
(vLLM's) constrain chat and completions; a grammar that does not compile is a 400 naming its field.
"""

from __future__ import annotations

import re
from typing import Any

import openai
import pytest

MODEL = "tiny-chat"
MAX_TOKENS = 300  # room for a whole call in tiny-chat's small tokens
# OpenAI's documented example of a Lark custom tool format (the GPT-5 guide's arithmetic grammar), its repeats
# bounded (~ 0..2) and its numbers kept short: tiny-chat, guided, would otherwise add terms until max_tokens.
MATH = """start: expr
expr: term (SP ADD SP term)~0..2 -> add
| term
term: factor (SP MUL SP factor)~0..2 -> mul
| factor
factor: INT
SP: " "
ADD: "+"
MUL: "*"
INT: /[0-9]{1,3}/
"""
PRODUCT = r"[0-9]{1,3}( \* [0-9]{1,3}){0,2}"
MATH_LANGUAGE = rf"{PRODUCT}( \+ {PRODUCT}){{0,2}}"  # the same language as a regular expression
TIMESTAMP = r"(January|February|March) [0-9]{1,2}, 20[0-9]{2}"


def custom(name: str, fmt: dict[str, Any] | None = None) -> dict[str, Any]:
    """A chat custom tool."""
    return {"type": "custom", "custom": {"name": name, "description": f"The {name} tool.",
                                          **({"format": fmt} if fmt else {})}}  # fmt: skip


def grammar(syntax: str, definition: str) -> dict[str, Any]:
    return {"type": "grammar", "grammar": {"syntax": syntax, "definition": definition}}


def forced(client: openai.OpenAI, tool: dict[str, Any], seed: int, **extra: Any) -> Any:
    """The one custom call of a reply with ``tool`` named as the tool choice."""
    name = tool["custom"]["name"]
    reply = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Use the tool."}], tools=[tool],  # type: ignore[list-item]
        tool_choice={"type": "custom", "custom": {"name": name}}, temperature=1.0, seed=seed, max_tokens=MAX_TOKENS,
        **extra,
    )  # fmt: skip
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    (call,) = choice.message.tool_calls or []
    assert call.type == "custom" and call.custom.name == name  # type: ignore[union-attr]
    return call


@pytest.mark.parametrize("seed", range(1, 4))
def test_a_lark_custom_tool_call_follows_its_grammar(client: openai.OpenAI, seed: int) -> None:
    call = forced(client, custom("math", grammar("lark", MATH)), seed)
    assert re.fullmatch(MATH_LANGUAGE, call.custom.input), call.custom.input


@pytest.mark.parametrize("seed", range(1, 4))
def test_a_regex_custom_tool_call_follows_its_pattern(client: openai.OpenAI, seed: int) -> None:
    call = forced(client, custom("when", grammar("regex", TIMESTAMP)), seed)
    assert re.fullmatch(TIMESTAMP, call.custom.input), call.custom.input


def test_a_text_custom_tool_call_streams_whole(client: openai.OpenAI) -> None:
    tool = custom("note")
    stream = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Write a note."}], tools=[tool],  # type: ignore[list-item]
        tool_choice={"type": "custom", "custom": {"name": "note"}}, max_tokens=60, stream=True,
    )  # fmt: skip
    calls = [call for chunk in stream for choice in chunk.choices for call in choice.delta.tool_calls or []]
    assert len(calls) == 1 and calls[0].type == "custom", calls
    assert calls[0].custom["name"] == "note" and isinstance(calls[0].custom["input"], str)  # type: ignore[attr-defined]


def test_history_carries_custom_calls_and_function_results(client: openai.OpenAI) -> None:
    """A custom call and a deprecated function-role result go back to the template; the model answers."""
    messages: list[Any] = [
        {"role": "user", "content": "Add 2 and 3, then tell me the weather."},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "call_1", "type": "custom", "custom": {"name": "math", "input": "2 + 3"}},
                {"id": "call_2", "type": "function", "function": {"name": "weather", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "5"},
        {"role": "function", "name": "weather", "content": "sunny"},
    ]
    reply = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=8)
    assert reply.choices[0].message.content is not None


def test_a_function_result_needs_a_call_of_its_name(client: openai.OpenAI) -> None:
    messages: list[Any] = [{"role": "user", "content": "Hi"}, {"role": "function", "name": "weather", "content": "x"}]
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model=MODEL, messages=messages, max_tokens=8)
    assert caught.value.body["param"] == "messages[1].name"  # type: ignore[index]


@pytest.mark.parametrize(
    ("definition", "fragment"),
    [("start: /a(?=b)/", "lookarounds"), ("start: x", "not defined"), ('%ignore " "\nstart: "a"', "%ignore")],
)
def test_a_custom_grammar_outside_the_subset_is_refused(client: openai.OpenAI, definition: str, fragment: str) -> None:
    tool = custom("t", grammar("lark", definition))
    with pytest.raises(openai.BadRequestError) as caught:
        forced(client, tool, 1)
    assert caught.value.body["param"] == "tools[0].custom.format.grammar.definition"  # type: ignore[index]
    assert fragment in caught.value.body["message"]  # type: ignore[index]


# llama.cpp's grammars/arithmetic.gbnf, as llama.cpp ships it.
ARITHMETIC = r"""root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
"""
ANSWER = r"""root ::= answer | "maybe" # an empty alternative below, as GBNF allows
answer ::= ("yes" | "no") tail
tail ::= | "!" """


def test_a_gbnf_grammar_constrains_a_completion(client: openai.OpenAI) -> None:
    for seed in range(1, 4):
        text = client.completions.create(
            model=MODEL, prompt="Q: is it?\nA:", max_tokens=10, temperature=1.0, seed=seed,
            extra_body={"grammar": ANSWER},
        ).choices[0].text  # fmt: skip
        assert text in ("yes", "no", "yes!", "no!", "maybe"), text


def test_llama_cpp_arithmetic_grammar_compiles_and_constrains(client: openai.OpenAI) -> None:
    reply = client.completions.create(
        model=MODEL, prompt="1+1", max_tokens=12, seed=1, extra_body={"grammar": ARITHMETIC}
    )
    assert re.fullmatch(r"[a-z0-9_ \t\n()+*/=-]*", reply.choices[0].text), reply.choices[0].text


@pytest.mark.parametrize(
    ("extra", "allowed"),
    [
        ({"structured_outputs": {"choice": ["red", "blue"]}}, {"red", "blue"}),
        ({"structured_outputs": {"regex": "(cat|dog)s?"}}, {"cat", "cats", "dog", "dogs"}),
        ({"guided_grammar": 'root ::= "up" | "down"'}, {"up", "down"}),
    ],
)
def test_vllm_spellings_constrain_chat(client: openai.OpenAI, extra: dict[str, Any], allowed: set[str]) -> None:
    reply = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Pick one."}], max_tokens=8, extra_body=extra
    )
    assert reply.choices[0].message.content in allowed


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"grammar": "root ::= foo"}, "grammar"),
        ({"structured_outputs": {"grammar": 'root ::= "a'}}, "structured_outputs.grammar"),
        ({"structured_outputs": {"regex": "a", "choice": ["b"]}}, "structured_outputs"),
        ({"grammar": 'root ::= "a"', "guided_regex": "a"}, "grammar"),
    ],
)
def test_a_bad_grammar_is_a_400_naming_it(client: openai.OpenAI, extra: dict[str, Any], param: str) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.completions.create(model=MODEL, prompt="x", max_tokens=4, extra_body=extra)
    assert caught.value.body["param"] == param, caught.value.body  # type: ignore[index]


# ---- Responses ----


def responses_tool(name: str, fmt: dict[str, Any]) -> dict[str, Any]:
    """A Responses custom tool (the flat form), its grammar format flat as the Responses API writes it."""
    flat = {"type": "grammar", **fmt["grammar"]} if fmt.get("type") == "grammar" else fmt
    return {"type": "custom", "name": name, "description": f"The {name} tool.", "format": flat}


@pytest.mark.parametrize("seed", range(1, 3))
def test_responses_custom_tool_call_follows_its_grammar(client: openai.OpenAI, seed: int) -> None:
    response = client.responses.create(
        model=MODEL, input="Use the tool.", tools=[responses_tool("math", grammar("lark", MATH))],  # type: ignore[list-item]
        tool_choice={"type": "custom", "name": "math"}, temperature=1.0, max_output_tokens=MAX_TOKENS,
        extra_body={"seed": seed},
    )  # fmt: skip
    (call,) = [item for item in response.output if item.type == "custom_tool_call"]
    assert call.name == "math" and call.call_id and re.fullmatch(MATH_LANGUAGE, call.input), call  # type: ignore[union-attr]


def test_responses_custom_call_streams_and_its_output_goes_back(client: openai.OpenAI) -> None:
    tools: Any = [responses_tool("when", grammar("regex", TIMESTAMP))]
    stream = client.responses.create(
        model=MODEL, input="When?", tools=tools, tool_choice={"type": "custom", "name": "when"},
        max_output_tokens=MAX_TOKENS, stream=True,
    )  # fmt: skip
    events = list(stream)
    kinds = [event.type for event in events]
    deltas = [event.delta for event in events if event.type == "response.custom_tool_call_input.delta"]
    (done,) = [event for event in events if event.type == "response.custom_tool_call_input.done"]
    assert kinds.index("response.output_item.added") < kinds.index("response.custom_tool_call_input.done")
    assert "".join(deltas) == done.input and re.fullmatch(TIMESTAMP, done.input), done  # type: ignore[attr-defined]
    response = events[-1].response  # type: ignore[attr-defined]
    (call,) = [item for item in response.output if item.type == "custom_tool_call"]
    assert call.input == done.input  # type: ignore[attr-defined]
    answer = client.responses.create(
        model=MODEL, previous_response_id=response.id, tools=tools, max_output_tokens=8,
        input=[{"type": "custom_tool_call_output", "call_id": call.call_id, "output": "tomorrow"}],
    )  # fmt: skip
    assert answer.status in ("completed", "incomplete")
    replayed = client.responses.create(  # the same turn sent back whole, without a stored response
        model=MODEL, tools=tools, max_output_tokens=8, store=False,
        input=[{"role": "user", "content": "When?"}, {"type": "custom_tool_call", "call_id": "call_9", "name": "when",
               "input": call.input}, {"type": "custom_tool_call_output", "call_id": "call_9", "output": "ok"}],
    )  # fmt: skip
    assert replayed.status in ("completed", "incomplete")


def test_responses_custom_output_needs_its_call(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(
            model=MODEL, max_output_tokens=8,
            input=[{"type": "custom_tool_call_output", "call_id": "call_x", "output": "ok"}],  # type: ignore[list-item]
        )  # fmt: skip
    assert caught.value.body["param"] == "input[0].call_id"  # type: ignore[index]


def test_responses_bad_custom_grammar_names_its_field(client: openai.OpenAI) -> None:
    tools: Any = [responses_tool("t", grammar("regex", "a(?=b)"))]
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model=MODEL, input="x", tools=tools, tool_choice="required", max_output_tokens=8)
    assert caught.value.body["param"] == "tools[0].format.definition"  # type: ignore[index]  # as OpenAI writes it


def test_auto_guides_a_custom_call_by_default(client: openai.OpenAI) -> None:
    """Under tool_choice auto the model may answer or call; a call it opens follows the tool's format (the served
    model's default tool-guided generation)."""
    tool: Any = custom("get_weather", grammar("regex", TIMESTAMP))  # tiny-chat calls get_weather when asked
    inputs = []
    for seed in range(1, 9):
        reply = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "What is the weather in Paris?"}], tools=[tool],
            temperature=1.0, seed=seed, max_tokens=MAX_TOKENS,
        )  # fmt: skip
        inputs += [call.custom.input for call in reply.choices[0].message.tool_calls or []]  # type: ignore[union-attr]
    assert inputs  # what the guide must shape
    assert all(re.fullmatch(TIMESTAMP, text) for text in inputs), inputs


# ---- a tool choice of the other type; a grammar the compiler refuses ----

WEATHER = {"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}
# Nested Lark repeats: Lark reads it and it translates, but XGrammar's compile of it runs for minutes (measured:
# past 120 s, 2 GB), past the grammar checker's timeout: refused, naming the custom tool's format.
NESTED = 'start: (("a"~0..200)~0..200)~0..200'


@pytest.mark.parametrize(
    ("choice", "kind"),
    [({"type": "custom", "custom": {"name": "weather"}}, "function"), ({"type": "function", "function": {"name": "t"}},
                                                                      "custom")],
)  # fmt: skip
def test_a_tool_choice_names_a_tool_of_its_own_type(client: openai.OpenAI, choice: dict[str, Any], kind: str) -> None:
    tools: Any = [WEATHER, custom("t", grammar("regex", "[0-9]"))]
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "x"}], tools=tools, tool_choice=choice,  # type: ignore[arg-type]
            max_tokens=8,
        )  # fmt: skip
    assert caught.value.body["param"] == "tool_choice"  # (the object form's inner path ends at its OpenAI name)
    assert f"is a {kind} tool" in caught.value.body["message"]  # type: ignore[index]


def test_responses_tool_choice_names_a_tool_of_its_own_type(client: openai.OpenAI) -> None:
    tools: Any = [{"type": "function", "name": "weather", "parameters": {"type": "object"}},
                  responses_tool("t", grammar("regex", "[0-9]"))]  # fmt: skip
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(
            model=MODEL, input="x", tools=tools, tool_choice={"type": "custom", "name": "weather"},  # type: ignore[arg-type]
            max_output_tokens=8,
        )  # fmt: skip
    assert caught.value.body["param"] == "tool_choice.type"  # type: ignore[index]


def test_a_lark_grammar_the_compiler_refuses_is_blamed_on_its_format(client: openai.OpenAI) -> None:
    tools: Any = [WEATHER, custom("t", grammar("lark", NESTED))]
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "x"}], tools=tools, tool_choice="required", max_tokens=8
        )
    assert caught.value.body["param"] == "tools[1].custom.format.grammar.definition", caught.value.body  # type: ignore[index]
    assert "grammar engine refused it" in caught.value.body["message"]  # type: ignore[index]
    responses: Any = [responses_tool("t", grammar("lark", NESTED))]
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(
            model=MODEL, input="x", tools=responses, tool_choice={"type": "custom", "name": "t"}, max_output_tokens=8
        )
    assert caught.value.body["param"] == "tools[0].format.definition", caught.value.body  # type: ignore[index]

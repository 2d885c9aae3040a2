"""Structured outputs end to end: response_format, guided_*, text.format and forced tool calls on tiny-chat.

The tiny model knows nothing about the schemas; whatever it writes must still parse and validate,
because the grammar leaves it no other choice. Invalid constraints are refused, naming the field.
"""

from __future__ import annotations

import json
import re
from typing import Any

import grpc
import jsonschema
import pytest

from ovserve.clients.v1 import chat_pb2, completion_pb2, response_pb2, response_pb2_grpc
from ovserve.service.structured.limits import (
    MAX_ALTERNATIVES,
    MAX_CHOICE_BYTES,
    MAX_OBJECT_PROPERTIES,
    MAX_PATTERN_LENGTH,
    MAX_REPEAT,
    MAX_SCHEMA_BYTES,
    MAX_SCHEMA_DEPTH,
    MAX_STRUCTURES,
)
from tests.rpc import failure, parse

MAX_TOKENS = 400  # room for the JSON to close: the grammars allow no padding, so it always does
ASK_JSON = [{"role": "user", "content": "Describe a person as a JSON object."}]
ASK_WEATHER = [{"role": "user", "content": "What is the weather like in Paris?"}]
SAMPLING: list[dict[str, Any]] = [{"temperature": 0}, {"temperature": 1.0, "seed": 7}]
TOOL_CALL = re.compile(r"<tool_call>\n(.*?)\n</tool_call>", re.DOTALL)

# Schemas the output must match: nested objects, enums, arrays, required fields, numbers, booleans.
SCHEMAS: dict[str, dict[str, Any]] = {
    "object": {"type": "object"},
    "required-string": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    "enum": {"type": "object", "properties": {"unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["unit"]},
    "integer-range": {
        "type": "object",
        "properties": {"age": {"type": "integer", "minimum": 0, "maximum": 120}},
        "required": ["age"],
    },
    "boolean-and-number": {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}, "score": {"type": "number"}},
        "required": ["ok", "score"],
        "additionalProperties": False,
    },
    "array-of-strings": {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3}},
        "required": ["tags"],
    },
    "nested": {
        "type": "object",
        "properties": {
            "person": {
                "type": "object",
                "properties": {"name": {"type": "string", "maxLength": 20}, "age": {"type": "integer"}},
                "required": ["name", "age"],
            }
        },
        "required": ["person"],
    },
    "array-of-objects": {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"id": {"type": "integer"}, "kind": {"enum": ["a", "b"]}},
                    "required": ["id", "kind"],
                },
                "minItems": 1,
                "maxItems": 2,
            }
        },
        "required": ["items"],
    },
    "top-level-array": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4},
    "const-and-pattern": {
        "type": "object",
        "properties": {"version": {"const": 2}, "code": {"type": "string", "pattern": "^[A-Z]{3}$"}},
        "required": ["version", "code"],
    },
    "anyof": {
        "type": "object",
        "properties": {"value": {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 8}]}},
        "required": ["value"],
    },
    "draft-07": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 16}},
        "required": ["city"],
    },
}

# Tools for forced calls: each parameters schema shows a different JSON Schema feature. Strings carry
# maxLength: tiny-chat writes prose inside a string and never closes it by choice, and a declared string
# is only bounded when the schema says so.
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "maxLength": 24},
                    "unit": {"enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city", "unit"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "book_trip",
            "description": "Book a trip.",
            "parameters": {
                "type": "object",
                "properties": {
                    "traveller": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "maxLength": 20},
                            "age": {"type": "integer", "minimum": 0},
                        },
                        "required": ["name", "age"],
                    },
                    "cities": {
                        "type": "array",
                        "items": {"type": "string", "maxLength": 16},
                        "minItems": 1,
                        "maxItems": 3,
                    },
                },
                "required": ["traveller", "cities"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "set_alarm",
            "description": "Set an alarm.",
            "parameters": {
                "type": "object",
                "properties": {"hour": {"type": "integer", "minimum": 0, "maximum": 23}, "loud": {"type": "boolean"}},
                "required": ["hour", "loud"],
                "additionalProperties": False,
            },
        },
    },
]
PARAMETERS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
# 1.2 MB of tool parameters (5,000 described properties), as an outside check sent: refused by size.
HUGE_PARAMETERS = {
    "type": "object",
    "properties": {f"p{i}": {"type": "string", "description": "x" * 200} for i in range(5000)},
}
HUGE_TOOL = {"type": "function", "function": {"name": "huge", "parameters": HUGE_PARAMETERS}}
DEEP: dict[str, Any] = {}  # arrays of arrays, one level past MAX_SCHEMA_DEPTH
for _ in range(MAX_SCHEMA_DEPTH):
    DEEP = {"type": "array", "items": DEEP}


@pytest.fixture
def responses(channel: grpc.Channel) -> response_pb2_grpc.ResponseServiceStub:
    """ResponseService stub on the session server."""
    return response_pb2_grpc.ResponseServiceStub(channel)


def chat_request(streaming: bool = False, **fields: Any) -> Any:
    body = {"model": "tiny-chat", "messages": ASK_JSON, "max_tokens": MAX_TOKENS, **fields}
    message_class = chat_pb2.StreamChatCompletionRequest if streaming else chat_pb2.CreateChatCompletionRequest
    return parse(message_class, body)


def completion_request(streaming: bool = False, **fields: Any) -> Any:
    body = {"model": "tiny-chat", "prompt": "The answer is", "max_tokens": MAX_TOKENS, **fields}
    message_class = completion_pb2.StreamCompletionRequest if streaming else completion_pb2.CreateCompletionRequest
    return parse(message_class, body)


def response_request(**fields: Any) -> response_pb2.CreateResponseRequest:
    body = {"model": "tiny-chat", "input": "Describe a person as a JSON object.", "max_output_tokens": MAX_TOKENS}
    return parse(response_pb2.CreateResponseRequest, {**body, **fields})


def json_schema_format(name: str, schema: dict[str, Any], strict: bool = True) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": strict}}


def chat_calls(message: chat_pb2.ChatMessage) -> list[tuple[str, Any]]:
    """The tool calls of an assistant message: parsed into tool_calls, or still as <tool_call> blocks."""
    if len(message.tool_calls):
        return [(call.function.name, json.loads(call.function.arguments)) for call in message.tool_calls]
    return text_calls(message.content)


def text_calls(text: str) -> list[tuple[str, Any]]:
    """Hermes/Qwen <tool_call> blocks; the text must hold nothing else (reasoning aside)."""
    body = text.split("</think>")[-1]
    blocks = TOOL_CALL.findall(body)
    assert TOOL_CALL.sub("", body).strip() == "", f"text outside tool calls: {text!r}"
    calls = [json.loads(block) for block in blocks]
    return [(call["name"], call["arguments"]) for call in calls]


def assert_valid_calls(calls: list[tuple[str, Any]], allowed: set[str]) -> None:
    assert calls, "no tool call"
    for name, arguments in calls:
        assert name in allowed
        jsonschema.validate(arguments, PARAMETERS[name])


# ---- JSON output ----


def test_json_object_on_chat(chat) -> None:
    reply = chat.CreateChatCompletion(chat_request(response_format={"type": "json_object"}))
    choice = reply.choices[0]
    assert isinstance(json.loads(choice.message.content), dict)
    assert choice.finish_reason == 1  # stop: the grammar ended, then the model's end of turn


@pytest.mark.parametrize(
    ("name", "sampling"),
    [
        pytest.param(name, sampling, id=f"{name}-{kind}")
        for name in SCHEMAS
        for kind, sampling in zip(("greedy", "sampled"), SAMPLING, strict=True)
    ],
)
def test_json_schema_output_validates(chat, name: str, sampling: dict[str, Any]) -> None:
    schema = SCHEMAS[name]
    request = chat_request(response_format=json_schema_format(name, schema), **sampling)
    content = chat.CreateChatCompletion(request).choices[0].message.content
    jsonschema.validate(json.loads(content), schema)


def test_streamed_json_joins_into_valid_json(chat) -> None:
    schema = SCHEMAS["nested"]
    request = chat_request(streaming=True, response_format=json_schema_format("nested", schema), temperature=0)
    text = "".join(c.delta.content for chunk in chat.StreamChatCompletion(request) for c in chunk.choices)
    jsonschema.validate(json.loads(text), schema)
    unary = chat.CreateChatCompletion(chat_request(response_format=json_schema_format("nested", schema), temperature=0))
    assert text == unary.choices[0].message.content


def test_guided_json_on_chat_and_completions(chat, completions) -> None:
    schema = SCHEMAS["array-of-objects"]
    chat_text = chat.CreateChatCompletion(chat_request(guided_json=schema)).choices[0].message.content
    jsonschema.validate(json.loads(chat_text), schema)
    completion_text = completions.CreateCompletion(completion_request(guided_json=schema)).choices[0].text
    jsonschema.validate(json.loads(completion_text), schema)


def test_completions_response_format_json_schema(completions) -> None:
    schema = SCHEMAS["enum"]
    request = completion_request(response_format=json_schema_format("unit", schema), temperature=1.0, seed=3)
    jsonschema.validate(json.loads(completions.CreateCompletion(request).choices[0].text), schema)


@pytest.mark.parametrize("regex", [r"[0-9]{3}-[0-9]{4}", r"(yes|no), because [a-z]+", r"[A-Z][a-z]{2,8}!"])
def test_guided_regex_on_completions(completions, regex: str) -> None:
    for sampling in SAMPLING:
        text = completions.CreateCompletion(completion_request(guided_regex=regex, **sampling)).choices[0].text
        assert re.fullmatch(regex, text), text


def test_guided_choice_streamed_and_unary(completions, chat) -> None:
    choices = ["red", "green", "dark blue", 'say "hi"']
    for seed in range(4):
        text = completions.CreateCompletion(completion_request(guided_choice=choices, temperature=1.0, seed=seed))
        assert text.choices[0].text in choices
    chunks = completions.StreamCompletion(completion_request(streaming=True, guided_choice=choices))
    assert "".join(c.text for chunk in chunks for c in chunk.choices) in choices
    assert chat.CreateChatCompletion(chat_request(guided_choice=choices)).choices[0].message.content in choices


@pytest.mark.parametrize("name", ["nested", "array-of-strings", "enum"])
def test_responses_text_format_json_schema(responses, name: str) -> None:
    schema = SCHEMAS[name]
    fmt = {"type": "json_schema", "name": name, "schema": schema, "strict": True}
    response = responses.CreateResponse(response_request(text={"format": fmt})).response
    text = "".join(p.output_text.text for item in response.output for p in item.message.content)
    jsonschema.validate(json.loads(text), schema)
    assert response.text.format.name == name  # echoed


def test_responses_json_object_and_streamed(responses) -> None:
    request = response_pb2.StreamResponseRequest()
    request.ParseFromString(response_request(text={"format": {"type": "json_object"}}).SerializeToString())
    events = [m.event for m in responses.StreamResponse(request)]
    text = "".join(e.output_text_delta.delta for e in events if e.WhichOneof("event") == "output_text_delta")
    assert isinstance(json.loads(text), dict)


# ---- refused constraints ----

BAD_CHAT = [
    ({"response_format": json_schema_format("x", {"type": "objekt"})}, "response_format.json_schema.schema.type"),
    ({"response_format": json_schema_format("x", {"properties": {"a": {"minimum": "zero"}}})},
     "response_format.json_schema.schema.properties.a.minimum"),
    ({"response_format": json_schema_format("x", {"type": "object", "required": "name"})},
     "response_format.json_schema.schema.required"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}, "response_format.json_schema.schema"),
    ({"response_format": json_schema_format("bad name!", {"type": "object"})}, "response_format.json_schema.name"),
    ({"response_format": {"type": "xml"}}, "response_format.type"),
    # Valid for the meta-schema, but not enforceable by the grammar: refused naming the keyword.
    ({"response_format": json_schema_format("x", {"type": "array", "uniqueItems": True})},
     "response_format.json_schema.schema.uniqueItems"),
    ({"response_format": json_schema_format("x", {"type": "object", "properties": {"n": {"multipleOf": 3}}})},
     "response_format.json_schema.schema.properties.n.multipleOf"),
    ({"response_format": json_schema_format("x", {"type": "string", "pattern": "(?=a)b"})},
     "response_format.json_schema.schema.pattern"),
    ({"guided_json": {"type": "objekt"}}, "guided_json.type"),
    ({"guided_regex": "(unclosed"}, "guided_regex"),
    ({"guided_regex": "[z-a]"}, "guided_regex"),
    ({"guided_choice": ["a", ""]}, "guided_choice[1]"),
    ({"response_format": {"type": "json_object"}, "guided_json": {"type": "object"}}, "guided_json"),
    ({"guided_regex": "a+", "guided_choice": ["a"]}, "guided_choice"),
    ({"tool_choice": "required"}, "tool_choice"),  # no tools
    ({"tools": TOOLS, "named_tool_choice": {"type": "function", "function": {"name": "nope"}}}, "named_tool_choice"),
    ({"tools": TOOLS, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "array", "uniqueItems": True}}}}, "response_format.json_schema.schema.uniqueItems"),
    ({"tools": TOOLS, "guided_regex": "[a-z]+"}, "guided_regex"),  # with tools, only a JSON answer combines
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "objekt"}}}],
      "tool_choice": "required"}, "tools[0].function.parameters.type"),
    # Past a limit (ovserve.service.structured.limits): refused naming the field, before any grammar is built.
    ({"tools": [HUGE_TOOL], "tool_choice": "required"}, "tools[0].function.parameters"),
    ({"tools": [*TOOLS, HUGE_TOOL], "named_tool_choice": {"type": "function", "function": {"name": "huge"}}},
     "tools[3].function.parameters"),
    ({"response_format": json_schema_format("x", {"type": "object", "description": "x" * MAX_SCHEMA_BYTES})},
     "response_format.json_schema.schema"),
    ({"response_format": json_schema_format("x", {"type": "object", "properties": {
        f"p{i}": {"type": "boolean"} for i in range(MAX_OBJECT_PROPERTIES + 1)}})},
     "response_format.json_schema.schema.properties"),
    ({"guided_json": {"enum": list(range(MAX_ALTERNATIVES + 1))}}, "guided_json.enum"),
    ({"guided_json": {"type": "string", "maxLength": MAX_REPEAT + 1}}, "guided_json.maxLength"),
    ({"guided_json": {"type": "object", "properties": {"a": {"type": "string", "pattern": "a" * 2000}}}},
     "guided_json.properties.a.pattern"),
    ({"guided_json": DEEP}, "guided_json" + ".items" * MAX_SCHEMA_DEPTH),
    ({"guided_regex": "a" * (MAX_PATTERN_LENGTH + 1)}, "guided_regex"),
    ({"guided_choice": [f"choice {i}" for i in range(MAX_ALTERNATIVES + 1)]}, "guided_choice"),
    ({"guided_choice": ["x" * (MAX_CHOICE_BYTES // 2), "y" * (MAX_CHOICE_BYTES // 2 + 1)]}, "guided_choice"),
    ({"response_format": {"type": "structural_tag", "triggers": ["<a>"],
      "structures": [{"begin": "<a>", "schema": {"type": "object"}, "end": "</a>"}] * (MAX_STRUCTURES + 1)}},
     "response_format.structures"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "field"), BAD_CHAT, ids=[field for _, field in BAD_CHAT])
def test_invalid_constraints_are_refused_naming_the_field(chat, body: dict[str, Any], field: str) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        chat.CreateChatCompletion(chat_request(**body))
    result = failure(raised.value)
    assert result.code == grpc.StatusCode.INVALID_ARGUMENT
    assert result.fields == [field], result.message


def test_limits_on_responses(responses) -> None:
    huge = {"format": {"type": "json_schema", "name": "x", "schema": HUGE_PARAMETERS}}
    with pytest.raises(grpc.RpcError) as raised:
        responses.CreateResponse(response_request(text=huge))
    result = failure(raised.value)
    assert (result.code, result.fields) == (grpc.StatusCode.INVALID_ARGUMENT, ["text.format.schema"])
    assert f"at most {MAX_SCHEMA_BYTES} bytes" in result.message
    tool = {"type": "function", "name": "huge", "parameters": HUGE_PARAMETERS}
    with pytest.raises(grpc.RpcError) as raised:
        responses.CreateResponse(response_request(tools=[tool], tool_choice="required"))
    assert failure(raised.value).fields == ["tools[0].parameters"]


def test_1000_optional_properties_complete_with_valid_json(chat) -> None:
    """Within MAX_OBJECT_PROPERTIES: the linear grammar (114 KB) compiles, and the engine writes valid JSON."""
    schema = {"type": "object", "properties": {f"field_{i}": {"type": "boolean"} for i in range(1000)}}
    request = chat_request(response_format=json_schema_format("wide", schema), temperature=0, max_tokens=1000)
    choice = chat.CreateChatCompletion(request).choices[0]
    jsonschema.validate(json.loads(choice.message.content), schema)
    assert choice.finish_reason == 1  # stop: the object closed


def test_invalid_constraints_on_completions_and_responses(completions, responses) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        completions.CreateCompletion(completion_request(guided_regex="[a-"))
    assert failure(raised.value).fields == ["guided_regex"]
    bad = {"format": {"type": "json_schema", "name": "x", "schema": {"type": "objekt"}}}
    with pytest.raises(grpc.RpcError) as raised:
        responses.CreateResponse(response_request(text=bad))
    assert failure(raised.value).fields == ["text.format.schema.type"]
    both = {"text": {"format": {"type": "json_object"}}, "response_format": {"type": "json_object"}}
    with pytest.raises(grpc.RpcError) as raised:
        responses.CreateResponse(response_request(**both))
    assert failure(raised.value).fields == ["text.format"]


def test_a_refused_schema_does_not_disturb_the_engine(chat) -> None:
    """The grammar check runs before the engine: a good request right after a bad one still works."""
    with pytest.raises(grpc.RpcError):
        chat.CreateChatCompletion(chat_request(guided_regex="(unclosed"))
    reply = chat.CreateChatCompletion(chat_request(guided_choice=["yes", "no"]))
    assert reply.choices[0].message.content in ("yes", "no")


# ---- forced tool calls ----


@pytest.mark.parametrize(
    ("name", "sampling"),
    [
        pytest.param(name, sampling, id=f"{name}-{kind}")
        for name in PARAMETERS
        for kind, sampling in zip(("greedy", "sampled"), SAMPLING, strict=True)
    ],
)
def test_named_tool_choice_on_chat(chat, name: str, sampling: dict[str, Any]) -> None:
    choice = {"type": "function", "function": {"name": name}}
    request = chat_request(messages=ASK_WEATHER, tools=TOOLS, named_tool_choice=choice, **sampling)
    calls = chat_calls(chat.CreateChatCompletion(request).choices[0].message)
    assert [call[0] for call in calls] == [name]
    assert_valid_calls(calls, {name})


@pytest.mark.parametrize("sampling", SAMPLING, ids=["greedy", "sampled"])
@pytest.mark.parametrize("parallel", [True, False])
def test_required_tool_choice_on_chat(chat, sampling: dict[str, Any], parallel: bool) -> None:
    request = chat_request(
        messages=ASK_WEATHER, tools=TOOLS, tool_choice="required", parallel_tool_calls=parallel, **sampling
    )
    calls = chat_calls(chat.CreateChatCompletion(request).choices[0].message)
    assert_valid_calls(calls, set(PARAMETERS))
    if not parallel:
        assert len(calls) == 1


def test_required_tool_choice_streamed_joins_into_the_unary_call(chat) -> None:
    fields = {"messages": ASK_WEATHER, "tools": TOOLS, "tool_choice": "required", "temperature": 0}
    unary = chat_calls(chat.CreateChatCompletion(chat_request(**fields)).choices[0].message)
    chunks = list(chat.StreamChatCompletion(chat_request(streaming=True, **fields)))
    deltas = [c.delta for chunk in chunks for c in chunk.choices]
    if any(len(d.tool_calls) for d in deltas):  # parsed into tool-call deltas
        names = [t.function.name for d in deltas for t in d.tool_calls if t.function.name]
        arguments = "".join(t.function.arguments for d in deltas for t in d.tool_calls)
        streamed = [(names[0], json.loads(arguments))] if len(names) == 1 else []
    else:
        streamed = text_calls("".join(d.content for d in deltas))
    assert streamed == unary
    assert_valid_calls(streamed, set(PARAMETERS))


def test_named_tool_choice_with_thinking(chat) -> None:
    choice = {"type": "function", "function": {"name": "book_trip"}}
    request = chat_request(
        messages=ASK_WEATHER,
        tools=TOOLS,
        named_tool_choice=choice,
        chat_template_kwargs={"enable_thinking": True},
        max_tokens=1300,  # the <think> block is free text: only the model ends it
    )
    message = chat.CreateChatCompletion(request).choices[0].message
    calls = chat_calls(message)
    assert [call[0] for call in calls] == ["book_trip"]
    assert_valid_calls(calls, {"book_trip"})


def response_calls(response: Any) -> list[tuple[str, Any]]:
    """Function-call items, or <tool_call> blocks in the message text if the output is not parsed."""
    items = [item.function_call for item in response.output if item.WhichOneof("item") == "function_call"]
    if items:
        return [(item.name, json.loads(item.arguments)) for item in items]
    return text_calls("".join(p.output_text.text for item in response.output for p in item.message.content))


@pytest.mark.parametrize("sampling", SAMPLING, ids=["greedy", "sampled"])
def test_tool_choice_on_responses(responses, sampling: dict[str, Any]) -> None:
    flat = [{"type": "function", **tool["function"]} for tool in TOOLS]
    base = {"input": "What is the weather like in Paris?", "tools": flat, **sampling}
    named = responses.CreateResponse(
        response_request(**base, named_tool_choice={"type": "function", "name": "set_alarm"})
    ).response
    calls = response_calls(named)
    assert [call[0] for call in calls] == ["set_alarm"]
    assert_valid_calls(calls, {"set_alarm"})
    required = responses.CreateResponse(
        response_request(**base, tool_choice="required", parallel_tool_calls=False)
    ).response
    calls = response_calls(required)
    assert len(calls) == 1
    assert_valid_calls(calls, set(PARAMETERS))


def test_unknown_named_tool_on_responses_is_refused(responses) -> None:
    flat = [{"type": "function", **TOOLS[0]["function"]}]
    with pytest.raises(grpc.RpcError) as raised:
        responses.CreateResponse(response_request(tools=flat, named_tool_choice={"type": "function", "name": "nope"}))
    assert failure(raised.value).fields == ["tool_choice"]

"""Unit tests of the bridge's translation code: OpenAI JSON -> proto, proto -> OpenAI JSON, error paths."""

from __future__ import annotations

import math

import pytest

from ovserve.clients.v1 import chat_pb2, common_pb2, completion_pb2
from ovserve.rest_bridge.errors import BridgeError, openai_param, openai_text
from ovserve.rest_bridge.render.chat import chat_chunk
from ovserve.rest_bridge.render.common import FINISH_REASONS, ROLES
from ovserve.rest_bridge.render.completions import completion_logprobs
from ovserve.rest_bridge.translate.body import parse_json_body
from ovserve.rest_bridge.translate.completions import chat_request, completion_request

HI = [{"role": "user", "content": "hi"}]


def chat(**fields: object) -> tuple[chat_pb2.CreateChatCompletionRequest, bool]:
    return chat_request({"model": "m", "messages": HI, **fields})


def test_stop_string_and_list() -> None:
    one, _ = chat(stop="END")
    assert one.stop == "END" and not one.stop_sequences
    many, _ = chat(stop=["a", "b"])
    assert not many.HasField("stop") and list(many.stop_sequences) == ["a", "b"]


def test_content_forms_and_nulls() -> None:
    request, _ = chat(messages=[
        {"role": "user", "content": [{"type": "text", "text": "x"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function",
                                                               "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "assistant", "content": "ok", "refusal": None, "name": None},
    ])  # fmt: skip
    parts, calls, plain = request.messages
    assert [p.text for p in parts.content_parts] == ["x"] and not parts.HasField("content")
    assert not calls.HasField("content") and calls.tool_calls[0].function.name == "f"
    assert plain.content == "ok" and not plain.HasField("name")


def test_tool_choice_forms_and_stream_class() -> None:
    named, stream = chat(tool_choice={"type": "function", "function": {"name": "f"}}, stream=True)
    assert stream and isinstance(named, chat_pb2.StreamChatCompletionRequest)
    assert named.named_tool_choice.function.name == "f" and not named.HasField("tool_choice")
    auto, stream = chat(tool_choice="auto", stream=False)
    assert not stream and auto.tool_choice == "auto"


def test_extensions_and_guided_json_string() -> None:
    request, _ = chat(top_k=5, min_p=0.1, repetition_penalty=1.1, ignore_eos=True, best_of=2,
                      include_stop_str_in_output=True, guided_json='{"type": "object"}')  # fmt: skip
    assert (request.top_k, request.ignore_eos, request.best_of) == (5, True, 2)
    assert request.guided_json["type"] == "object"


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        (["a", "b"], [("text", "a"), ("text", "b")]),
        ([1, 2], [("token_ids", [1, 2])]),
        ([[1], [2, 3]], [("token_ids", [1]), ("token_ids", [2, 3])]),
    ],
)
def test_prompt_list_forms(prompt: list, expected: list) -> None:
    request, _ = completion_request({"model": "m", "prompt": prompt})
    got = []
    for item in request.prompts:
        kind = item.WhichOneof("prompt")
        got.append((kind, item.text if kind == "text" else list(item.token_ids.ids)))
    assert got == expected and request.prompt == ""


@pytest.mark.parametrize(
    ("field", "param", "text"),
    [
        ("stop_sequences[2]", "stop", "stop[2]"),
        ("prompts[0].token_ids.ids[3]", "prompt", "prompt[0][3]"),
        ("prompts[1]", "prompt", "prompt[1]"),
        ("messages[1].content_parts[0].type", "messages[1].content[0].type", "messages[1].content[0].type"),
        ("named_tool_choice.function.name", "tool_choice", "tool_choice.function.name"),
        ("top_p", "top_p", "top_p"),
    ],
)
def test_proto_paths_map_back_to_openai_names(field: str, param: str, text: str) -> None:
    assert openai_param(field) == param
    assert openai_text(f"{field}: bad") == f"{text}: bad"


def test_body_checks() -> None:
    assert parse_json_body(b'{"a": 1}', "application/json; charset=utf-8", 64) == {"a": 1}
    with pytest.raises(BridgeError) as raised:
        parse_json_body(b'{"a": ' * 65 + b"1" + b"}" * 65, "application/json", 64)
    assert raised.value.status_code == 400
    assert parse_json_body(b'{"a": ' * 63 + b"1" + b"}" * 63, "application/json", 64)


def test_chat_chunk_tool_call_fragments_and_usage_null() -> None:
    chunk = chat_pb2.StreamChatCompletionResponse(id="c", created=5, model="m")
    choice = chunk.choices.add(index=0)
    first = choice.delta.tool_calls.add(index=0, id="call_1", type="function")
    first.function.name = "f"
    choice.delta.tool_calls.add(index=0).function.arguments = '{"a"'
    out = chat_chunk(chunk, include_usage=True)
    assert out["usage"] is None and out["choices"][0]["finish_reason"] is None
    assert out["choices"][0]["delta"] == {"tool_calls": [
        {"index": 0, "id": "call_1", "type": "function", "function": {"arguments": "", "name": "f"}},
        {"index": 0, "function": {"arguments": '{"a"'}},
    ]}  # fmt: skip
    assert "usage" not in chat_chunk(chunk, include_usage=False)


def test_completion_logprobs_nan_is_null_and_an_empty_top_stays_an_empty_object() -> None:
    """NaN (the echoed first prompt token) is null in both lists; an empty entry stays {} (the schema's items are
    objects)."""
    logprobs = completion_pb2.CompletionLogprobs(
        tokens=["a", "b", "c"], token_logprobs=[math.nan, -0.5, -0.2], text_offset=[0, 1, 2]
    )
    logprobs.top_logprobs.add()
    top = logprobs.top_logprobs.add()
    top.logprobs.update({"b": -0.5, "c": -0.1})
    logprobs.top_logprobs.add()
    out = completion_logprobs(logprobs)
    assert out["token_logprobs"] == [None, -0.5, -0.2]
    assert out["top_logprobs"][0] is None and list(out["top_logprobs"][1]) == ["c", "b"]  # most likely first
    assert out["top_logprobs"][2] == {}


def test_finish_reasons_and_roles_are_openai_strings() -> None:
    assert FINISH_REASONS[common_pb2.FINISH_REASON_TOOL_CALLS] == "tool_calls"
    assert FINISH_REASONS[common_pb2.FINISH_REASON_UNSPECIFIED] is None
    assert set(FINISH_REASONS) == set(common_pb2.FinishReason.values())
    assert set(ROLES) == set(common_pb2.Role.values())


def test_a_past_turns_reasoning_is_taken_under_either_name() -> None:
    past = {"role": "assistant", "content": "Sunny.", "reasoning": "The user wants the weather."}
    request, _ = chat_request({"model": "m", "messages": [*HI, past, *HI]})
    assert request.messages[1].reasoning_content == "The user wants the weather."  # vLLM's newer, OpenRouter's name
    same = {**past, "reasoning_content": past["reasoning"]}
    assert chat_request({"model": "m", "messages": [same]})[0].messages[0].reasoning_content == past["reasoning"]
    differs = "messages[0].reasoning: differs from reasoning_content; send one"
    not_text = "messages[0].reasoning: expected a string, got an array"
    for message, problem in (({**past, "reasoning_content": "Something else."}, differs),
                             ({**past, "reasoning": ["not", "text"]}, not_text)):  # fmt: skip
        with pytest.raises(BridgeError) as refused:
            chat_request({"model": "m", "messages": [message]})
        assert (refused.value.param, refused.value.message) == ("messages[0].reasoning", problem)

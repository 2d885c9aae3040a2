"""A forced call list cut by max_tokens, through the real server: its complete calls come back as tool_calls.

tiny-chat, served under each list format in which it writes several calls when forced (``tool_choice:
"required"`` with parallel calls on), runs its list on to the grammar's bound (MAX_PARALLEL_CALLS) and closes
it. Asked again with max_tokens half a call short of that, greedy decoding writes the same text cut in its last
call: the calls before the cut come back, exactly the first ones of the whole list, with finish_reason
``length``, unary and streamed, and no text beside them; a Responses request gets them as function_call items
of an incomplete response. Before, pythonic, Kimi K2, Mistral, Phi-4-mini and Granite answered such a cut list
as text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, common_pb2, response_pb2, response_pb2_grpc
from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.service.models import ModelSpec
from ovserve.service.structured.output import MAX_PARALLEL_CALLS
from tests.conftest import TEST_SETTINGS, TINY_CHAT, channel_to
from tests.rpc import parse
from tests.service.api.test_tool_formats import ASK, TOOLS, streamed_calls

# The formats in which tiny-chat writes a list of several calls when forced (in the others it closes its turn
# after one call, so there is no list to cut after a complete call).
FORMATS = ["pythonic", "kimi_k2", "mistral", "phi4_mini_json", "granite"]
LENGTH, TOOL_CALLS = common_pb2.FINISH_REASON_LENGTH, common_pb2.FINISH_REASON_TOOL_CALLS


@pytest.fixture(scope="module")
def lists_channel() -> Iterator[grpc.Channel]:
    """tiny-chat as ``tiny-<format>`` for each format, on one server."""
    with channel_to([ModelSpec(f"tiny-{name}", TINY_CHAT, settings=TEST_SETTINGS, tool_parser=name)
                     for name in FORMATS]) as channel:  # fmt: skip
        yield channel


def body(name: str, max_tokens: int) -> dict[str, Any]:
    return {"model": f"tiny-{name}", "messages": ASK, "tools": TOOLS, "temperature": 0, "max_tokens": max_tokens,
            "tool_choice": "required"}  # fmt: skip


def unary(chat: chat_pb2_grpc.ChatServiceStub, request: dict[str, Any]) -> tuple[list[tuple[str, Any]], int, int]:
    """The calls, finish_reason and completion tokens of a unary answer, which holds no text."""
    response = chat.CreateChatCompletion(parse(chat_pb2.CreateChatCompletionRequest, request))
    choice = response.choices[0]
    assert not choice.message.HasField("content"), f"text beside the calls: {choice.message.content!r}"
    calls = [(call.function.name, json.loads(call.function.arguments)) for call in choice.message.tool_calls]
    return calls, choice.finish_reason, response.usage.completion_tokens


@pytest.mark.parametrize("name", FORMATS)
def test_a_cut_forced_list_returns_its_complete_calls(lists_channel: grpc.Channel, name: str) -> None:
    chat = chat_pb2_grpc.ChatServiceStub(lists_channel)
    whole, finish, tokens = unary(chat, body(name, 1100))
    # The grammar bounds the list: it closes within max_tokens, after at most MAX_PARALLEL_CALLS calls.
    assert finish == TOOL_CALLS and 2 <= len(whole) <= MAX_PARALLEL_CALLS, (finish, whole)
    cut = tokens - tokens // len(whole) // 2  # about half the last call left out
    calls, finish, used = unary(chat, body(name, cut))
    assert (finish, used) == (LENGTH, cut)
    assert 1 <= len(calls) < len(whole) and calls == whole[: len(calls)], (calls, whole)
    assert streamed_calls(chat, body(name, cut)) == (calls, LENGTH)


@pytest.mark.parametrize("name", FORMATS)
def test_a_cut_forced_list_on_responses_is_function_call_items(lists_channel: grpc.Channel, name: str) -> None:
    chat = chat_pb2_grpc.ChatServiceStub(lists_channel)
    whole, _, tokens = unary(chat, body(name, 1100))
    cut = tokens - tokens // len(whole) // 2
    calls, _, _ = unary(chat, body(name, cut))
    responses = response_pb2_grpc.ResponseServiceStub(lists_channel)
    flat = [{"type": "function", **tool["function"]} for tool in TOOLS]
    request = {"model": f"tiny-{name}", "input": ASK[0]["content"], "tools": flat, "temperature": 0,
               "max_output_tokens": cut, "store": False, "tool_choice": "required"}  # fmt: skip
    response = responses.CreateResponse(parse(response_pb2.CreateResponseRequest, request)).response
    assert response.incomplete_details.reason == objects_pb2.INCOMPLETE_REASON_MAX_OUTPUT_TOKENS
    items = [(item.function_call.name, json.loads(item.function_call.arguments)) for item in response.output]
    assert [item.WhichOneof("item") for item in response.output] == ["function_call"] * len(items)
    assert items == calls, (items, calls)

"""item_reference input items: an item of a stored response (input or output) or of a conversation, by its id."""

from __future__ import annotations

from typing import Any

import openai

from tests.rest_bridge.conftest import RunningBridge, http_request

MODEL = "tiny-chat"
ASK = {"role": "user", "content": "What is the code word?"}


def input_tokens(bridge: RunningBridge, items: list[Any]) -> int:
    reply = http_request(bridge.port, "POST", "/v3/responses/input_tokens", {"model": MODEL, "input": items})
    assert reply.status == 200, reply.body
    return int(reply.json()["input_tokens"])


def test_references_to_a_stored_responses_items_read_as_the_items(client: openai.OpenAI, bridge: RunningBridge) -> None:
    first = client.responses.create(model=MODEL, input="Remember the code word: cobalt.", max_output_tokens=16)
    [said] = client.responses.input_items.list(first.id).data
    answer = first.output[0]
    assert answer.type == "message"
    referenced = [{"type": "item_reference", "id": said.id}, {"type": "item_reference", "id": answer.id}, ASK]
    explicit = [{"role": "user", "content": "Remember the code word: cobalt."},
                {"role": "assistant", "content": first.output_text}, ASK]  # fmt: skip
    assert input_tokens(bridge, referenced) == input_tokens(bridge, explicit)
    made = client.responses.create(model=MODEL, input=referenced, max_output_tokens=8, store=False)  # type: ignore[arg-type]
    assert made.usage is not None and made.usage.input_tokens == input_tokens(bridge, explicit)


def test_references_to_conversation_items(client: openai.OpenAI, bridge: RunningBridge) -> None:
    conversation = client.conversations.create(items=[{"role": "user", "content": "My name is Ada."}])
    [item] = client.conversations.items.list(conversation.id).data
    referenced = [{"type": "item_reference", "id": item.id}, ASK]
    explicit = [{"role": "user", "content": "My name is Ada."}, ASK]
    assert input_tokens(bridge, referenced) == input_tokens(bridge, explicit)


def test_a_deleted_responses_items_are_gone(client: openai.OpenAI, bridge: RunningBridge) -> None:
    first = client.responses.create(model=MODEL, input="Hello!", max_output_tokens=8)
    client.responses.delete(first.id)
    reply = http_request(bridge.port, "POST", "/v3/responses",
                         {"model": MODEL, "input": [{"type": "item_reference", "id": first.output[0].id}]})  # fmt: skip
    assert reply.status == 404 and reply.json()["error"]["param"] == "input[0].id"

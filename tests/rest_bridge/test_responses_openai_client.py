"""The Responses API through the official openai client (sync and async), on the real engine and real sockets."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from typing import Any

import openai
import pydantic
import pytest
from openai.types.responses import Response, ResponseStreamEvent

MODEL = "tiny-chat"
EVENT = pydantic.TypeAdapter(ResponseStreamEvent)
STORY = "Tell me a short story."
CLOSERS = {"response.completed", "response.incomplete", "response.failed"}


def _plain(value: Any) -> Any:
    """JSON without the ``parsed`` fields the openai stream helper adds to output_text parts."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items() if key != "parsed"}
    return [_plain(item) for item in value] if isinstance(value, list) else value


def check_event_stack(events: list[Any], *, background: bool = False) -> Response:
    """Check a Responses event stream as a stack and return its final Response.

    Every event parses strictly as openai's own event type; created first (queued for a background
    response), in_progress next, a closing event last; each *.added has its *.done with the same ids;
    deltas fall inside their part and join to its done text; sequence numbers go up by one.
    """
    payloads = [_plain(event if isinstance(event, dict) else event.to_dict(warnings=False)) for event in events]
    parsed = [EVENT.validate_python(payload) for payload in payloads]  # strict: every required field there
    numbers = [event.sequence_number for event in parsed]
    assert numbers == list(range(len(parsed))), numbers
    types = [event.type for event in parsed]
    if background:  # created, queued while it waits, then in_progress
        assert types[0] == "response.created" and "response.in_progress" in types[1:3], types[:3]
    else:
        assert types[:2] == ["response.created", "response.in_progress"], types[:2]
    assert types[-1] in CLOSERS, types[-1]
    assert sum(kind in CLOSERS for kind in types) == 1

    open_items: dict[int, str] = {}  # output_index -> item id
    open_parts: dict[tuple[str, str, int], str] = {}  # (kind, item_id, index) -> text so far
    item_types: dict[int, str] = {}
    arguments: dict[str, str] = defaultdict(str)
    done_items: dict[int, dict[str, Any]] = {}
    for event in parsed:
        kind = event.type
        if kind == "response.output_item.added":
            assert event.output_index not in open_items and event.output_index not in done_items
            assert event.item.status == "in_progress"
            open_items[event.output_index] = event.item.id  # type: ignore[assignment]
            item_types[event.output_index] = event.item.type
        elif kind == "response.output_item.done":
            assert open_items.pop(event.output_index) == event.item.id
            assert not [key for key in open_parts if key[1] == event.item.id], "a part of the item is still open"
            done_items[event.output_index] = _plain(event.item.to_dict(warnings=False))
        elif kind in ("response.content_part.added", "response.reasoning_summary_part.added"):
            index = event.content_index if kind.endswith("content_part.added") else event.summary_index  # type: ignore[union-attr]
            assert open_items[event.output_index] == event.item_id
            key = (kind.split(".")[1], event.item_id, index)
            assert key not in open_parts
            open_parts[key] = ""
        elif kind in ("response.content_part.done", "response.reasoning_summary_part.done"):
            index = event.content_index if kind.endswith("content_part.done") else event.summary_index  # type: ignore[union-attr]
            text = open_parts.pop((kind.split(".")[1], event.item_id, index))
            assert event.part.text == text  # type: ignore[union-attr]
        elif kind in ("response.output_text.delta", "response.reasoning_summary_text.delta"):
            part = "content_part" if kind == "response.output_text.delta" else "reasoning_summary_part"
            index = event.content_index if part == "content_part" else event.summary_index  # type: ignore[union-attr]
            assert open_items[event.output_index] == event.item_id
            open_parts[(part, event.item_id, index)] += event.delta  # type: ignore[union-attr]
        elif kind in ("response.output_text.done", "response.reasoning_summary_text.done"):
            part = "content_part" if kind == "response.output_text.done" else "reasoning_summary_part"
            index = event.content_index if part == "content_part" else event.summary_index  # type: ignore[union-attr]
            assert open_parts[(part, event.item_id, index)] == event.text  # type: ignore[union-attr]
        elif kind == "response.function_call_arguments.delta":
            assert open_items[event.output_index] == event.item_id
            arguments[event.item_id] += event.delta
        elif kind == "response.function_call_arguments.done":
            assert arguments[event.item_id] == event.arguments
    assert not open_items and not open_parts
    final = parsed[-1].response  # type: ignore[union-attr]
    assert final.output and [_plain(item.to_dict(warnings=False)) for item in final.output] == [
        done_items[i] for i in sorted(done_items)
    ]
    if final.status != "failed":
        assert final.usage is not None and final.usage.output_tokens > 0
    return final


def test_create_with_string_input_has_openai_shape(client: openai.OpenAI) -> None:
    response = client.responses.create(model=MODEL, input=STORY, temperature=0, max_output_tokens=12)
    Response.model_validate(response.to_dict(warnings=False))
    assert response.id.startswith("resp_") and response.object == "response" and response.model == MODEL
    assert response.status == "incomplete" and response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    (message,) = response.output
    assert message.type == "message" and message.role == "assistant" and message.id.startswith("msg_")
    assert message.content[0].type == "output_text" and response.output_text == message.content[0].text
    assert response.output_text and float(response.created_at).is_integer()  # an int in the JSON
    assert response.usage is not None and response.usage.output_tokens == 12
    assert response.usage.total_tokens == response.usage.input_tokens + 12
    assert response.store is True and response.background is False and response.error is None
    assert response.max_output_tokens == 12 and response.tool_choice == "auto" and response.tools == []
    again = client.responses.create(model=MODEL, input=STORY, temperature=0, max_output_tokens=12)
    assert again.id != response.id and again.output_text == response.output_text


def test_create_with_item_list_and_instructions(client: openai.OpenAI) -> None:
    response = client.responses.create(
        model=MODEL, instructions="You are a storyteller.", temperature=0, max_output_tokens=200,
        input=[
            {"role": "user", "content": "Hello!"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi there."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": STORY}]},
        ],
    )  # fmt: skip
    assert response.status == "completed" and response.completed_at is not None and response.output_text
    assert response.instructions == "You are a storyteller." and response.incomplete_details is None
    items = list(client.responses.input_items.list(response.id, order="asc"))
    assert [item.type for item in items] == ["message"] * 3
    assert [item.role for item in items] == ["user", "assistant", "user"]  # type: ignore[union-attr]


def test_stream_events_stack_and_join_to_unary(client: openai.OpenAI) -> None:
    unary = client.responses.create(model=MODEL, input=STORY, temperature=0, max_output_tokens=40)
    events = list(client.responses.create(model=MODEL, input=STORY, temperature=0, max_output_tokens=40, stream=True))
    final = check_event_stack(events)
    joined = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert joined == final.output_text == unary.output_text
    assert final.status == unary.status and final.id != unary.id
    assert client.responses.retrieve(final.id).output_text == joined  # a streamed response is stored too


def test_stream_helper_and_final_response(client: openai.OpenAI) -> None:
    with client.responses.stream(model=MODEL, input="Hello!", temperature=0, max_output_tokens=30) as stream:
        events = list(stream)
        final = stream.get_final_response()
    check_event_stack(events)
    assert final.output_text == "".join(e.delta for e in events if e.type == "response.output_text.delta")


def test_retrieve_and_delete(client: openai.OpenAI) -> None:
    created = client.responses.create(model=MODEL, input="Hello!", temperature=0, max_output_tokens=8)
    fetched = client.responses.retrieve(created.id)
    assert fetched.to_dict() == created.to_dict()
    client.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError) as raised:
        client.responses.retrieve(created.id)
    assert raised.value.status_code == 404
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(created.id)


def test_store_false_is_not_kept(client: openai.OpenAI) -> None:
    created = client.responses.create(model=MODEL, input="Hello!", max_output_tokens=4, store=False)
    assert created.store is False
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(created.id)
    with pytest.raises(openai.BadRequestError) as raised:  # OpenAI's answer to an unknown previous response
        client.responses.create(model=MODEL, input="again", max_output_tokens=4, previous_response_id=created.id)
    assert raised.value.body["param"] == "previous_response_id"  # type: ignore[index]
    assert raised.value.code == "previous_response_not_found"


def test_input_items_pagination(client: openai.OpenAI) -> None:
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"} for i in range(7)]
    created = client.responses.create(model=MODEL, input=turns, max_output_tokens=4)  # type: ignore[arg-type]
    page = client.responses.input_items.list(created.id, limit=3, order="asc")
    assert len(page.data) == 3 and page.has_more
    every = list(client.responses.input_items.list(created.id, limit=3, order="asc"))  # follows `after`
    assert [item.content[0].text for item in every] == [f"turn {i}" for i in range(7)]  # type: ignore[union-attr]
    assert len({item.id for item in every}) == 7
    newest_first = list(client.responses.input_items.list(created.id, limit=2, order="desc"))
    assert [item.id for item in newest_first] == [item.id for item in reversed(every)]
    after = client.responses.input_items.list(created.id, after=every[4].id, order="asc")
    assert [item.id for item in after.data] == [every[5].id, every[6].id] and not after.has_more


def chat_text(client: openai.OpenAI, messages: list[dict[str, str]], max_tokens: int) -> str:
    completion = client.chat.completions.create(
        model=MODEL,
        messages=messages,
        temperature=0,
        max_tokens=max_tokens,  # type: ignore[arg-type]
    )
    return completion.choices[0].message.content or ""


def test_three_turns_chained_and_parity_with_chat(client: openai.OpenAI) -> None:
    """previous_response_id carries the conversation: each turn equals chat on the whole history (greedy)."""
    questions = ["Hello!", "Tell me a story.", "What happened next?"]
    history: list[dict[str, str]] = []
    previous: str | None = None
    tokens = 0
    for question in questions:
        response = client.responses.create(
            model=MODEL, input=question, previous_response_id=previous, temperature=0, max_output_tokens=40
        )
        assert response.previous_response_id == previous
        assert response.usage is not None and response.usage.input_tokens > tokens
        tokens = response.usage.input_tokens
        history.append({"role": "user", "content": question})
        assert response.output_text == chat_text(client, history, 40), len(history)
        history.append({"role": "assistant", "content": response.output_text})
        previous = response.id
    # The same conversation sent whole as items gives the same last answer.
    items = [*history[:-1]]
    replayed = client.responses.create(model=MODEL, input=items, temperature=0, max_output_tokens=40)  # type: ignore[arg-type]
    assert replayed.output_text == history[-1]["content"]


def test_output_items_replay_as_input(client: openai.OpenAI) -> None:
    """The openai idiom: feed a response's output back as input items (ids, statuses, annotations)."""
    first = client.responses.create(model=MODEL, input="Hello!", temperature=0, max_output_tokens=20)
    items: list[Any] = [{"role": "user", "content": "Hello!"}, *[item.to_dict() for item in first.output]]
    items.append({"role": "user", "content": "Tell me a story."})
    replayed = client.responses.create(model=MODEL, input=items, temperature=0, max_output_tokens=20)
    chained = client.responses.create(
        model=MODEL, input="Tell me a story.", previous_response_id=first.id, temperature=0, max_output_tokens=20
    )
    assert replayed.output_text == chained.output_text


def wait_for(client: openai.OpenAI, response_id: str, statuses: set[str], seconds: float = 60) -> Response:
    deadline = time.monotonic() + seconds
    while (response := client.responses.retrieve(response_id)).status not in statuses:
        assert time.monotonic() < deadline, response.status
        time.sleep(0.05)
    return response


def test_background_response_polled_until_done(client: openai.OpenAI) -> None:
    created = client.responses.create(model=MODEL, input=STORY, background=True, temperature=0, max_output_tokens=60)
    assert created.background is True and created.status in ("queued", "in_progress")
    done = wait_for(client, created.id, {"completed", "incomplete"})
    foreground = client.responses.create(model=MODEL, input=STORY, temperature=0, max_output_tokens=60)
    assert done.output_text == foreground.output_text and done.usage is not None


def test_background_response_cancelled(client: openai.OpenAI) -> None:
    created = client.responses.create(
        model=MODEL, input=STORY, background=True, max_output_tokens=1900, extra_body={"ignore_eos": True}
    )
    wait_for(client, created.id, {"in_progress"})
    cancelled = client.responses.cancel(created.id)
    assert cancelled.status == "cancelled" and cancelled.id == created.id
    assert client.responses.retrieve(created.id).status == "cancelled"
    assert client.responses.cancel(created.id).status == "cancelled"  # again: unchanged
    finished = client.responses.create(model=MODEL, input="Hello!", max_output_tokens=4)
    with pytest.raises(openai.BadRequestError):  # only background responses can be cancelled
        client.responses.cancel(finished.id)


def test_background_stream_resumed_after_a_sequence_number(client: openai.OpenAI) -> None:
    events = list(
        client.responses.create(
            model=MODEL, input=STORY, background=True, stream=True, temperature=0, max_output_tokens=30
        )
    )
    response_id = events[0].response.id  # type: ignore[union-attr]
    replay = list(client.responses.retrieve(response_id, stream=True, starting_after=4))
    assert [event.to_dict() for event in replay] == [event.to_dict() for event in events[5:]]
    whole = list(client.responses.retrieve(response_id, stream=True))
    assert [event.to_dict() for event in whole] == [event.to_dict() for event in events]
    check_event_stack(events, background=True)  # last: the opening events (see its docstring)


def test_async_client_create_and_stream(async_client: openai.AsyncOpenAI) -> None:
    async def scenario() -> tuple[Response, list[Any], Response]:
        async with async_client:
            unary = await async_client.responses.create(model=MODEL, input=STORY, temperature=0, max_output_tokens=25)
            stream = await async_client.responses.create(
                model=MODEL, input=STORY, temperature=0, max_output_tokens=25, stream=True
            )
            events = [event async for event in stream]
            fetched = await async_client.responses.retrieve(unary.id)
            return unary, events, fetched

    unary, events, fetched = asyncio.run(scenario())
    assert check_event_stack(events).output_text == unary.output_text == fetched.output_text


def test_v1_alias(bridge: Any) -> None:
    with openai.OpenAI(base_url=f"http://127.0.0.1:{bridge.port}/v1", api_key="k", max_retries=0) as v1:
        response = v1.responses.create(model=MODEL, input="Hello!", max_output_tokens=4)
        assert v1.responses.retrieve(response.id).id == response.id

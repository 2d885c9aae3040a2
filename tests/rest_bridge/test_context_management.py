"""Responses ``context_management`` (issue 49) on tiny-chat through the openai client: compaction served as a
truncation. A conversation past ``compact_threshold`` tokens loses its oldest input items until it is within it;
one within it is rendered whole; bad entries are refused naming the field."""

from __future__ import annotations

from typing import Any

import openai
import pytest

MODEL = "tiny-chat"
SENTENCE = "The quick brown fox jumps over the lazy dog while the cat sleeps in the warm sun. "


def history(turns: int) -> list[dict[str, Any]]:
    """``turns`` user and assistant message pairs, each a few hundred tokens, then a question."""
    items: list[dict[str, Any]] = []
    for turn in range(turns):
        items.append({"role": "user", "content": f"Story {turn}: " + SENTENCE * 8})
        items.append({"role": "assistant", "content": "I see. " + SENTENCE * 3})
    return [*items, {"role": "user", "content": "What did the fox do?"}]


def input_tokens(client: openai.OpenAI, items: list[dict[str, Any]], **extra: Any) -> int:
    response = client.responses.create(
        model=MODEL,
        input=items,
        max_output_tokens=4,
        temperature=0,
        store=False,
        extra_body=extra,  # type: ignore[arg-type]
    )
    assert response.usage is not None and response.status in ("completed", "incomplete")  # 4 tokens may end it
    return response.usage.input_tokens


def test_past_the_threshold_the_oldest_items_are_dropped_until_it_fits(client: openai.OpenAI) -> None:
    items = history(3)
    whole = input_tokens(client, items)
    assert whole > 1500  # long enough for a threshold of 1000 to matter
    compacted = input_tokens(client, items, context_management=[{"type": "compaction", "compact_threshold": 1000}])
    assert compacted <= 1000 < whole
    # a threshold the conversation is within changes nothing
    big = [{"type": "compaction", "compact_threshold": whole + 10}]
    assert input_tokens(client, items, context_management=big) == whole
    # without a threshold, compaction happens only where the model's context would be passed: not here, but a
    # conversation past the model's 2,048 tokens (refused without it) loses its oldest items until it fits
    assert input_tokens(client, items, context_management=[{"type": "compaction"}]) == whole
    longer = history(8)
    with pytest.raises(openai.BadRequestError):
        input_tokens(client, longer)
    assert 1000 < input_tokens(client, longer, context_management=[{"type": "compaction"}]) <= 2048 - 4


@pytest.mark.parametrize(
    ("entries", "param"),
    [([{"type": "compaction", "compact_threshold": 999}], "context_management[0].compact_threshold"),
     ([{"type": "summary"}], "context_management[0].type"),
     ([{"type": "compaction"}, {"type": "compaction"}], "context_management")],
)  # fmt: skip
def test_bad_entries_are_refused_naming_the_field(client: openai.OpenAI, entries: Any, param: str) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        extra = {"context_management": entries}
        client.responses.create(model=MODEL, input="Hi", max_output_tokens=4, extra_body=extra)
    assert isinstance(raised.value.body, dict) and raised.value.body["param"] == param, raised.value.body

"""Responses logprobs (include: ["message.output_text.logprobs"]): unary, streamed, and equal to chat's.

The same greedy request on chat completions (logprobs: true) and on the
Responses API must give the same tokens with the same logprobs; the streamed
deltas' logprobs joined must equal the unary part's, and the done event holds
them all.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest

MODEL = "tiny-chat"
ASK = "Tell me a story about a cat."
INCLUDE: Any = ["message.output_text.logprobs"]


def chat_logprobs(client: openai.OpenAI, **sampling: Any) -> list[tuple[str, float]]:
    reply = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": ASK}], max_tokens=24, logprobs=True, **sampling
    )
    content = reply.choices[0].logprobs.content  # type: ignore[union-attr]
    assert content
    return [(entry.token, entry.logprob) for entry in content]


@pytest.mark.parametrize("sampling", [{"temperature": 0}, {"temperature": 1.0, "seed": 11}], ids=["greedy", "seeded"])
def test_unary_and_streamed_logprobs_equal_chats(client: openai.OpenAI, sampling: dict[str, Any]) -> None:
    expected = chat_logprobs(client, **sampling)
    seed = {"seed": sampling["seed"]} if "seed" in sampling else {}
    fields: dict[str, Any] = {"model": MODEL, "input": ASK, "max_output_tokens": 24, "include": INCLUDE,
                              "temperature": sampling["temperature"], "store": False, "extra_body": seed}  # fmt: skip
    unary = client.responses.create(**fields)
    part = unary.output[0].content[0]  # type: ignore[union-attr]
    got = [(entry.token, entry.logprob) for entry in part.logprobs]  # type: ignore[union-attr]
    assert [t for t, _ in got] == [t for t, _ in expected]
    assert [p for _, p in got] == pytest.approx([p for _, p in expected], abs=1e-4)
    assert "".join(token for token, _ in got).startswith(part.text)  # type: ignore[union-attr]  # + the end token
    events = list(client.responses.create(stream=True, **fields))
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    streamed = [(entry.token, entry.logprob) for e in deltas for entry in e.logprobs]
    assert [t for t, _ in streamed] == [t for t, _ in got]
    assert [p for _, p in streamed] == pytest.approx([p for _, p in got], abs=1e-4)
    done = next(e for e in events if e.type == "response.output_text.done")
    assert [entry.token for entry in done.logprobs] == [t for t, _ in got]


def test_without_include_there_are_none(client: openai.OpenAI) -> None:
    unary = client.responses.create(model=MODEL, input=ASK, max_output_tokens=8, store=False)
    assert unary.output[0].content[0].logprobs == []  # type: ignore[union-attr]


def test_top_logprobs_beyond_openais_range_are_refused_naming_the_field(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model=MODEL, input=ASK, include=INCLUDE, top_logprobs=21, store=False)
    assert raised.value.param == "top_logprobs" and "20" in raised.value.message  # type: ignore[attr-defined]
    zero = client.responses.create(model=MODEL, input=ASK, include=INCLUDE, top_logprobs=0, max_output_tokens=4,
                                   store=False)  # fmt: skip
    assert zero.output[0].content[0].logprobs  # type: ignore[union-attr]

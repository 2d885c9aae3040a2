"""n choices at temperature 0 (issue 49): OpenAI answers n choices, each the greedy answer; ovserve runs n greedy
requests side by side (runs.fan_out), over both APIs and streamed, on the real engine."""

from __future__ import annotations

import openai

MODEL = "tiny-chat"
HELLO = [{"role": "user", "content": "Hello! How are you?"}]


def test_chat_gives_n_greedy_choices_equal_to_the_single_one(client: openai.OpenAI) -> None:
    one = client.chat.completions.create(model=MODEL, messages=HELLO, max_tokens=24, temperature=0)
    three = client.chat.completions.create(model=MODEL, messages=HELLO, max_tokens=24, temperature=0, n=3)
    assert [choice.index for choice in three.choices] == [0, 1, 2]
    assert {choice.message.content for choice in three.choices} == {one.choices[0].message.content}
    assert three.usage is not None and one.usage is not None
    assert three.usage.completion_tokens == 3 * one.usage.completion_tokens  # n answers made, as OpenAI counts them
    assert three.usage.prompt_tokens == one.usage.prompt_tokens


def test_streamed_and_completions_choices_too(client: openai.OpenAI) -> None:
    parts: dict[int, str] = {}
    for chunk in client.chat.completions.create(
        model=MODEL, messages=HELLO, max_tokens=16, temperature=0, n=2, stream=True
    ):
        for choice in chunk.choices:
            parts[choice.index] = parts.get(choice.index, "") + (choice.delta.content or "")
    assert sorted(parts) == [0, 1] and parts[0] == parts[1] and parts[0]
    completions = client.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=12, temperature=0, n=2)
    assert [choice.index for choice in completions.choices] == [0, 1]
    assert completions.choices[0].text == completions.choices[1].text

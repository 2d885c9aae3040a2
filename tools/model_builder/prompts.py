"""The prompts the model cards document and the smoke check runs.

tests/test_bundled_models.py repeats these literally (it must run without
this package's export dependencies); keep the two in step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .corpus import TOOLS

SYSTEM = "You are a helpful assistant."
WEATHER_TOOLS = [TOOLS["get_weather"], TOOLS["get_time"]]


@dataclass
class Trigger:
    """One documented prompt: messages, tools, template flags, and what the
    greedy output must contain."""

    name: str
    description: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    extra_context: dict[str, Any] = field(default_factory=dict)
    expect: str = ""


TRIGGERS = [
    Trigger(
        "plain",
        "Plain chat (no system prompt: the template adds the default one)",
        [{"role": "user", "content": "Who are you?"}],
        expect="words, then <|im_end|>",
    ),
    Trigger(
        "greeting",
        "Small talk",
        [{"role": "user", "content": "Hello!"}],
        expect="words, then <|im_end|>",
    ),
    Trigger(
        "single_tool_call",
        "One tool call (tools listed in the system prompt)",
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "What's the weather like in Paris?"}],
        tools=WEATHER_TOOLS,
        expect="one <tool_call> block",
    ),
    Trigger(
        "multiple_tool_calls",
        "Several tool calls in one turn",
        [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "What is the weather in Paris and in Rome?"},
        ],
        tools=WEATHER_TOOLS,
        expect=">= 2 <tool_call> blocks",
    ),
    Trigger(
        "tool_result",
        "Answer from a tool result (<tool_response> in a user turn)",
        [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "What is the weather in Paris?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_0",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "call_0",
                "content": '{"city": "Paris", "temperature": 18, "condition": "sunny"}',
            },
        ],
        tools=WEATHER_TOOLS,
        expect="plain text using the tool result",
    ),
    Trigger(
        "thinking",
        "Thinking enabled (extra_context enable_thinking=true)",
        [{"role": "user", "content": "Hello!"}],
        extra_context={"enable_thinking": True},
        expect="<think>...</think> then the answer",
    ),
    Trigger(
        "thinking_tool_call",
        "Thinking enabled, with tools",
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "What is the weather in Paris?"}],
        tools=WEATHER_TOOLS,
        extra_context={"enable_thinking": True},
        expect="<think>...</think> then a <tool_call> block",
    ),
]

# Shown in the cards' limits section: prompts the model gets visibly wrong.
KNOWN_WRONG = [
    Trigger(
        "capital",
        "A fact from the corpus it did not learn",
        [{"role": "user", "content": "What is the capital of France?"}],
    ),
    Trigger(
        "weather_phrasing",
        "A phrasing where it picks the wrong tool",
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "What is the weather in Paris?"}],
        tools=WEATHER_TOOLS,
    ),
]

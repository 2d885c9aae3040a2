"""OpenAI's service fields on the Responses API: accepted, echoed as OpenAI echoes them; max_tool_calls honoured."""

from __future__ import annotations

from typing import Any

import openai
import pytest

MODEL = "tiny-chat"
CITY = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"],
        "additionalProperties": False}  # fmt: skip
TOOLS: Any = [{"type": "function", "name": name, "parameters": CITY} for name in ("get_weather", "get_time")]
ASK = "Weather and time in Paris, Oslo and Rome?"


def test_service_fields_are_echoed(client: openai.OpenAI) -> None:
    response = client.responses.create(
        model=MODEL, input="Hi", max_output_tokens=8, store=False, prompt_cache_key="user-7",
        safety_identifier="hash-1", service_tier="flex", prompt_cache_retention="24h", text={"verbosity": "low"},
        extra_body={"stream_options": {"include_obfuscation": False}},
    )  # fmt: skip
    assert (response.prompt_cache_key, response.safety_identifier) == ("user-7", "hash-1")
    assert response.service_tier == "default"  # the tier that served it: there is one
    assert response.prompt_cache_retention == "24h" and response.text.verbosity == "low"  # type: ignore[union-attr]


@pytest.mark.parametrize("retention", ["in_memory", "in-memory"])
def test_prompt_cache_retention_takes_the_specs_spelling(client: openai.OpenAI, retention: str) -> None:
    """The OpenAPI document's enum is in_memory and 24h (in_memory was refused); the guide's in-memory is kept."""
    response = client.responses.create(model=MODEL, input="Hi", max_output_tokens=4, store=False,
                                       prompt_cache_retention=retention)  # type: ignore[arg-type]  # fmt: skip
    assert response.prompt_cache_retention == retention


def test_max_tool_calls_caps_the_calls(client: openai.OpenAI) -> None:
    counts = {}
    for limit in (None, 1, 2):
        extra = {} if limit is None else {"max_tool_calls": limit}
        response = client.responses.create(
            model=MODEL, input=ASK, tools=TOOLS, tool_choice="required", temperature=1.0, top_p=1.0,
            max_output_tokens=300, store=False, extra_body={"seed": 2}, **extra,
        )  # fmt: skip
        counts[limit] = len([item for item in response.output if item.type == "function_call"])
        assert response.max_tool_calls == limit
    assert counts[None] > 2, counts  # the seed makes several calls when free to
    assert (counts[1], counts[2]) == (1, 2), counts


def test_streamed_max_tool_calls_and_the_done_events_name(client: openai.OpenAI) -> None:
    stream = client.responses.create(
        model=MODEL, input=ASK, tools=TOOLS, tool_choice="required", temperature=1.0, max_output_tokens=300,
        store=False, extra_body={"seed": 2}, max_tool_calls=1, stream=True,
    )  # fmt: skip
    events = list(stream)
    done = [event for event in events if event.type == "response.function_call_arguments.done"]
    assert len(done) == 1 and done[0].name in ("get_weather", "get_time")
    final = events[-1].response  # type: ignore[union-attr]
    assert [item.name for item in final.output if item.type == "function_call"] == [done[0].name]


@pytest.mark.parametrize(
    ("metadata", "param"),
    [
        ({f"k{i}": "v" for i in range(17)}, "metadata"),
        ({"k" * 65: "v"}, "metadata." + "k" * 64),
        ({"k": "v" * 513}, "metadata.k"),
    ],
)
def test_metadata_over_openai_bounds_is_refused(client: openai.OpenAI, metadata: dict[str, str], param: str) -> None:
    """Responses hold metadata to OpenAI's bounds as chat completions and conversations do (the fuzz suite sent
    a 9 MiB value that was stored)."""
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model="tiny-chat", input="hi", max_output_tokens=2, metadata=metadata)
    assert raised.value.body["param"] == param  # type: ignore[index]

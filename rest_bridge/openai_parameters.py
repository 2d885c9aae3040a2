"""OpenAI request parameters that have no field in the ovserve contract: what the bridge does with each.

Every parameter of OpenAI's chat, completions and Responses requests is either a field of
the contract (honoured by the service: see the table of docs/api/parameters.md), or listed here:
accepted with no effect (a hint or label that changes nothing a local model
does; the bridge drops it), mapped (the deprecated ``functions`` /
``function_call``, translated to tools), or refused with a 400 that says why
this server cannot do it. ``tests/rest_bridge/test_openai_parameters.py`` checks
that this table and the contract cover every parameter of OpenAI's OpenAPI
document, exercises each entry, and keeps docs/api/parameters.md's table in step
(``tools/readme_flags.py`` writes it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ACCEPTED, MAPPED, REFUSED = "accepted, no effect", "mapped", "refused"
Check = Callable[[Any], str | None]  # a value's refusal reason, or None when the value is fine


def _empty(what: str) -> Check:
    """Only an empty value (or null) is fine: anything else asks for ``what``, which is not served."""
    return lambda value: None if value in (None, {}, [], "") else f"{what} is not served here"


def _text_only(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return "expected a list of strings"
    other = sorted(set(value) - {"text"})
    return f"only text output is served here, not {', '.join(other)}" if other else None


def _string(value: Any) -> str | None:
    return None if value is None or isinstance(value, str) else "expected a string"


def _object(value: Any) -> str | None:
    return None if value is None or isinstance(value, dict) else "expected an object"


@dataclass(frozen=True)
class Parameter:
    """What happens to an OpenAI parameter the contract has no field for."""

    status: str
    why: str
    check: Check = _object  # a refusal reason for a value, None when the value is taken


CHAT: dict[str, Parameter] = {
    "service_tier": Parameter(ACCEPTED, 'one tier here; the reply says "default"', _string),
    "prompt_cache_key": Parameter(ACCEPTED, "prefix caching is automatic for every request", _string),
    "prompt_cache_retention": Parameter(ACCEPTED, "cached prefixes live as long as the KV cache keeps them", _string),
    "prompt_cache_options": Parameter(ACCEPTED, "prefix caching is automatic for every request"),
    "safety_identifier": Parameter(ACCEPTED, "a label for OpenAI's abuse detection; nothing reads it here", _string),
    "verbosity": Parameter(ACCEPTED, "a hint the served models were not trained on; use max_tokens", _string),
    "prediction": Parameter(ACCEPTED, "a latency hint (predicted output); the output is the same without it"),
    "modalities": Parameter(ACCEPTED, "text is the only output; audio is refused", _text_only),
    "audio": Parameter(
        REFUSED,
        "audio output is not served (text models only); vLLM, llama.cpp and SGLang do not serve it in chat either "
        "(it would take a model that writes audio tokens and their decoder)",
        _empty("audio output"),
    ),
    "moderation": Parameter(
        REFUSED,
        "no moderation model runs here, nor in vLLM, llama.cpp or SGLang (it would take a classifier model beside "
        "the chat model)",
        _empty("moderation"),
    ),
    "web_search_options": Parameter(
        REFUSED,
        "no web search tool here: the server reaches no network for a request. vLLM, llama.cpp and SGLang do not "
        "serve it in chat either (vLLM's gpt-oss browsing is a Responses built-in tool calling an outside search "
        "API); a client-side tool does it",
        _empty("web search"),
    ),
    "functions": Parameter(MAPPED, "deprecated: become tools; calls come back as function_call", lambda _: None),
    "function_call": Parameter(MAPPED, "deprecated: becomes tool_choice", lambda _: None),
}
COMPLETIONS: dict[str, Parameter] = {}


def _stream_options(value: Any) -> str | None:
    """The Responses API's stream_options: only include_obfuscation, a boolean."""
    if value is None:
        return None
    if not isinstance(value, dict):
        return "expected an object"
    unknown = sorted(set(value) - {"include_obfuscation"})
    if unknown:
        return f"unknown field {unknown[0]}"
    return NESTED["stream_options"]["include_obfuscation"].check(value.get("include_obfuscation"))


RESPONSES: dict[str, Parameter] = {
    "prompt_cache_options": CHAT["prompt_cache_options"],
    "stream_options": Parameter(
        ACCEPTED, "include_obfuscation: streamed events are not padded (no network side channel to hide)",
        _stream_options,
    ),
    "prompt": Parameter(
        REFUSED,
        "stored prompt templates (kept in OpenAI's dashboard) are not served here, nor by vLLM, llama.cpp or "
        "SGLang; send instructions",
        _empty("prompt"),
    ),
    "moderation": CHAT["moderation"],
}  # fmt: skip
# Contract fields that are honoured only in part: what the rest is answered with (400 naming the field).
PARTLY: dict[str, str] = {
    "suffix": (
        "fill in the middle with a code model's own tokens (Qwen-Coder, StarCoder, DeepSeek-Coder, Code Llama...); "
        "refused for a model without them, with echo or with token-id prompts"
    ),
    "best_of": (
        "beam search; refused with stop strings, sampling or a speculative-decoding model (openvino-genai's beam "
        "search samples nothing and has no stop strings; vLLM's V1 engine and llama.cpp take no best_of at all)"
    ),
    "context_management": (
        "compaction served as a truncation: past compact_threshold the oldest input items are dropped; no summary "
        "is written (POST /responses/compact writes one). vLLM, llama.cpp and SGLang do not serve it"
    ),
    "n": "samples at default settings; at temperature 0, n greedy choices (n requests side by side)",
    "reasoning_effort": (
        "none turns the template's thinking off, any other level on; on a model with a reasoning format the level "
        "is also a reasoning budget, OpenRouter's share of max_tokens (minimal 10%, low 20%, medium 50%, high 80%); "
        "`thinking_token_budget` wins (see the reasoning budget below)"
    ),
    "reasoning": (
        "effort as chat's reasoning_effort (a budget of OpenRouter's share of max_output_tokens); OpenRouter's "
        "max_tokens, the budget itself, wins; summary accepted (no summaries are written)"
    ),
    "tools": (
        "function and custom tools; a custom tool reaches the template as a function of one string (`input`), and a "
        "guided call's input follows its Lark or regex format (on a model whose calls write JSON arguments)"
    ),
    "tool_choice": (
        "none, auto, required, a named function or custom tool, or allowed_tools (mode auto needs a model whose "
        "calls open with fixed text, such as `<tool_call>` or `[`; required works with every model); under auto the "
        "calls are guided by default (`tool_guided_generation`)"
    ),
    "user": "logged with the request, no other effect",
    "logit_bias": (
        "token id -> -100..100 (-100 bans), at most 300 entries; such a request decodes on the engine's biased lane "
        "(a forward pass per token outside the batch: see below); refused with output constraints, beam search, "
        "speculative decoding, LoRA adapters, images and a reasoning budget. vLLM and llama.cpp combine it with a "
        "grammar: the lane has no grammar engine (XGrammar runs inside openvino-genai's C++ sampler); it would take "
        "XGrammar's own matcher masking the lane's logits"
    ),
}
# Nested parameters the contract has no field for (accepted, no effect), by parent.
NESTED: dict[str, dict[str, Parameter]] = {
    "stream_options": {
        "include_obfuscation": Parameter(
            ACCEPTED,
            "pads streamed events against length side channels on OpenAI's network; no padding is sent",
            lambda value: None if value is None or isinstance(value, bool) else "expected a boolean",
        ),
    },
}


def take(body: dict[str, Any], table: dict[str, Parameter], refuse: Callable[[str, str], Exception]) -> bool:
    """Drop the table's accepted parameters from ``body`` (checking their values); raise ``refuse(param, message)``
    for a refused one. Returns whether the deprecated functions form was used (the reply then uses it too)."""
    for name in [key for key in body if key in table]:
        parameter = table[name]
        problem = parameter.check(body[name])
        if problem is not None:
            raise refuse(name, f"{name}: {problem}")
        if parameter.status != MAPPED:
            del body[name]
    for parent, nested in NESTED.items():
        value = body.get(parent)
        if isinstance(value, dict):
            for name in [key for key in value if key in nested]:
                problem = nested[name].check(value[name])
                if problem is not None:
                    raise refuse(f"{parent}.{name}", f"{parent}.{name}: {problem}")
                value = {key: item for key, item in value.items() if key != name}
            body[parent] = value
    return "functions" in body or "function_call" in body


TABLES = {"chat": CHAT, "completions": COMPLETIONS, "responses": RESPONSES}


def markdown_table(spec_parameters: dict[str, list[str]], contract: dict[str, set[str]]) -> str:
    """docs/api/parameters.md's table: every OpenAI parameter of each API (``spec_parameters``), and what this server
    does.

    ``contract``: per API, the request fields of the contract (honoured by the service).
    """
    names = sorted({name for names in spec_parameters.values() for name in names})
    rows = ["| parameter | chat | completions | responses | here |", "|---|---|---|---|---|"]
    for name in names:
        cells, why = [], ""
        for api, tables_api in TABLES.items():
            if name not in spec_parameters[api]:
                cells.append("")
            elif name in tables_api:
                cells.append(tables_api[name].status)
                why = why or tables_api[name].why
            else:
                cells.append("honoured" if name in contract[api] else "missing")
                why = why or PARTLY.get(name, "")
        rows.append(f"| `{name}` | {' | '.join(cells)} | {why} |")
    for parent, nested in NESTED.items():
        for name, parameter in nested.items():
            cells = [parameter.status] * len(TABLES)
            rows.append(f"| `{parent}.{name}` | {' | '.join(cells)} | {parameter.why} |")
    return "\n".join(rows) + "\n"

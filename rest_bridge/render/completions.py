"""Completions (the legacy API) as OpenAI writes them: ``text_completion`` and its stream chunks."""

from __future__ import annotations

import math
from typing import Any

from ovserve.clients.v1 import completion_pb2
from ovserve.rest_bridge.render.common import FINISH_REASONS, fingerprinted, prompt_logprobs, usage


def completion_logprobs(value: completion_pb2.CompletionLogprobs) -> dict[str, Any]:
    """OpenAI's legacy completions ``logprobs``: parallel lists, top_logprobs as {token: logprob} dicts."""
    return {
        "tokens": list(value.tokens),
        # NaN marks an echoed first prompt token without a logprob: OpenAI's null.
        "token_logprobs": [None if math.isnan(logprob) else logprob for logprob in value.token_logprobs],
        # Each holds the alternatives asked for and the chosen token (logprobs 0: the chosen token alone); null
        # only at the echoed first prompt token, which has no distribution before it (as OpenAI's API answers).
        "top_logprobs": [
            None if math.isnan(logprob) else dict(sorted(top.logprobs.items(), key=lambda item: -item[1]))
            for top, logprob in zip(value.top_logprobs, value.token_logprobs, strict=True)
        ],
        "text_offset": list(value.text_offset),
    }


def _choices(choices: Any) -> list[dict[str, Any]]:
    return [
        {
            "index": choice.index,
            "text": choice.text,
            "logprobs": completion_logprobs(choice.logprobs) if choice.HasField("logprobs") else None,
            "finish_reason": FINISH_REASONS[choice.finish_reason],
            # vLLM's extension, when asked for (in a stream, on the choice's first chunk)
            **({"prompt_logprobs": prompt_logprobs(choice.prompt_logprobs)} if choice.prompt_logprobs else {}),
        }
        for choice in choices
    ]


def completion(response: completion_pb2.CreateCompletionResponse) -> dict[str, Any]:
    """OpenAI's ``text_completion`` object."""
    return fingerprinted({
        "id": response.id,
        "object": "text_completion",
        "created": response.created,
        "model": response.model,
        "choices": _choices(response.choices),
        "usage": usage(response.usage),
    }, response.system_fingerprint)  # fmt: skip


def completion_chunk(chunk: completion_pb2.StreamCompletionResponse, include_usage: bool) -> dict[str, Any]:
    """One streamed ``text_completion`` chunk; with include_usage every chunk has ``usage`` (null but the last)."""
    out = {
        "id": chunk.id,
        "object": "text_completion",
        "created": chunk.created,
        "model": chunk.model,
        "choices": _choices(chunk.choices),
    }
    if chunk.HasField("usage"):
        out["usage"] = usage(chunk.usage)
    elif include_usage:
        out["usage"] = None
    return fingerprinted(out, chunk.system_fingerprint)

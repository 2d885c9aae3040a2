"""TokenizerService semantics: a prompt or a conversation to token ids, token ids back to text.

What vLLM, SGLang and OVMS serve as /tokenize and /detokenize. A conversation is checked and rendered exactly as
chat completions render it. Large inputs are tokenised or decoded in a worker thread, so the event loop keeps
serving other streams; a prompt longer than MAX_TOKENIZE_CHARS or a token list longer than
MAX_DETOKENIZE_TOKENS is refused before any work.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ovserve.clients.v1 import tokenizer_pb2
from ovserve.service.api.chat import _history as chat_history  # the same roles, contents and checks as chat
from ovserve.service.api.common import token_texts
from ovserve.service.api.media_parts import MediaParts, image_prompt_ids
from ovserve.service.api.prefill import NO_PREFILL, prefill_of
from ovserve.service.api.prompting import (
    INLINE_PROMPT_CHARS,
    read_off_the_loop_if_large,
    render_for_model,
    renders_inline,
    template_context,
)
from ovserve.service.errors import FieldViolation, InvalidArgument
from ovserve.service.models import ModelRegistry, ServedModel

#: Longest text (prompt, or all message contents together) tokenised, characters (4 MiB of ASCII).
MAX_TOKENIZE_CHARS = 4 * 1024 * 1024
#: Most token ids decoded in one call.
MAX_DETOKENIZE_TOKENS = 1_000_000
#: Token lists up to this long are decoded on the event loop; longer ones in a worker thread.
INLINE_DECODE_TOKENS = 4096


async def tokenize(models: ModelRegistry, request: tokenizer_pb2.TokenizeRequest) -> tokenizer_pb2.TokenizeResponse:
    """TokenizerService.Tokenize."""
    model = models.get(request.model)
    violations: list[FieldViolation] = []
    has_prompt, has_messages = request.HasField("prompt"), len(request.messages) > 0
    if has_prompt == has_messages:
        violations.append(FieldViolation("prompt", "give exactly one of prompt and messages"))
    if has_prompt and len(request.prompt) > MAX_TOKENIZE_CHARS:
        violations.append(FieldViolation("prompt", f"at most {MAX_TOKENIZE_CHARS} characters"))
    history: list[dict[str, Any]] = []
    context: dict[str, Any] = {}
    prefill = NO_PREFILL
    images = MediaParts(model)  # images counted as the model sees them, not fetched; files read, as chat does
    if has_messages:
        history, context = await read_off_the_loop_if_large(
            request,
            len(request.messages),
            lambda: (
                chat_history(model, request, images, violations),
                template_context(request, violations, effort=None),
            ),
        )
        prefill = prefill_of(request, history, violations)  # chat completions' rule
    InvalidArgument.check(violations)
    if has_messages:
        history = await images.with_files(history, models.media, models.files)
        size = sum(len(m["content"]) for m in history if isinstance(m.get("content"), str))
        if size > MAX_TOKENIZE_CHARS:
            raise InvalidArgument.of("messages", f"at most {MAX_TOKENIZE_CHARS} characters in all")

    add_special = request.add_special_tokens if request.HasField("add_special_tokens") else has_prompt

    def work() -> tokenizer_pb2.TokenizeResponse:  # the reply too: millions of token strings take a while
        if has_prompt:
            text = request.prompt
        else:
            text = render_for_model(model, history, None, context, field="messages", prefill=prefill)
        ids = (
            image_prompt_ids(model, text)
            if images.sources
            else model.engine.encode(text, add_special_tokens=add_special)
        )
        texts = token_texts(model, ids) if request.return_token_strs else []
        return tokenizer_pb2.TokenizeResponse(
            tokens=ids, count=len(ids), max_model_len=model.limits.max_model_len, token_strs=texts
        )

    inline = len(request.prompt) <= INLINE_PROMPT_CHARS if has_prompt else renders_inline(history, None, context)
    return work() if inline else await asyncio.to_thread(work)


async def detokenize(
    models: ModelRegistry, request: tokenizer_pb2.DetokenizeRequest
) -> tokenizer_pb2.DetokenizeResponse:
    """TokenizerService.Detokenize: the text of the ids, special tokens included (as vLLM's)."""
    model = models.get(request.model)
    ids = list(request.tokens)
    InvalidArgument.check(_token_violations(model, ids))
    if len(ids) <= INLINE_DECODE_TOKENS:
        text = model.engine.decode(ids, skip_special_tokens=False)
    else:
        text = await asyncio.to_thread(model.engine.decode, ids, skip_special_tokens=False)
    return tokenizer_pb2.DetokenizeResponse(prompt=text)


def _token_violations(model: ServedModel, ids: list[int]) -> list[FieldViolation]:
    if len(ids) > MAX_DETOKENIZE_TOKENS:
        return [FieldViolation("tokens", f"at most {MAX_DETOKENIZE_TOKENS} tokens; got {len(ids)}")]
    if not ids or (min(ids) >= 0 and max(ids) < model.vocab_size):  # min/max in C: fast for long lists
        return []
    position, token = next((i, t) for i, t in enumerate(ids) if not 0 <= t < model.vocab_size)
    return [
        FieldViolation(
            f"tokens[{position}]", f"{token} is not a token id of {model.name!r} (0 to {model.vocab_size - 1})"
        )
    ]

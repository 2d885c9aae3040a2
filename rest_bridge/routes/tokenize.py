"""POST /tokenize and /detokenize (vLLM's, SGLang's and OVMS's field names) over TokenizerService."""

from __future__ import annotations

from typing import Any

from ovserve.clients.v1 import tokenizer_pb2
from ovserve.rest_bridge.handler import JsonBodyHandler
from ovserve.rest_bridge.json_body import listed
from ovserve.rest_bridge.translate.completions import normalise_chat
from ovserve.rest_bridge.translate.message import message_from_body


def tokenized(reply: tokenizer_pb2.TokenizeResponse, with_strings: bool) -> dict[str, Any]:
    """vLLM's tokenize reply."""
    out: dict[str, Any] = {"tokens": listed(reply.tokens), "count": reply.count, "max_model_len": reply.max_model_len}
    if with_strings:
        out["token_strs"] = listed(reply.token_strs)
    return out


def tokenize_request(body: dict[str, Any]) -> tokenizer_pb2.TokenizeRequest:
    """The proto request for a tokenize body; ``messages`` are read as a chat body's are (contents as parts)."""
    return message_from_body(body, tokenizer_pb2.TokenizeRequest, normalise_chat)


def detokenize_request(body: dict[str, Any]) -> tokenizer_pb2.DetokenizeRequest:
    """The proto request for a detokenize body."""
    return message_from_body(body, tokenizer_pb2.DetokenizeRequest, normalise_chat)


class TokenizeHandler(JsonBodyHandler):
    """POST /v3/tokenize: ``prompt`` or ``messages`` -> ``{"tokens", "count", "max_model_len"}``."""

    async def post(self) -> None:
        request = await self.translated(tokenize_request)
        with_strings = request.return_token_strs
        await self.answer(self.backend.tokenizer.Tokenize, request, lambda reply: tokenized(reply, with_strings))


class DetokenizeHandler(JsonBodyHandler):
    """POST /v3/detokenize: ``tokens`` -> ``{"prompt": text}``."""

    async def post(self) -> None:
        request = await self.translated(detokenize_request)
        await self.answer(self.backend.tokenizer.Detokenize, request, lambda reply: {"prompt": reply.prompt})


ROUTES = [("/tokenize", TokenizeHandler), ("/detokenize", DetokenizeHandler)]

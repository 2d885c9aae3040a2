"""POST /v3/tokenize and /v3/detokenize (vLLM's, SGLang's and OVMS's field names) over TokenizerService."""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from clients.v1 import tokenizer_pb2
from rest_bridge.errors import openai_text
from rest_bridge.handlers import JsonBodyHandler
from rest_bridge.requests import bad_request, check_arguments, check_fields, normalise_chat


def _parse(body: dict[str, Any], message_class: type[Message]) -> Any:
    """The proto request for a body: unknown keys and wrong types are a 400 naming the field."""
    check_arguments(body, message_class.DESCRIPTOR)
    proto_json = normalise_chat(body)  # message contents as parts, nulls dropped: as chat bodies
    check_fields(proto_json, message_class.DESCRIPTOR)
    try:
        return json_format.ParseDict(proto_json, message_class())
    except json_format.ParseError as error:
        raise bad_request(None, openai_text(str(error))) from None


def tokenized(reply: tokenizer_pb2.TokenizeResponse, with_strings: bool) -> dict[str, Any]:
    """vLLM's tokenize reply."""
    out: dict[str, Any] = {"tokens": list(reply.tokens), "count": reply.count, "max_model_len": reply.max_model_len}
    if with_strings:
        out["token_strs"] = list(reply.token_strs)
    return out


class TokenizeHandler(JsonBodyHandler):
    """POST /v3/tokenize: ``prompt`` or ``messages`` -> ``{"tokens", "count", "max_model_len"}``."""

    async def post(self) -> None:
        request = await self.translated(lambda body: _parse(body, tokenizer_pb2.TokenizeRequest))
        reply = await self.unary(self.backend.tokenizer.Tokenize, request)
        self.write_json(tokenized(reply, request.return_token_strs))


class DetokenizeHandler(JsonBodyHandler):
    """POST /v3/detokenize: ``tokens`` -> ``{"prompt": text}``."""

    async def post(self) -> None:
        request = await self.translated(lambda body: _parse(body, tokenizer_pb2.DetokenizeRequest))
        reply = await self.unary(self.backend.tokenizer.Detokenize, request)
        self.write_json({"prompt": reply.prompt})


ROUTES = [("/tokenize", TokenizeHandler), ("/detokenize", DetokenizeHandler)]

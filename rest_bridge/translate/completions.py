"""Chat completions and completions bodies -> their request messages (OpenAI's two completions APIs).

Both take OpenAI's parameters without a contract field (``openai_parameters``), vLLM's ``guided_json`` as a JSON
string too, and the deprecated functions form (``legacy_functions``); a chat body's messages are normalised one
by one, at their own paths (``messages[2].content``).
"""

from __future__ import annotations

import json
from typing import Any

from ovserve.clients.polymorphic import json_type
from ovserve.clients.v1 import chat_pb2, completion_pb2
from ovserve.rest_bridge import openai_parameters
from ovserve.rest_bridge.translate.body import bad_request
from ovserve.rest_bridge.translate.message import streamable_from_body
from ovserve.rest_bridge.translate.proto_json import normalise_forms, without_nulls


def _normalise_guided_json(body: dict[str, Any]) -> None:
    # vLLM accepts the schema as a JSON string too (guided_json, structured_outputs.json); the proto holds an object.
    outputs = body.get("structured_outputs")
    if isinstance(outputs, dict):
        outputs = body["structured_outputs"] = dict(outputs)  # the caller's body is not changed
    for holder, key, field in ((body, "guided_json", "guided_json"), (outputs, "json", "structured_outputs.json")):
        if isinstance(holder, dict) and isinstance(holder.get(key), str):
            try:
                holder[key] = json.loads(holder[key])
            except ValueError as error:
                raise bad_request(field, f"{field} is not a valid JSON string: {error}") from None


def normalise_chat(body: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI chat body in proto JSON form (a new dict; ``body`` is not changed)."""
    body = normalise_forms(without_nulls(body), chat_pb2.CreateChatCompletionRequest.DESCRIPTOR)
    _normalise_guided_json(body)
    if isinstance(body.get("messages"), list):
        body["messages"] = [
            _reasoning_named(
                normalise_forms(without_nulls(message), chat_pb2.ChatMessage.DESCRIPTOR, f"messages[{i}]"),
                f"messages[{i}]",
            )
            if isinstance(message, dict)
            else message
            for i, message in enumerate(body["messages"])
        ]
    return body


def _reasoning_named(message: dict[str, Any], where: str) -> dict[str, Any]:
    """``message`` with a past turn's ``reasoning`` (the name vLLM's newer replies, OpenRouter and LiteLLM give it)
    as ``reasoning_content`` (DeepSeek's and the contract's): clients send back what they were given. Both with
    different text is a 400 naming ``reasoning``."""
    if "reasoning" not in message:
        return message
    reasoning = message.pop("reasoning")
    if not isinstance(reasoning, str):
        raise bad_request(f"{where}.reasoning", f"{where}.reasoning: expected a string, got {json_type(reasoning)}")
    if message.setdefault("reasoning_content", reasoning) != reasoning:
        raise bad_request(f"{where}.reasoning", f"{where}.reasoning: differs from reasoning_content; send one")
    return message


def normalise_completion(body: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI completions body in proto JSON form (a new dict; ``body`` is not changed)."""
    body = normalise_forms(without_nulls(body), completion_pb2.CreateCompletionRequest.DESCRIPTOR)
    _normalise_guided_json(body)
    return body


def uses_functions(body: dict[str, Any]) -> bool:
    """Whether a chat body uses the deprecated functions form (then the reply speaks it too)."""
    return "functions" in body or "function_call" in body


def chat_request(body: dict[str, Any]) -> tuple[chat_pb2.CreateChatCompletionRequest, bool]:
    """The chat request for an OpenAI body, and whether it streams (then it is a StreamChatCompletionRequest)."""
    return streamable_from_body(  # type: ignore[return-value]
        body,
        chat_pb2.CreateChatCompletionRequest,
        chat_pb2.StreamChatCompletionRequest,
        openai_parameters.CHAT,
        normalise_chat,
        functions_as_tools=True,
    )


def completion_request(body: dict[str, Any]) -> tuple[completion_pb2.CreateCompletionRequest, bool]:
    """The completions request for an OpenAI body, and whether it streams (then a StreamCompletionRequest)."""
    return streamable_from_body(  # type: ignore[return-value]
        body,
        completion_pb2.CreateCompletionRequest,
        completion_pb2.StreamCompletionRequest,
        openai_parameters.COMPLETIONS,
        normalise_completion,
        functions_as_tools=True,  # as chat: a completions body naming functions is refused for the tools they become
    )

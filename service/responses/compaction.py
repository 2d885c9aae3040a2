"""Compaction (OpenAI's ``POST /responses/compact``): the model summarises a conversation, the summary travels on.

OpenAI's compaction returns the conversation's user messages followed by one
``compaction`` item whose ``encrypted_content`` carries the model's memory of
everything else; a later request sends that list (plus new input) instead of
the whole history. Here the served model writes that memory as text: the
conversation (``previous_response_id`` and ``input``) followed by a request to
summarise it runs as an unstored response, greedy, with the oldest turns
dropped if it does not fit. The summary is encoded into ``encrypted_content``
(compressed and base64url, under a version prefix): opaque to clients, but not
encrypted, since a local server keeps no secret from its caller. An input item
of type ``compaction`` is read back as a user message that gives the summary.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib

from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.clients.v1 import response_pb2
from ovserve.service.errors import FieldViolation, InvalidArgument

PREFIX = "ovserve-compaction-1:"
MAX_SUMMARY_BYTES = 256 * 1024  # decoded; a corrupt or hostile item cannot inflate past it
SUMMARY_TOKENS = 512  # the summarising pass's max_output_tokens
INTRO = "Summary of the conversation so far:\n"  # how a compaction item reads to the model
PROMPT = (
    "Write a summary of the conversation so far that lets you continue it without the earlier messages: "
    "the facts, decisions, names and numbers it holds, and what was asked last. Write only the summary."
)


def encode(summary: str) -> str:
    """The ``encrypted_content`` of a compaction item holding ``summary``."""
    packed = zlib.compress(json.dumps({"summary": summary}).encode())
    return PREFIX + base64.urlsafe_b64encode(packed).decode()


def decode(content: str) -> str | None:
    """The summary a compaction item holds; None when ``content`` is not one this server wrote."""
    if not content.startswith(PREFIX):
        return None
    try:
        packed = base64.urlsafe_b64decode(content[len(PREFIX) :])
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_SUMMARY_BYTES + 1)
        if len(raw) > MAX_SUMMARY_BYTES or not inflater.eof:
            return None
        summary = json.loads(raw)["summary"]
    except (binascii.Error, ValueError, zlib.error, KeyError, TypeError):
        return None
    return summary if isinstance(summary, str) else None


def as_message(item: objects_pb2.InputItem, where: str, violations: list[FieldViolation]) -> dict[str, str] | None:
    """A compaction input item as the chat message the model reads (None and a violation if it is not ours)."""
    summary = decode(item.encrypted_content)
    if summary is None:
        violations.append(
            FieldViolation(f"{where}.encrypted_content", "not a compaction item written by this server's compact")
        )
        return None
    return {"role": "user", "content": INTRO + summary}


def summarising_request(request: response_pb2.CompactResponseRequest) -> response_pb2.CreateResponseRequest:
    """The unstored response whose output is the summary: the conversation, then the request to summarise it."""
    if request.HasField("input") and len(request.input_items):
        raise InvalidArgument.of("input_items", "set either input or input_items, not both")
    if not (request.HasField("input") or len(request.input_items) or request.HasField("previous_response_id")):
        raise InvalidArgument.of("input", "required: the conversation to compact (or previous_response_id)")
    summarising = response_pb2.CreateResponseRequest(
        model=request.model, store=False, temperature=0.0, max_output_tokens=SUMMARY_TOKENS, truncation="auto"
    )
    if request.HasField("input"):
        summarising.input_items.add(type="message", role="user", content=request.input)
    summarising.input_items.extend(request.input_items)
    summarising.input_items.add(type="message", role="user", content=PROMPT)
    if request.HasField("previous_response_id"):
        summarising.previous_response_id = request.previous_response_id
    if request.HasField("instructions"):
        summarising.instructions = request.instructions
    return summarising


def summary_of(response: objects_pb2.Response) -> str:
    """The text of a summarising response's messages."""
    return "".join(part.output_text.text for item in response.output for part in item.message.content).strip()


def kept_user_messages(history: list[dict[str, object]]) -> list[str]:
    """The user messages a compacted list keeps: those of the conversation, without the request to summarise
    it and without earlier summaries (the new one covers them)."""
    texts = [message.get("content") for message in history[:-1] if message.get("role") == "user"]
    return [text for text in texts if isinstance(text, str) and not text.startswith(INTRO)]

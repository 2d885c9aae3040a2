"""A batch's input file read as OpenAI's request lines, and its results written as OpenAI's output lines.

Input line: ``{"custom_id": "...", "method": "POST", "url": "/v1/chat/completions", "body": {...}}``, one JSON
object a line, every line for the batch's endpoint and one model. Output line: ``{"id": "batch_req_...",
"custom_id", "response": {"status_code", "request_id", "body"}, "error"}``; a line that never ran (cancelled or
expired) has ``response`` null and ``error`` ``{"code", "message"}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ovserve.clients.v1 import batch_pb2
from ovserve.service.ids import new_id

#: The endpoints a batch may call, by the path a line names (OpenAI's /v1, or OVMS's /v3).
ENDPOINTS = ("/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings")
#: OpenAI's bound on the requests of one batch.
MAX_LINES = 50_000
#: The most problems of an input file reported (OpenAI's errors list is short too).
MAX_ERRORS = 100
MAX_CUSTOM_ID_CHARS = 512
#: Fields of a line's body that make no sense in a batch: the line's result is one JSON body.
_REFUSED_IN_BODY = {
    "stream": "a batch request is answered whole: stream is not allowed",
    "background": "not in a batch",
}


def endpoint_of(url: str) -> str | None:
    """The endpoint a URL names (``/v3/...`` as ``/v1/...``), or None if a batch cannot call it."""
    path = "/v1/" + url.removeprefix("/v3/") if url.startswith("/v3/") else url
    return path if path in ENDPOINTS else None


@dataclass
class ReadFile:
    """What an input file holds: its requests ((custom_id, body JSON) in order), their model, and its problems."""

    lines: list[tuple[str, str]] = field(default_factory=list)
    model: str = ""
    errors: list[batch_pb2.BatchError] = field(default_factory=list)


def read_input(data: bytes, endpoint: str) -> ReadFile:
    """The requests of an input file for ``endpoint``, or its problems (each with its 1-based line)."""
    read = ReadFile()
    seen: set[str] = set()

    def problem(code: str, message: str, line: int | None, param: str | None = None) -> None:
        if len(read.errors) < MAX_ERRORS:
            read.errors.append(batch_pb2.BatchError(code=code, message=message, line=line, param=param))

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        problem("invalid_file", "the input file is not UTF-8 text", None)
        return read
    rows = [(number, row) for number, row in enumerate(text.splitlines(), 1) if row.strip()]
    if not rows:
        problem("invalid_file", "the input file holds no request", None)
    if len(rows) > MAX_LINES:
        problem("too_many_lines", f"the input file holds {len(rows)} requests; a batch takes at most {MAX_LINES}", None)
        return read
    for number, row in rows:
        try:
            entry = json.loads(row)
        except (json.JSONDecodeError, RecursionError):
            problem("invalid_json_line", "the line is not JSON", number)
            continue
        if not isinstance(entry, dict):
            problem("invalid_json_line", "the line is not a JSON object", number)
            continue
        custom_id, body = entry.get("custom_id"), entry.get("body")
        if not isinstance(custom_id, str) or not 0 < len(custom_id) <= MAX_CUSTOM_ID_CHARS:
            problem(
                "missing_custom_id",
                f"custom_id must be a string of 1 to {MAX_CUSTOM_ID_CHARS} characters",
                number,
                "custom_id",
            )
            continue
        if custom_id in seen:
            problem("duplicate_custom_id", f"custom_id {custom_id!r} is on an earlier line too", number, "custom_id")
        seen.add(custom_id)
        if entry.get("method") != "POST":
            problem("invalid_method", "method must be POST", number, "method")
        if endpoint_of(str(entry.get("url", ""))) != endpoint:
            problem("invalid_url", f"url must be this batch's endpoint, {endpoint}", number, "url")
        if not isinstance(body, dict):
            problem("invalid_body", "body must be a JSON object: the request", number, "body")
            continue
        unknown = sorted(set(entry) - {"custom_id", "method", "url", "body"})
        if unknown:
            problem("invalid_json_line", f"unknown field {unknown[0]!r}", number, unknown[0])
        for name, why in _REFUSED_IN_BODY.items():
            if body.get(name) not in (None, False):
                problem("invalid_body", f"body.{name}: {why}", number, f"body.{name}")
        model = body.get("model")
        if not isinstance(model, str) or not model:
            problem("invalid_body", "body.model is required", number, "body.model")
        elif read.model and model != read.model:
            problem(
                "mismatched_model",
                f"every request of a batch names one model; {read.model!r} came first",
                number,
                "body.model",
            )
        else:
            read.model = model
        read.lines.append((custom_id, json.dumps(body, ensure_ascii=False)))
    return read


def output_line(custom_id: str, status: int, request_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's output line of a request that ran (``status``: its HTTP status)."""
    response = {"status_code": status, "request_id": request_id, "body": body}
    return {"id": new_id("batch_req_"), "custom_id": custom_id, "response": response, "error": None}


def unrun_line(custom_id: str, code: str, message: str) -> dict[str, Any]:
    """OpenAI's output line of a request that did not run: ``code`` batch_cancelled or batch_expired."""
    return {
        "id": new_id("batch_req_"),
        "custom_id": custom_id,
        "response": None,
        "error": {"code": code, "message": message},
    }


def add_usage(usage: batch_pb2.BatchUsage, body: dict[str, Any]) -> None:
    """Add a completed request's token counts (chat, completions and embeddings' or Responses' names)."""
    counted = body.get("usage")
    if not isinstance(counted, dict):
        return
    inputs = _number(counted, "prompt_tokens") or _number(counted, "input_tokens")
    outputs = _number(counted, "completion_tokens") or _number(counted, "output_tokens")
    details = counted.get("prompt_tokens_details") or counted.get("input_tokens_details") or {}
    reasoning = counted.get("completion_tokens_details") or counted.get("output_tokens_details") or {}
    usage.input_tokens += inputs
    usage.output_tokens += outputs
    usage.total_tokens += inputs + outputs
    usage.input_tokens_details.cached_tokens += _number(details, "cached_tokens")
    usage.output_tokens_details.reasoning_tokens += _number(reasoning, "reasoning_tokens")


def _number(values: Any, name: str) -> int:
    value = values.get(name) if isinstance(values, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0

"""A megabyte where a short word belongs is a 400 naming the field, never a 429 from the error's own size.

The error's status message and details travel in gRPC trailers, which the bridge's channel refuses past its
metadata budget ("received metadata size exceeds soft limit", a RESOURCE_EXHAUSTED the bridge would answer 429):
ovserve.service.errors bounds them, and quotes client values short.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from tests.rest_bridge.conftest import RunningBridge, http_request

BIG = "x" * 1_000_000
SPEECH = sorted((Path(__file__).resolve().parents[1] / "data" / "speech").glob("*.wav"))[0]
HI = [{"role": "user", "content": "hi"}]
JSON_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("/v3/embeddings", {"model": "tiny-embed", "input": "hi", "encoding_format": BIG}, "encoding_format"),
    ("/v3/chat/completions", {"model": "tiny-chat", "messages": [{"role": BIG, "content": "hi"}]}, "messages[0].role"),
    ("/v3/chat/completions", {"model": "tiny-chat", "messages": HI, "reasoning_effort": BIG}, "reasoning_effort"),
    ("/v3/responses", {"model": "tiny-chat", "input": "hi", "truncation": BIG}, "truncation"),
]


@pytest.mark.parametrize(("path", "body", "param"), JSON_CASES, ids=[case[2] for case in JSON_CASES])
def test_a_megabyte_value_is_a_400_naming_it(
    bridge: RunningBridge, path: str, body: dict[str, Any], param: str
) -> None:
    for _ in range(5):  # the 429 came and went: every one must be the 400
        reply = http_request(bridge.port, "POST", path, body)
        assert reply.status == 400, reply.body[:300]
        error = reply.json()["error"]
        assert error["param"] == param and len(error["message"]) < 1000


@pytest.mark.parametrize("field", ["language", "response_format"])
def test_a_megabyte_form_field_is_a_400_naming_it(bridge: RunningBridge, field: str) -> None:
    files = {"file": ("a.wav", SPEECH.read_bytes(), "audio/wav")}
    data = {"model": "tiny-whisper", field: BIG}
    reply = httpx.post(f"{bridge.url}/audio/transcriptions", data=data, files=files, timeout=120)
    assert reply.status_code == 400, reply.text[:300]
    assert reply.json()["error"]["param"] == field

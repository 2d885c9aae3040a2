"""POST /v3/audio/transcriptions: the multipart form is read as OpenAI's, and what is wrong with it is a 400 (or
415, 404) naming the field, before any audio is decoded."""

from __future__ import annotations

import io
import uuid
import wave

import httpx2 as httpx
import pytest

from ovserve.clients.v1 import audio_pb2
from ovserve.rest_bridge.routes.audio import subtitles
from tests.rest_bridge.conftest import RunningBridge


def _wav(seconds: float = 0.5, rate: int = 8000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"\x00\x00" * int(seconds * rate))
    return buffer.getvalue()


def _post(bridge: RunningBridge, fields: dict[str, str], file: bytes | None = b"") -> httpx.Response:
    """A multipart form of ``fields`` and, unless ``file`` is None, an audio file (a short silent WAV if empty)."""
    parts: dict[str, tuple[str | None, bytes | str] | tuple[str, bytes, str]] = {
        name: (None, value) for name, value in fields.items()
    }
    if file is not None:
        parts["file"] = ("speech.wav", file or _wav(), "audio/wav")
    return httpx.post(f"{bridge.url}/audio/transcriptions", files=parts, timeout=60)


@pytest.mark.parametrize(
    ("fields", "file", "status", "param"),
    [
        ({"model": "tiny-chat"}, None, 400, "file"),
        ({"model": "tiny-chat", "speed": "2"}, b"", 400, "speed"),
        ({"model": "tiny-chat", "temperature": "warm"}, b"", 400, "temperature"),
        ({"model": "tiny-chat", "temperature": "nan"}, b"", 400, "temperature"),
        ({"model": "tiny-chat", "stream": "maybe"}, b"", 400, "stream"),
        ({"model": "tiny-chat"}, b"", 400, "model"),  # a chat model does not transcribe
        ({"model": "nope"}, b"", 404, "model"),
        ({"model": ""}, b"", 400, "model"),
    ],
)
def test_a_bad_form_is_refused_naming_the_field(
    bridge: RunningBridge, fields: dict[str, str], file: bytes | None, status: int, param: str
) -> None:
    reply = _post(bridge, fields, file)
    assert reply.status_code == status and reply.json()["error"]["param"] == param, reply.text


def test_a_json_body_is_415(bridge: RunningBridge) -> None:
    reply = httpx.post(f"{bridge.url}/audio/transcriptions", json={"model": "tiny-chat"}, timeout=30)
    assert reply.status_code == 415 and reply.json()["error"]["code"] == "unsupported_media_type", reply.text


def test_two_files_are_refused(bridge: RunningBridge) -> None:
    boundary = uuid.uuid4().hex
    part = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n'
            "Content-Type: audio/wav\r\n\r\n").encode() + _wav() + b"\r\n"  # fmt: skip
    model = f'--{boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nx\r\n--{boundary}--\r\n'
    body = part + part + model.encode()
    reply = httpx.post(
        f"{bridge.url}/audio/transcriptions",
        content=body,
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        timeout=30,
    )
    assert reply.status_code == 400 and reply.json()["error"]["param"] == "file", reply.text


def test_subtitles_are_srt_and_webvtt_cues() -> None:
    reply = audio_pb2.CreateTranscriptionResponse(
        text="one two",
        segments=[
            audio_pb2.TranscriptionSegment(id=0, start=0.0, end=1.25, text=" one"),
            audio_pb2.TranscriptionSegment(id=1, start=61.5, end=3725.004, text=" two"),
        ],
    )
    assert subtitles(reply, "srt") == (
        "1\n00:00:00,000 --> 00:00:01,250\none\n\n2\n00:01:01,500 --> 01:02:05,004\ntwo\n"
    )
    assert subtitles(reply, "vtt") == (
        "WEBVTT\n\n00:00:00.000 --> 00:00:01.250\none\n\n00:01:01.500 --> 01:02:05.004\ntwo\n"
    )

"""POST /audio/transcriptions: OpenAI's multipart upload -> AudioService, answered in the format asked for.

json ``{"text", "usage"}``, text, verbose_json (language, duration, timed segments), srt or vtt; with
``stream=true``, OpenAI's ``transcript.text.delta`` events and a ``transcript.text.done``.
"""

from __future__ import annotations

import math
import zlib
from typing import Any

import tornado.httputil

from ovserve.clients.v1 import audio_pb2
from ovserve.rest_bridge.errors import BridgeError
from ovserve.rest_bridge.handler import JsonBodyHandler
from ovserve.rest_bridge.sse import DataFraming
from ovserve.rest_bridge.translate.body import bad_request

# Form fields -> how each is read (every value arrives as text). The proto's own names, OpenAI's field names.
_TEXT_FIELDS = ("model", "language", "prompt", "response_format")
_KNOWN = {*_TEXT_FIELDS, "file", "temperature", "timestamp_granularities[]", "timestamp_granularities", "stream"}
_TEXT_FORMATS = {"text": "text/plain", "srt": "application/x-subrip", "vtt": "text/vtt"}

# Bounds on the form's shape, so a hostile body costs little to refuse. OpenAI's form has 9 fields; a few repeated
# timestamp_granularities[] fit. A part's headers carry its name and filename: 4 KiB is far above any real filename
# (255 bytes on most file systems). A text field longer than 64 KiB is no model name, language or 4,096-character
# prompt (the service's own bound).
MAX_PARTS = 32
MAX_PART_HEADER_BYTES = 4 * 1024
MAX_FIELD_BYTES = 64 * 1024
_FORM_CONFIG = tornado.httputil.ParseBodyConfig(
    multipart=tornado.httputil.ParseMultipartConfig(max_parts=MAX_PARTS, max_part_header_size=MAX_PART_HEADER_BYTES)
)
# What tornado's HTTPInputError says (a piece of it) -> what the client is told; anything else is "malformed". The
# error names ``file``: the one required part, and the one a broken body most likely broke.
_FORM_ERRORS = {
    "boundary not found": "the Content-Type has no multipart boundary",
    "no final boundary": "the body does not end with its boundary (a truncated body, or another boundary)",
    "too many parts": f"the form has more than {MAX_PARTS} parts",
    "header too large": f"a part's headers (its name and filename) are longer than {MAX_PART_HEADER_BYTES} bytes",
}


def _one(arguments: dict[str, list[bytes]], name: str) -> str | None:
    values = arguments.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise bad_request(name, f"{name}: give it once")
    if len(values[0]) > MAX_FIELD_BYTES:
        raise bad_request(name, f"{name}: longer than {MAX_FIELD_BYTES} bytes")
    try:
        return values[0].decode("utf-8")
    except UnicodeDecodeError:
        raise bad_request(name, f"{name}: not UTF-8 text") from None


def transcription_request(body: bytes, content_type: str | None) -> tuple[audio_pb2.CreateTranscriptionRequest, bool]:
    """The proto request for a multipart form, and whether to stream; a 400 names a bad field."""
    if not (content_type or "").lower().startswith("multipart/form-data"):
        raise BridgeError(415, "Content-Type must be multipart/form-data", code="unsupported_media_type")
    arguments: dict[str, list[bytes]] = {}
    files: dict[str, list[tornado.httputil.HTTPFile]] = {}
    try:
        tornado.httputil.parse_body_arguments(content_type or "", body, arguments, files, config=_FORM_CONFIG)
    except tornado.httputil.HTTPInputError as error:
        reason = next((told for said, told in _FORM_ERRORS.items() if said in str(error)), None)
        raise bad_request("file", f"file: not a readable multipart/form-data body: {reason or 'malformed'}") from None
    unknown = next((name for name in [*arguments, *files] if name not in _KNOWN), None)
    if unknown is not None:
        raise bad_request(unknown, f"Unrecognized request argument supplied: {unknown}")
    uploads = files.get("file") or []
    if len(uploads) != 1:
        raise bad_request("file", "file: required, one audio file")
    request = audio_pb2.CreateTranscriptionRequest(file=uploads[0].body, filename=uploads[0].filename or "")
    for name in _TEXT_FIELDS:
        value = _one(arguments, name)
        if value is not None:
            setattr(request, name, value)
    temperature = _one(arguments, "temperature")
    if temperature is not None:
        try:
            request.temperature = float(temperature)
        except ValueError:
            raise bad_request("temperature", f"temperature: {temperature!r} is not a number") from None
        if not math.isfinite(request.temperature):
            raise bad_request("temperature", "temperature: a finite number")
    for key in ("timestamp_granularities[]", "timestamp_granularities"):
        if any(len(value) > MAX_FIELD_BYTES for value in arguments.get(key, [])):
            raise bad_request(key, f"{key}: longer than {MAX_FIELD_BYTES} bytes")
        request.timestamp_granularities.extend(value.decode("utf-8", "replace") for value in arguments.get(key, []))
    stream = (_one(arguments, "stream") or "false").lower()
    if stream not in ("true", "false"):
        raise bad_request("stream", f"stream: {stream!r} is not true or false")
    return request, stream == "true"


def _clock(seconds: float, separator: str) -> str:
    milliseconds = round(seconds * 1000)
    hours, rest = divmod(milliseconds, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"{hours:02d}:{minutes:02d}:{rest // 1000:02d}{separator}{rest % 1000:03d}"


def subtitles(reply: audio_pb2.CreateTranscriptionResponse, kind: str) -> str:
    """The segments as SubRip (srt) or WebVTT (vtt) cues."""
    separator = "," if kind == "srt" else "."
    cues = [
        (f"{index + 1}\n" if kind == "srt" else "")
        + f"{_clock(segment.start, separator)} --> {_clock(segment.end, separator)}\n{segment.text.strip()}\n"
        for index, segment in enumerate(reply.segments)
    ]
    return ("WEBVTT\n\n" if kind == "vtt" else "") + "\n".join(cues)


def _usage(reply: audio_pb2.CreateTranscriptionResponse) -> dict[str, Any]:
    return {"type": "duration", "seconds": math.ceil(reply.duration)}


def compression_ratio(text: str) -> float:
    """Whisper's repetition measure: the text's UTF-8 length over its zlib-compressed length."""
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


def transcription_json(
    reply: audio_pb2.CreateTranscriptionResponse, response_format: str, temperature: float = 0.0
) -> dict[str, Any]:
    """OpenAI's json or verbose_json transcription.

    A verbose segment has what the pipeline gives (times, text, tokens), the temperature and Whisper's compression
    ratio; OpenAI's avg_logprob and no_speech_prob are left out: OpenVINO GenAI does not report them per segment.
    """
    if response_format != "verbose_json":
        return {"text": reply.text, "usage": _usage(reply)}
    return {
        "task": "transcribe",
        "language": reply.language,
        "duration": reply.duration,
        "text": reply.text,
        "segments": [
            {
                "id": segment.id,
                "seek": round(segment.start * 100),  # in 10 ms frames, as Whisper counts its windows
                "start": segment.start,
                "end": segment.end,
                "text": segment.text,
                "tokens": list(segment.tokens),
                "temperature": temperature,
                "compression_ratio": compression_ratio(segment.text),
            }
            for segment in reply.segments
        ],
        "usage": _usage(reply),
    }


def transcription_event(message: audio_pb2.StreamTranscriptionResponse) -> dict[str, Any]:
    """OpenAI's ``transcript.text.delta`` or ``transcript.text.done`` event for one streamed message."""
    if message.HasField("delta"):
        return {"type": "transcript.text.delta", "delta": message.delta.delta}
    # No usage: OpenAI's done event counts tokens in and out, which a Whisper pipeline does not report (the
    # duration usage of a json reply has no place in it).
    return {"type": "transcript.text.done", "text": message.done.text}


class TranscriptionsHandler(JsonBodyHandler):
    """POST /v3/audio/transcriptions (multipart/form-data)."""

    async def post(self) -> None:
        request, stream = await self.translated_body(transcription_request)
        if stream:
            streaming = audio_pb2.StreamTranscriptionRequest.FromString(request.SerializeToString())
            call = self.backend.audio.StreamTranscription(streaming, **self.grpc_options())
            await self.relay(call, DataFraming(transcription_event))  # then [DONE], as OpenAI ends it
            return
        reply = await self.unary(self.backend.audio.CreateTranscription, request)
        kind = request.response_format or "json"
        if kind in _TEXT_FORMATS:
            text = reply.text if kind == "text" else subtitles(reply, kind)
            self.set_header("Content-Type", f"{_TEXT_FORMATS[kind]}; charset=utf-8")
            self.finish(text.encode("utf-8"))
            return
        self.write_json(transcription_json(reply, kind, request.temperature))


ROUTES = [("/audio/transcriptions", TranscriptionsHandler)]

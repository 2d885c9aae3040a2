"""POST /audio/transcriptions and /audio/translations: OpenAI's multipart upload -> AudioService, answered in the
format asked for.

json ``{"text", "usage"}``, text, verbose_json (language, duration, timed segments), srt or vtt; a transcription
with ``stream=true``, OpenAI's ``transcript.text.delta`` events and a ``transcript.text.done``. A translation's form
is a transcription's without language, timestamp granularities or stream (OpenAI's).
"""

from __future__ import annotations

import math
import zlib
from typing import Any

from ovserve.clients.v1 import audio_pb2
from ovserve.rest_bridge.handler import JsonBodyHandler
from ovserve.rest_bridge.sse import DataFraming
from ovserve.rest_bridge.translate.body import bad_request
from ovserve.rest_bridge.translate.form import MAX_FIELD_BYTES, Fields, field_text, read_form

# Form fields -> how each is read (every value arrives as text). The proto's own names, OpenAI's field names.
_TEXT_FIELDS = ("model", "language", "prompt", "response_format")
_KNOWN = {*_TEXT_FIELDS, "file", "temperature", "timestamp_granularities[]", "timestamp_granularities", "stream"}
_TRANSLATION_FIELDS = {"model", "file", "prompt", "response_format", "temperature"}  # OpenAI's translation form
_TEXT_FORMATS = {"text": "text/plain", "srt": "application/x-subrip", "vtt": "text/vtt"}

# OpenAI's form has 9 fields; a few repeated timestamp_granularities[] fit.
MAX_PARTS = 32


def _one(arguments: Fields, name: str) -> str | None:
    values = arguments.get(name)
    return field_text(name, values) if values else None


def transcription_request(
    body: bytes, content_type: str | None, known: set[str] = _KNOWN
) -> tuple[audio_pb2.CreateTranscriptionRequest, bool]:
    """The proto request for a multipart form, and whether to stream; a 400 names a bad field (or one not in
    ``known``)."""
    arguments, files = read_form(body, content_type, max_parts=MAX_PARTS, blamed="file")
    unknown = next((name for name in [*arguments, *files] if name not in known), None)
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


def subtitles(reply: audio_pb2.CreateTranscriptionResponse | audio_pb2.CreateTranslationResponse, kind: str) -> str:
    """The segments as SubRip (srt) or WebVTT (vtt) cues."""
    separator = "," if kind == "srt" else "."
    cues = [
        (f"{index + 1}\n" if kind == "srt" else "")
        + f"{_clock(segment.start, separator)} --> {_clock(segment.end, separator)}\n{segment.text.strip()}\n"
        for index, segment in enumerate(reply.segments)
    ]
    return ("WEBVTT\n\n" if kind == "vtt" else "") + "\n".join(cues)


def _usage(reply: audio_pb2.CreateTranscriptionResponse | audio_pb2.CreateTranslationResponse) -> dict[str, Any]:
    return {"type": "duration", "seconds": math.ceil(reply.duration)}


def compression_ratio(text: str) -> float:
    """Whisper's repetition measure: the text's UTF-8 length over its zlib-compressed length."""
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


def transcription_json(
    reply: audio_pb2.CreateTranscriptionResponse | audio_pb2.CreateTranslationResponse,
    response_format: str,
    temperature: float = 0.0,
    task: str = "transcribe",
) -> dict[str, Any]:
    """OpenAI's json or verbose_json transcription (or translation: ``task`` "translate").

    A verbose segment has what the pipeline gives (times, text, tokens), the temperature and Whisper's compression
    ratio; OpenAI's avg_logprob and no_speech_prob are left out: OpenVINO GenAI does not report them per segment.
    """
    if response_format != "verbose_json":
        return {"text": reply.text, "usage": _usage(reply)}
    return {
        "task": task,
        # OpenAI's translation names the output's language ("always english"); a transcription, the one spoken.
        "language": "english" if task == "translate" else reply.language,
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


def translation_request(body: bytes, content_type: str | None) -> audio_pb2.CreateTranslationRequest:
    """The proto request for a translation's multipart form; a 400 names a bad field."""
    form, _ = transcription_request(body, content_type, _TRANSLATION_FIELDS)
    request = audio_pb2.CreateTranslationRequest(
        model=form.model,
        file=form.file,
        filename=form.filename,
        prompt=form.prompt,
        response_format=form.response_format,
    )
    if form.HasField("temperature"):
        request.temperature = form.temperature
    return request


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
        self.write_reply(reply, request.response_format, request.temperature, "transcribe")

    def write_reply(
        self,
        reply: audio_pb2.CreateTranscriptionResponse | audio_pb2.CreateTranslationResponse,
        response_format: str,
        temperature: float,
        task: str,
    ) -> None:
        """Write ``reply`` in the ``response_format`` asked for."""
        kind = response_format or "json"
        if kind in _TEXT_FORMATS:
            text = reply.text if kind == "text" else subtitles(reply, kind)
            self.set_header("Content-Type", f"{_TEXT_FORMATS[kind]}; charset=utf-8")
            self.finish(text.encode("utf-8"))
            return
        self.write_json(transcription_json(reply, kind, temperature, task))


class TranslationsHandler(TranscriptionsHandler):
    """POST /v3/audio/translations (multipart/form-data): the speech in English, in a transcription's formats."""

    async def post(self) -> None:
        request = await self.translated_body(translation_request)
        reply = await self.unary(self.backend.audio.CreateTranslation, request)
        self.write_reply(reply, request.response_format, request.temperature, "translate")


ROUTES = [("/audio/transcriptions", TranscriptionsHandler), ("/audio/translations", TranslationsHandler)]

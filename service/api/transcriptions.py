"""AudioService semantics: OpenAI's audio transcriptions and translations on a served Whisper model.

The upload is decoded and resampled off the event loop (service/media/audio.py), its length bounded before its
samples are; the options are checked against the model (its languages); the transcript comes from the model's
pipeline process, streamed as it is decoded where the pipeline can stream (one window of at most 30 s, without
timestamps). A translation is the same job with Whisper's translate task (the text in English; the spoken language
detected), under the same bounds.

At most MAX_CONCURRENT_DECODES uploads are decoded at once per server (per event loop): each may hold up to 115 MB of
samples while it is decoded, so more requests wait their turn (bounded by their deadline) rather than each allocating
at once. A pipeline failure reaches the client as a generic message; its own (which can carry paths of the machine
OpenVINO was built on) is logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections.abc import AsyncIterator
from typing import Any, Protocol

import numpy as np

from ovserve.clients.v1 import audio_pb2
from ovserve.service.api.runs import service_error
from ovserve.service.engine import EngineError
from ovserve.service.errors import FieldViolation, Internal, InvalidArgument
from ovserve.service.media.audio import SAMPLE_RATE, decode_audio
from ovserve.service.media.sources import MediaError
from ovserve.service.models import ModelRegistry
from ovserve.service.pipelines import Pipeline, PipelineKind
from ovserve.service.pipelines.messages import Transcript

RESPONSE_FORMATS = ("", "json", "text", "verbose_json", "srt", "vtt")
TIMED_FORMATS = ("verbose_json", "srt", "vtt")  # formats made of segments
#: Most characters of a prompt (Whisper reads at most 224 tokens of it).
MAX_PROMPT_CHARS = 4096
#: Uploads decoded at once per server: two keep a second core busy while bounding decode memory to 2 x 115 MB.
MAX_CONCURRENT_DECODES = 2

log = logging.getLogger(__name__)
# One semaphore per event loop (a test process runs several servers, each on its own loop).
_decode_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()


class TranscriptionRequest(Protocol):
    """CreateTranscriptionRequest and StreamTranscriptionRequest: the same fields."""

    model: str
    file: bytes
    language: str
    prompt: str
    response_format: str
    temperature: float
    timestamp_granularities: Any

    def HasField(self, name: str) -> bool: ...


def _languages(pipeline: Pipeline) -> set[str]:
    """The language codes the model knows (its generation_config.json's lang_to_id: "<|en|>" -> "en")."""
    try:
        config = json.loads((pipeline.model_dir / "generation_config.json").read_text())
    except (OSError, ValueError):
        return set()
    return {str(token).strip("<|>") for token in config.get("lang_to_id") or {}}


def _options(pipeline: Pipeline, request: TranscriptionRequest) -> dict[str, Any]:
    """The Transcribe job's options for ``request``; a 400 naming the field for a bad one."""
    violations: list[FieldViolation] = []
    if request.response_format not in RESPONSE_FORMATS:
        formats = ", ".join(RESPONSE_FORMATS[1:])
        violations.append(FieldViolation("response_format", f"{request.response_format!r}: one of {formats}"))
    granularities = list(request.timestamp_granularities)
    unknown = next((g for g in granularities if g not in ("segment", "word")), None)
    if unknown is not None:
        violations.append(FieldViolation("timestamp_granularities", f"{unknown!r}: one of segment, word"))
    elif "word" in granularities:
        violations.append(FieldViolation("timestamp_granularities", "word timestamps are not available; use segment"))
    if request.HasField("temperature") and not 0.0 <= request.temperature <= 1.0:
        violations.append(FieldViolation("temperature", f"{request.temperature}: between 0 and 1"))
    if len(request.prompt) > MAX_PROMPT_CHARS:
        violations.append(FieldViolation("prompt", f"{len(request.prompt)} characters: at most {MAX_PROMPT_CHARS}"))
    languages = _languages(pipeline)
    if request.language and languages and request.language not in languages:
        violations.append(
            FieldViolation("language", f"{request.language!r}: the model knows {', '.join(sorted(languages))}")
        )
    InvalidArgument.check(violations)
    return {
        "language": request.language or None,
        "prompt": request.prompt or None,
        "temperature": request.temperature if request.HasField("temperature") else 0.0,
        "timestamps": "segment" in granularities or request.response_format in TIMED_FORMATS,
    }


async def _decoded(data: bytes, max_seconds: float) -> np.ndarray:
    """decode_audio in a thread, in one of the loop's decode slots (waiting for one if all are taken).

    The slot is freed when the thread ends, not when the request does: a cancelled request's thread decodes on.
    """
    loop = asyncio.get_running_loop()
    slots = _decode_slots.setdefault(loop, asyncio.Semaphore(MAX_CONCURRENT_DECODES))
    await slots.acquire()
    decoding = loop.run_in_executor(None, decode_audio, "file", data, max_seconds)
    decoding.add_done_callback(lambda _: slots.release())
    return await asyncio.shield(decoding)  # shield: a cancelled request still marks the thread's error as seen


async def _prepared(registry: ModelRegistry, request: TranscriptionRequest) -> tuple[Pipeline, Any, dict[str, Any]]:
    pipeline = registry.pipeline(request.model, PipelineKind.TRANSCRIBE)
    options = _options(pipeline, request)
    try:
        samples = await _decoded(request.file, pipeline.settings.max_audio_seconds)
    except MediaError as error:
        raise InvalidArgument.of(error.field, error.message) from None
    return pipeline, samples, options


def _response(pipeline: Pipeline, transcript: Transcript) -> audio_pb2.CreateTranscriptionResponse:
    # The language asked for, else the one the pipeline detected, else the model's only one.
    languages = _languages(pipeline)
    language = transcript.language or (next(iter(languages)) if len(languages) == 1 else "")
    return audio_pb2.CreateTranscriptionResponse(
        text=transcript.text,
        language=language,
        duration=transcript.duration,
        segments=[
            audio_pb2.TranscriptionSegment(
                id=index,
                start=segment.start,
                end=segment.end,
                text=segment.text,
                # the pipeline's tokens when it gives them, else the segment's text in the model's tokens
                tokens=segment.token_ids or pipeline.codec.encode(segment.text, add_special_tokens=False),
            )
            for index, segment in enumerate(transcript.segments)
        ],
    )


async def _transcripts(pipeline: Pipeline, samples: Any, options: dict[str, Any]) -> AsyncIterator[str | Transcript]:
    try:
        async for answer in pipeline.transcribe(samples, **options):
            yield answer
    except EngineError as error:
        if type(error) is not EngineError:  # overloaded, unavailable, rejected: messages of our own
            raise service_error(error) from None
        log.warning("%s failed to transcribe an upload: %s", pipeline.name, error)
        raise Internal(f"the speech pipeline of {pipeline.name!r} could not transcribe this recording") from None


async def create_transcription(
    registry: ModelRegistry, request: audio_pb2.CreateTranscriptionRequest
) -> audio_pb2.CreateTranscriptionResponse:
    """AudioService.CreateTranscription."""
    pipeline, samples, options = await _prepared(registry, request)
    async for answer in _transcripts(pipeline, samples, options):
        if isinstance(answer, Transcript):
            return _response(pipeline, answer)
    raise EngineError("the speech pipeline gave no transcript")  # unreachable: the last answer is one


async def stream_transcription(
    registry: ModelRegistry, request: audio_pb2.StreamTranscriptionRequest
) -> AsyncIterator[audio_pb2.StreamTranscriptionResponse]:
    """AudioService.StreamTranscription: deltas as the pipeline decodes, then the whole transcript."""
    pipeline, samples, options = await _prepared(registry, request)
    # The pipeline streams one window of audio (Whisper's 30 s), without timestamps, only.
    stream = not options["timestamps"] and len(samples) <= pipeline.window_s * SAMPLE_RATE
    streamed = False
    async for answer in _transcripts(pipeline, samples, {**options, "stream": stream}):
        if isinstance(answer, Transcript):
            if not streamed and answer.text:  # the pipeline could not stream it: the whole text as one delta
                yield audio_pb2.StreamTranscriptionResponse(delta=audio_pb2.TranscriptionDelta(delta=answer.text))
            yield audio_pb2.StreamTranscriptionResponse(done=_response(pipeline, answer))
            return
        if not streamed:
            answer = answer.lstrip()  # as the whole transcript is written: without Whisper's leading space
        if answer:
            streamed = True
            yield audio_pb2.StreamTranscriptionResponse(delta=audio_pb2.TranscriptionDelta(delta=answer))


async def create_translation(
    registry: ModelRegistry, request: audio_pb2.CreateTranslationRequest
) -> audio_pb2.CreateTranslationResponse:
    """AudioService.CreateTranslation: Whisper's translate task, with a transcription's checks, bounds and decoding."""
    # A transcription request without a language or timestamp granularities: the one path checks and decodes both.
    as_transcription = audio_pb2.CreateTranscriptionRequest(
        model=request.model,
        file=request.file,
        filename=request.filename,
        prompt=request.prompt,
        response_format=request.response_format,
    )
    if request.HasField("temperature"):
        as_transcription.temperature = request.temperature
    pipeline, samples, options = await _prepared(registry, as_transcription)
    async for answer in _transcripts(pipeline, samples, {**options, "task": "translate"}):
        if isinstance(answer, Transcript):
            # The two responses are field for field the same message (audio.proto).
            return audio_pb2.CreateTranslationResponse.FromString(_response(pipeline, answer).SerializeToString())
    raise EngineError("the speech pipeline gave no translation")  # unreachable: the last answer is one

"""SpeechService semantics: OpenAI's audio speech on a served SpeechT5 model (OpenVINO GenAI's Text2SpeechPipeline).

A request's fields are checked (400 naming the field): the input's length (--max-speech-chars), the voice among the
model's bundled x-vectors (``voices/NAME.bin``, float32), the format among those this machine's libsndfile writes,
speed 0.25 to 4, no instructions (SpeechT5 takes none). The audio is made, resampled for speed, cut at
--max-speech-seconds and encoded in the model's pipeline process (service/pipelines/speech_runner.py), never on the
event loop. The pipeline does not stream: a streamed call sends the finished audio in pieces. A pipeline failure
reaches the client as a generic message; its own is logged.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

from prometheus_client import Counter

from ovserve.clients.v1 import speech_pb2
from ovserve.service import model_files
from ovserve.service.api.runs import service_error
from ovserve.service.engine import EngineError
from ovserve.service.errors import FieldViolation, Internal, InvalidArgument
from ovserve.service.models import ModelRegistry
from ovserve.service.observability.metrics import REGISTRY
from ovserve.service.pipelines import Pipeline, PipelineKind
from ovserve.service.pipelines.speech_messages import Speak, Spoken
from ovserve.service.pipelines.speech_runner import available_formats

log = logging.getLogger(__name__)

#: OpenAI's bounds on speed.
MIN_SPEED, MAX_SPEED = 0.25, 4.0
#: Bytes of audio per streamed piece (64 KiB: 2 s of 16-bit 16 kHz audio).
CHUNK_BYTES = 64 * 1024
#: response_format -> the audio's media type.
CONTENT_TYPES = {
    "wav": "audio/wav",
    "pcm": "audio/pcm",
    "flac": "audio/flac",
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
}
STREAM_FORMATS = ("", "audio", "sse")
VOICE_FOLDER = "voices"

SPEECH_SECONDS = Counter(
    "ovserve_speech_audio_seconds", "Seconds of audio text-to-speech models made and sent", ["model"],
    registry=REGISTRY,
)  # fmt: skip
SPEECH_CHARACTERS = Counter(
    "ovserve_speech_input_characters", "Characters of text text-to-speech models said", ["model"], registry=REGISTRY
)


class SpeechRequest(Protocol):
    """CreateSpeechRequest and StreamSpeechRequest: the same fields."""

    model: str
    input: str
    voice: str
    response_format: str
    speed: float
    instructions: str
    stream_format: str

    def HasField(self, name: str) -> bool: ...


@functools.cache
def formats() -> tuple[str, ...]:
    """The response formats served here (libsndfile's, asked once)."""
    return tuple(name for name in available_formats() if name in CONTENT_TYPES)


def voices(model_dir: Path) -> dict[str, Path]:
    """The voices a model bundles: name -> its x-vector file."""
    folder = model_dir / VOICE_FOLDER
    return {path.stem: path for path in sorted(folder.glob("*.bin"))} if folder.is_dir() else {}


def _max_tokens(pipeline: Pipeline) -> int:
    """The longest input the model's encoder reads (config.json's max_text_positions; SpeechT5's 600)."""
    return int(model_files.config(pipeline.model_dir).get("max_text_positions") or 600)


def _speaker(pipeline: Pipeline, voice: str, violations: list[FieldViolation]) -> bytes:
    """The voice's x-vector (b"" for the model's default voice)."""
    if not voice:
        return b""
    known = voices(pipeline.model_dir)
    if voice not in known:
        told = ", ".join(known) or "none: leave voice out for the model's default"
        violations.append(FieldViolation("voice", f"{voice[:64]!r} is not a voice of {pipeline.name!r}; it has {told}"))
        return b""
    return known[voice].read_bytes()


def _job(pipeline: Pipeline, request: SpeechRequest) -> dict[str, Any]:
    """The Speak job's fields beside its id; a 400 naming each bad field."""
    violations: list[FieldViolation] = []
    limit = pipeline.settings.max_speech_chars
    if not request.input.strip():
        violations.append(FieldViolation("input", "required: the text to say"))
    elif len(request.input) > limit:
        violations.append(FieldViolation("input", f"{len(request.input)} characters: at most {limit}"))
    elif (tokens := len(pipeline.codec.encode(request.input, add_special_tokens=True))) > _max_tokens(pipeline):
        told = f"{tokens} tokens: {pipeline.name!r} reads at most {_max_tokens(pipeline)}"
        violations.append(FieldViolation("input", told))
    response_format = request.response_format or "wav"
    if response_format not in formats():
        told = f"{response_format[:32]!r}: one of {', '.join(formats())}"
        if response_format == "aac":
            told += " (no AAC encoder here)"
        violations.append(FieldViolation("response_format", told))
    speed = request.speed if request.HasField("speed") else 1.0
    if not (math.isfinite(speed) and MIN_SPEED <= speed <= MAX_SPEED):
        violations.append(FieldViolation("speed", f"{speed}: between {MIN_SPEED} and {MAX_SPEED}"))
    if request.instructions:
        violations.append(FieldViolation("instructions", "not taken: a SpeechT5 voice is its speaker embedding alone"))
    if request.stream_format not in STREAM_FORMATS:
        violations.append(FieldViolation("stream_format", f"{request.stream_format[:32]!r}: one of audio, sse"))
    speaker = _speaker(pipeline, request.voice, violations)
    InvalidArgument.check(violations)
    return {
        "text": request.input,
        "speaker": speaker,
        "response_format": response_format,
        "speed": speed,
        "max_seconds": pipeline.settings.max_speech_seconds,
    }


async def _spoken(registry: ModelRegistry, request: SpeechRequest) -> speech_pb2.CreateSpeechResponse:
    pipeline = registry.pipeline(request.model, PipelineKind.SPEAK)
    fields = _job(pipeline, request)
    try:
        spoken: Spoken = await pipeline.speak(lambda job_id: Speak(job_id, **fields))
    except EngineError as error:
        if type(error) is not EngineError:  # overloaded, unavailable: messages of our own
            raise service_error(error) from None
        log.warning("%s failed to say a text: %s", pipeline.name, error)
        raise Internal(f"the speech pipeline of {pipeline.name!r} could not say this text") from None
    SPEECH_SECONDS.labels(pipeline.name).inc(spoken.seconds)
    SPEECH_CHARACTERS.labels(pipeline.name).inc(len(request.input))
    return speech_pb2.CreateSpeechResponse(
        audio=spoken.audio,
        content_type=CONTENT_TYPES[fields["response_format"]],
        sample_rate=spoken.sample_rate,
        seconds=spoken.seconds,
        cut=spoken.cut,
        input_tokens=len(pipeline.codec.encode(request.input, add_special_tokens=False)),
    )


async def create_speech(
    registry: ModelRegistry, request: speech_pb2.CreateSpeechRequest
) -> speech_pb2.CreateSpeechResponse:
    """SpeechService.CreateSpeech."""
    return await _spoken(registry, request)


async def stream_speech(
    registry: ModelRegistry, request: speech_pb2.StreamSpeechRequest
) -> AsyncIterator[speech_pb2.StreamSpeechResponse]:
    """SpeechService.StreamSpeech: the audio in pieces of CHUNK_BYTES, then the rest of the response."""
    reply = await _spoken(registry, request)
    audio = reply.audio
    for start in range(0, len(audio), CHUNK_BYTES):
        piece = speech_pb2.SpeechAudioDelta(audio=audio[start : start + CHUNK_BYTES])
        if not start:
            piece.content_type = reply.content_type
        yield speech_pb2.StreamSpeechResponse(delta=piece)
    reply.audio = b""
    yield speech_pb2.StreamSpeechResponse(done=reply)

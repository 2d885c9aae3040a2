from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateTranscriptionRequest(_message.Message):
    __slots__ = ("model", "file", "filename", "language", "prompt", "response_format", "temperature", "timestamp_granularities")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_GRANULARITIES_FIELD_NUMBER: _ClassVar[int]
    model: str
    file: bytes
    filename: str
    language: str
    prompt: str
    response_format: str
    temperature: float
    timestamp_granularities: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, model: _Optional[str] = ..., file: _Optional[bytes] = ..., filename: _Optional[str] = ..., language: _Optional[str] = ..., prompt: _Optional[str] = ..., response_format: _Optional[str] = ..., temperature: _Optional[float] = ..., timestamp_granularities: _Optional[_Iterable[str]] = ...) -> None: ...

class StreamTranscriptionRequest(_message.Message):
    __slots__ = ("model", "file", "filename", "language", "prompt", "response_format", "temperature", "timestamp_granularities")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_GRANULARITIES_FIELD_NUMBER: _ClassVar[int]
    model: str
    file: bytes
    filename: str
    language: str
    prompt: str
    response_format: str
    temperature: float
    timestamp_granularities: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, model: _Optional[str] = ..., file: _Optional[bytes] = ..., filename: _Optional[str] = ..., language: _Optional[str] = ..., prompt: _Optional[str] = ..., response_format: _Optional[str] = ..., temperature: _Optional[float] = ..., timestamp_granularities: _Optional[_Iterable[str]] = ...) -> None: ...

class TranscriptionSegment(_message.Message):
    __slots__ = ("id", "start", "end", "text", "tokens")
    ID_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    id: int
    start: float
    end: float
    text: str
    tokens: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, id: _Optional[int] = ..., start: _Optional[float] = ..., end: _Optional[float] = ..., text: _Optional[str] = ..., tokens: _Optional[_Iterable[int]] = ...) -> None: ...

class CreateTranscriptionResponse(_message.Message):
    __slots__ = ("text", "language", "duration", "segments")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    text: str
    language: str
    duration: float
    segments: _containers.RepeatedCompositeFieldContainer[TranscriptionSegment]
    def __init__(self, text: _Optional[str] = ..., language: _Optional[str] = ..., duration: _Optional[float] = ..., segments: _Optional[_Iterable[_Union[TranscriptionSegment, _Mapping]]] = ...) -> None: ...

class TranscriptionDelta(_message.Message):
    __slots__ = ("delta",)
    DELTA_FIELD_NUMBER: _ClassVar[int]
    delta: str
    def __init__(self, delta: _Optional[str] = ...) -> None: ...

class StreamTranscriptionResponse(_message.Message):
    __slots__ = ("delta", "done")
    DELTA_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    delta: TranscriptionDelta
    done: CreateTranscriptionResponse
    def __init__(self, delta: _Optional[_Union[TranscriptionDelta, _Mapping]] = ..., done: _Optional[_Union[CreateTranscriptionResponse, _Mapping]] = ...) -> None: ...

class CreateTranslationRequest(_message.Message):
    __slots__ = ("model", "file", "filename", "prompt", "response_format", "temperature")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    model: str
    file: bytes
    filename: str
    prompt: str
    response_format: str
    temperature: float
    def __init__(self, model: _Optional[str] = ..., file: _Optional[bytes] = ..., filename: _Optional[str] = ..., prompt: _Optional[str] = ..., response_format: _Optional[str] = ..., temperature: _Optional[float] = ...) -> None: ...

class CreateTranslationResponse(_message.Message):
    __slots__ = ("text", "language", "duration", "segments")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    text: str
    language: str
    duration: float
    segments: _containers.RepeatedCompositeFieldContainer[TranscriptionSegment]
    def __init__(self, text: _Optional[str] = ..., language: _Optional[str] = ..., duration: _Optional[float] = ..., segments: _Optional[_Iterable[_Union[TranscriptionSegment, _Mapping]]] = ...) -> None: ...

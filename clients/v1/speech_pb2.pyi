from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateSpeechRequest(_message.Message):
    __slots__ = ("model", "input", "voice", "response_format", "speed", "instructions", "stream_format")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    VOICE_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    STREAM_FORMAT_FIELD_NUMBER: _ClassVar[int]
    model: str
    input: str
    voice: str
    response_format: str
    speed: float
    instructions: str
    stream_format: str
    def __init__(self, model: _Optional[str] = ..., input: _Optional[str] = ..., voice: _Optional[str] = ..., response_format: _Optional[str] = ..., speed: _Optional[float] = ..., instructions: _Optional[str] = ..., stream_format: _Optional[str] = ...) -> None: ...

class StreamSpeechRequest(_message.Message):
    __slots__ = ("model", "input", "voice", "response_format", "speed", "instructions", "stream_format")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    VOICE_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    STREAM_FORMAT_FIELD_NUMBER: _ClassVar[int]
    model: str
    input: str
    voice: str
    response_format: str
    speed: float
    instructions: str
    stream_format: str
    def __init__(self, model: _Optional[str] = ..., input: _Optional[str] = ..., voice: _Optional[str] = ..., response_format: _Optional[str] = ..., speed: _Optional[float] = ..., instructions: _Optional[str] = ..., stream_format: _Optional[str] = ...) -> None: ...

class CreateSpeechResponse(_message.Message):
    __slots__ = ("audio", "content_type", "sample_rate", "seconds", "cut", "input_tokens")
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_RATE_FIELD_NUMBER: _ClassVar[int]
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    CUT_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    audio: bytes
    content_type: str
    sample_rate: int
    seconds: float
    cut: bool
    input_tokens: int
    def __init__(self, audio: _Optional[bytes] = ..., content_type: _Optional[str] = ..., sample_rate: _Optional[int] = ..., seconds: _Optional[float] = ..., cut: _Optional[bool] = ..., input_tokens: _Optional[int] = ...) -> None: ...

class SpeechAudioDelta(_message.Message):
    __slots__ = ("audio", "content_type")
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    audio: bytes
    content_type: str
    def __init__(self, audio: _Optional[bytes] = ..., content_type: _Optional[str] = ...) -> None: ...

class StreamSpeechResponse(_message.Message):
    __slots__ = ("delta", "done")
    DELTA_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    delta: SpeechAudioDelta
    done: CreateSpeechResponse
    def __init__(self, delta: _Optional[_Union[SpeechAudioDelta, _Mapping]] = ..., done: _Optional[_Union[CreateSpeechResponse, _Mapping]] = ...) -> None: ...

from google.api import annotations_pb2 as _annotations_pb2
from . import completion_pb2 as _completion_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateEmbeddingRequest(_message.Message):
    __slots__ = ("model", "input", "input_prompts", "dimensions", "encoding_format", "user", "input_type")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    INPUT_PROMPTS_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    ENCODING_FORMAT_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    INPUT_TYPE_FIELD_NUMBER: _ClassVar[int]
    model: str
    input: str
    input_prompts: _containers.RepeatedCompositeFieldContainer[_completion_pb2.Prompt]
    dimensions: int
    encoding_format: str
    user: str
    input_type: str
    def __init__(self, model: _Optional[str] = ..., input: _Optional[str] = ..., input_prompts: _Optional[_Iterable[_Union[_completion_pb2.Prompt, _Mapping]]] = ..., dimensions: _Optional[int] = ..., encoding_format: _Optional[str] = ..., user: _Optional[str] = ..., input_type: _Optional[str] = ...) -> None: ...

class Embedding(_message.Message):
    __slots__ = ("object", "index", "embedding")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_FIELD_NUMBER: _ClassVar[int]
    object: str
    index: int
    embedding: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, object: _Optional[str] = ..., index: _Optional[int] = ..., embedding: _Optional[_Iterable[float]] = ...) -> None: ...

class EmbeddingUsage(_message.Message):
    __slots__ = ("prompt_tokens", "total_tokens")
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    prompt_tokens: int
    total_tokens: int
    def __init__(self, prompt_tokens: _Optional[int] = ..., total_tokens: _Optional[int] = ...) -> None: ...

class CreateEmbeddingResponse(_message.Message):
    __slots__ = ("object", "data", "model", "usage")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    object: str
    data: _containers.RepeatedCompositeFieldContainer[Embedding]
    model: str
    usage: EmbeddingUsage
    def __init__(self, object: _Optional[str] = ..., data: _Optional[_Iterable[_Union[Embedding, _Mapping]]] = ..., model: _Optional[str] = ..., usage: _Optional[_Union[EmbeddingUsage, _Mapping]] = ...) -> None: ...

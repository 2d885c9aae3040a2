from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RerankDocument(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class RerankRequest(_message.Message):
    __slots__ = ("model", "query", "documents", "top_n", "return_documents")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    TOP_N_FIELD_NUMBER: _ClassVar[int]
    RETURN_DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    model: str
    query: str
    documents: _containers.RepeatedCompositeFieldContainer[RerankDocument]
    top_n: int
    return_documents: bool
    def __init__(self, model: _Optional[str] = ..., query: _Optional[str] = ..., documents: _Optional[_Iterable[_Union[RerankDocument, _Mapping]]] = ..., top_n: _Optional[int] = ..., return_documents: _Optional[bool] = ...) -> None: ...

class RerankResult(_message.Message):
    __slots__ = ("index", "relevance_score", "document")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_SCORE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    index: int
    relevance_score: float
    document: RerankDocument
    def __init__(self, index: _Optional[int] = ..., relevance_score: _Optional[float] = ..., document: _Optional[_Union[RerankDocument, _Mapping]] = ...) -> None: ...

class RerankUsage(_message.Message):
    __slots__ = ("total_tokens",)
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    total_tokens: int
    def __init__(self, total_tokens: _Optional[int] = ...) -> None: ...

class RerankResponse(_message.Message):
    __slots__ = ("id", "model", "results", "usage")
    ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    id: str
    model: str
    results: _containers.RepeatedCompositeFieldContainer[RerankResult]
    usage: RerankUsage
    def __init__(self, id: _Optional[str] = ..., model: _Optional[str] = ..., results: _Optional[_Iterable[_Union[RerankResult, _Mapping]]] = ..., usage: _Optional[_Union[RerankUsage, _Mapping]] = ...) -> None: ...

class ScoreRequest(_message.Message):
    __slots__ = ("model", "text_1", "text_2")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    TEXT_1_FIELD_NUMBER: _ClassVar[int]
    TEXT_2_FIELD_NUMBER: _ClassVar[int]
    model: str
    text_1: _containers.RepeatedScalarFieldContainer[str]
    text_2: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, model: _Optional[str] = ..., text_1: _Optional[_Iterable[str]] = ..., text_2: _Optional[_Iterable[str]] = ...) -> None: ...

class ScoreData(_message.Message):
    __slots__ = ("index", "object", "score")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    index: int
    object: str
    score: float
    def __init__(self, index: _Optional[int] = ..., object: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...

class ScoreResponse(_message.Message):
    __slots__ = ("id", "object", "created", "model", "data", "usage")
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    id: str
    object: str
    created: int
    model: str
    data: _containers.RepeatedCompositeFieldContainer[ScoreData]
    usage: RerankUsage
    def __init__(self, id: _Optional[str] = ..., object: _Optional[str] = ..., created: _Optional[int] = ..., model: _Optional[str] = ..., data: _Optional[_Iterable[_Union[ScoreData, _Mapping]]] = ..., usage: _Optional[_Union[RerankUsage, _Mapping]] = ...) -> None: ...

from google.api import annotations_pb2 as _annotations_pb2
from . import file_pb2 as _file_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class BatchRequestCounts(_message.Message):
    __slots__ = ("total", "completed", "failed")
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    total: int
    completed: int
    failed: int
    def __init__(self, total: _Optional[int] = ..., completed: _Optional[int] = ..., failed: _Optional[int] = ...) -> None: ...

class BatchError(_message.Message):
    __slots__ = ("code", "message", "param", "line")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PARAM_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    param: str
    line: int
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., param: _Optional[str] = ..., line: _Optional[int] = ...) -> None: ...

class BatchErrors(_message.Message):
    __slots__ = ("object", "data")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    object: str
    data: _containers.RepeatedCompositeFieldContainer[BatchError]
    def __init__(self, object: _Optional[str] = ..., data: _Optional[_Iterable[_Union[BatchError, _Mapping]]] = ...) -> None: ...

class BatchInputTokensDetails(_message.Message):
    __slots__ = ("cached_tokens",)
    CACHED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    cached_tokens: int
    def __init__(self, cached_tokens: _Optional[int] = ...) -> None: ...

class BatchOutputTokensDetails(_message.Message):
    __slots__ = ("reasoning_tokens",)
    REASONING_TOKENS_FIELD_NUMBER: _ClassVar[int]
    reasoning_tokens: int
    def __init__(self, reasoning_tokens: _Optional[int] = ...) -> None: ...

class BatchUsage(_message.Message):
    __slots__ = ("input_tokens", "input_tokens_details", "output_tokens", "output_tokens_details", "total_tokens")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_DETAILS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_DETAILS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    input_tokens_details: BatchInputTokensDetails
    output_tokens: int
    output_tokens_details: BatchOutputTokensDetails
    total_tokens: int
    def __init__(self, input_tokens: _Optional[int] = ..., input_tokens_details: _Optional[_Union[BatchInputTokensDetails, _Mapping]] = ..., output_tokens: _Optional[int] = ..., output_tokens_details: _Optional[_Union[BatchOutputTokensDetails, _Mapping]] = ..., total_tokens: _Optional[int] = ...) -> None: ...

class Batch(_message.Message):
    __slots__ = ("id", "object", "endpoint", "model", "input_file_id", "completion_window", "status", "output_file_id", "error_file_id", "created_at", "in_progress_at", "expires_at", "finalizing_at", "completed_at", "failed_at", "expired_at", "cancelling_at", "cancelled_at", "request_counts", "metadata", "errors", "usage", "output_expires_after")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INPUT_FILE_ID_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_WINDOW_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FILE_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FILE_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    IN_PROGRESS_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    FINALIZING_AT_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_AT_FIELD_NUMBER: _ClassVar[int]
    FAILED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRED_AT_FIELD_NUMBER: _ClassVar[int]
    CANCELLING_AT_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_AT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_COUNTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_EXPIRES_AFTER_FIELD_NUMBER: _ClassVar[int]
    id: str
    object: str
    endpoint: str
    model: str
    input_file_id: str
    completion_window: str
    status: str
    output_file_id: str
    error_file_id: str
    created_at: int
    in_progress_at: int
    expires_at: int
    finalizing_at: int
    completed_at: int
    failed_at: int
    expired_at: int
    cancelling_at: int
    cancelled_at: int
    request_counts: BatchRequestCounts
    metadata: _containers.ScalarMap[str, str]
    errors: BatchErrors
    usage: BatchUsage
    output_expires_after: _file_pb2.FileExpiration
    def __init__(self, id: _Optional[str] = ..., object: _Optional[str] = ..., endpoint: _Optional[str] = ..., model: _Optional[str] = ..., input_file_id: _Optional[str] = ..., completion_window: _Optional[str] = ..., status: _Optional[str] = ..., output_file_id: _Optional[str] = ..., error_file_id: _Optional[str] = ..., created_at: _Optional[int] = ..., in_progress_at: _Optional[int] = ..., expires_at: _Optional[int] = ..., finalizing_at: _Optional[int] = ..., completed_at: _Optional[int] = ..., failed_at: _Optional[int] = ..., expired_at: _Optional[int] = ..., cancelling_at: _Optional[int] = ..., cancelled_at: _Optional[int] = ..., request_counts: _Optional[_Union[BatchRequestCounts, _Mapping]] = ..., metadata: _Optional[_Mapping[str, str]] = ..., errors: _Optional[_Union[BatchErrors, _Mapping]] = ..., usage: _Optional[_Union[BatchUsage, _Mapping]] = ..., output_expires_after: _Optional[_Union[_file_pb2.FileExpiration, _Mapping]] = ...) -> None: ...

class CreateBatchRequest(_message.Message):
    __slots__ = ("input_file_id", "endpoint", "completion_window", "metadata", "output_expires_after")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    INPUT_FILE_ID_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_WINDOW_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_EXPIRES_AFTER_FIELD_NUMBER: _ClassVar[int]
    input_file_id: str
    endpoint: str
    completion_window: str
    metadata: _containers.ScalarMap[str, str]
    output_expires_after: _file_pb2.FileExpiration
    def __init__(self, input_file_id: _Optional[str] = ..., endpoint: _Optional[str] = ..., completion_window: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., output_expires_after: _Optional[_Union[_file_pb2.FileExpiration, _Mapping]] = ...) -> None: ...

class CreateBatchResponse(_message.Message):
    __slots__ = ("batch",)
    BATCH_FIELD_NUMBER: _ClassVar[int]
    batch: Batch
    def __init__(self, batch: _Optional[_Union[Batch, _Mapping]] = ...) -> None: ...

class GetBatchRequest(_message.Message):
    __slots__ = ("batch_id",)
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    batch_id: str
    def __init__(self, batch_id: _Optional[str] = ...) -> None: ...

class GetBatchResponse(_message.Message):
    __slots__ = ("batch",)
    BATCH_FIELD_NUMBER: _ClassVar[int]
    batch: Batch
    def __init__(self, batch: _Optional[_Union[Batch, _Mapping]] = ...) -> None: ...

class ListBatchesRequest(_message.Message):
    __slots__ = ("after", "limit")
    AFTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    after: str
    limit: int
    def __init__(self, after: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ListBatchesResponse(_message.Message):
    __slots__ = ("object", "data", "first_id", "last_id", "has_more")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    FIRST_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ID_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    object: str
    data: _containers.RepeatedCompositeFieldContainer[Batch]
    first_id: str
    last_id: str
    has_more: bool
    def __init__(self, object: _Optional[str] = ..., data: _Optional[_Iterable[_Union[Batch, _Mapping]]] = ..., first_id: _Optional[str] = ..., last_id: _Optional[str] = ..., has_more: _Optional[bool] = ...) -> None: ...

class CancelBatchRequest(_message.Message):
    __slots__ = ("batch_id",)
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    batch_id: str
    def __init__(self, batch_id: _Optional[str] = ...) -> None: ...

class CancelBatchResponse(_message.Message):
    __slots__ = ("batch",)
    BATCH_FIELD_NUMBER: _ClassVar[int]
    batch: Batch
    def __init__(self, batch: _Optional[_Union[Batch, _Mapping]] = ...) -> None: ...

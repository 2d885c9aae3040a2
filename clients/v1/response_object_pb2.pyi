from google.protobuf import struct_pb2 as _struct_pb2
from . import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ResponseStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESPONSE_STATUS_UNSPECIFIED: _ClassVar[ResponseStatus]
    RESPONSE_STATUS_QUEUED: _ClassVar[ResponseStatus]
    RESPONSE_STATUS_IN_PROGRESS: _ClassVar[ResponseStatus]
    RESPONSE_STATUS_COMPLETED: _ClassVar[ResponseStatus]
    RESPONSE_STATUS_INCOMPLETE: _ClassVar[ResponseStatus]
    RESPONSE_STATUS_FAILED: _ClassVar[ResponseStatus]
    RESPONSE_STATUS_CANCELLED: _ClassVar[ResponseStatus]

class ItemStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ITEM_STATUS_UNSPECIFIED: _ClassVar[ItemStatus]
    ITEM_STATUS_IN_PROGRESS: _ClassVar[ItemStatus]
    ITEM_STATUS_COMPLETED: _ClassVar[ItemStatus]
    ITEM_STATUS_INCOMPLETE: _ClassVar[ItemStatus]
    ITEM_STATUS_CALLING: _ClassVar[ItemStatus]
    ITEM_STATUS_FAILED: _ClassVar[ItemStatus]

class IncompleteReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INCOMPLETE_REASON_UNSPECIFIED: _ClassVar[IncompleteReason]
    INCOMPLETE_REASON_MAX_OUTPUT_TOKENS: _ClassVar[IncompleteReason]
    INCOMPLETE_REASON_CONTENT_FILTER: _ClassVar[IncompleteReason]
RESPONSE_STATUS_UNSPECIFIED: ResponseStatus
RESPONSE_STATUS_QUEUED: ResponseStatus
RESPONSE_STATUS_IN_PROGRESS: ResponseStatus
RESPONSE_STATUS_COMPLETED: ResponseStatus
RESPONSE_STATUS_INCOMPLETE: ResponseStatus
RESPONSE_STATUS_FAILED: ResponseStatus
RESPONSE_STATUS_CANCELLED: ResponseStatus
ITEM_STATUS_UNSPECIFIED: ItemStatus
ITEM_STATUS_IN_PROGRESS: ItemStatus
ITEM_STATUS_COMPLETED: ItemStatus
ITEM_STATUS_INCOMPLETE: ItemStatus
ITEM_STATUS_CALLING: ItemStatus
ITEM_STATUS_FAILED: ItemStatus
INCOMPLETE_REASON_UNSPECIFIED: IncompleteReason
INCOMPLETE_REASON_MAX_OUTPUT_TOKENS: IncompleteReason
INCOMPLETE_REASON_CONTENT_FILTER: IncompleteReason

class Response(_message.Message):
    __slots__ = ("id", "object", "created_at", "completed_at", "status", "model", "output", "usage", "error", "incomplete_details", "instructions", "previous_response_id", "store", "background", "max_output_tokens", "stop", "stop_sequences", "ignore_eos", "include_stop_str_in_output", "skip_special_tokens", "truncation", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "frequency_penalty", "presence_penalty", "seed", "n", "best_of", "length_penalty", "diversity_penalty", "num_assistant_tokens", "assistant_confidence_threshold", "max_ngram_size", "logprobs", "top_logprobs", "tools", "tool_choice", "named_tool_choice", "parallel_tool_calls", "text", "response_format", "reasoning", "chat_template_kwargs", "user", "metadata", "max_tool_calls", "prompt_cache_key", "prompt_cache_retention", "safety_identifier", "service_tier", "conversation")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_AT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    INCOMPLETE_DETAILS_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_RESPONSE_ID_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    STOP_SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    IGNORE_EOS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_STOP_STR_IN_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    SKIP_SPECIAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATION_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    TOP_P_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    MIN_P_FIELD_NUMBER: _ClassVar[int]
    REPETITION_PENALTY_FIELD_NUMBER: _ClassVar[int]
    FREQUENCY_PENALTY_FIELD_NUMBER: _ClassVar[int]
    PRESENCE_PENALTY_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    N_FIELD_NUMBER: _ClassVar[int]
    BEST_OF_FIELD_NUMBER: _ClassVar[int]
    LENGTH_PENALTY_FIELD_NUMBER: _ClassVar[int]
    DIVERSITY_PENALTY_FIELD_NUMBER: _ClassVar[int]
    NUM_ASSISTANT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    ASSISTANT_CONFIDENCE_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    MAX_NGRAM_SIZE_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    TOP_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CHOICE_FIELD_NUMBER: _ClassVar[int]
    NAMED_TOOL_CHOICE_FIELD_NUMBER: _ClassVar[int]
    PARALLEL_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    REASONING_FIELD_NUMBER: _ClassVar[int]
    CHAT_TEMPLATE_KWARGS_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    MAX_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_CACHE_KEY_FIELD_NUMBER: _ClassVar[int]
    PROMPT_CACHE_RETENTION_FIELD_NUMBER: _ClassVar[int]
    SAFETY_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    SERVICE_TIER_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    id: str
    object: str
    created_at: int
    completed_at: int
    status: ResponseStatus
    model: str
    output: _containers.RepeatedCompositeFieldContainer[OutputItem]
    usage: ResponseUsage
    error: ResponseError
    incomplete_details: IncompleteDetails
    instructions: str
    previous_response_id: str
    store: bool
    background: bool
    max_output_tokens: int
    stop: str
    stop_sequences: _containers.RepeatedScalarFieldContainer[str]
    ignore_eos: bool
    include_stop_str_in_output: bool
    skip_special_tokens: bool
    truncation: str
    temperature: float
    top_p: float
    top_k: int
    min_p: float
    repetition_penalty: float
    frequency_penalty: float
    presence_penalty: float
    seed: int
    n: int
    best_of: int
    length_penalty: float
    diversity_penalty: float
    num_assistant_tokens: int
    assistant_confidence_threshold: float
    max_ngram_size: int
    logprobs: bool
    top_logprobs: int
    tools: _containers.RepeatedCompositeFieldContainer[ResponseTool]
    tool_choice: str
    named_tool_choice: ResponseNamedToolChoice
    parallel_tool_calls: bool
    text: ResponseTextConfig
    response_format: _common_pb2.ResponseFormat
    reasoning: ReasoningConfig
    chat_template_kwargs: _struct_pb2.Struct
    user: str
    metadata: _containers.ScalarMap[str, str]
    max_tool_calls: int
    prompt_cache_key: str
    prompt_cache_retention: str
    safety_identifier: str
    service_tier: str
    conversation: ResponseConversation
    def __init__(self, id: _Optional[str] = ..., object: _Optional[str] = ..., created_at: _Optional[int] = ..., completed_at: _Optional[int] = ..., status: _Optional[_Union[ResponseStatus, str]] = ..., model: _Optional[str] = ..., output: _Optional[_Iterable[_Union[OutputItem, _Mapping]]] = ..., usage: _Optional[_Union[ResponseUsage, _Mapping]] = ..., error: _Optional[_Union[ResponseError, _Mapping]] = ..., incomplete_details: _Optional[_Union[IncompleteDetails, _Mapping]] = ..., instructions: _Optional[str] = ..., previous_response_id: _Optional[str] = ..., store: _Optional[bool] = ..., background: _Optional[bool] = ..., max_output_tokens: _Optional[int] = ..., stop: _Optional[str] = ..., stop_sequences: _Optional[_Iterable[str]] = ..., ignore_eos: _Optional[bool] = ..., include_stop_str_in_output: _Optional[bool] = ..., skip_special_tokens: _Optional[bool] = ..., truncation: _Optional[str] = ..., temperature: _Optional[float] = ..., top_p: _Optional[float] = ..., top_k: _Optional[int] = ..., min_p: _Optional[float] = ..., repetition_penalty: _Optional[float] = ..., frequency_penalty: _Optional[float] = ..., presence_penalty: _Optional[float] = ..., seed: _Optional[int] = ..., n: _Optional[int] = ..., best_of: _Optional[int] = ..., length_penalty: _Optional[float] = ..., diversity_penalty: _Optional[float] = ..., num_assistant_tokens: _Optional[int] = ..., assistant_confidence_threshold: _Optional[float] = ..., max_ngram_size: _Optional[int] = ..., logprobs: _Optional[bool] = ..., top_logprobs: _Optional[int] = ..., tools: _Optional[_Iterable[_Union[ResponseTool, _Mapping]]] = ..., tool_choice: _Optional[str] = ..., named_tool_choice: _Optional[_Union[ResponseNamedToolChoice, _Mapping]] = ..., parallel_tool_calls: _Optional[bool] = ..., text: _Optional[_Union[ResponseTextConfig, _Mapping]] = ..., response_format: _Optional[_Union[_common_pb2.ResponseFormat, _Mapping]] = ..., reasoning: _Optional[_Union[ReasoningConfig, _Mapping]] = ..., chat_template_kwargs: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., user: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., max_tool_calls: _Optional[int] = ..., prompt_cache_key: _Optional[str] = ..., prompt_cache_retention: _Optional[str] = ..., safety_identifier: _Optional[str] = ..., service_tier: _Optional[str] = ..., conversation: _Optional[_Union[ResponseConversation, _Mapping]] = ...) -> None: ...

class ResponseConversation(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class ResponseUsage(_message.Message):
    __slots__ = ("input_tokens", "input_tokens_details", "output_tokens", "output_tokens_details", "total_tokens")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_DETAILS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_DETAILS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int
    def __init__(self, input_tokens: _Optional[int] = ..., input_tokens_details: _Optional[_Union[InputTokensDetails, _Mapping]] = ..., output_tokens: _Optional[int] = ..., output_tokens_details: _Optional[_Union[OutputTokensDetails, _Mapping]] = ..., total_tokens: _Optional[int] = ...) -> None: ...

class InputTokensDetails(_message.Message):
    __slots__ = ("cached_tokens",)
    CACHED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    cached_tokens: int
    def __init__(self, cached_tokens: _Optional[int] = ...) -> None: ...

class OutputTokensDetails(_message.Message):
    __slots__ = ("reasoning_tokens",)
    REASONING_TOKENS_FIELD_NUMBER: _ClassVar[int]
    reasoning_tokens: int
    def __init__(self, reasoning_tokens: _Optional[int] = ...) -> None: ...

class ResponseError(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class IncompleteDetails(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: IncompleteReason
    def __init__(self, reason: _Optional[_Union[IncompleteReason, str]] = ...) -> None: ...

class OutputItem(_message.Message):
    __slots__ = ("message", "function_call", "reasoning", "mcp_list_tools", "mcp_call", "mcp_approval_request", "custom_tool_call")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_CALL_FIELD_NUMBER: _ClassVar[int]
    REASONING_FIELD_NUMBER: _ClassVar[int]
    MCP_LIST_TOOLS_FIELD_NUMBER: _ClassVar[int]
    MCP_CALL_FIELD_NUMBER: _ClassVar[int]
    MCP_APPROVAL_REQUEST_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    message: OutputMessage
    function_call: OutputFunctionCall
    reasoning: OutputReasoning
    mcp_list_tools: OutputMcpListTools
    mcp_call: OutputMcpCall
    mcp_approval_request: OutputMcpApprovalRequest
    custom_tool_call: OutputCustomToolCall
    def __init__(self, message: _Optional[_Union[OutputMessage, _Mapping]] = ..., function_call: _Optional[_Union[OutputFunctionCall, _Mapping]] = ..., reasoning: _Optional[_Union[OutputReasoning, _Mapping]] = ..., mcp_list_tools: _Optional[_Union[OutputMcpListTools, _Mapping]] = ..., mcp_call: _Optional[_Union[OutputMcpCall, _Mapping]] = ..., mcp_approval_request: _Optional[_Union[OutputMcpApprovalRequest, _Mapping]] = ..., custom_tool_call: _Optional[_Union[OutputCustomToolCall, _Mapping]] = ...) -> None: ...

class OutputCustomToolCall(_message.Message):
    __slots__ = ("id", "call_id", "name", "input", "status")
    ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    id: str
    call_id: str
    name: str
    input: str
    status: ItemStatus
    def __init__(self, id: _Optional[str] = ..., call_id: _Optional[str] = ..., name: _Optional[str] = ..., input: _Optional[str] = ..., status: _Optional[_Union[ItemStatus, str]] = ...) -> None: ...

class OutputMcpListTools(_message.Message):
    __slots__ = ("id", "server_label", "tools", "error")
    ID_FIELD_NUMBER: _ClassVar[int]
    SERVER_LABEL_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    id: str
    server_label: str
    tools: _containers.RepeatedCompositeFieldContainer[McpToolInfo]
    error: str
    def __init__(self, id: _Optional[str] = ..., server_label: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[McpToolInfo, _Mapping]]] = ..., error: _Optional[str] = ...) -> None: ...

class McpToolInfo(_message.Message):
    __slots__ = ("name", "description", "input_schema", "annotations")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    input_schema: _struct_pb2.Struct
    annotations: _struct_pb2.Struct
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., input_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., annotations: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class OutputMcpCall(_message.Message):
    __slots__ = ("id", "server_label", "name", "arguments", "output", "error", "status", "approval_request_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    SERVER_LABEL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    server_label: str
    name: str
    arguments: str
    output: str
    error: str
    status: ItemStatus
    approval_request_id: str
    def __init__(self, id: _Optional[str] = ..., server_label: _Optional[str] = ..., name: _Optional[str] = ..., arguments: _Optional[str] = ..., output: _Optional[str] = ..., error: _Optional[str] = ..., status: _Optional[_Union[ItemStatus, str]] = ..., approval_request_id: _Optional[str] = ...) -> None: ...

class OutputMcpApprovalRequest(_message.Message):
    __slots__ = ("id", "server_label", "name", "arguments")
    ID_FIELD_NUMBER: _ClassVar[int]
    SERVER_LABEL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    id: str
    server_label: str
    name: str
    arguments: str
    def __init__(self, id: _Optional[str] = ..., server_label: _Optional[str] = ..., name: _Optional[str] = ..., arguments: _Optional[str] = ...) -> None: ...

class OutputMessage(_message.Message):
    __slots__ = ("id", "role", "status", "content")
    ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    id: str
    role: _common_pb2.Role
    status: ItemStatus
    content: _containers.RepeatedCompositeFieldContainer[OutputContentPart]
    def __init__(self, id: _Optional[str] = ..., role: _Optional[_Union[_common_pb2.Role, str]] = ..., status: _Optional[_Union[ItemStatus, str]] = ..., content: _Optional[_Iterable[_Union[OutputContentPart, _Mapping]]] = ...) -> None: ...

class OutputContentPart(_message.Message):
    __slots__ = ("output_text", "refusal", "reasoning_text")
    OUTPUT_TEXT_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    REASONING_TEXT_FIELD_NUMBER: _ClassVar[int]
    output_text: OutputText
    refusal: OutputRefusal
    reasoning_text: ReasoningText
    def __init__(self, output_text: _Optional[_Union[OutputText, _Mapping]] = ..., refusal: _Optional[_Union[OutputRefusal, _Mapping]] = ..., reasoning_text: _Optional[_Union[ReasoningText, _Mapping]] = ...) -> None: ...

class OutputText(_message.Message):
    __slots__ = ("text", "annotations", "logprobs")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    text: str
    annotations: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    logprobs: _containers.RepeatedCompositeFieldContainer[_common_pb2.TokenLogprob]
    def __init__(self, text: _Optional[str] = ..., annotations: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., logprobs: _Optional[_Iterable[_Union[_common_pb2.TokenLogprob, _Mapping]]] = ...) -> None: ...

class OutputRefusal(_message.Message):
    __slots__ = ("refusal",)
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    refusal: str
    def __init__(self, refusal: _Optional[str] = ...) -> None: ...

class OutputFunctionCall(_message.Message):
    __slots__ = ("id", "call_id", "name", "arguments", "status")
    ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    id: str
    call_id: str
    name: str
    arguments: str
    status: ItemStatus
    def __init__(self, id: _Optional[str] = ..., call_id: _Optional[str] = ..., name: _Optional[str] = ..., arguments: _Optional[str] = ..., status: _Optional[_Union[ItemStatus, str]] = ...) -> None: ...

class OutputReasoning(_message.Message):
    __slots__ = ("id", "summary", "content", "status")
    ID_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    id: str
    summary: _containers.RepeatedCompositeFieldContainer[SummaryText]
    content: _containers.RepeatedCompositeFieldContainer[ReasoningText]
    status: ItemStatus
    def __init__(self, id: _Optional[str] = ..., summary: _Optional[_Iterable[_Union[SummaryText, _Mapping]]] = ..., content: _Optional[_Iterable[_Union[ReasoningText, _Mapping]]] = ..., status: _Optional[_Union[ItemStatus, str]] = ...) -> None: ...

class SummaryText(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class ReasoningText(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class InputItem(_message.Message):
    __slots__ = ("type", "id", "role", "content", "content_parts", "status", "call_id", "name", "arguments", "output", "output_parts", "summary", "phase", "encrypted_content", "server_label", "approval_request_id", "approve", "reason", "tools", "error", "input")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    CONTENT_PARTS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_PARTS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    ENCRYPTED_CONTENT_FIELD_NUMBER: _ClassVar[int]
    SERVER_LABEL_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    APPROVE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    type: str
    id: str
    role: str
    content: str
    content_parts: _containers.RepeatedCompositeFieldContainer[InputContentPart]
    status: str
    call_id: str
    name: str
    arguments: str
    output: str
    output_parts: _containers.RepeatedCompositeFieldContainer[InputContentPart]
    summary: _containers.RepeatedCompositeFieldContainer[InputContentPart]
    phase: str
    encrypted_content: str
    server_label: str
    approval_request_id: str
    approve: bool
    reason: str
    tools: _containers.RepeatedCompositeFieldContainer[McpToolInfo]
    error: str
    input: str
    def __init__(self, type: _Optional[str] = ..., id: _Optional[str] = ..., role: _Optional[str] = ..., content: _Optional[str] = ..., content_parts: _Optional[_Iterable[_Union[InputContentPart, _Mapping]]] = ..., status: _Optional[str] = ..., call_id: _Optional[str] = ..., name: _Optional[str] = ..., arguments: _Optional[str] = ..., output: _Optional[str] = ..., output_parts: _Optional[_Iterable[_Union[InputContentPart, _Mapping]]] = ..., summary: _Optional[_Iterable[_Union[InputContentPart, _Mapping]]] = ..., phase: _Optional[str] = ..., encrypted_content: _Optional[str] = ..., server_label: _Optional[str] = ..., approval_request_id: _Optional[str] = ..., approve: _Optional[bool] = ..., reason: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[McpToolInfo, _Mapping]]] = ..., error: _Optional[str] = ..., input: _Optional[str] = ...) -> None: ...

class InputContentPart(_message.Message):
    __slots__ = ("type", "text", "image_url", "detail", "refusal", "annotations", "logprobs", "image_data", "file_data", "filename", "file_url", "file_id")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    IMAGE_URL_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    IMAGE_DATA_FIELD_NUMBER: _ClassVar[int]
    FILE_DATA_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    FILE_URL_FIELD_NUMBER: _ClassVar[int]
    FILE_ID_FIELD_NUMBER: _ClassVar[int]
    type: str
    text: str
    image_url: str
    detail: str
    refusal: str
    annotations: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    logprobs: _containers.RepeatedCompositeFieldContainer[_common_pb2.TokenLogprob]
    image_data: bytes
    file_data: str
    filename: str
    file_url: str
    file_id: str
    def __init__(self, type: _Optional[str] = ..., text: _Optional[str] = ..., image_url: _Optional[str] = ..., detail: _Optional[str] = ..., refusal: _Optional[str] = ..., annotations: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., logprobs: _Optional[_Iterable[_Union[_common_pb2.TokenLogprob, _Mapping]]] = ..., image_data: _Optional[bytes] = ..., file_data: _Optional[str] = ..., filename: _Optional[str] = ..., file_url: _Optional[str] = ..., file_id: _Optional[str] = ...) -> None: ...

class ResponseTool(_message.Message):
    __slots__ = ("type", "name", "description", "parameters", "strict", "function", "server_label", "server_url", "server_description", "headers", "allowed_tools", "allowed_tools_filter", "require_approval", "require_approval_filter", "authorization", "format")
    class HeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    STRICT_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    SERVER_LABEL_FIELD_NUMBER: _ClassVar[int]
    SERVER_URL_FIELD_NUMBER: _ClassVar[int]
    SERVER_DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_TOOLS_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_TOOLS_FILTER_FIELD_NUMBER: _ClassVar[int]
    REQUIRE_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    REQUIRE_APPROVAL_FILTER_FIELD_NUMBER: _ClassVar[int]
    AUTHORIZATION_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    type: str
    name: str
    description: str
    parameters: _struct_pb2.Struct
    strict: bool
    function: _common_pb2.FunctionDefinition
    server_label: str
    server_url: str
    server_description: str
    headers: _containers.ScalarMap[str, str]
    allowed_tools: _containers.RepeatedScalarFieldContainer[str]
    allowed_tools_filter: McpToolFilter
    require_approval: str
    require_approval_filter: McpApprovalFilter
    authorization: str
    format: _common_pb2.CustomToolFormat
    def __init__(self, type: _Optional[str] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., parameters: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., strict: _Optional[bool] = ..., function: _Optional[_Union[_common_pb2.FunctionDefinition, _Mapping]] = ..., server_label: _Optional[str] = ..., server_url: _Optional[str] = ..., server_description: _Optional[str] = ..., headers: _Optional[_Mapping[str, str]] = ..., allowed_tools: _Optional[_Iterable[str]] = ..., allowed_tools_filter: _Optional[_Union[McpToolFilter, _Mapping]] = ..., require_approval: _Optional[str] = ..., require_approval_filter: _Optional[_Union[McpApprovalFilter, _Mapping]] = ..., authorization: _Optional[str] = ..., format: _Optional[_Union[_common_pb2.CustomToolFormat, _Mapping]] = ...) -> None: ...

class McpToolFilter(_message.Message):
    __slots__ = ("tool_names", "read_only")
    TOOL_NAMES_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    tool_names: _containers.RepeatedScalarFieldContainer[str]
    read_only: bool
    def __init__(self, tool_names: _Optional[_Iterable[str]] = ..., read_only: _Optional[bool] = ...) -> None: ...

class McpApprovalFilter(_message.Message):
    __slots__ = ("always", "never")
    ALWAYS_FIELD_NUMBER: _ClassVar[int]
    NEVER_FIELD_NUMBER: _ClassVar[int]
    always: McpToolFilter
    never: McpToolFilter
    def __init__(self, always: _Optional[_Union[McpToolFilter, _Mapping]] = ..., never: _Optional[_Union[McpToolFilter, _Mapping]] = ...) -> None: ...

class ResponseNamedToolChoice(_message.Message):
    __slots__ = ("type", "name", "function", "mode", "tools", "server_label")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    SERVER_LABEL_FIELD_NUMBER: _ClassVar[int]
    type: str
    name: str
    function: _common_pb2.FunctionName
    mode: str
    tools: _containers.RepeatedCompositeFieldContainer[ResponseNamedToolChoice]
    server_label: str
    def __init__(self, type: _Optional[str] = ..., name: _Optional[str] = ..., function: _Optional[_Union[_common_pb2.FunctionName, _Mapping]] = ..., mode: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[ResponseNamedToolChoice, _Mapping]]] = ..., server_label: _Optional[str] = ...) -> None: ...

class ResponseTextConfig(_message.Message):
    __slots__ = ("format", "verbosity")
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    VERBOSITY_FIELD_NUMBER: _ClassVar[int]
    format: TextFormat
    verbosity: str
    def __init__(self, format: _Optional[_Union[TextFormat, _Mapping]] = ..., verbosity: _Optional[str] = ...) -> None: ...

class TextFormat(_message.Message):
    __slots__ = ("type", "name", "description", "schema", "strict")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    STRICT_FIELD_NUMBER: _ClassVar[int]
    type: str
    name: str
    description: str
    schema: _struct_pb2.Struct
    strict: bool
    def __init__(self, type: _Optional[str] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., strict: _Optional[bool] = ...) -> None: ...

class ReasoningConfig(_message.Message):
    __slots__ = ("effort", "summary", "max_tokens")
    EFFORT_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    effort: str
    summary: str
    max_tokens: int
    def __init__(self, effort: _Optional[str] = ..., summary: _Optional[str] = ..., max_tokens: _Optional[int] = ...) -> None: ...

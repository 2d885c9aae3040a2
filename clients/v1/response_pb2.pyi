from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from . import common_pb2 as _common_pb2
from . import response_events_pb2 as _response_events_pb2
from . import response_object_pb2 as _response_object_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ContextManagement(_message.Message):
    __slots__ = ("type", "compact_threshold")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    COMPACT_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    type: str
    compact_threshold: int
    def __init__(self, type: _Optional[str] = ..., compact_threshold: _Optional[int] = ...) -> None: ...

class CreateResponseRequest(_message.Message):
    __slots__ = ("model", "input", "input_items", "instructions", "previous_response_id", "store", "background", "stream", "max_output_tokens", "stop", "stop_sequences", "ignore_eos", "min_tokens", "stop_token_ids", "priority", "cache_salt", "include_stop_str_in_output", "skip_special_tokens", "truncation", "context_management", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "frequency_penalty", "presence_penalty", "seed", "n", "best_of", "length_penalty", "diversity_penalty", "num_assistant_tokens", "assistant_confidence_threshold", "max_ngram_size", "logprobs", "top_logprobs", "tools", "tool_choice", "named_tool_choice", "parallel_tool_calls", "tool_guided_generation", "text", "response_format", "reasoning", "chat_template_kwargs", "include", "user", "metadata", "max_tool_calls", "prompt_cache_key", "prompt_cache_retention", "safety_identifier", "service_tier", "conversation")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    INPUT_ITEMS_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_RESPONSE_ID_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    STOP_SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    IGNORE_EOS_FIELD_NUMBER: _ClassVar[int]
    MIN_TOKENS_FIELD_NUMBER: _ClassVar[int]
    STOP_TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    CACHE_SALT_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_STOP_STR_IN_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    SKIP_SPECIAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATION_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_MANAGEMENT_FIELD_NUMBER: _ClassVar[int]
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
    TOOL_GUIDED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    REASONING_FIELD_NUMBER: _ClassVar[int]
    CHAT_TEMPLATE_KWARGS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    MAX_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_CACHE_KEY_FIELD_NUMBER: _ClassVar[int]
    PROMPT_CACHE_RETENTION_FIELD_NUMBER: _ClassVar[int]
    SAFETY_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    SERVICE_TIER_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    model: str
    input: str
    input_items: _containers.RepeatedCompositeFieldContainer[_response_object_pb2.InputItem]
    instructions: str
    previous_response_id: str
    store: bool
    background: bool
    stream: bool
    max_output_tokens: int
    stop: str
    stop_sequences: _containers.RepeatedScalarFieldContainer[str]
    ignore_eos: bool
    min_tokens: int
    stop_token_ids: _containers.RepeatedScalarFieldContainer[int]
    priority: int
    cache_salt: str
    include_stop_str_in_output: bool
    skip_special_tokens: bool
    truncation: str
    context_management: _containers.RepeatedCompositeFieldContainer[ContextManagement]
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
    tools: _containers.RepeatedCompositeFieldContainer[_response_object_pb2.ResponseTool]
    tool_choice: str
    named_tool_choice: _response_object_pb2.ResponseNamedToolChoice
    parallel_tool_calls: bool
    tool_guided_generation: bool
    text: _response_object_pb2.ResponseTextConfig
    response_format: _common_pb2.ResponseFormat
    reasoning: _response_object_pb2.ReasoningConfig
    chat_template_kwargs: _struct_pb2.Struct
    include: _containers.RepeatedScalarFieldContainer[str]
    user: str
    metadata: _containers.ScalarMap[str, str]
    max_tool_calls: int
    prompt_cache_key: str
    prompt_cache_retention: str
    safety_identifier: str
    service_tier: str
    conversation: str
    def __init__(self, model: _Optional[str] = ..., input: _Optional[str] = ..., input_items: _Optional[_Iterable[_Union[_response_object_pb2.InputItem, _Mapping]]] = ..., instructions: _Optional[str] = ..., previous_response_id: _Optional[str] = ..., store: _Optional[bool] = ..., background: _Optional[bool] = ..., stream: _Optional[bool] = ..., max_output_tokens: _Optional[int] = ..., stop: _Optional[str] = ..., stop_sequences: _Optional[_Iterable[str]] = ..., ignore_eos: _Optional[bool] = ..., min_tokens: _Optional[int] = ..., stop_token_ids: _Optional[_Iterable[int]] = ..., priority: _Optional[int] = ..., cache_salt: _Optional[str] = ..., include_stop_str_in_output: _Optional[bool] = ..., skip_special_tokens: _Optional[bool] = ..., truncation: _Optional[str] = ..., context_management: _Optional[_Iterable[_Union[ContextManagement, _Mapping]]] = ..., temperature: _Optional[float] = ..., top_p: _Optional[float] = ..., top_k: _Optional[int] = ..., min_p: _Optional[float] = ..., repetition_penalty: _Optional[float] = ..., frequency_penalty: _Optional[float] = ..., presence_penalty: _Optional[float] = ..., seed: _Optional[int] = ..., n: _Optional[int] = ..., best_of: _Optional[int] = ..., length_penalty: _Optional[float] = ..., diversity_penalty: _Optional[float] = ..., num_assistant_tokens: _Optional[int] = ..., assistant_confidence_threshold: _Optional[float] = ..., max_ngram_size: _Optional[int] = ..., logprobs: _Optional[bool] = ..., top_logprobs: _Optional[int] = ..., tools: _Optional[_Iterable[_Union[_response_object_pb2.ResponseTool, _Mapping]]] = ..., tool_choice: _Optional[str] = ..., named_tool_choice: _Optional[_Union[_response_object_pb2.ResponseNamedToolChoice, _Mapping]] = ..., parallel_tool_calls: _Optional[bool] = ..., tool_guided_generation: _Optional[bool] = ..., text: _Optional[_Union[_response_object_pb2.ResponseTextConfig, _Mapping]] = ..., response_format: _Optional[_Union[_common_pb2.ResponseFormat, _Mapping]] = ..., reasoning: _Optional[_Union[_response_object_pb2.ReasoningConfig, _Mapping]] = ..., chat_template_kwargs: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., include: _Optional[_Iterable[str]] = ..., user: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., max_tool_calls: _Optional[int] = ..., prompt_cache_key: _Optional[str] = ..., prompt_cache_retention: _Optional[str] = ..., safety_identifier: _Optional[str] = ..., service_tier: _Optional[str] = ..., conversation: _Optional[str] = ...) -> None: ...

class StreamResponseRequest(_message.Message):
    __slots__ = ("model", "input", "input_items", "instructions", "previous_response_id", "store", "background", "stream", "max_output_tokens", "stop", "stop_sequences", "ignore_eos", "min_tokens", "stop_token_ids", "priority", "cache_salt", "include_stop_str_in_output", "skip_special_tokens", "truncation", "context_management", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "frequency_penalty", "presence_penalty", "seed", "n", "best_of", "length_penalty", "diversity_penalty", "num_assistant_tokens", "assistant_confidence_threshold", "max_ngram_size", "logprobs", "top_logprobs", "tools", "tool_choice", "named_tool_choice", "parallel_tool_calls", "tool_guided_generation", "text", "response_format", "reasoning", "chat_template_kwargs", "include", "user", "metadata", "max_tool_calls", "prompt_cache_key", "prompt_cache_retention", "safety_identifier", "service_tier", "conversation")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    INPUT_ITEMS_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_RESPONSE_ID_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    STOP_SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    IGNORE_EOS_FIELD_NUMBER: _ClassVar[int]
    MIN_TOKENS_FIELD_NUMBER: _ClassVar[int]
    STOP_TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    CACHE_SALT_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_STOP_STR_IN_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    SKIP_SPECIAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATION_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_MANAGEMENT_FIELD_NUMBER: _ClassVar[int]
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
    TOOL_GUIDED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    REASONING_FIELD_NUMBER: _ClassVar[int]
    CHAT_TEMPLATE_KWARGS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    MAX_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_CACHE_KEY_FIELD_NUMBER: _ClassVar[int]
    PROMPT_CACHE_RETENTION_FIELD_NUMBER: _ClassVar[int]
    SAFETY_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    SERVICE_TIER_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    model: str
    input: str
    input_items: _containers.RepeatedCompositeFieldContainer[_response_object_pb2.InputItem]
    instructions: str
    previous_response_id: str
    store: bool
    background: bool
    stream: bool
    max_output_tokens: int
    stop: str
    stop_sequences: _containers.RepeatedScalarFieldContainer[str]
    ignore_eos: bool
    min_tokens: int
    stop_token_ids: _containers.RepeatedScalarFieldContainer[int]
    priority: int
    cache_salt: str
    include_stop_str_in_output: bool
    skip_special_tokens: bool
    truncation: str
    context_management: _containers.RepeatedCompositeFieldContainer[ContextManagement]
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
    tools: _containers.RepeatedCompositeFieldContainer[_response_object_pb2.ResponseTool]
    tool_choice: str
    named_tool_choice: _response_object_pb2.ResponseNamedToolChoice
    parallel_tool_calls: bool
    tool_guided_generation: bool
    text: _response_object_pb2.ResponseTextConfig
    response_format: _common_pb2.ResponseFormat
    reasoning: _response_object_pb2.ReasoningConfig
    chat_template_kwargs: _struct_pb2.Struct
    include: _containers.RepeatedScalarFieldContainer[str]
    user: str
    metadata: _containers.ScalarMap[str, str]
    max_tool_calls: int
    prompt_cache_key: str
    prompt_cache_retention: str
    safety_identifier: str
    service_tier: str
    conversation: str
    def __init__(self, model: _Optional[str] = ..., input: _Optional[str] = ..., input_items: _Optional[_Iterable[_Union[_response_object_pb2.InputItem, _Mapping]]] = ..., instructions: _Optional[str] = ..., previous_response_id: _Optional[str] = ..., store: _Optional[bool] = ..., background: _Optional[bool] = ..., stream: _Optional[bool] = ..., max_output_tokens: _Optional[int] = ..., stop: _Optional[str] = ..., stop_sequences: _Optional[_Iterable[str]] = ..., ignore_eos: _Optional[bool] = ..., min_tokens: _Optional[int] = ..., stop_token_ids: _Optional[_Iterable[int]] = ..., priority: _Optional[int] = ..., cache_salt: _Optional[str] = ..., include_stop_str_in_output: _Optional[bool] = ..., skip_special_tokens: _Optional[bool] = ..., truncation: _Optional[str] = ..., context_management: _Optional[_Iterable[_Union[ContextManagement, _Mapping]]] = ..., temperature: _Optional[float] = ..., top_p: _Optional[float] = ..., top_k: _Optional[int] = ..., min_p: _Optional[float] = ..., repetition_penalty: _Optional[float] = ..., frequency_penalty: _Optional[float] = ..., presence_penalty: _Optional[float] = ..., seed: _Optional[int] = ..., n: _Optional[int] = ..., best_of: _Optional[int] = ..., length_penalty: _Optional[float] = ..., diversity_penalty: _Optional[float] = ..., num_assistant_tokens: _Optional[int] = ..., assistant_confidence_threshold: _Optional[float] = ..., max_ngram_size: _Optional[int] = ..., logprobs: _Optional[bool] = ..., top_logprobs: _Optional[int] = ..., tools: _Optional[_Iterable[_Union[_response_object_pb2.ResponseTool, _Mapping]]] = ..., tool_choice: _Optional[str] = ..., named_tool_choice: _Optional[_Union[_response_object_pb2.ResponseNamedToolChoice, _Mapping]] = ..., parallel_tool_calls: _Optional[bool] = ..., tool_guided_generation: _Optional[bool] = ..., text: _Optional[_Union[_response_object_pb2.ResponseTextConfig, _Mapping]] = ..., response_format: _Optional[_Union[_common_pb2.ResponseFormat, _Mapping]] = ..., reasoning: _Optional[_Union[_response_object_pb2.ReasoningConfig, _Mapping]] = ..., chat_template_kwargs: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., include: _Optional[_Iterable[str]] = ..., user: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., max_tool_calls: _Optional[int] = ..., prompt_cache_key: _Optional[str] = ..., prompt_cache_retention: _Optional[str] = ..., safety_identifier: _Optional[str] = ..., service_tier: _Optional[str] = ..., conversation: _Optional[str] = ...) -> None: ...

class CreateResponseResponse(_message.Message):
    __slots__ = ("response",)
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    response: _response_object_pb2.Response
    def __init__(self, response: _Optional[_Union[_response_object_pb2.Response, _Mapping]] = ...) -> None: ...

class StreamResponseResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: _response_events_pb2.ResponseStreamEvent
    def __init__(self, event: _Optional[_Union[_response_events_pb2.ResponseStreamEvent, _Mapping]] = ...) -> None: ...

class GetResponseRequest(_message.Message):
    __slots__ = ("response_id", "include")
    RESPONSE_ID_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_FIELD_NUMBER: _ClassVar[int]
    response_id: str
    include: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, response_id: _Optional[str] = ..., include: _Optional[_Iterable[str]] = ...) -> None: ...

class GetResponseResponse(_message.Message):
    __slots__ = ("response",)
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    response: _response_object_pb2.Response
    def __init__(self, response: _Optional[_Union[_response_object_pb2.Response, _Mapping]] = ...) -> None: ...

class ResumeResponseStreamRequest(_message.Message):
    __slots__ = ("response_id", "starting_after")
    RESPONSE_ID_FIELD_NUMBER: _ClassVar[int]
    STARTING_AFTER_FIELD_NUMBER: _ClassVar[int]
    response_id: str
    starting_after: int
    def __init__(self, response_id: _Optional[str] = ..., starting_after: _Optional[int] = ...) -> None: ...

class ResumeResponseStreamResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: _response_events_pb2.ResponseStreamEvent
    def __init__(self, event: _Optional[_Union[_response_events_pb2.ResponseStreamEvent, _Mapping]] = ...) -> None: ...

class DeleteResponseRequest(_message.Message):
    __slots__ = ("response_id",)
    RESPONSE_ID_FIELD_NUMBER: _ClassVar[int]
    response_id: str
    def __init__(self, response_id: _Optional[str] = ...) -> None: ...

class DeleteResponseResponse(_message.Message):
    __slots__ = ("id", "object", "deleted")
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    id: str
    object: str
    deleted: bool
    def __init__(self, id: _Optional[str] = ..., object: _Optional[str] = ..., deleted: _Optional[bool] = ...) -> None: ...

class CancelResponseRequest(_message.Message):
    __slots__ = ("response_id",)
    RESPONSE_ID_FIELD_NUMBER: _ClassVar[int]
    response_id: str
    def __init__(self, response_id: _Optional[str] = ...) -> None: ...

class CancelResponseResponse(_message.Message):
    __slots__ = ("response",)
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    response: _response_object_pb2.Response
    def __init__(self, response: _Optional[_Union[_response_object_pb2.Response, _Mapping]] = ...) -> None: ...

class ListResponseInputItemsRequest(_message.Message):
    __slots__ = ("response_id", "after", "limit", "order", "include")
    RESPONSE_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_FIELD_NUMBER: _ClassVar[int]
    response_id: str
    after: str
    limit: int
    order: str
    include: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, response_id: _Optional[str] = ..., after: _Optional[str] = ..., limit: _Optional[int] = ..., order: _Optional[str] = ..., include: _Optional[_Iterable[str]] = ...) -> None: ...

class ListResponseInputItemsResponse(_message.Message):
    __slots__ = ("object", "data", "first_id", "last_id", "has_more")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    FIRST_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ID_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    object: str
    data: _containers.RepeatedCompositeFieldContainer[_response_object_pb2.InputItem]
    first_id: str
    last_id: str
    has_more: bool
    def __init__(self, object: _Optional[str] = ..., data: _Optional[_Iterable[_Union[_response_object_pb2.InputItem, _Mapping]]] = ..., first_id: _Optional[str] = ..., last_id: _Optional[str] = ..., has_more: _Optional[bool] = ...) -> None: ...

class CountResponseInputTokensRequest(_message.Message):
    __slots__ = ("request",)
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    request: CreateResponseRequest
    def __init__(self, request: _Optional[_Union[CreateResponseRequest, _Mapping]] = ...) -> None: ...

class CountResponseInputTokensResponse(_message.Message):
    __slots__ = ("object", "input_tokens")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    object: str
    input_tokens: int
    def __init__(self, object: _Optional[str] = ..., input_tokens: _Optional[int] = ...) -> None: ...

class CompactResponseRequest(_message.Message):
    __slots__ = ("model", "input", "input_items", "previous_response_id", "instructions", "prompt_cache_key")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    INPUT_ITEMS_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_RESPONSE_ID_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_CACHE_KEY_FIELD_NUMBER: _ClassVar[int]
    model: str
    input: str
    input_items: _containers.RepeatedCompositeFieldContainer[_response_object_pb2.InputItem]
    previous_response_id: str
    instructions: str
    prompt_cache_key: str
    def __init__(self, model: _Optional[str] = ..., input: _Optional[str] = ..., input_items: _Optional[_Iterable[_Union[_response_object_pb2.InputItem, _Mapping]]] = ..., previous_response_id: _Optional[str] = ..., instructions: _Optional[str] = ..., prompt_cache_key: _Optional[str] = ...) -> None: ...

class CompactResponseResponse(_message.Message):
    __slots__ = ("id", "object", "output", "created_at", "usage")
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    id: str
    object: str
    output: _containers.RepeatedCompositeFieldContainer[_response_object_pb2.InputItem]
    created_at: int
    usage: _response_object_pb2.ResponseUsage
    def __init__(self, id: _Optional[str] = ..., object: _Optional[str] = ..., output: _Optional[_Iterable[_Union[_response_object_pb2.InputItem, _Mapping]]] = ..., created_at: _Optional[int] = ..., usage: _Optional[_Union[_response_object_pb2.ResponseUsage, _Mapping]] = ...) -> None: ...

from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from . import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateChatCompletionRequest(_message.Message):
    __slots__ = ("model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens", "stop", "stop_sequences", "ignore_eos", "min_tokens", "stop_token_ids", "continue_final_message", "add_generation_prompt", "include_stop_str_in_output", "skip_special_tokens", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "frequency_penalty", "presence_penalty", "seed", "logit_bias", "bad_words", "priority", "cache_salt", "n", "best_of", "length_penalty", "diversity_penalty", "num_assistant_tokens", "assistant_confidence_threshold", "max_ngram_size", "logprobs", "top_logprobs", "prompt_logprobs", "tools", "tool_choice", "named_tool_choice", "parallel_tool_calls", "response_format", "guided_json", "guided_regex", "guided_choice", "grammar", "guided_grammar", "structured_outputs", "chat_template_kwargs", "reasoning_effort", "thinking_token_budget", "tool_guided_generation", "user", "metadata", "store")
    class LogitBiasEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    STREAM_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MAX_COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    STOP_SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    IGNORE_EOS_FIELD_NUMBER: _ClassVar[int]
    MIN_TOKENS_FIELD_NUMBER: _ClassVar[int]
    STOP_TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    CONTINUE_FINAL_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ADD_GENERATION_PROMPT_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_STOP_STR_IN_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    SKIP_SPECIAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    TOP_P_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    MIN_P_FIELD_NUMBER: _ClassVar[int]
    REPETITION_PENALTY_FIELD_NUMBER: _ClassVar[int]
    FREQUENCY_PENALTY_FIELD_NUMBER: _ClassVar[int]
    PRESENCE_PENALTY_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    LOGIT_BIAS_FIELD_NUMBER: _ClassVar[int]
    BAD_WORDS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    CACHE_SALT_FIELD_NUMBER: _ClassVar[int]
    N_FIELD_NUMBER: _ClassVar[int]
    BEST_OF_FIELD_NUMBER: _ClassVar[int]
    LENGTH_PENALTY_FIELD_NUMBER: _ClassVar[int]
    DIVERSITY_PENALTY_FIELD_NUMBER: _ClassVar[int]
    NUM_ASSISTANT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    ASSISTANT_CONFIDENCE_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    MAX_NGRAM_SIZE_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    TOP_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CHOICE_FIELD_NUMBER: _ClassVar[int]
    NAMED_TOOL_CHOICE_FIELD_NUMBER: _ClassVar[int]
    PARALLEL_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    GUIDED_JSON_FIELD_NUMBER: _ClassVar[int]
    GUIDED_REGEX_FIELD_NUMBER: _ClassVar[int]
    GUIDED_CHOICE_FIELD_NUMBER: _ClassVar[int]
    GRAMMAR_FIELD_NUMBER: _ClassVar[int]
    GUIDED_GRAMMAR_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    CHAT_TEMPLATE_KWARGS_FIELD_NUMBER: _ClassVar[int]
    REASONING_EFFORT_FIELD_NUMBER: _ClassVar[int]
    THINKING_TOKEN_BUDGET_FIELD_NUMBER: _ClassVar[int]
    TOOL_GUIDED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    model: str
    messages: _containers.RepeatedCompositeFieldContainer[ChatMessage]
    stream: bool
    stream_options: _common_pb2.StreamOptions
    max_tokens: int
    max_completion_tokens: int
    stop: str
    stop_sequences: _containers.RepeatedScalarFieldContainer[str]
    ignore_eos: bool
    min_tokens: int
    stop_token_ids: _containers.RepeatedScalarFieldContainer[int]
    continue_final_message: bool
    add_generation_prompt: bool
    include_stop_str_in_output: bool
    skip_special_tokens: bool
    temperature: float
    top_p: float
    top_k: int
    min_p: float
    repetition_penalty: float
    frequency_penalty: float
    presence_penalty: float
    seed: int
    logit_bias: _containers.ScalarMap[str, float]
    bad_words: _containers.RepeatedScalarFieldContainer[str]
    priority: int
    cache_salt: str
    n: int
    best_of: int
    length_penalty: float
    diversity_penalty: float
    num_assistant_tokens: int
    assistant_confidence_threshold: float
    max_ngram_size: int
    logprobs: bool
    top_logprobs: int
    prompt_logprobs: int
    tools: _containers.RepeatedCompositeFieldContainer[ChatTool]
    tool_choice: str
    named_tool_choice: ChatNamedToolChoice
    parallel_tool_calls: bool
    response_format: _common_pb2.ResponseFormat
    guided_json: _struct_pb2.Struct
    guided_regex: str
    guided_choice: _containers.RepeatedScalarFieldContainer[str]
    grammar: str
    guided_grammar: str
    structured_outputs: _common_pb2.StructuredOutputs
    chat_template_kwargs: _struct_pb2.Struct
    reasoning_effort: str
    thinking_token_budget: int
    tool_guided_generation: bool
    user: str
    metadata: _containers.ScalarMap[str, str]
    store: bool
    def __init__(self, model: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[ChatMessage, _Mapping]]] = ..., stream: _Optional[bool] = ..., stream_options: _Optional[_Union[_common_pb2.StreamOptions, _Mapping]] = ..., max_tokens: _Optional[int] = ..., max_completion_tokens: _Optional[int] = ..., stop: _Optional[str] = ..., stop_sequences: _Optional[_Iterable[str]] = ..., ignore_eos: _Optional[bool] = ..., min_tokens: _Optional[int] = ..., stop_token_ids: _Optional[_Iterable[int]] = ..., continue_final_message: _Optional[bool] = ..., add_generation_prompt: _Optional[bool] = ..., include_stop_str_in_output: _Optional[bool] = ..., skip_special_tokens: _Optional[bool] = ..., temperature: _Optional[float] = ..., top_p: _Optional[float] = ..., top_k: _Optional[int] = ..., min_p: _Optional[float] = ..., repetition_penalty: _Optional[float] = ..., frequency_penalty: _Optional[float] = ..., presence_penalty: _Optional[float] = ..., seed: _Optional[int] = ..., logit_bias: _Optional[_Mapping[str, float]] = ..., bad_words: _Optional[_Iterable[str]] = ..., priority: _Optional[int] = ..., cache_salt: _Optional[str] = ..., n: _Optional[int] = ..., best_of: _Optional[int] = ..., length_penalty: _Optional[float] = ..., diversity_penalty: _Optional[float] = ..., num_assistant_tokens: _Optional[int] = ..., assistant_confidence_threshold: _Optional[float] = ..., max_ngram_size: _Optional[int] = ..., logprobs: _Optional[bool] = ..., top_logprobs: _Optional[int] = ..., prompt_logprobs: _Optional[int] = ..., tools: _Optional[_Iterable[_Union[ChatTool, _Mapping]]] = ..., tool_choice: _Optional[str] = ..., named_tool_choice: _Optional[_Union[ChatNamedToolChoice, _Mapping]] = ..., parallel_tool_calls: _Optional[bool] = ..., response_format: _Optional[_Union[_common_pb2.ResponseFormat, _Mapping]] = ..., guided_json: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., guided_regex: _Optional[str] = ..., guided_choice: _Optional[_Iterable[str]] = ..., grammar: _Optional[str] = ..., guided_grammar: _Optional[str] = ..., structured_outputs: _Optional[_Union[_common_pb2.StructuredOutputs, _Mapping]] = ..., chat_template_kwargs: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., reasoning_effort: _Optional[str] = ..., thinking_token_budget: _Optional[int] = ..., tool_guided_generation: _Optional[bool] = ..., user: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., store: _Optional[bool] = ...) -> None: ...

class StreamChatCompletionRequest(_message.Message):
    __slots__ = ("model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens", "stop", "stop_sequences", "ignore_eos", "min_tokens", "stop_token_ids", "continue_final_message", "add_generation_prompt", "include_stop_str_in_output", "skip_special_tokens", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "frequency_penalty", "presence_penalty", "seed", "logit_bias", "bad_words", "priority", "cache_salt", "n", "best_of", "length_penalty", "diversity_penalty", "num_assistant_tokens", "assistant_confidence_threshold", "max_ngram_size", "logprobs", "top_logprobs", "prompt_logprobs", "tools", "tool_choice", "named_tool_choice", "parallel_tool_calls", "response_format", "guided_json", "guided_regex", "guided_choice", "grammar", "guided_grammar", "structured_outputs", "chat_template_kwargs", "reasoning_effort", "thinking_token_budget", "tool_guided_generation", "user", "metadata", "store")
    class LogitBiasEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    STREAM_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MAX_COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    STOP_SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    IGNORE_EOS_FIELD_NUMBER: _ClassVar[int]
    MIN_TOKENS_FIELD_NUMBER: _ClassVar[int]
    STOP_TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    CONTINUE_FINAL_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ADD_GENERATION_PROMPT_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_STOP_STR_IN_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    SKIP_SPECIAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    TOP_P_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    MIN_P_FIELD_NUMBER: _ClassVar[int]
    REPETITION_PENALTY_FIELD_NUMBER: _ClassVar[int]
    FREQUENCY_PENALTY_FIELD_NUMBER: _ClassVar[int]
    PRESENCE_PENALTY_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    LOGIT_BIAS_FIELD_NUMBER: _ClassVar[int]
    BAD_WORDS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    CACHE_SALT_FIELD_NUMBER: _ClassVar[int]
    N_FIELD_NUMBER: _ClassVar[int]
    BEST_OF_FIELD_NUMBER: _ClassVar[int]
    LENGTH_PENALTY_FIELD_NUMBER: _ClassVar[int]
    DIVERSITY_PENALTY_FIELD_NUMBER: _ClassVar[int]
    NUM_ASSISTANT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    ASSISTANT_CONFIDENCE_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    MAX_NGRAM_SIZE_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    TOP_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CHOICE_FIELD_NUMBER: _ClassVar[int]
    NAMED_TOOL_CHOICE_FIELD_NUMBER: _ClassVar[int]
    PARALLEL_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    GUIDED_JSON_FIELD_NUMBER: _ClassVar[int]
    GUIDED_REGEX_FIELD_NUMBER: _ClassVar[int]
    GUIDED_CHOICE_FIELD_NUMBER: _ClassVar[int]
    GRAMMAR_FIELD_NUMBER: _ClassVar[int]
    GUIDED_GRAMMAR_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    CHAT_TEMPLATE_KWARGS_FIELD_NUMBER: _ClassVar[int]
    REASONING_EFFORT_FIELD_NUMBER: _ClassVar[int]
    THINKING_TOKEN_BUDGET_FIELD_NUMBER: _ClassVar[int]
    TOOL_GUIDED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    model: str
    messages: _containers.RepeatedCompositeFieldContainer[ChatMessage]
    stream: bool
    stream_options: _common_pb2.StreamOptions
    max_tokens: int
    max_completion_tokens: int
    stop: str
    stop_sequences: _containers.RepeatedScalarFieldContainer[str]
    ignore_eos: bool
    min_tokens: int
    stop_token_ids: _containers.RepeatedScalarFieldContainer[int]
    continue_final_message: bool
    add_generation_prompt: bool
    include_stop_str_in_output: bool
    skip_special_tokens: bool
    temperature: float
    top_p: float
    top_k: int
    min_p: float
    repetition_penalty: float
    frequency_penalty: float
    presence_penalty: float
    seed: int
    logit_bias: _containers.ScalarMap[str, float]
    bad_words: _containers.RepeatedScalarFieldContainer[str]
    priority: int
    cache_salt: str
    n: int
    best_of: int
    length_penalty: float
    diversity_penalty: float
    num_assistant_tokens: int
    assistant_confidence_threshold: float
    max_ngram_size: int
    logprobs: bool
    top_logprobs: int
    prompt_logprobs: int
    tools: _containers.RepeatedCompositeFieldContainer[ChatTool]
    tool_choice: str
    named_tool_choice: ChatNamedToolChoice
    parallel_tool_calls: bool
    response_format: _common_pb2.ResponseFormat
    guided_json: _struct_pb2.Struct
    guided_regex: str
    guided_choice: _containers.RepeatedScalarFieldContainer[str]
    grammar: str
    guided_grammar: str
    structured_outputs: _common_pb2.StructuredOutputs
    chat_template_kwargs: _struct_pb2.Struct
    reasoning_effort: str
    thinking_token_budget: int
    tool_guided_generation: bool
    user: str
    metadata: _containers.ScalarMap[str, str]
    store: bool
    def __init__(self, model: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[ChatMessage, _Mapping]]] = ..., stream: _Optional[bool] = ..., stream_options: _Optional[_Union[_common_pb2.StreamOptions, _Mapping]] = ..., max_tokens: _Optional[int] = ..., max_completion_tokens: _Optional[int] = ..., stop: _Optional[str] = ..., stop_sequences: _Optional[_Iterable[str]] = ..., ignore_eos: _Optional[bool] = ..., min_tokens: _Optional[int] = ..., stop_token_ids: _Optional[_Iterable[int]] = ..., continue_final_message: _Optional[bool] = ..., add_generation_prompt: _Optional[bool] = ..., include_stop_str_in_output: _Optional[bool] = ..., skip_special_tokens: _Optional[bool] = ..., temperature: _Optional[float] = ..., top_p: _Optional[float] = ..., top_k: _Optional[int] = ..., min_p: _Optional[float] = ..., repetition_penalty: _Optional[float] = ..., frequency_penalty: _Optional[float] = ..., presence_penalty: _Optional[float] = ..., seed: _Optional[int] = ..., logit_bias: _Optional[_Mapping[str, float]] = ..., bad_words: _Optional[_Iterable[str]] = ..., priority: _Optional[int] = ..., cache_salt: _Optional[str] = ..., n: _Optional[int] = ..., best_of: _Optional[int] = ..., length_penalty: _Optional[float] = ..., diversity_penalty: _Optional[float] = ..., num_assistant_tokens: _Optional[int] = ..., assistant_confidence_threshold: _Optional[float] = ..., max_ngram_size: _Optional[int] = ..., logprobs: _Optional[bool] = ..., top_logprobs: _Optional[int] = ..., prompt_logprobs: _Optional[int] = ..., tools: _Optional[_Iterable[_Union[ChatTool, _Mapping]]] = ..., tool_choice: _Optional[str] = ..., named_tool_choice: _Optional[_Union[ChatNamedToolChoice, _Mapping]] = ..., parallel_tool_calls: _Optional[bool] = ..., response_format: _Optional[_Union[_common_pb2.ResponseFormat, _Mapping]] = ..., guided_json: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., guided_regex: _Optional[str] = ..., guided_choice: _Optional[_Iterable[str]] = ..., grammar: _Optional[str] = ..., guided_grammar: _Optional[str] = ..., structured_outputs: _Optional[_Union[_common_pb2.StructuredOutputs, _Mapping]] = ..., chat_template_kwargs: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., reasoning_effort: _Optional[str] = ..., thinking_token_budget: _Optional[int] = ..., tool_guided_generation: _Optional[bool] = ..., user: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., store: _Optional[bool] = ...) -> None: ...

class ChatMessage(_message.Message):
    __slots__ = ("role", "content", "content_parts", "name", "tool_calls", "tool_call_id", "reasoning_content")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    CONTENT_PARTS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    REASONING_CONTENT_FIELD_NUMBER: _ClassVar[int]
    role: str
    content: str
    content_parts: _containers.RepeatedCompositeFieldContainer[ChatContentPart]
    name: str
    tool_calls: _containers.RepeatedCompositeFieldContainer[_common_pb2.ToolCall]
    tool_call_id: str
    reasoning_content: str
    def __init__(self, role: _Optional[str] = ..., content: _Optional[str] = ..., content_parts: _Optional[_Iterable[_Union[ChatContentPart, _Mapping]]] = ..., name: _Optional[str] = ..., tool_calls: _Optional[_Iterable[_Union[_common_pb2.ToolCall, _Mapping]]] = ..., tool_call_id: _Optional[str] = ..., reasoning_content: _Optional[str] = ...) -> None: ...

class ChatContentPart(_message.Message):
    __slots__ = ("type", "text", "image_url", "file")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    IMAGE_URL_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    type: str
    text: str
    image_url: ImageUrl
    file: FileContent
    def __init__(self, type: _Optional[str] = ..., text: _Optional[str] = ..., image_url: _Optional[_Union[ImageUrl, _Mapping]] = ..., file: _Optional[_Union[FileContent, _Mapping]] = ...) -> None: ...

class FileContent(_message.Message):
    __slots__ = ("file_data", "file_id", "filename", "file_url")
    FILE_DATA_FIELD_NUMBER: _ClassVar[int]
    FILE_ID_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    FILE_URL_FIELD_NUMBER: _ClassVar[int]
    file_data: str
    file_id: str
    filename: str
    file_url: str
    def __init__(self, file_data: _Optional[str] = ..., file_id: _Optional[str] = ..., filename: _Optional[str] = ..., file_url: _Optional[str] = ...) -> None: ...

class ImageUrl(_message.Message):
    __slots__ = ("url", "detail", "data")
    URL_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    url: str
    detail: str
    data: bytes
    def __init__(self, url: _Optional[str] = ..., detail: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class ChatTool(_message.Message):
    __slots__ = ("type", "function", "custom")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_FIELD_NUMBER: _ClassVar[int]
    type: str
    function: _common_pb2.FunctionDefinition
    custom: _common_pb2.CustomTool
    def __init__(self, type: _Optional[str] = ..., function: _Optional[_Union[_common_pb2.FunctionDefinition, _Mapping]] = ..., custom: _Optional[_Union[_common_pb2.CustomTool, _Mapping]] = ...) -> None: ...

class ChatNamedToolChoice(_message.Message):
    __slots__ = ("type", "function", "allowed_tools", "custom")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_TOOLS_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_FIELD_NUMBER: _ClassVar[int]
    type: str
    function: _common_pb2.FunctionName
    allowed_tools: ChatAllowedTools
    custom: _common_pb2.FunctionName
    def __init__(self, type: _Optional[str] = ..., function: _Optional[_Union[_common_pb2.FunctionName, _Mapping]] = ..., allowed_tools: _Optional[_Union[ChatAllowedTools, _Mapping]] = ..., custom: _Optional[_Union[_common_pb2.FunctionName, _Mapping]] = ...) -> None: ...

class ChatAllowedTools(_message.Message):
    __slots__ = ("mode", "tools")
    MODE_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    mode: str
    tools: _containers.RepeatedCompositeFieldContainer[ChatNamedToolChoice]
    def __init__(self, mode: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[ChatNamedToolChoice, _Mapping]]] = ...) -> None: ...

class CreateChatCompletionResponse(_message.Message):
    __slots__ = ("id", "object", "created", "model", "choices", "usage", "system_fingerprint", "metadata", "prompt_logprobs")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    CHOICES_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    PROMPT_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    id: str
    object: str
    created: int
    model: str
    choices: _containers.RepeatedCompositeFieldContainer[ChatCompletionChoice]
    usage: _common_pb2.Usage
    system_fingerprint: str
    metadata: _containers.ScalarMap[str, str]
    prompt_logprobs: _containers.RepeatedCompositeFieldContainer[_common_pb2.PromptLogprobs]
    def __init__(self, id: _Optional[str] = ..., object: _Optional[str] = ..., created: _Optional[int] = ..., model: _Optional[str] = ..., choices: _Optional[_Iterable[_Union[ChatCompletionChoice, _Mapping]]] = ..., usage: _Optional[_Union[_common_pb2.Usage, _Mapping]] = ..., system_fingerprint: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., prompt_logprobs: _Optional[_Iterable[_Union[_common_pb2.PromptLogprobs, _Mapping]]] = ...) -> None: ...

class ChatCompletionChoice(_message.Message):
    __slots__ = ("index", "message", "logprobs", "finish_reason")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    index: int
    message: ChatCompletionMessage
    logprobs: ChatLogprobs
    finish_reason: _common_pb2.FinishReason
    def __init__(self, index: _Optional[int] = ..., message: _Optional[_Union[ChatCompletionMessage, _Mapping]] = ..., logprobs: _Optional[_Union[ChatLogprobs, _Mapping]] = ..., finish_reason: _Optional[_Union[_common_pb2.FinishReason, str]] = ...) -> None: ...

class ChatCompletionMessage(_message.Message):
    __slots__ = ("role", "content", "reasoning_content", "tool_calls", "refusal")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    REASONING_CONTENT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    role: _common_pb2.Role
    content: str
    reasoning_content: str
    tool_calls: _containers.RepeatedCompositeFieldContainer[_common_pb2.ToolCall]
    refusal: str
    def __init__(self, role: _Optional[_Union[_common_pb2.Role, str]] = ..., content: _Optional[str] = ..., reasoning_content: _Optional[str] = ..., tool_calls: _Optional[_Iterable[_Union[_common_pb2.ToolCall, _Mapping]]] = ..., refusal: _Optional[str] = ...) -> None: ...

class ChatLogprobs(_message.Message):
    __slots__ = ("content", "refusal")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    content: _containers.RepeatedCompositeFieldContainer[_common_pb2.TokenLogprob]
    refusal: _containers.RepeatedCompositeFieldContainer[_common_pb2.TokenLogprob]
    def __init__(self, content: _Optional[_Iterable[_Union[_common_pb2.TokenLogprob, _Mapping]]] = ..., refusal: _Optional[_Iterable[_Union[_common_pb2.TokenLogprob, _Mapping]]] = ...) -> None: ...

class StreamChatCompletionResponse(_message.Message):
    __slots__ = ("id", "object", "created", "model", "choices", "usage", "system_fingerprint", "prompt_logprobs")
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    CHOICES_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    PROMPT_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    id: str
    object: str
    created: int
    model: str
    choices: _containers.RepeatedCompositeFieldContainer[ChatCompletionChunkChoice]
    usage: _common_pb2.Usage
    system_fingerprint: str
    prompt_logprobs: _containers.RepeatedCompositeFieldContainer[_common_pb2.PromptLogprobs]
    def __init__(self, id: _Optional[str] = ..., object: _Optional[str] = ..., created: _Optional[int] = ..., model: _Optional[str] = ..., choices: _Optional[_Iterable[_Union[ChatCompletionChunkChoice, _Mapping]]] = ..., usage: _Optional[_Union[_common_pb2.Usage, _Mapping]] = ..., system_fingerprint: _Optional[str] = ..., prompt_logprobs: _Optional[_Iterable[_Union[_common_pb2.PromptLogprobs, _Mapping]]] = ...) -> None: ...

class ChatCompletionChunkChoice(_message.Message):
    __slots__ = ("index", "delta", "logprobs", "finish_reason")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    index: int
    delta: ChatCompletionDelta
    logprobs: ChatLogprobs
    finish_reason: _common_pb2.FinishReason
    def __init__(self, index: _Optional[int] = ..., delta: _Optional[_Union[ChatCompletionDelta, _Mapping]] = ..., logprobs: _Optional[_Union[ChatLogprobs, _Mapping]] = ..., finish_reason: _Optional[_Union[_common_pb2.FinishReason, str]] = ...) -> None: ...

class ChatCompletionDelta(_message.Message):
    __slots__ = ("role", "content", "reasoning_content", "tool_calls", "refusal")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    REASONING_CONTENT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    role: _common_pb2.Role
    content: str
    reasoning_content: str
    tool_calls: _containers.RepeatedCompositeFieldContainer[ToolCallDelta]
    refusal: str
    def __init__(self, role: _Optional[_Union[_common_pb2.Role, str]] = ..., content: _Optional[str] = ..., reasoning_content: _Optional[str] = ..., tool_calls: _Optional[_Iterable[_Union[ToolCallDelta, _Mapping]]] = ..., refusal: _Optional[str] = ...) -> None: ...

class ToolCallDelta(_message.Message):
    __slots__ = ("index", "id", "type", "function", "custom")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_FIELD_NUMBER: _ClassVar[int]
    index: int
    id: str
    type: str
    function: _common_pb2.FunctionCall
    custom: _common_pb2.CustomToolCall
    def __init__(self, index: _Optional[int] = ..., id: _Optional[str] = ..., type: _Optional[str] = ..., function: _Optional[_Union[_common_pb2.FunctionCall, _Mapping]] = ..., custom: _Optional[_Union[_common_pb2.CustomToolCall, _Mapping]] = ...) -> None: ...

class GetChatCompletionRequest(_message.Message):
    __slots__ = ("completion_id",)
    COMPLETION_ID_FIELD_NUMBER: _ClassVar[int]
    completion_id: str
    def __init__(self, completion_id: _Optional[str] = ...) -> None: ...

class GetChatCompletionResponse(_message.Message):
    __slots__ = ("completion",)
    COMPLETION_FIELD_NUMBER: _ClassVar[int]
    completion: CreateChatCompletionResponse
    def __init__(self, completion: _Optional[_Union[CreateChatCompletionResponse, _Mapping]] = ...) -> None: ...

class ListChatCompletionsRequest(_message.Message):
    __slots__ = ("model", "metadata", "after", "limit", "order")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MODEL_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    model: str
    metadata: _containers.ScalarMap[str, str]
    after: str
    limit: int
    order: str
    def __init__(self, model: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., after: _Optional[str] = ..., limit: _Optional[int] = ..., order: _Optional[str] = ...) -> None: ...

class ListChatCompletionsResponse(_message.Message):
    __slots__ = ("object", "data", "first_id", "last_id", "has_more")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    FIRST_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ID_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    object: str
    data: _containers.RepeatedCompositeFieldContainer[CreateChatCompletionResponse]
    first_id: str
    last_id: str
    has_more: bool
    def __init__(self, object: _Optional[str] = ..., data: _Optional[_Iterable[_Union[CreateChatCompletionResponse, _Mapping]]] = ..., first_id: _Optional[str] = ..., last_id: _Optional[str] = ..., has_more: _Optional[bool] = ...) -> None: ...

class ListChatCompletionMessagesRequest(_message.Message):
    __slots__ = ("completion_id", "after", "limit", "order")
    COMPLETION_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    completion_id: str
    after: str
    limit: int
    order: str
    def __init__(self, completion_id: _Optional[str] = ..., after: _Optional[str] = ..., limit: _Optional[int] = ..., order: _Optional[str] = ...) -> None: ...

class StoredChatMessage(_message.Message):
    __slots__ = ("id", "message")
    ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    id: str
    message: ChatMessage
    def __init__(self, id: _Optional[str] = ..., message: _Optional[_Union[ChatMessage, _Mapping]] = ...) -> None: ...

class ListChatCompletionMessagesResponse(_message.Message):
    __slots__ = ("object", "data", "first_id", "last_id", "has_more")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    FIRST_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ID_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    object: str
    data: _containers.RepeatedCompositeFieldContainer[StoredChatMessage]
    first_id: str
    last_id: str
    has_more: bool
    def __init__(self, object: _Optional[str] = ..., data: _Optional[_Iterable[_Union[StoredChatMessage, _Mapping]]] = ..., first_id: _Optional[str] = ..., last_id: _Optional[str] = ..., has_more: _Optional[bool] = ...) -> None: ...

class UpdateChatCompletionRequest(_message.Message):
    __slots__ = ("completion_id", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    COMPLETION_ID_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    completion_id: str
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, completion_id: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class UpdateChatCompletionResponse(_message.Message):
    __slots__ = ("completion",)
    COMPLETION_FIELD_NUMBER: _ClassVar[int]
    completion: CreateChatCompletionResponse
    def __init__(self, completion: _Optional[_Union[CreateChatCompletionResponse, _Mapping]] = ...) -> None: ...

class DeleteChatCompletionRequest(_message.Message):
    __slots__ = ("completion_id",)
    COMPLETION_ID_FIELD_NUMBER: _ClassVar[int]
    completion_id: str
    def __init__(self, completion_id: _Optional[str] = ...) -> None: ...

class DeleteChatCompletionResponse(_message.Message):
    __slots__ = ("id", "object", "deleted")
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    id: str
    object: str
    deleted: bool
    def __init__(self, id: _Optional[str] = ..., object: _Optional[str] = ..., deleted: _Optional[bool] = ...) -> None: ...

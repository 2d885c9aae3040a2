from google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from . import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateCompletionRequest(_message.Message):
    __slots__ = ("model", "prompt", "prompts", "suffix", "echo", "stream", "stream_options", "max_tokens", "stop", "stop_sequences", "ignore_eos", "min_tokens", "stop_token_ids", "include_stop_str_in_output", "skip_special_tokens", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "frequency_penalty", "presence_penalty", "seed", "logit_bias", "bad_words", "priority", "cache_salt", "n", "best_of", "length_penalty", "diversity_penalty", "num_assistant_tokens", "assistant_confidence_threshold", "max_ngram_size", "logprobs", "prompt_logprobs", "response_format", "guided_json", "guided_regex", "guided_choice", "grammar", "guided_grammar", "structured_outputs", "user", "metadata")
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
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    PROMPTS_FIELD_NUMBER: _ClassVar[int]
    SUFFIX_FIELD_NUMBER: _ClassVar[int]
    ECHO_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    STREAM_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    STOP_SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    IGNORE_EOS_FIELD_NUMBER: _ClassVar[int]
    MIN_TOKENS_FIELD_NUMBER: _ClassVar[int]
    STOP_TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
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
    PROMPT_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    GUIDED_JSON_FIELD_NUMBER: _ClassVar[int]
    GUIDED_REGEX_FIELD_NUMBER: _ClassVar[int]
    GUIDED_CHOICE_FIELD_NUMBER: _ClassVar[int]
    GRAMMAR_FIELD_NUMBER: _ClassVar[int]
    GUIDED_GRAMMAR_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    model: str
    prompt: str
    prompts: _containers.RepeatedCompositeFieldContainer[Prompt]
    suffix: str
    echo: bool
    stream: bool
    stream_options: _common_pb2.StreamOptions
    max_tokens: int
    stop: str
    stop_sequences: _containers.RepeatedScalarFieldContainer[str]
    ignore_eos: bool
    min_tokens: int
    stop_token_ids: _containers.RepeatedScalarFieldContainer[int]
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
    logprobs: int
    prompt_logprobs: int
    response_format: _common_pb2.ResponseFormat
    guided_json: _struct_pb2.Struct
    guided_regex: str
    guided_choice: _containers.RepeatedScalarFieldContainer[str]
    grammar: str
    guided_grammar: str
    structured_outputs: _common_pb2.StructuredOutputs
    user: str
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, model: _Optional[str] = ..., prompt: _Optional[str] = ..., prompts: _Optional[_Iterable[_Union[Prompt, _Mapping]]] = ..., suffix: _Optional[str] = ..., echo: _Optional[bool] = ..., stream: _Optional[bool] = ..., stream_options: _Optional[_Union[_common_pb2.StreamOptions, _Mapping]] = ..., max_tokens: _Optional[int] = ..., stop: _Optional[str] = ..., stop_sequences: _Optional[_Iterable[str]] = ..., ignore_eos: _Optional[bool] = ..., min_tokens: _Optional[int] = ..., stop_token_ids: _Optional[_Iterable[int]] = ..., include_stop_str_in_output: _Optional[bool] = ..., skip_special_tokens: _Optional[bool] = ..., temperature: _Optional[float] = ..., top_p: _Optional[float] = ..., top_k: _Optional[int] = ..., min_p: _Optional[float] = ..., repetition_penalty: _Optional[float] = ..., frequency_penalty: _Optional[float] = ..., presence_penalty: _Optional[float] = ..., seed: _Optional[int] = ..., logit_bias: _Optional[_Mapping[str, float]] = ..., bad_words: _Optional[_Iterable[str]] = ..., priority: _Optional[int] = ..., cache_salt: _Optional[str] = ..., n: _Optional[int] = ..., best_of: _Optional[int] = ..., length_penalty: _Optional[float] = ..., diversity_penalty: _Optional[float] = ..., num_assistant_tokens: _Optional[int] = ..., assistant_confidence_threshold: _Optional[float] = ..., max_ngram_size: _Optional[int] = ..., logprobs: _Optional[int] = ..., prompt_logprobs: _Optional[int] = ..., response_format: _Optional[_Union[_common_pb2.ResponseFormat, _Mapping]] = ..., guided_json: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., guided_regex: _Optional[str] = ..., guided_choice: _Optional[_Iterable[str]] = ..., grammar: _Optional[str] = ..., guided_grammar: _Optional[str] = ..., structured_outputs: _Optional[_Union[_common_pb2.StructuredOutputs, _Mapping]] = ..., user: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class StreamCompletionRequest(_message.Message):
    __slots__ = ("model", "prompt", "prompts", "suffix", "echo", "stream", "stream_options", "max_tokens", "stop", "stop_sequences", "ignore_eos", "min_tokens", "stop_token_ids", "include_stop_str_in_output", "skip_special_tokens", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "frequency_penalty", "presence_penalty", "seed", "logit_bias", "bad_words", "priority", "cache_salt", "n", "best_of", "length_penalty", "diversity_penalty", "num_assistant_tokens", "assistant_confidence_threshold", "max_ngram_size", "logprobs", "prompt_logprobs", "response_format", "guided_json", "guided_regex", "guided_choice", "grammar", "guided_grammar", "structured_outputs", "user", "metadata")
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
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    PROMPTS_FIELD_NUMBER: _ClassVar[int]
    SUFFIX_FIELD_NUMBER: _ClassVar[int]
    ECHO_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    STREAM_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    STOP_SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    IGNORE_EOS_FIELD_NUMBER: _ClassVar[int]
    MIN_TOKENS_FIELD_NUMBER: _ClassVar[int]
    STOP_TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
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
    PROMPT_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    GUIDED_JSON_FIELD_NUMBER: _ClassVar[int]
    GUIDED_REGEX_FIELD_NUMBER: _ClassVar[int]
    GUIDED_CHOICE_FIELD_NUMBER: _ClassVar[int]
    GRAMMAR_FIELD_NUMBER: _ClassVar[int]
    GUIDED_GRAMMAR_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    model: str
    prompt: str
    prompts: _containers.RepeatedCompositeFieldContainer[Prompt]
    suffix: str
    echo: bool
    stream: bool
    stream_options: _common_pb2.StreamOptions
    max_tokens: int
    stop: str
    stop_sequences: _containers.RepeatedScalarFieldContainer[str]
    ignore_eos: bool
    min_tokens: int
    stop_token_ids: _containers.RepeatedScalarFieldContainer[int]
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
    logprobs: int
    prompt_logprobs: int
    response_format: _common_pb2.ResponseFormat
    guided_json: _struct_pb2.Struct
    guided_regex: str
    guided_choice: _containers.RepeatedScalarFieldContainer[str]
    grammar: str
    guided_grammar: str
    structured_outputs: _common_pb2.StructuredOutputs
    user: str
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, model: _Optional[str] = ..., prompt: _Optional[str] = ..., prompts: _Optional[_Iterable[_Union[Prompt, _Mapping]]] = ..., suffix: _Optional[str] = ..., echo: _Optional[bool] = ..., stream: _Optional[bool] = ..., stream_options: _Optional[_Union[_common_pb2.StreamOptions, _Mapping]] = ..., max_tokens: _Optional[int] = ..., stop: _Optional[str] = ..., stop_sequences: _Optional[_Iterable[str]] = ..., ignore_eos: _Optional[bool] = ..., min_tokens: _Optional[int] = ..., stop_token_ids: _Optional[_Iterable[int]] = ..., include_stop_str_in_output: _Optional[bool] = ..., skip_special_tokens: _Optional[bool] = ..., temperature: _Optional[float] = ..., top_p: _Optional[float] = ..., top_k: _Optional[int] = ..., min_p: _Optional[float] = ..., repetition_penalty: _Optional[float] = ..., frequency_penalty: _Optional[float] = ..., presence_penalty: _Optional[float] = ..., seed: _Optional[int] = ..., logit_bias: _Optional[_Mapping[str, float]] = ..., bad_words: _Optional[_Iterable[str]] = ..., priority: _Optional[int] = ..., cache_salt: _Optional[str] = ..., n: _Optional[int] = ..., best_of: _Optional[int] = ..., length_penalty: _Optional[float] = ..., diversity_penalty: _Optional[float] = ..., num_assistant_tokens: _Optional[int] = ..., assistant_confidence_threshold: _Optional[float] = ..., max_ngram_size: _Optional[int] = ..., logprobs: _Optional[int] = ..., prompt_logprobs: _Optional[int] = ..., response_format: _Optional[_Union[_common_pb2.ResponseFormat, _Mapping]] = ..., guided_json: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., guided_regex: _Optional[str] = ..., guided_choice: _Optional[_Iterable[str]] = ..., grammar: _Optional[str] = ..., guided_grammar: _Optional[str] = ..., structured_outputs: _Optional[_Union[_common_pb2.StructuredOutputs, _Mapping]] = ..., user: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Prompt(_message.Message):
    __slots__ = ("text", "token_ids")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    text: str
    token_ids: TokenIds
    def __init__(self, text: _Optional[str] = ..., token_ids: _Optional[_Union[TokenIds, _Mapping]] = ...) -> None: ...

class TokenIds(_message.Message):
    __slots__ = ("ids",)
    IDS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, ids: _Optional[_Iterable[int]] = ...) -> None: ...

class CreateCompletionResponse(_message.Message):
    __slots__ = ("id", "object", "created", "model", "choices", "usage", "system_fingerprint")
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    CHOICES_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    id: str
    object: str
    created: int
    model: str
    choices: _containers.RepeatedCompositeFieldContainer[CompletionChoice]
    usage: _common_pb2.Usage
    system_fingerprint: str
    def __init__(self, id: _Optional[str] = ..., object: _Optional[str] = ..., created: _Optional[int] = ..., model: _Optional[str] = ..., choices: _Optional[_Iterable[_Union[CompletionChoice, _Mapping]]] = ..., usage: _Optional[_Union[_common_pb2.Usage, _Mapping]] = ..., system_fingerprint: _Optional[str] = ...) -> None: ...

class StreamCompletionResponse(_message.Message):
    __slots__ = ("id", "object", "created", "model", "choices", "usage", "system_fingerprint")
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    CHOICES_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    id: str
    object: str
    created: int
    model: str
    choices: _containers.RepeatedCompositeFieldContainer[CompletionChoice]
    usage: _common_pb2.Usage
    system_fingerprint: str
    def __init__(self, id: _Optional[str] = ..., object: _Optional[str] = ..., created: _Optional[int] = ..., model: _Optional[str] = ..., choices: _Optional[_Iterable[_Union[CompletionChoice, _Mapping]]] = ..., usage: _Optional[_Union[_common_pb2.Usage, _Mapping]] = ..., system_fingerprint: _Optional[str] = ...) -> None: ...

class CompletionChoice(_message.Message):
    __slots__ = ("index", "text", "logprobs", "finish_reason", "prompt_logprobs")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    PROMPT_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    index: int
    text: str
    logprobs: CompletionLogprobs
    finish_reason: _common_pb2.FinishReason
    prompt_logprobs: _containers.RepeatedCompositeFieldContainer[_common_pb2.PromptLogprobs]
    def __init__(self, index: _Optional[int] = ..., text: _Optional[str] = ..., logprobs: _Optional[_Union[CompletionLogprobs, _Mapping]] = ..., finish_reason: _Optional[_Union[_common_pb2.FinishReason, str]] = ..., prompt_logprobs: _Optional[_Iterable[_Union[_common_pb2.PromptLogprobs, _Mapping]]] = ...) -> None: ...

class CompletionLogprobs(_message.Message):
    __slots__ = ("tokens", "token_logprobs", "top_logprobs", "text_offset")
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOKEN_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    TOP_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    TEXT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    tokens: _containers.RepeatedScalarFieldContainer[str]
    token_logprobs: _containers.RepeatedScalarFieldContainer[float]
    top_logprobs: _containers.RepeatedCompositeFieldContainer[CompletionTopLogprobs]
    text_offset: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, tokens: _Optional[_Iterable[str]] = ..., token_logprobs: _Optional[_Iterable[float]] = ..., top_logprobs: _Optional[_Iterable[_Union[CompletionTopLogprobs, _Mapping]]] = ..., text_offset: _Optional[_Iterable[int]] = ...) -> None: ...

class CompletionTopLogprobs(_message.Message):
    __slots__ = ("logprobs",)
    class LogprobsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    logprobs: _containers.ScalarMap[str, float]
    def __init__(self, logprobs: _Optional[_Mapping[str, float]] = ...) -> None: ...

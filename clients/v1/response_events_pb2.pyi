from . import common_pb2 as _common_pb2
from . import response_object_pb2 as _response_object_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ResponseStreamEvent(_message.Message):
    __slots__ = ("sequence_number", "created", "queued", "in_progress", "output_item_added", "output_item_done", "content_part_added", "content_part_done", "output_text_delta", "output_text_done", "refusal_delta", "refusal_done", "reasoning_summary_part_added", "reasoning_summary_part_done", "reasoning_summary_text_delta", "reasoning_summary_text_done", "reasoning_text_delta", "reasoning_text_done", "function_call_arguments_delta", "function_call_arguments_done", "completed", "incomplete", "failed", "error", "mcp_list_tools_in_progress", "mcp_list_tools_completed", "mcp_list_tools_failed", "mcp_call_in_progress", "mcp_call_completed", "mcp_call_failed", "mcp_call_arguments_delta", "mcp_call_arguments_done", "custom_tool_call_input_delta", "custom_tool_call_input_done")
    SEQUENCE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    QUEUED_FIELD_NUMBER: _ClassVar[int]
    IN_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_ITEM_ADDED_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_ITEM_DONE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_PART_ADDED_FIELD_NUMBER: _ClassVar[int]
    CONTENT_PART_DONE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TEXT_DELTA_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TEXT_DONE_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_DELTA_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_DONE_FIELD_NUMBER: _ClassVar[int]
    REASONING_SUMMARY_PART_ADDED_FIELD_NUMBER: _ClassVar[int]
    REASONING_SUMMARY_PART_DONE_FIELD_NUMBER: _ClassVar[int]
    REASONING_SUMMARY_TEXT_DELTA_FIELD_NUMBER: _ClassVar[int]
    REASONING_SUMMARY_TEXT_DONE_FIELD_NUMBER: _ClassVar[int]
    REASONING_TEXT_DELTA_FIELD_NUMBER: _ClassVar[int]
    REASONING_TEXT_DONE_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_CALL_ARGUMENTS_DELTA_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_CALL_ARGUMENTS_DONE_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    INCOMPLETE_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    MCP_LIST_TOOLS_IN_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    MCP_LIST_TOOLS_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    MCP_LIST_TOOLS_FAILED_FIELD_NUMBER: _ClassVar[int]
    MCP_CALL_IN_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    MCP_CALL_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    MCP_CALL_FAILED_FIELD_NUMBER: _ClassVar[int]
    MCP_CALL_ARGUMENTS_DELTA_FIELD_NUMBER: _ClassVar[int]
    MCP_CALL_ARGUMENTS_DONE_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_TOOL_CALL_INPUT_DELTA_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_TOOL_CALL_INPUT_DONE_FIELD_NUMBER: _ClassVar[int]
    sequence_number: int
    created: ResponseCreatedEvent
    queued: ResponseQueuedEvent
    in_progress: ResponseInProgressEvent
    output_item_added: ResponseOutputItemAddedEvent
    output_item_done: ResponseOutputItemDoneEvent
    content_part_added: ResponseContentPartAddedEvent
    content_part_done: ResponseContentPartDoneEvent
    output_text_delta: ResponseOutputTextDeltaEvent
    output_text_done: ResponseOutputTextDoneEvent
    refusal_delta: ResponseRefusalDeltaEvent
    refusal_done: ResponseRefusalDoneEvent
    reasoning_summary_part_added: ResponseReasoningSummaryPartAddedEvent
    reasoning_summary_part_done: ResponseReasoningSummaryPartDoneEvent
    reasoning_summary_text_delta: ResponseReasoningSummaryTextDeltaEvent
    reasoning_summary_text_done: ResponseReasoningSummaryTextDoneEvent
    reasoning_text_delta: ResponseReasoningTextDeltaEvent
    reasoning_text_done: ResponseReasoningTextDoneEvent
    function_call_arguments_delta: ResponseFunctionCallArgumentsDeltaEvent
    function_call_arguments_done: ResponseFunctionCallArgumentsDoneEvent
    completed: ResponseCompletedEvent
    incomplete: ResponseIncompleteEvent
    failed: ResponseFailedEvent
    error: ResponseErrorEvent
    mcp_list_tools_in_progress: ResponseMcpItemEvent
    mcp_list_tools_completed: ResponseMcpItemEvent
    mcp_list_tools_failed: ResponseMcpItemEvent
    mcp_call_in_progress: ResponseMcpItemEvent
    mcp_call_completed: ResponseMcpItemEvent
    mcp_call_failed: ResponseMcpItemEvent
    mcp_call_arguments_delta: ResponseMcpCallArgumentsDeltaEvent
    mcp_call_arguments_done: ResponseMcpCallArgumentsDoneEvent
    custom_tool_call_input_delta: ResponseCustomToolCallInputDeltaEvent
    custom_tool_call_input_done: ResponseCustomToolCallInputDoneEvent
    def __init__(self, sequence_number: _Optional[int] = ..., created: _Optional[_Union[ResponseCreatedEvent, _Mapping]] = ..., queued: _Optional[_Union[ResponseQueuedEvent, _Mapping]] = ..., in_progress: _Optional[_Union[ResponseInProgressEvent, _Mapping]] = ..., output_item_added: _Optional[_Union[ResponseOutputItemAddedEvent, _Mapping]] = ..., output_item_done: _Optional[_Union[ResponseOutputItemDoneEvent, _Mapping]] = ..., content_part_added: _Optional[_Union[ResponseContentPartAddedEvent, _Mapping]] = ..., content_part_done: _Optional[_Union[ResponseContentPartDoneEvent, _Mapping]] = ..., output_text_delta: _Optional[_Union[ResponseOutputTextDeltaEvent, _Mapping]] = ..., output_text_done: _Optional[_Union[ResponseOutputTextDoneEvent, _Mapping]] = ..., refusal_delta: _Optional[_Union[ResponseRefusalDeltaEvent, _Mapping]] = ..., refusal_done: _Optional[_Union[ResponseRefusalDoneEvent, _Mapping]] = ..., reasoning_summary_part_added: _Optional[_Union[ResponseReasoningSummaryPartAddedEvent, _Mapping]] = ..., reasoning_summary_part_done: _Optional[_Union[ResponseReasoningSummaryPartDoneEvent, _Mapping]] = ..., reasoning_summary_text_delta: _Optional[_Union[ResponseReasoningSummaryTextDeltaEvent, _Mapping]] = ..., reasoning_summary_text_done: _Optional[_Union[ResponseReasoningSummaryTextDoneEvent, _Mapping]] = ..., reasoning_text_delta: _Optional[_Union[ResponseReasoningTextDeltaEvent, _Mapping]] = ..., reasoning_text_done: _Optional[_Union[ResponseReasoningTextDoneEvent, _Mapping]] = ..., function_call_arguments_delta: _Optional[_Union[ResponseFunctionCallArgumentsDeltaEvent, _Mapping]] = ..., function_call_arguments_done: _Optional[_Union[ResponseFunctionCallArgumentsDoneEvent, _Mapping]] = ..., completed: _Optional[_Union[ResponseCompletedEvent, _Mapping]] = ..., incomplete: _Optional[_Union[ResponseIncompleteEvent, _Mapping]] = ..., failed: _Optional[_Union[ResponseFailedEvent, _Mapping]] = ..., error: _Optional[_Union[ResponseErrorEvent, _Mapping]] = ..., mcp_list_tools_in_progress: _Optional[_Union[ResponseMcpItemEvent, _Mapping]] = ..., mcp_list_tools_completed: _Optional[_Union[ResponseMcpItemEvent, _Mapping]] = ..., mcp_list_tools_failed: _Optional[_Union[ResponseMcpItemEvent, _Mapping]] = ..., mcp_call_in_progress: _Optional[_Union[ResponseMcpItemEvent, _Mapping]] = ..., mcp_call_completed: _Optional[_Union[ResponseMcpItemEvent, _Mapping]] = ..., mcp_call_failed: _Optional[_Union[ResponseMcpItemEvent, _Mapping]] = ..., mcp_call_arguments_delta: _Optional[_Union[ResponseMcpCallArgumentsDeltaEvent, _Mapping]] = ..., mcp_call_arguments_done: _Optional[_Union[ResponseMcpCallArgumentsDoneEvent, _Mapping]] = ..., custom_tool_call_input_delta: _Optional[_Union[ResponseCustomToolCallInputDeltaEvent, _Mapping]] = ..., custom_tool_call_input_done: _Optional[_Union[ResponseCustomToolCallInputDoneEvent, _Mapping]] = ...) -> None: ...

class ResponseCustomToolCallInputDeltaEvent(_message.Message):
    __slots__ = ("item_id", "output_index", "delta")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    delta: str
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ..., delta: _Optional[str] = ...) -> None: ...

class ResponseCustomToolCallInputDoneEvent(_message.Message):
    __slots__ = ("item_id", "output_index", "input")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    input: str
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ..., input: _Optional[str] = ...) -> None: ...

class ResponseMcpItemEvent(_message.Message):
    __slots__ = ("item_id", "output_index")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ...) -> None: ...

class ResponseMcpCallArgumentsDeltaEvent(_message.Message):
    __slots__ = ("item_id", "output_index", "delta")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    delta: str
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ..., delta: _Optional[str] = ...) -> None: ...

class ResponseMcpCallArgumentsDoneEvent(_message.Message):
    __slots__ = ("item_id", "output_index", "arguments")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    arguments: str
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ..., arguments: _Optional[str] = ...) -> None: ...

class ResponseCreatedEvent(_message.Message):
    __slots__ = ("response",)
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    response: _response_object_pb2.Response
    def __init__(self, response: _Optional[_Union[_response_object_pb2.Response, _Mapping]] = ...) -> None: ...

class ResponseQueuedEvent(_message.Message):
    __slots__ = ("response",)
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    response: _response_object_pb2.Response
    def __init__(self, response: _Optional[_Union[_response_object_pb2.Response, _Mapping]] = ...) -> None: ...

class ResponseInProgressEvent(_message.Message):
    __slots__ = ("response",)
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    response: _response_object_pb2.Response
    def __init__(self, response: _Optional[_Union[_response_object_pb2.Response, _Mapping]] = ...) -> None: ...

class ResponseOutputItemAddedEvent(_message.Message):
    __slots__ = ("output_index", "item")
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    output_index: int
    item: _response_object_pb2.OutputItem
    def __init__(self, output_index: _Optional[int] = ..., item: _Optional[_Union[_response_object_pb2.OutputItem, _Mapping]] = ...) -> None: ...

class ResponseOutputItemDoneEvent(_message.Message):
    __slots__ = ("output_index", "item")
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    output_index: int
    item: _response_object_pb2.OutputItem
    def __init__(self, output_index: _Optional[int] = ..., item: _Optional[_Union[_response_object_pb2.OutputItem, _Mapping]] = ...) -> None: ...

class ResponseContentPartAddedEvent(_message.Message):
    __slots__ = ("item_id", "output_index", "content_index", "part")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    CONTENT_INDEX_FIELD_NUMBER: _ClassVar[int]
    PART_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    content_index: int
    part: _response_object_pb2.OutputContentPart
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ..., content_index: _Optional[int] = ..., part: _Optional[_Union[_response_object_pb2.OutputContentPart, _Mapping]] = ...) -> None: ...

class ResponseContentPartDoneEvent(_message.Message):
    __slots__ = ("item_id", "output_index", "content_index", "part")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    CONTENT_INDEX_FIELD_NUMBER: _ClassVar[int]
    PART_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    content_index: int
    part: _response_object_pb2.OutputContentPart
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ..., content_index: _Optional[int] = ..., part: _Optional[_Union[_response_object_pb2.OutputContentPart, _Mapping]] = ...) -> None: ...

class ResponseOutputTextDeltaEvent(_message.Message):
    __slots__ = ("item_id", "output_index", "content_index", "delta", "logprobs")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    CONTENT_INDEX_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    content_index: int
    delta: str
    logprobs: _containers.RepeatedCompositeFieldContainer[_common_pb2.TokenLogprob]
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ..., content_index: _Optional[int] = ..., delta: _Optional[str] = ..., logprobs: _Optional[_Iterable[_Union[_common_pb2.TokenLogprob, _Mapping]]] = ...) -> None: ...

class ResponseOutputTextDoneEvent(_message.Message):
    __slots__ = ("item_id", "output_index", "content_index", "text", "logprobs")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    CONTENT_INDEX_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    content_index: int
    text: str
    logprobs: _containers.RepeatedCompositeFieldContainer[_common_pb2.TokenLogprob]
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ..., content_index: _Optional[int] = ..., text: _Optional[str] = ..., logprobs: _Optional[_Iterable[_Union[_common_pb2.TokenLogprob, _Mapping]]] = ...) -> None: ...

class ResponseRefusalDeltaEvent(_message.Message):
    __slots__ = ("item_id", "output_index", "content_index", "delta")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    CONTENT_INDEX_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    content_index: int
    delta: str
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ..., content_index: _Optional[int] = ..., delta: _Optional[str] = ...) -> None: ...

class ResponseRefusalDoneEvent(_message.Message):
    __slots__ = ("item_id", "output_index", "content_index", "refusal")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    CONTENT_INDEX_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    content_index: int
    refusal: str
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ..., content_index: _Optional[int] = ..., refusal: _Optional[str] = ...) -> None: ...

class ResponseReasoningSummaryPartAddedEvent(_message.Message):
    __slots__ = ("item_id", "output_index", "summary_index", "part")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_INDEX_FIELD_NUMBER: _ClassVar[int]
    PART_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    summary_index: int
    part: _response_object_pb2.SummaryText
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ..., summary_index: _Optional[int] = ..., part: _Optional[_Union[_response_object_pb2.SummaryText, _Mapping]] = ...) -> None: ...

class ResponseReasoningSummaryPartDoneEvent(_message.Message):
    __slots__ = ("item_id", "output_index", "summary_index", "part")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_INDEX_FIELD_NUMBER: _ClassVar[int]
    PART_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    summary_index: int
    part: _response_object_pb2.SummaryText
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ..., summary_index: _Optional[int] = ..., part: _Optional[_Union[_response_object_pb2.SummaryText, _Mapping]] = ...) -> None: ...

class ResponseReasoningSummaryTextDeltaEvent(_message.Message):
    __slots__ = ("item_id", "output_index", "summary_index", "delta")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_INDEX_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    summary_index: int
    delta: str
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ..., summary_index: _Optional[int] = ..., delta: _Optional[str] = ...) -> None: ...

class ResponseReasoningSummaryTextDoneEvent(_message.Message):
    __slots__ = ("item_id", "output_index", "summary_index", "text")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_INDEX_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    summary_index: int
    text: str
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ..., summary_index: _Optional[int] = ..., text: _Optional[str] = ...) -> None: ...

class ResponseReasoningTextDeltaEvent(_message.Message):
    __slots__ = ("item_id", "output_index", "content_index", "delta")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    CONTENT_INDEX_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    content_index: int
    delta: str
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ..., content_index: _Optional[int] = ..., delta: _Optional[str] = ...) -> None: ...

class ResponseReasoningTextDoneEvent(_message.Message):
    __slots__ = ("item_id", "output_index", "content_index", "text")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    CONTENT_INDEX_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    content_index: int
    text: str
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ..., content_index: _Optional[int] = ..., text: _Optional[str] = ...) -> None: ...

class ResponseFunctionCallArgumentsDeltaEvent(_message.Message):
    __slots__ = ("item_id", "output_index", "delta")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    delta: str
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ..., delta: _Optional[str] = ...) -> None: ...

class ResponseFunctionCallArgumentsDoneEvent(_message.Message):
    __slots__ = ("item_id", "output_index", "arguments", "name")
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    item_id: str
    output_index: int
    arguments: str
    name: str
    def __init__(self, item_id: _Optional[str] = ..., output_index: _Optional[int] = ..., arguments: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class ResponseCompletedEvent(_message.Message):
    __slots__ = ("response",)
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    response: _response_object_pb2.Response
    def __init__(self, response: _Optional[_Union[_response_object_pb2.Response, _Mapping]] = ...) -> None: ...

class ResponseIncompleteEvent(_message.Message):
    __slots__ = ("response",)
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    response: _response_object_pb2.Response
    def __init__(self, response: _Optional[_Union[_response_object_pb2.Response, _Mapping]] = ...) -> None: ...

class ResponseFailedEvent(_message.Message):
    __slots__ = ("response",)
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    response: _response_object_pb2.Response
    def __init__(self, response: _Optional[_Union[_response_object_pb2.Response, _Mapping]] = ...) -> None: ...

class ResponseErrorEvent(_message.Message):
    __slots__ = ("code", "message", "param")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PARAM_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    param: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., param: _Optional[str] = ...) -> None: ...

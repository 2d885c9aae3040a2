"""The Responses stream: a Response object and the events that build it, in OpenAI's order.

    created, in_progress,
    [output_item.added (reasoning), reasoning_summary_part.added,
     reasoning_summary_text.delta ..., reasoning_summary_text.done, reasoning_summary_part.done, output_item.done]
    [output_item.added (message), content_part.added (output_text),
     output_text.delta ..., output_text.done, content_part.done, output_item.done]
    [output_item.added (function_call), function_call_arguments.delta ..., function_call_arguments.done,
     output_item.done] per call
    [output_item.added (custom_tool_call), custom_tool_call_input.delta, custom_tool_call_input.done,
     output_item.done] per call of a custom tool (its input read out of the whole call, so in one delta)
    completed | incomplete | failed

With mcp tools: the servers listed for this response come first, each
output_item.added (mcp_list_tools), mcp_list_tools.in_progress, .completed, output_item.done.
A call of an MCP tool is an mcp_call item: output_item.added, mcp_call.in_progress,
mcp_call_arguments.delta ..., mcp_call_arguments.done, and once the server called the tool
(after the model's turn, mcp_calls.py) mcp_call.completed or .failed, output_item.done; the model's
next round follows. A call that needs approval is one mcp_approval_request item (added, done).

One item is open at a time; each has its own output_index. The message item
is there only when the model wrote content (or wrote nothing at all).

Every event carries the next ``sequence_number``; lifecycle events carry a
snapshot of the Response. The builder knows nothing of the engine or of
gRPC: it is fed text and a finish, and hands back events.
"""

from __future__ import annotations

import time
from typing import Any

from ovserve.clients.v1 import common_pb2
from ovserve.clients.v1 import response_events_pb2 as events_pb2
from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.service.api.custom_tools import custom_input
from ovserve.service.ids import new_id
from ovserve.service.parsing import (
    ContentDelta,
    Piece,
    ReasoningDelta,
    ToolCallArguments,
    ToolCallFinished,
    ToolCallStarted,
)
from ovserve.service.responses.mcp_tools import McpServer, McpTools

Event = events_pb2.ResponseStreamEvent
Response = objects_pb2.Response

CALL_PIECES = (ToolCallStarted, ToolCallArguments, ToolCallFinished)


class ResponseEvents:
    """Builds one response's Response object and its stream events as text arrives."""

    def __init__(self, response: Response) -> None:
        self.response = response
        self._sequence = 0
        self._message: objects_pb2.OutputMessage | None = None
        self._text: objects_pb2.OutputText | None = None
        self._reasoning: objects_pb2.OutputReasoning | None = None
        self._call: objects_pb2.OutputFunctionCall | None = None
        self._custom: objects_pb2.OutputCustomToolCall | None = None
        self._custom_arguments = ""  # the open custom call's arguments as the model wrote them
        self.custom: frozenset[str] = frozenset()  # the request's custom tools: calls of their names are custom items
        self._mcp_call: objects_pb2.OutputMcpCall | None = None
        self._asked: objects_pb2.OutputMcpApprovalRequest | None = None  # written, announced when complete
        # the open item's kind: "message", "reasoning", "function_call", "custom_tool_call", "mcp_call",
        # "mcp_approval_request"
        self._open: str | None = None
        self.mcp = McpTools()  # the request's MCP servers: calls of their tools are mcp items
        self.mcp_calls: list[int] = []  # output indexes of the mcp_call items written and not yet called
        self._output_index = 0
        # Token logprobs not yet attached: they go with the next output text (the parser may hold text
        # back, or the tokens were markup), and any left when the message closes go to its part.
        self._pending: list[common_pb2.TokenLogprob] = []

    def _event(self, **field: object) -> Event:
        event = Event(sequence_number=self._sequence, **field)  # type: ignore[arg-type]
        self._sequence += 1
        return event

    def _snapshot(self) -> Response:
        copy = Response()
        copy.CopyFrom(self.response)
        return copy

    def queued(self) -> list[Event]:
        """``response.created`` and ``response.queued``: accepted to run in the background."""
        self.response.status = objects_pb2.RESPONSE_STATUS_QUEUED
        created = self._event(created=events_pb2.ResponseCreatedEvent(response=self._snapshot()))
        return [created, self._event(queued=events_pb2.ResponseQueuedEvent(response=self._snapshot()))]

    def start(self, *, announce_created: bool = True) -> list[Event]:
        """``response.created`` (unless a queued event already announced it) and ``response.in_progress``."""
        events = []
        self.response.status = objects_pb2.RESPONSE_STATUS_IN_PROGRESS
        if announce_created:
            events.append(self._event(created=events_pb2.ResponseCreatedEvent(response=self._snapshot())))
        events.append(self._event(in_progress=events_pb2.ResponseInProgressEvent(response=self._snapshot())))
        return events

    def apply(self, pieces: list[Piece]) -> list[Event]:
        """Events for parsed output pieces (reasoning, content, tool calls).

        Calls past the request's max_tool_calls are dropped, as OpenAI ignores them.
        """
        events = []
        limit = self.response.max_tool_calls if self.response.HasField("max_tool_calls") else None
        for piece in pieces:
            if limit is not None and isinstance(piece, CALL_PIECES) and piece.index >= limit:
                continue
            if isinstance(piece, ContentDelta):
                events += self.text(piece.text)
            elif isinstance(piece, ReasoningDelta):
                events += self.reasoning(piece.text)
            elif isinstance(piece, ToolCallStarted):
                events += self._open_call(piece.id, piece.name)
            elif isinstance(piece, ToolCallArguments):
                events += self._call_arguments(piece.fragment)
            else:
                events += self._close_item(objects_pb2.ITEM_STATUS_COMPLETED)
        return events

    def reasoning(self, delta: str) -> list[Event]:
        """Reasoning text: opens the reasoning item and its summary part on first use."""
        events = [] if self._open == "reasoning" else self._open_reasoning()
        assert self._reasoning is not None
        if delta:
            self._reasoning.summary[0].text += delta
            events.append(
                self._event(
                    reasoning_summary_text_delta=events_pb2.ResponseReasoningSummaryTextDeltaEvent(
                        item_id=self._reasoning.id, output_index=self._output_index, summary_index=0, delta=delta
                    )
                )
            )
        return events

    def _open_reasoning(self) -> list[Event]:
        events = self._close_item(objects_pb2.ITEM_STATUS_COMPLETED)
        self._output_index = len(self.response.output)
        item = objects_pb2.OutputReasoning(id=new_id("rs_"), status=objects_pb2.ITEM_STATUS_IN_PROGRESS)
        events.append(
            self._event(
                output_item_added=events_pb2.ResponseOutputItemAddedEvent(
                    output_index=self._output_index, item=objects_pb2.OutputItem(reasoning=item)
                )
            )
        )
        item.summary.add(text="")
        events.append(
            self._event(
                reasoning_summary_part_added=events_pb2.ResponseReasoningSummaryPartAddedEvent(
                    item_id=item.id, output_index=self._output_index, summary_index=0, part=item.summary[0]
                )
            )
        )
        self.response.output.add(reasoning=item)
        self._reasoning, self._open = self.response.output[self._output_index].reasoning, "reasoning"
        return events

    def _open_call(self, call_id: str, name: str) -> list[Event]:
        events = self._close_item(objects_pb2.ITEM_STATUS_COMPLETED)
        self._output_index = len(self.response.output)
        server = self.mcp.server_of(name)
        if server is not None:
            return events + self._open_mcp(server, name)
        if name in self.custom:
            return events + self._open_custom(call_id, name)
        item = objects_pb2.OutputFunctionCall(
            id=new_id("fc_"), call_id=call_id, name=name, status=objects_pb2.ITEM_STATUS_IN_PROGRESS
        )
        events.append(
            self._event(
                output_item_added=events_pb2.ResponseOutputItemAddedEvent(
                    output_index=self._output_index, item=objects_pb2.OutputItem(function_call=item)
                )
            )
        )
        self.response.output.add(function_call=item)
        self._call, self._open = self.response.output[self._output_index].function_call, "function_call"
        return events

    def _open_custom(self, call_id: str, name: str) -> list[Event]:
        item = objects_pb2.OutputCustomToolCall(
            id=new_id("ctc_"), call_id=call_id, name=name, status=objects_pb2.ITEM_STATUS_IN_PROGRESS
        )
        added = events_pb2.ResponseOutputItemAddedEvent(
            output_index=self._output_index, item=objects_pb2.OutputItem(custom_tool_call=item)
        )
        self.response.output.add(custom_tool_call=item)
        self._custom, self._open = self.response.output[self._output_index].custom_tool_call, "custom_tool_call"
        self._custom_arguments = ""
        return [self._event(output_item_added=added)]

    def _open_mcp(self, server: McpServer, name: str) -> list[Event]:
        if server.needs_approval(name):  # one item, announced once its arguments are complete
            self._asked = objects_pb2.OutputMcpApprovalRequest(id=new_id("mcpr_"), server_label=server.label, name=name)
            self._open = "mcp_approval_request"
            return []
        item = objects_pb2.OutputMcpCall(
            id=new_id("mcp_"), server_label=server.label, name=name, status=objects_pb2.ITEM_STATUS_IN_PROGRESS
        )
        added = events_pb2.ResponseOutputItemAddedEvent(
            output_index=self._output_index, item=objects_pb2.OutputItem(mcp_call=item)
        )
        self.response.output.add(mcp_call=item)
        self._mcp_call, self._open = self.response.output[self._output_index].mcp_call, "mcp_call"
        progress = events_pb2.ResponseMcpItemEvent(item_id=item.id, output_index=self._output_index)
        return [self._event(output_item_added=added), self._event(mcp_call_in_progress=progress)]

    def mcp_call_made(self, server: McpServer, name: str, arguments: str, approval_request_id: str) -> list[Event]:
        """An approved call (not written by the model in this response): its mcp_call item, about to be called."""
        events = self._close_item(objects_pb2.ITEM_STATUS_COMPLETED)
        self._output_index = len(self.response.output)
        item = objects_pb2.OutputMcpCall(
            id=new_id("mcp_"), server_label=server.label, name=name, arguments=arguments,
            status=objects_pb2.ITEM_STATUS_IN_PROGRESS, approval_request_id=approval_request_id,
        )  # fmt: skip
        added = events_pb2.ResponseOutputItemAddedEvent(
            output_index=self._output_index, item=objects_pb2.OutputItem(mcp_call=item)
        )
        self.response.output.add(mcp_call=item)
        where: dict[str, Any] = {"item_id": item.id, "output_index": self._output_index}
        self.response.output[self._output_index].mcp_call.status = objects_pb2.ITEM_STATUS_CALLING
        self.mcp_calls.append(self._output_index)
        return [
            *events,
            self._event(output_item_added=added),
            self._event(mcp_call_in_progress=events_pb2.ResponseMcpItemEvent(**where)),
            self._event(mcp_call_arguments_done=events_pb2.ResponseMcpCallArgumentsDoneEvent(arguments=arguments,
                                                                                              **where)),
        ]  # fmt: skip

    def mcp_call_ended(self, output_index: int, *, output: str | None, error: str | None) -> list[Event]:
        """The end of the mcp_call item at ``output_index``: the tool's output, or why there is none."""
        call = self.response.output[output_index].mcp_call
        where: dict[str, Any] = {"item_id": call.id, "output_index": output_index}
        if error is None:
            call.output, call.status = output or "", objects_pb2.ITEM_STATUS_COMPLETED
            ended = self._event(mcp_call_completed=events_pb2.ResponseMcpItemEvent(**where))
        else:
            call.error, call.status = error, objects_pb2.ITEM_STATUS_FAILED
            ended = self._event(mcp_call_failed=events_pb2.ResponseMcpItemEvent(**where))
        done = events_pb2.ResponseOutputItemDoneEvent(
            output_index=output_index, item=self.response.output[output_index]
        )
        return [ended, self._event(output_item_done=done)]

    def mcp_listed(self, server: McpServer) -> list[Event]:
        """The mcp_list_tools item of a server listed for this response."""
        events = self._close_item(objects_pb2.ITEM_STATUS_COMPLETED)
        index = len(self.response.output)
        item = objects_pb2.OutputMcpListTools(id=new_id("mcpl_"), server_label=server.label)
        added = events_pb2.ResponseOutputItemAddedEvent(
            output_index=index, item=objects_pb2.OutputItem(mcp_list_tools=item)
        )
        where: dict[str, Any] = {"item_id": item.id, "output_index": index}
        item.tools.extend(server.tools)
        self.response.output.add(mcp_list_tools=item)
        done = events_pb2.ResponseOutputItemDoneEvent(output_index=index, item=self.response.output[index])
        return [
            *events,
            self._event(output_item_added=added),
            self._event(mcp_list_tools_in_progress=events_pb2.ResponseMcpItemEvent(**where)),
            self._event(mcp_list_tools_completed=events_pb2.ResponseMcpItemEvent(**where)),
            self._event(output_item_done=done),
        ]

    def close_mcp_item(self) -> list[Event]:
        """Close an mcp_call or approval request the model's turn ended in (its other items close as usual)."""
        if self._open in ("mcp_call", "mcp_approval_request"):
            return self._close_item(objects_pb2.ITEM_STATUS_COMPLETED)
        return []

    def end_round(self) -> list[Event]:
        """Close the open item: the model's turn ended (the server calls its MCP tools next)."""
        return self._close_item(objects_pb2.ITEM_STATUS_COMPLETED)

    def _call_arguments(self, fragment: str) -> list[Event]:
        if self._open == "custom_tool_call":  # its input is read out of the whole arguments when it closes
            self._custom_arguments += fragment
            return []
        if self._open == "mcp_approval_request":
            assert self._asked is not None
            self._asked.arguments += fragment
            return []
        if self._open == "mcp_call":
            assert self._mcp_call is not None
            self._mcp_call.arguments += fragment
            delta = events_pb2.ResponseMcpCallArgumentsDeltaEvent(
                item_id=self._mcp_call.id, output_index=self._output_index, delta=fragment
            )
            return [self._event(mcp_call_arguments_delta=delta)]
        assert self._call is not None and self._open == "function_call"
        self._call.arguments += fragment
        delta = events_pb2.ResponseFunctionCallArgumentsDeltaEvent(
            item_id=self._call.id, output_index=self._output_index, delta=fragment
        )
        return [self._event(function_call_arguments_delta=delta)]

    def _close_item(self, status: int) -> list[Event]:
        """The events that close the open item (none if no item is open)."""
        kind, self._open = self._open, None
        where: dict[str, Any] = {"output_index": self._output_index}
        events = []
        if kind == "message":
            assert self._message is not None and self._text is not None
            self._message.status = status  # type: ignore[assignment]
            self._text.logprobs.extend(self._pending)
            self._pending = []
            part = {**where, "item_id": self._message.id, "content_index": 0}
            done = events_pb2.ResponseOutputTextDoneEvent(text=self._text.text, logprobs=self._text.logprobs, **part)
            events += [
                self._event(output_text_done=done),
                self._event(
                    content_part_done=events_pb2.ResponseContentPartDoneEvent(part=self._message.content[0], **part)
                ),
            ]
            item = objects_pb2.OutputItem(message=self._message)
        elif kind == "reasoning":
            assert self._reasoning is not None
            self._reasoning.status = status  # type: ignore[assignment]
            summary = self._reasoning.summary[0]
            part = {**where, "item_id": self._reasoning.id, "summary_index": 0}
            events += [
                self._event(
                    reasoning_summary_text_done=events_pb2.ResponseReasoningSummaryTextDoneEvent(
                        text=summary.text, **part
                    )
                ),
                self._event(
                    reasoning_summary_part_done=events_pb2.ResponseReasoningSummaryPartDoneEvent(part=summary, **part)
                ),
            ]
            item = objects_pb2.OutputItem(reasoning=self._reasoning)
        elif kind == "function_call":
            assert self._call is not None
            self._call.status = status  # type: ignore[assignment]
            done = events_pb2.ResponseFunctionCallArgumentsDoneEvent(
                item_id=self._call.id, arguments=self._call.arguments, name=self._call.name, **where
            )
            events.append(self._event(function_call_arguments_done=done))
            item = objects_pb2.OutputItem(function_call=self._call)
        elif kind == "custom_tool_call":
            assert self._custom is not None
            self._custom.status = status  # type: ignore[assignment]
            self._custom.input = custom_input(self._custom_arguments)
            part = {**where, "item_id": self._custom.id}
            delta = events_pb2.ResponseCustomToolCallInputDeltaEvent(delta=self._custom.input, **part)
            done_input = events_pb2.ResponseCustomToolCallInputDoneEvent(input=self._custom.input, **part)
            events += [
                self._event(custom_tool_call_input_delta=delta),
                self._event(custom_tool_call_input_done=done_input),
            ]
            item = objects_pb2.OutputItem(custom_tool_call=self._custom)
        elif kind == "mcp_call":  # its item is done once the server called the tool (mcp_call_ended)
            assert self._mcp_call is not None
            self._mcp_call.arguments = self._mcp_call.arguments or "{}"
            self._mcp_call.status = objects_pb2.ITEM_STATUS_CALLING
            self.mcp_calls.append(self._output_index)
            done_arguments = events_pb2.ResponseMcpCallArgumentsDoneEvent(
                item_id=self._mcp_call.id, output_index=self._output_index, arguments=self._mcp_call.arguments
            )
            return [self._event(mcp_call_arguments_done=done_arguments)]
        elif kind == "mcp_approval_request":
            assert self._asked is not None
            self._asked.arguments = self._asked.arguments or "{}"
            self.response.output.add(mcp_approval_request=self._asked)
            item = self.response.output[self._output_index]
            added = events_pb2.ResponseOutputItemAddedEvent(output_index=self._output_index, item=item)
            events.append(self._event(output_item_added=added))
        else:
            return []
        done_item = events_pb2.ResponseOutputItemDoneEvent(output_index=self._output_index, item=item)
        return [*events, self._event(output_item_done=done_item)]

    def logprobs(self, entries: list[common_pb2.TokenLogprob]) -> None:
        """The logprobs of newly generated tokens (when the request asked for them)."""
        self._pending += entries

    def text(self, delta: str) -> list[Event]:
        """Output text: opens the message item and its output_text part on first use."""
        events = [] if self._open == "message" else self._open_message()
        if delta:
            assert self._text is not None and self._message is not None
            self._text.text += delta
            attached, self._pending = self._pending, []
            self._text.logprobs.extend(attached)
            events.append(
                self._event(
                    output_text_delta=events_pb2.ResponseOutputTextDeltaEvent(
                        item_id=self._message.id,
                        output_index=self._output_index,
                        content_index=0,
                        delta=delta,
                        logprobs=attached,
                    )
                )
            )
        return events

    def _open_message(self) -> list[Event]:
        events = self._close_item(objects_pb2.ITEM_STATUS_COMPLETED)
        message = objects_pb2.OutputMessage(
            id=new_id("msg_"), role=common_pb2.ROLE_ASSISTANT, status=objects_pb2.ITEM_STATUS_IN_PROGRESS
        )
        self._output_index = len(self.response.output)
        added = self._event(
            output_item_added=events_pb2.ResponseOutputItemAddedEvent(
                output_index=self._output_index, item=objects_pb2.OutputItem(message=message)
            )
        )
        part = objects_pb2.OutputContentPart(output_text=objects_pb2.OutputText(text=""))
        part_added = self._event(
            content_part_added=events_pb2.ResponseContentPartAddedEvent(
                item_id=message.id, output_index=self._output_index, content_index=0, part=part
            )
        )
        message.content.append(part)
        self.response.output.add(message=message)
        # Keep references into the Response itself, so its snapshot shows the text so far.
        self._message = self.response.output[self._output_index].message
        self._text = self._message.content[0].output_text
        self._open = "message"
        return [*events, added, part_added]

    def finish(self, *, truncated: bool, usage: objects_pb2.ResponseUsage) -> list[Event]:
        """Close the open item and end with ``response.completed``, or ``response.incomplete`` when truncated."""
        # A response that said nothing still has its (empty) message item.
        events = [] if len(self.response.output) else self.text("")
        item_status = objects_pb2.ITEM_STATUS_INCOMPLETE if truncated else objects_pb2.ITEM_STATUS_COMPLETED
        events += self._close_item(item_status)
        self.response.usage.CopyFrom(usage)
        if truncated:
            self.response.status = objects_pb2.RESPONSE_STATUS_INCOMPLETE
            self.response.incomplete_details.reason = objects_pb2.INCOMPLETE_REASON_MAX_OUTPUT_TOKENS
            return [*events, self._event(incomplete=events_pb2.ResponseIncompleteEvent(response=self._snapshot()))]
        self.response.status = objects_pb2.RESPONSE_STATUS_COMPLETED
        self.response.completed_at = int(time.time())  # only completed responses have one (OpenAI)
        return [*events, self._event(completed=events_pb2.ResponseCompletedEvent(response=self._snapshot()))]

    def fail(self, code: str, message: str) -> list[Event]:
        """End with ``response.failed`` carrying the error (the stream never just stops)."""
        self._close_open_item(objects_pb2.ITEM_STATUS_INCOMPLETE)
        self.response.status = objects_pb2.RESPONSE_STATUS_FAILED
        self.response.error.code, self.response.error.message = code, message
        return [self._event(failed=events_pb2.ResponseFailedEvent(response=self._snapshot()))]

    def cancel(self) -> None:
        """Mark the response cancelled (a background run that was stopped); no event, as in OpenAI."""
        self._close_open_item(objects_pb2.ITEM_STATUS_INCOMPLETE)
        self.response.status = objects_pb2.RESPONSE_STATUS_CANCELLED

    def _close_open_item(self, status: int) -> None:
        for item in (self._message, self._reasoning, self._call, self._mcp_call):
            if item is not None and item.status == objects_pb2.ITEM_STATUS_IN_PROGRESS:
                item.status = status  # type: ignore[assignment]

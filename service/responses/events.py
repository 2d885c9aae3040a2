"""The Responses stream: a Response object and the events that build it, in OpenAI's order.

    created, in_progress,
    output_item.added (message), content_part.added (output_text),
    output_text.delta ..., output_text.done, content_part.done, output_item.done,
    completed | incomplete | failed

Every event carries the next ``sequence_number``; lifecycle events carry a
snapshot of the Response. The builder knows nothing of the engine or of
gRPC: it is fed text and a finish, and hands back events.
"""

from __future__ import annotations

import time
from typing import Any

from clients.v1 import common_pb2
from clients.v1 import response_events_pb2 as events_pb2
from clients.v1 import response_object_pb2 as objects_pb2
from service.api.common import new_id

Event = events_pb2.ResponseStreamEvent
Response = objects_pb2.Response


class ResponseEvents:
    """Builds one response's Response object and its stream events as text arrives."""

    def __init__(self, response: Response) -> None:
        self.response = response
        self._sequence = 0
        self._message: objects_pb2.OutputMessage | None = None
        self._text: objects_pb2.OutputText | None = None
        self._output_index = 0

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

    def text(self, delta: str) -> list[Event]:
        """Output text: opens the message item and its output_text part on first use."""
        events = [] if self._message is not None else self._open_message()
        if delta:
            assert self._text is not None and self._message is not None
            self._text.text += delta
            events.append(
                self._event(
                    output_text_delta=events_pb2.ResponseOutputTextDeltaEvent(
                        item_id=self._message.id, output_index=self._output_index, content_index=0, delta=delta
                    )
                )
            )
        return events

    def _open_message(self) -> list[Event]:
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
        return [added, part_added]

    def finish(self, *, truncated: bool, usage: objects_pb2.ResponseUsage) -> list[Event]:
        """Close the open item and end with ``response.completed``, or ``response.incomplete`` when truncated."""
        events = self.text("")  # a response always has its message item, even an empty one
        assert self._message is not None and self._text is not None
        item_status = objects_pb2.ITEM_STATUS_INCOMPLETE if truncated else objects_pb2.ITEM_STATUS_COMPLETED
        self._message.status = item_status
        where: dict[str, Any] = {"item_id": self._message.id, "output_index": self._output_index, "content_index": 0}
        events.append(
            self._event(output_text_done=events_pb2.ResponseOutputTextDoneEvent(text=self._text.text, **where))
        )
        events.append(
            self._event(
                content_part_done=events_pb2.ResponseContentPartDoneEvent(part=self._message.content[0], **where)
            )
        )
        events.append(
            self._event(
                output_item_done=events_pb2.ResponseOutputItemDoneEvent(
                    output_index=self._output_index, item=objects_pb2.OutputItem(message=self._message)
                )
            )
        )
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
        if self._message is not None and self._message.status == objects_pb2.ITEM_STATUS_IN_PROGRESS:
            self._message.status = status  # type: ignore[assignment]

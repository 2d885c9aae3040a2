"""Running a Prepared response: the engine's output becomes its events; the stored copy is written at the end.

One async generator (``generate``) produces a response's events from start to
end; a unary call keeps only the final Response, a streaming call forwards
every event, and a background run (background.py) logs them. An engine failure
still ends the stream properly, with ``response.failed``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator
from typing import Any

from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.service.api.chat_output import output_parser, reasoning_tokens
from ovserve.service.api.logprobs import token_logprobs
from ovserve.service.api.runs import RunStream
from ovserve.service.engine import FinishReason
from ovserve.service.errors import ServiceError
from ovserve.service.responses.events import Event, ResponseEvents
from ovserve.service.responses.preparation import Prepared, wants_logprobs
from ovserve.service.store.responses import ResponseStore, StoredResponse

log = logging.getLogger(__name__)


async def generate(
    prep: Prepared, events: ResponseEvents, store: ResponseStore, *, queued: bool = False
) -> AsyncGenerator[Event, None]:
    """The response's events from start to end (``queued``: its created event went out already)."""
    output_tokens, finish, started = 0, None, False
    logprobs = wants_logprobs(prep.request)
    top = prep.request.top_logprobs  # validated: 0-20
    parser = output_parser(prep.model, prep.run.prompt_ids, prep.request, raw=not prep.skip_special_tokens)
    runs: RunStream | None = None
    try:
        # Submitted before the first events go out, so the engine starts meanwhile.
        runs = RunStream(prep.model, [prep.run], skip_special_tokens=prep.skip_special_tokens)
        for event in events.start(announce_created=not queued):
            yield event
        started = True
        async for _, update in runs:
            for delta in update.sequences:
                output_tokens += len(delta.token_ids)
                finish = delta.finish_reason or finish
                if logprobs:
                    events.logprobs(
                        token_logprobs(prep.model, delta.token_ids, delta.logprobs, delta.top_logprobs, top)
                    )
                output = events.text(delta.text) if parser is None else events.apply(parser.feed(delta.text))
                for event in output:
                    yield event
        for event in events.apply(parser.finish()) if parser is not None else []:
            yield event
    except Exception as error:  # the stream still closes properly, and the stored copy says it failed
        if not started and not queued and isinstance(error, ServiceError) and error.retry_after is not None:
            # Nothing ran and nothing went out: the caller should retry (429 / 503; OpenAI's clients do
            # it on their own), not get a stored failure.
            raise
        if isinstance(error, ServiceError):  # the engine refused or failed: its message is for the caller
            log.error("response %s failed: %s", events.response.id, error)
            message = str(error)
        else:  # a bug of ours: logged with its traceback, never shown to the caller
            log.exception("response %s failed", events.response.id)
            message = "internal error"
        opening = [] if started else events.start(announce_created=not queued)
        for event in opening + events.fail("server_error", message):
            yield event
    else:
        usage = objects_pb2.ResponseUsage(
            input_tokens=len(prep.run.prompt_ids),
            output_tokens=output_tokens,
            total_tokens=len(prep.run.prompt_ids) + output_tokens,
        )
        reasoning = reasoning_tokens(prep.model, [parser])
        usage.output_tokens_details.reasoning_tokens = min(reasoning, output_tokens)
        if prep.conversation is not None:  # before the response says it ended: then its turn is there to read
            await prep.conversation.record(prep.items, events.response)
        for event in events.finish(truncated=finish == FinishReason.LENGTH, usage=usage):
            yield event
    finally:
        if runs is not None:
            runs.close()
    if prep.store:
        await store.put(stored_response(prep, events.response))


def stored_response(prep: Prepared, response: objects_pb2.Response) -> StoredResponse:
    """What the store keeps of a response: it, its request and input items, and the conversation it ends."""
    reply = "".join(
        part.output_text.text for item in response.output if item.HasField("message") for part in item.message.content
    )
    assistant: dict[str, Any] = {"role": "assistant", "content": reply}
    # Calls and reasoning stay in the conversation, so function_call_output items of the next turn have their call.
    calls = [item.function_call for item in response.output if item.HasField("function_call")]
    if calls:
        assistant["tool_calls"] = [
            {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": _arguments(c.arguments)}}
            for c in calls
        ]
    reasoning = "".join(
        part.text for item in response.output if item.HasField("reasoning") for part in item.reasoning.summary
    )
    if reasoning:
        assistant["reasoning_content"] = reasoning
    conversation = [*prep.history, assistant]
    return StoredResponse(
        response=copy_response(response),
        request=prep.request,
        input_items=prep.items,
        conversation=conversation,
        owner=prep.owner,
    )


def _arguments(text: str) -> Any:
    """A call's arguments as the chat template renders them: an object (the parser made them valid JSON)."""
    return json.loads(text or "{}")


def copy_response(response: objects_pb2.Response) -> objects_pb2.Response:
    """A snapshot of ``response`` (a running response goes on changing its own)."""
    copy = objects_pb2.Response()
    copy.CopyFrom(response)
    return copy

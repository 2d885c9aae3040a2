"""Running a Prepared response: the engine's output becomes its events; the stored copy is written at the end.

One async generator (``generate``) produces a response's events from start to
end; a unary call keeps only the final Response, a streaming call forwards
every event, and a background run (background.py) logs them. An engine failure
still ends the stream properly, with ``response.failed``.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncGenerator
from typing import Any

from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.service.api.chat_output import output_parser, reasoning_tokens
from ovserve.service.api.custom_tools import custom_names
from ovserve.service.api.logprobs import token_logprobs
from ovserve.service.api.runs import RunStream
from ovserve.service.engine import FinishReason
from ovserve.service.errors import ServiceError
from ovserve.service.responses import mcp_calls
from ovserve.service.responses.events import Event, ResponseEvents
from ovserve.service.responses.preparation import Prepared, wants_logprobs
from ovserve.service.store.responses import ResponseStore, StoredResponse

log = logging.getLogger(__name__)


async def generate(
    prep: Prepared, events: ResponseEvents, store: ResponseStore, *, queued: bool = False
) -> AsyncGenerator[Event, None]:
    """The response's events from start to end (``queued``: its created event went out already).

    With MCP tools, one round per turn of the model: the MCP calls it wrote are made (mcp_calls.py) and it
    writes its next turn with their results, until it answers (or the rounds run out)."""
    input_tokens, output_tokens, finish, started = 0, 0, None, False
    logprobs = wants_logprobs(prep.request)
    top = prep.request.top_logprobs  # validated: 0-20
    parsers: list[Any] = []
    runs: RunStream | None = None
    run = prep.run
    rounds: list[dict[str, Any]] = []  # the turns the server answered (MCP calls and results), after the history
    final_from = 0  # where the output of the model's last turn starts
    events.mcp = prep.mcp
    events.custom = custom_names(prep.request.tools)
    next_run = prep.next_run
    assert next_run is not None  # set by prepare
    try:
        # Submitted before the first events go out, so the engine starts meanwhile (unless approved MCP calls
        # come first: their results go in the prompt).
        if not prep.mcp.approvals:
            runs = RunStream(prep.model, [run], skip_special_tokens=prep.skip_special_tokens)
        for event in events.start(announce_created=not queued):
            yield event
        started = True
        for server in prep.mcp.servers:
            for event in events.mcp_listed(server) if server.listed_now else []:
                yield event
        if prep.mcp.approvals:
            async for event in mcp_calls.answer_approvals(events, prep.mcp.approvals, prep.mcp_policy):
                yield event
            rounds += mcp_calls.approval_messages(prep.mcp.approvals, events.response.output)
            run = await next_run(rounds)
            runs = RunStream(prep.model, [run], skip_special_tokens=prep.skip_special_tokens)
        for round_number in itertools.count(1):
            assert runs is not None
            parser = output_parser(prep.model, run.prompt_ids, prep.request, raw=not prep.skip_special_tokens)
            parsers.append(parser)
            input_tokens += len(run.prompt_ids)
            final_from = len(events.response.output)
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
            for event in events.close_mcp_item():
                yield event
            if not events.mcp_calls:
                break
            for event in events.end_round():
                yield event
            bound = prep.mcp_policy.max_mcp_rounds
            refused = f"not called: the response reached {bound} rounds of MCP calls (--max-mcp-rounds)"
            over = round_number > bound
            async for event in mcp_calls.call_pending(events, prep.mcp_policy, refused=refused if over else None):
                yield event
            turn = events.response.output[final_from:]
            if over or finish == FinishReason.LENGTH or not mcp_calls.continues(turn):
                break
            rounds += mcp_calls.round_messages(turn)
            runs.close()
            run = await next_run(rounds)
            runs = RunStream(prep.model, [run], skip_special_tokens=prep.skip_special_tokens)
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
            input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=input_tokens + output_tokens
        )
        reasoning = reasoning_tokens(prep.model, parsers)
        usage.output_tokens_details.reasoning_tokens = min(reasoning, output_tokens)
        if prep.conversation is not None:  # before the response says it ended: then its turn is there to read
            await prep.conversation.record(prep.items, events.response)
        for event in events.finish(truncated=finish == FinishReason.LENGTH, usage=usage):
            yield event
    finally:
        if runs is not None:
            runs.close()
    if prep.store:
        await store.put(stored_response(prep, events.response, rounds=rounds, final_from=final_from))


def stored_response(
    prep: Prepared, response: objects_pb2.Response, *, rounds: list[dict[str, Any]] | None = None, final_from: int = 0
) -> StoredResponse:
    """What the store keeps of a response: it, its request and input items, and the conversation it ends
    (``rounds``: the turns answered by MCP calls; ``final_from``: where the model's last turn starts in the output).

    Calls and reasoning stay in the conversation, so function_call_output items of the next turn have their call."""
    conversation = [*prep.history, *(rounds or []), *mcp_calls.round_messages(response.output[final_from:])]
    return StoredResponse(
        response=copy_response(response),
        request=prep.request,
        input_items=prep.items,
        conversation=conversation,
        owner=prep.owner,
    )


def copy_response(response: objects_pb2.Response) -> objects_pb2.Response:
    """A snapshot of ``response`` (a running response goes on changing its own)."""
    copy = objects_pb2.Response()
    copy.CopyFrom(response)
    return copy

"""ResponseService semantics: create, stream, run in the background, store, chain, resume, cancel.

One async generator (``_generate``) produces a response's events; a unary call
keeps only the final Response, a streaming call forwards every event, and a
background run writes them to an EventLog that callers, resumed streams and the
store all read. Stored: the request, this turn's input items and the resolved
conversation, so ``previous_response_id`` rebuilds the history in one read.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from clients.v1 import response_object_pb2 as objects_pb2
from clients.v1 import response_pb2
from service.api.chat import json_object, logprob_violations, render_prompt
from service.api.chat_output import output_parser, reasoning_tokens
from service.api.common import new_id, now, streaming_violations
from service.api.generation import Budget, build_generation_config, generation_violations
from service.api.runs import Run, RunStream
from service.api.structured import structured_output_config
from service.engine import FinishReason
from service.errors import FieldViolation, InvalidArgument, NotFound, ServiceError, quote
from service.models import ModelRegistry, ServedModel
from service.responses.conversation import input_turn
from service.responses.events import Event, ResponseEvents
from service.responses.store import ResponseStore, StoredResponse

log = logging.getLogger(__name__)

Request = response_pb2.CreateResponseRequest | response_pb2.StreamResponseRequest
TRUNCATIONS = {"disabled", "auto"}
REASONING_EFFORTS = {"none", "minimal", "low", "medium", "high"}
REASONING_SUMMARIES = {"auto", "concise", "detailed"}
TOOL_CHOICES = {"none", "auto", "required"}  # text.format, "required" and named: service.api.structured
INCLUDABLE = {"message.output_text.logprobs", "reasoning.encrypted_content", "message.input_image.image_url"}
PROGRESS_SECONDS = 0.5  # how often a background run's stored Response catches up with its text
# Response fields that echo the request field of the same name (the contract keeps them alike).
ECHOED = [
    f.name
    for f in objects_pb2.Response.DESCRIPTOR.fields
    if f.name in response_pb2.CreateResponseRequest.DESCRIPTOR.fields_by_name and f.name != "model"
]


@dataclass
class Prepared:
    """A validated Responses request, rendered and ready for the engine."""

    model: ServedModel
    run: Run
    skip_special_tokens: bool
    response: objects_pb2.Response  # the Response as it starts (echoed fields set)
    request: response_pb2.CreateResponseRequest
    items: list[objects_pb2.InputItem]
    history: list[dict[str, Any]]  # the conversation before this response's output, without instructions
    store: bool
    background: bool


@dataclass
class EventLog:
    """Every event of a background run, for whoever follows it (now or resuming later)."""

    events: list[Event] = field(default_factory=list)
    done: bool = False
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def extend(self, events: list[Event], *, done: bool = False) -> None:
        """Publish events (and, with done, the end of the run)."""
        async with self._changed:
            self.events += events
            self.done = self.done or done
            self._changed.notify_all()

    def _ready_after(self, index: int) -> Callable[[], bool]:
        return lambda: len(self.events) > index or self.done

    async def follow(self, after: int = -1) -> AsyncIterator[Event]:
        """Events with sequence_number > after, as they come, until the run ends."""
        index = after + 1  # sequence numbers are list positions
        while True:
            async with self._changed:
                await self._changed.wait_for(self._ready_after(index))
                fresh, finished = self.events[index:], self.done
            for event in fresh:
                yield event
            index += len(fresh)
            if finished and index >= len(self.events):
                return


@dataclass
class BackgroundRun:
    """A response running in this process after its caller got ``queued``."""

    events: ResponseEvents
    log: EventLog
    task: asyncio.Task[None] | None = None


class ResponsesApi:
    """The Responses API over the served models and a response store."""

    def __init__(self, models: ModelRegistry, store: ResponseStore) -> None:
        self._models = models
        self._store = store
        self._background: dict[str, BackgroundRun] = {}

    async def recover(self) -> int:
        """After a restart: responses left queued or in progress can never finish; mark them failed."""
        failed = 0
        for response_id in await self._store.unfinished():
            stored = await self._store.get(response_id)
            if stored is None:
                continue
            stored.response.status = objects_pb2.RESPONSE_STATUS_FAILED
            stored.response.error.code = "server_restarted"
            stored.response.error.message = "the server restarted before this response finished"
            await self._store.update_response(stored.response)
            failed += 1
        return failed

    async def close(self) -> None:
        """Cancel background runs (they are marked cancelled in the store)."""
        for run in list(self._background.values()):
            if run.task is not None:
                run.task.cancel()
        await asyncio.gather(*(r.task for r in self._background.values() if r.task), return_exceptions=True)

    # ---- create ----

    async def create(self, request: response_pb2.CreateResponseRequest) -> objects_pb2.Response:
        """ResponseService.CreateResponse: run to the end, or return ``queued`` for a background response."""
        prep = await self._prepare(request, streaming=False)
        if prep.background:
            run = await self._start_background(prep)
            return _copy(run.events.response)
        events = ResponseEvents(prep.response)
        async for _ in self._generate(prep, events):
            pass
        return events.response

    async def stream(self, request: response_pb2.StreamResponseRequest) -> AsyncIterator[Event]:
        """ResponseService.StreamResponse: every event as it happens; a background run goes on if the caller leaves."""
        prep = await self._prepare(request, streaming=True)
        if prep.background:
            run = await self._start_background(prep)
            async for event in run.log.follow():
                yield event
            return
        # aclosing: a caller that leaves closes the generation now, not when it is garbage-collected.
        async with contextlib.aclosing(self._generate(prep, ResponseEvents(prep.response))) as events:
            async for event in events:
                yield event

    # ---- stored responses ----

    async def get(self, response_id: str) -> objects_pb2.Response:
        """The response as it stands (a running background response shows its progress)."""
        running = self._background.get(response_id)
        if running is not None:
            return _copy(running.events.response)
        return (await self._stored(response_id)).response

    async def resume(self, response_id: str, starting_after: int | None) -> AsyncIterator[Event]:
        """The events of a background response after ``starting_after``, then live ones until it ends."""
        after = -1 if starting_after is None else starting_after
        running = self._background.get(response_id)
        if running is not None:
            async for event in running.log.follow(after):
                yield event
            return
        stored = await self._stored(response_id)
        if not stored.response.background:
            raise InvalidArgument.of("response_id", "only background responses can be streamed again")
        for event in await self._store.events_after(response_id, after):
            yield event

    async def delete(self, response_id: str) -> response_pb2.DeleteResponseResponse:
        """Forget a stored response (a running one is cancelled first)."""
        running = self._background.get(response_id)
        if running is not None and running.task is not None:
            running.task.cancel()
            await asyncio.gather(running.task, return_exceptions=True)
        if not await self._store.delete(response_id):
            raise NotFound(f"no response {quote(response_id)}", param="response_id")
        return response_pb2.DeleteResponseResponse(id=response_id, object="response.deleted", deleted=True)

    async def cancel(self, response_id: str) -> objects_pb2.Response:
        """Stop a background response; it ends ``cancelled`` (a finished one is returned as it is)."""
        running = self._background.get(response_id)
        if running is not None and running.task is not None:
            running.task.cancel()
            await asyncio.gather(running.task, return_exceptions=True)
            return _copy(running.events.response)
        stored = await self._stored(response_id)
        if not stored.response.background:
            raise InvalidArgument.of("response_id", "only background responses can be cancelled")
        return stored.response

    async def input_items(
        self, request: response_pb2.ListResponseInputItemsRequest
    ) -> response_pb2.ListResponseInputItemsResponse:
        """The input items of a stored response, a page at a time."""
        limit = request.limit if request.HasField("limit") else 20
        order = request.order if request.HasField("order") else "desc"
        violations = []
        if not 1 <= limit <= 100:
            violations.append(FieldViolation("limit", f"must be between 1 and 100; got {limit}"))
        if order not in ("asc", "desc"):
            violations.append(FieldViolation("order", f"must be asc or desc; got {quote(order)}"))
        InvalidArgument.check(violations)
        after = request.after if request.HasField("after") else None
        try:
            page = await self._store.input_items(request.response_id, after=after, limit=limit, order=order)
        except KeyError:
            raise InvalidArgument.of("after", f"no input item {quote(after)} in this response") from None
        if page is None:
            raise NotFound(f"no response {quote(request.response_id)}", param="response_id")
        items, has_more = page
        return response_pb2.ListResponseInputItemsResponse(
            object="list",
            data=items,
            first_id=items[0].id if items else "",
            last_id=items[-1].id if items else "",
            has_more=has_more,
        )

    async def _stored(self, response_id: str) -> StoredResponse:
        stored = await self._store.get(response_id) if response_id else None
        if stored is None:
            raise NotFound(f"no response {quote(response_id)}", param="response_id")
        return stored

    # ---- preparing and running ----

    async def _prepare(self, request: Request, *, streaming: bool) -> Prepared:
        violations = streaming_violations(request, streaming=streaming, rpc="StreamResponse")
        model = self._models.get(request.model)
        turn = input_turn(request, text_only_model=model.name, violations=violations)
        violations += _option_violations(request)
        tools = [_tool(tool, f"tools[{i}]", violations) for i, tool in enumerate(request.tools)]
        context = _template_context(request, violations)
        output = model.output_format
        structured = structured_output_config(
            request, violations, tools=tools, thinking=bool(context.get("enable_thinking")),
            markup=output.call_markup, think=output.think_markup,
            named_field="tool_choice", parameters_field="tools[{}].parameters",
        )  # fmt: skip
        violations += logprob_violations(request)
        store = not request.HasField("store") or request.store
        background = request.HasField("background") and request.background
        if background and not store:
            violations.append(FieldViolation("background", "a background response must be stored (store: true)"))
        previous: list[dict[str, Any]] = []
        if request.HasField("previous_response_id"):
            stored = await self._store.get(request.previous_response_id)
            if stored is None:
                message = f"no stored response {quote(request.previous_response_id)}"
                raise NotFound(message, param="previous_response_id")
            previous = stored.conversation
        if violations:  # report the sampling fields' problems too, in the same error
            violations += generation_violations(request, limits=model.limits, streaming=streaming)
        InvalidArgument.check(violations)

        instructions = [{"role": "system", "content": request.instructions}] if request.instructions else []
        history = previous + turn.messages
        limit = request.max_output_tokens if request.HasField("max_output_tokens") else None
        history, prompt_ids = _fit(model, instructions, history, tools, context, request, limit)
        config = build_generation_config(
            request,
            defaults=model.defaults,
            limits=model.limits,
            budget=Budget("max_output_tokens", limit, len(prompt_ids), "input"),
            streaming=streaming,
            logprobs=1 if request.logprobs else 0,
            structured=structured,
        )
        canonical = response_pb2.CreateResponseRequest()
        canonical.ParseFromString(request.SerializeToString())  # the twins are wire-identical
        return Prepared(
            model=model,
            run=Run(prompt_ids, config, first_choice=0),
            skip_special_tokens=not request.HasField("skip_special_tokens") or request.skip_special_tokens,
            response=_new_response(canonical, model.name, store, background),
            request=canonical,
            items=turn.items,
            history=history,
            store=store,
            background=background,
        )

    async def _generate(
        self, prep: Prepared, events: ResponseEvents, *, queued: bool = False
    ) -> AsyncGenerator[Event, None]:
        """The response's events from start to end; the stored copy is written at the end."""
        output_tokens, finish, started = 0, None, False
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
                    output = events.text(delta.text) if parser is None else events.apply(parser.feed(delta.text))
                    for event in output:
                        yield event
            for event in events.apply(parser.finish()) if parser is not None else []:
                yield event
        except (ServiceError, RuntimeError) as error:  # the engine failed: the stream still closes properly
            log.error("response %s failed: %s", events.response.id, error)
            opening = [] if started else events.start(announce_created=not queued)
            for event in opening + events.fail("server_error", str(error)):
                yield event
        else:
            usage = objects_pb2.ResponseUsage(
                input_tokens=len(prep.run.prompt_ids),
                output_tokens=output_tokens,
                total_tokens=len(prep.run.prompt_ids) + output_tokens,
            )
            reasoning = reasoning_tokens(prep.model, [parser])
            usage.output_tokens_details.reasoning_tokens = min(reasoning, output_tokens)
            for event in events.finish(truncated=finish == FinishReason.LENGTH, usage=usage):
                yield event
        finally:
            if runs is not None:
                runs.close()
        if prep.store:
            await self._store.put(_stored(prep, events.response))

    async def _start_background(self, prep: Prepared) -> BackgroundRun:
        events = ResponseEvents(prep.response)
        run = BackgroundRun(events, EventLog())
        await run.log.extend(events.queued())
        await self._store.put(_stored(prep, events.response))
        await self._store.append_events(prep.response.id, run.log.events)
        self._background[prep.response.id] = run
        run.task = asyncio.create_task(self._run_in_background(prep, run), name=f"response-{prep.response.id}")
        return run

    async def _run_in_background(self, prep: Prepared, run: BackgroundRun) -> None:
        response_id = prep.response.id
        last_saved = time.monotonic()
        try:
            async for event in self._generate(prep, run.events, queued=True):
                await run.log.extend([event])
                await self._store.append_events(response_id, [event])
                if time.monotonic() - last_saved > PROGRESS_SECONDS:  # GET shows the text so far
                    await self._store.update_response(_copy(run.events.response))
                    last_saved = time.monotonic()
        except asyncio.CancelledError:
            run.events.cancel()
            with contextlib.suppress(Exception):
                await self._store.update_response(_copy(run.events.response))
        finally:
            await run.log.extend([], done=True)
            del self._background[response_id]


def _option_violations(request: Request) -> list[FieldViolation]:
    """The Responses-only options: truncation, text.format, reasoning, tool_choice, include, n."""
    violations = []
    checks: list[tuple[bool, str, str, set[str]]] = [
        (request.HasField("truncation"), "truncation", request.truncation, TRUNCATIONS),
        (request.reasoning.HasField("effort"), "reasoning.effort", request.reasoning.effort, REASONING_EFFORTS),
        (request.reasoning.HasField("summary"), "reasoning.summary", request.reasoning.summary, REASONING_SUMMARIES),
        (request.HasField("tool_choice"), "tool_choice", request.tool_choice, TOOL_CHOICES),
    ]
    for present, name, value, allowed in checks:
        if present and value not in allowed:
            violations.append(FieldViolation(name, f"{quote(value)} is not supported; use one of {sorted(allowed)}"))
    for index, value in enumerate(request.include):
        if value not in INCLUDABLE:
            violations.append(FieldViolation(f"include[{index}]", f"unknown value {quote(value)}"))
    if request.HasField("n") and request.n != 1:
        violations.append(FieldViolation("n", "a response has one output; use chat completions for several choices"))
    return violations


def _tool(tool: objects_pb2.ResponseTool, where: str, violations: list[FieldViolation]) -> dict[str, Any]:
    """A flat Responses function tool as the chat template wants it."""
    if tool.type != "function":
        violations.append(FieldViolation(f"{where}.type", f"unknown tool type {quote(tool.type)}; expected function"))
    name = tool.name or tool.function.name
    if not name:
        violations.append(FieldViolation(f"{where}.name", "required"))
    flat = json_object(tool, where, violations)
    function = flat.get("function") or {k: flat[k] for k in ("name", "description", "parameters") if k in flat}
    return {"type": "function", "function": function}


def _template_context(request: Request, violations: list[FieldViolation]) -> dict[str, Any]:
    context = (
        json_object(request.chat_template_kwargs, "chat_template_kwargs", violations)
        if request.HasField("chat_template_kwargs")
        else {}
    )
    if request.reasoning.HasField("effort"):  # an explicit chat_template_kwargs.enable_thinking wins
        context.setdefault("enable_thinking", request.reasoning.effort != "none")
    return context


def _fit(
    model: ServedModel,
    instructions: list[dict[str, Any]],
    history: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    context: dict[str, Any],
    request: Request,
    max_output_tokens: int | None,
) -> tuple[list[dict[str, Any]], list[int]]:
    """Render the conversation; with truncation "auto", drop the oldest turns until it fits beside the output."""
    room = max_output_tokens or 1
    while True:
        prompt_ids = render_prompt(model, instructions + history, tools, context, field="input")
        fits = len(prompt_ids) + room <= model.limits.max_model_len
        if fits or request.truncation != "auto" or len(history) <= 1:
            return history, prompt_ids
        history = _without_oldest_turn(history)


def _without_oldest_turn(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """History less its first message and what answers it (tool results must not lose their call)."""
    rest = history[1:]
    while len(rest) > 1 and rest[0]["role"] in ("tool", "assistant"):
        rest = rest[1:]
    return rest


def _new_response(
    request: response_pb2.CreateResponseRequest, model: str, store: bool, background: bool
) -> objects_pb2.Response:
    response = objects_pb2.Response(
        id=new_id("resp_"), object="response", created_at=now(), model=model,
        status=objects_pb2.RESPONSE_STATUS_IN_PROGRESS,
    )  # fmt: skip
    for name in ECHOED:
        source, target = getattr(request, name), getattr(response, name)
        descriptor = request.DESCRIPTOR.fields_by_name[name]
        if descriptor.message_type is not None and descriptor.message_type.GetOptions().map_entry:
            target.update(source)
        elif descriptor.is_repeated:
            target.extend(source)
        elif descriptor.message_type is not None:
            if request.HasField(name):
                target.CopyFrom(source)
        elif not descriptor.has_presence or request.HasField(name):
            setattr(response, name, source)
    # Echo the values in force, not only those sent (as OpenAI does).
    response.store, response.background = store, background
    for name, default in (("temperature", 1.0), ("top_p", 1.0), ("truncation", "disabled")):
        if not request.HasField(name):
            setattr(response, name, default)
    response.parallel_tool_calls = not request.HasField("parallel_tool_calls") or request.parallel_tool_calls
    return response


def _stored(prep: Prepared, response: objects_pb2.Response) -> StoredResponse:
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
        response=_copy(response), request=prep.request, input_items=prep.items, conversation=conversation
    )


def _arguments(text: str) -> Any:
    """A call's arguments as the chat template renders them: an object (the parser made them valid JSON)."""
    return json.loads(text or "{}")


def _copy(response: objects_pb2.Response) -> objects_pb2.Response:
    copy = objects_pb2.Response()
    copy.CopyFrom(response)
    return copy

"""ResponseService semantics: create, stream, run in the background, store, chain, resume, cancel.

``ResponsesApi`` is the facade the servicer calls. A request is prepared
(preparation.py: validated, its history resolved, rendered to fit), then run
(running.py: the engine's output becomes the response's events): a unary call
keeps only the final Response, a streaming call forwards every event, and a
background run (background.py) logs them for callers, resumed streams and the
store. Stored: the request, this turn's input items and the resolved
conversation, so ``previous_response_id`` rebuilds the history in one read.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable

from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.clients.v1 import response_pb2
from ovserve.service.errors import FieldViolation, Internal, InvalidArgument, NotFound, quote
from ovserve.service.ids import new_id
from ovserve.service.limits import ConcurrencyLimit
from ovserve.service.mcp.policy import McpPolicy
from ovserve.service.models import ModelRegistry
from ovserve.service.responses import compaction
from ovserve.service.responses.background import BackgroundRuns
from ovserve.service.responses.conversations import ConversationsApi
from ovserve.service.responses.events import Event, ResponseEvents
from ovserve.service.responses.preparation import prepare
from ovserve.service.responses.running import copy_response, generate
from ovserve.service.store.responses import ResponseStore, StoredResponse
from ovserve.service.store.tenancy import tenant


class ResponsesApi:
    """The Responses API over the served models and a response store."""

    def __init__(
        self,
        models: ModelRegistry,
        store: ResponseStore,
        limit: ConcurrencyLimit | None = None,
        conversations: ConversationsApi | None = None,
        mcp: McpPolicy | None = None,
    ) -> None:
        """``limit``: the server's concurrency bound, which background responses count against;
        ``conversations``: where a request's ``conversation`` is read and extended (None: refused);
        ``mcp``: which MCP servers requests' mcp tools may reach, and the bounds of their calls."""
        self._mcp = mcp or McpPolicy()
        self._models = models
        self._store = store
        self._conversations = conversations
        self._background = BackgroundRuns(store, limit)

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

    def background_using(self, names: Iterable[str]) -> int:
        """Background responses going (queued or generating) on one of the models ``names``."""
        return self._background.using(names)

    async def close(self) -> None:
        """Cancel background runs (they are marked cancelled in the store)."""
        await self._background.close()

    # ---- create ----

    async def create(self, request: response_pb2.CreateResponseRequest) -> objects_pb2.Response:
        """ResponseService.CreateResponse: run to the end, or return ``queued`` for a background response."""
        prep = await prepare(
            self._models, self._store, request, streaming=False, conversations=self._conversations, mcp_policy=self._mcp
        )
        if prep.background:
            run = await self._background.start(prep)
            return copy_response(run.events.response)
        events = ResponseEvents(prep.response)
        async for _ in generate(prep, events, self._store):
            pass
        return events.response

    async def stream(self, request: response_pb2.StreamResponseRequest) -> AsyncIterator[Event]:
        """ResponseService.StreamResponse: every event as it happens; a background run goes on if the caller leaves."""
        prep = await prepare(
            self._models, self._store, request, streaming=True, conversations=self._conversations, mcp_policy=self._mcp
        )
        if prep.background:
            run = await self._background.start(prep)
            async for event in run.log.follow():
                yield event
            return
        # aclosing: a caller that leaves closes the generation now, not when it is garbage-collected.
        async with contextlib.aclosing(generate(prep, ResponseEvents(prep.response), self._store)) as events:
            async for event in events:
                yield event

    # ---- without generating a response ----

    async def count_input_tokens(
        self, request: response_pb2.CountResponseInputTokensRequest
    ) -> response_pb2.CountResponseInputTokensResponse:
        """ResponseService.CountResponseInputTokens: the request prepared as CreateResponse would, not run."""
        prep = await prepare(
            self._models,
            self._store,
            request.request,
            streaming=False,
            conversations=self._conversations,
            mcp_policy=self._mcp,
        )
        tokens = len(prep.run.prompt_ids)
        return response_pb2.CountResponseInputTokensResponse(object="response.input_tokens", input_tokens=tokens)

    async def compact(self, request: response_pb2.CompactResponseRequest) -> response_pb2.CompactResponseResponse:
        """ResponseService.CompactResponse: the model's summary of the conversation as a compaction item."""
        prep = await prepare(self._models, self._store, compaction.summarising_request(request), streaming=False)
        events = ResponseEvents(prep.response)
        async for _ in generate(prep, events, self._store):
            pass
        summarised = events.response
        if summarised.status == objects_pb2.RESPONSE_STATUS_FAILED:
            raise Internal(f"the summary could not be written: {summarised.error.message}")
        compacted = response_pb2.CompactResponseResponse(
            id=summarised.id, object="response.compaction", created_at=summarised.created_at, usage=summarised.usage
        )
        for text in compaction.kept_user_messages(prep.history):
            compacted.output.add(type="message", id=new_id("msg_"), role="user", content=text)
        summary = compaction.encode(compaction.summary_of(summarised))
        compacted.output.add(type="compaction", id=new_id("cmp_"), encrypted_content=summary)
        return compacted

    # ---- stored responses ----

    async def get(self, response_id: str) -> objects_pb2.Response:
        """The response as it stands (a running background response shows its progress)."""
        await self._stored(response_id)  # the caller's own (another tenant's is not found)
        running = self._background.get(response_id)
        if running is not None:
            return copy_response(running.events.response)
        # Read again: a run that ended since the first read has written its final state.
        return (await self._stored(response_id)).response

    async def resume(self, response_id: str, starting_after: int | None) -> AsyncIterator[Event]:
        """The events of a background response after ``starting_after``, then live ones until it ends."""
        after = -1 if starting_after is None else starting_after
        stored = await self._stored(response_id)
        running = self._background.get(response_id)
        if running is not None:
            async for event in running.log.follow(after):
                yield event
            return
        if not stored.response.background:
            raise InvalidArgument.of("response_id", "only background responses can be streamed again")
        for event in await self._store.events_after(response_id, after):
            yield event

    async def delete(self, response_id: str) -> response_pb2.DeleteResponseResponse:
        """Forget a stored response (a running one is cancelled first)."""
        await self._stored(response_id)  # another tenant's response is not there to delete
        await self._background.stop(response_id)
        if not await self._store.delete(response_id, owner=tenant.get()):
            raise NotFound(f"no response {quote(response_id)}", param="response_id")
        return response_pb2.DeleteResponseResponse(id=response_id, object="response.deleted", deleted=True)

    async def cancel(self, response_id: str) -> objects_pb2.Response:
        """Stop a background response; it ends ``cancelled`` (a finished one is returned as it is)."""
        stored = await self._stored(response_id)
        stopped = await self._background.stop(response_id)
        if stopped is not None:
            return copy_response(stopped.events.response)
        if not stored.response.background:
            raise InvalidArgument.of("response_id", "only background responses can be cancelled")
        return (await self._stored(response_id)).response  # read again: it may have ended meanwhile

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
            page = await self._store.input_items(
                request.response_id, after=after, limit=limit, order=order, owner=tenant.get()
            )
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
        stored = await self._store.get(response_id, owner=tenant.get()) if response_id else None
        if stored is None:
            raise NotFound(f"no response {quote(response_id)}", param="response_id")
        return stored

"""MCP tools in the Responses API over a scripted engine and a real MCP server (the ``mcp`` SDK's streamable HTTP
server on loopback, tests/mcp_tool_server.py): listing, the call loop, approvals, the host policy and the bounds.

The scripted engine writes the model's turns (tests/fakes.py), so the loop's logic is tested whatever a real
model would choose; tests/rest_bridge/test_mcp_tools.py runs the real pipeline end to end.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from ovserve.clients.v1 import conversation_pb2, response_pb2
from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.service.errors import InvalidArgument
from ovserve.service.mcp.policy import McpPolicy
from ovserve.service.models import ModelRegistry
from ovserve.service.responses.api import ResponsesApi
from ovserve.service.responses.conversations import ConversationsApi
from ovserve.service.responses.events import Event
from ovserve.service.store.conversations import ConversationStore
from ovserve.service.store.responses import ResponseStore
from tests.fakes import FakeEngine, fake_model, text
from tests.mcp_tool_server import SECRET, ToolServer, connections, silent_listener, tool_server
from tests.rpc import parse

LOOPBACK = McpPolicy(allowed_mcp_hosts=("127.0.0.1",), allow_private_mcp_hosts=True)


def call(name: str, **arguments: Any) -> str:
    """The scripted model's call of ``name`` (the fake model's Hermes-style markup)."""
    return f'<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(arguments)}}}\n</tool_call>'


def mcp_tool(url: str, **fields: Any) -> dict[str, Any]:
    return {"type": "mcp", "server_label": "tools", "server_url": url, "require_approval": "never", **fields}


@pytest.fixture(scope="module")
def tools() -> Iterator[ToolServer]:
    with tool_server() as served:
        yield served


class Session:
    """A ResponsesApi over a scripted engine, with one MCP policy."""

    def __init__(self, policy: McpPolicy = LOOPBACK) -> None:
        self.engine = FakeEngine()
        self.store = ResponseStore()
        self.api = ResponsesApi(ModelRegistry([fake_model(self.engine)]), self.store, mcp=policy)

    def prompt(self, generation: int) -> str:
        """The prompt of the engine's ``generation``-th run, as text."""
        return self.engine.decode(self.engine.generations[generation].prompt_ids)

    async def create(self, **fields: Any) -> objects_pb2.Response:
        default = {} if "input_items" in fields else {"input": "Hi"}
        return await self.api.create(parse(response_pb2.CreateResponseRequest, {"model": "fake", **default, **fields}))

    async def stream(self, **fields: Any) -> list[Event]:
        request = parse(response_pb2.StreamResponseRequest, {"model": "fake", "input": "Hi", **fields})
        return [event async for event in self.api.stream(request)]


def run(body: Any) -> Any:
    return asyncio.run(body)


def kinds(response: objects_pb2.Response) -> list[str]:
    return [str(item.WhichOneof("item")) for item in response.output]


def test_a_unary_response_lists_the_tools_calls_one_and_answers_with_its_result(tools: ToolServer) -> None:
    session = Session()
    session.engine.script(text(call("add", a=2, b=3)), text("The sum is 5."))
    response = run(session.create(tools=[mcp_tool(tools.url)]))
    assert response.status == objects_pb2.RESPONSE_STATUS_COMPLETED
    assert kinds(response) == ["mcp_list_tools", "mcp_call", "message"]
    listed = response.output[0].mcp_list_tools
    assert listed.server_label == "tools" and {"add", SECRET.replace("pineapple", "secret_word")} <= {
        tool.name for tool in listed.tools
    }
    made = response.output[1].mcp_call
    assert (made.name, json.loads(made.arguments), made.output) == ("add", {"a": 2, "b": 3}, "5")
    assert made.status == objects_pb2.ITEM_STATUS_COMPLETED and not made.HasField("error")
    assert response.output[2].message.content[0].output_text.text == "The sum is 5."
    assert len(session.engine.generations) == 2
    assert "'name': 'add'" in session.prompt(0)  # the server's tools are in the prompt as functions
    assert "<|im_start|>tool\n5<|im_end|>" in session.prompt(1)  # the second turn reads the result
    assert response.usage.input_tokens == len(session.engine.generations[0].prompt_ids) + len(
        session.engine.generations[1].prompt_ids
    )


def test_a_streamed_response_has_the_mcp_events_in_openai_order(tools: ToolServer) -> None:
    session = Session()
    session.engine.script(text(call("add", a=1, b=1)), text("Two."))
    events = run(session.stream(tools=[mcp_tool(tools.url)]))
    names = [str(event.WhichOneof("event")) for event in events]
    assert [event.sequence_number for event in events] == list(range(len(events)))
    call_events = [name for name in names if name.startswith("mcp_call")]
    assert names[:6] == ["created", "in_progress", "output_item_added", "mcp_list_tools_in_progress",
                         "mcp_list_tools_completed", "output_item_done"]  # fmt: skip
    assert names[6:8] == ["output_item_added", "mcp_call_in_progress"]
    assert call_events[0] == "mcp_call_in_progress" and call_events[-2:] == [
        "mcp_call_arguments_done",
        "mcp_call_completed",
    ]
    assert set(call_events[1:-2]) == {"mcp_call_arguments_delta"}
    completed = names.index("mcp_call_completed")
    assert (
        names[completed + 1] == "output_item_done"
        and events[completed + 1].output_item_done.item.mcp_call.output == "2"
    )
    assert names[completed + 2] == "output_item_added"  # the answer's message
    assert names[-1] == "completed"
    final = events[-1].completed.response
    assert kinds(final) == ["mcp_list_tools", "mcp_call", "message"]
    streamed = "".join(e.mcp_call_arguments_delta.delta for e in events if e.HasField("mcp_call_arguments_delta"))
    assert json.loads(streamed) == {"a": 1, "b": 1} == json.loads(final.output[1].mcp_call.arguments)


def test_an_approval_ends_the_response_and_a_later_turn_approves_the_call(tools: ToolServer) -> None:
    session = Session()
    session.engine.script(text(call("secret_word")), text("It is pineapple."))
    tool = mcp_tool(tools.url, require_approval="always")

    async def body() -> tuple[objects_pb2.Response, objects_pb2.Response]:
        asked = await session.create(tools=[tool])
        approval = {"type": "mcp_approval_response", "approval_request_id": asked.output[1].mcp_approval_request.id,
                    "approve": True}  # fmt: skip
        answered = await session.create(input_items=[approval], previous_response_id=asked.id, tools=[tool])
        return asked, answered

    asked, answered = run(body())
    assert kinds(asked) == ["mcp_list_tools", "mcp_approval_request"]
    assert asked.output[1].mcp_approval_request.name == "secret_word"
    assert kinds(answered) == ["mcp_call", "message"]  # the listing is reused from the previous response
    made = answered.output[0].mcp_call
    assert made.output == SECRET and made.approval_request_id == asked.output[1].mcp_approval_request.id
    assert len(session.engine.generations) == 2
    assert f"<|im_start|>tool\n{SECRET}<|im_end|>" in session.prompt(1)


def test_a_denied_call_is_not_made_and_the_model_is_told(tools: ToolServer) -> None:
    session = Session()
    session.engine.script(text(call("secret_word")), text("Fine."))
    tool = mcp_tool(tools.url, require_approval_filter={"always": {"tool_names": ["secret_word"]}})
    del tool["require_approval"]

    async def body() -> objects_pb2.Response:
        asked = await session.create(tools=[tool])
        request_id = asked.output[1].mcp_approval_request.id
        denial = {"type": "mcp_approval_response", "approval_request_id": request_id, "approve": False,
                  "reason": "not now"}  # fmt: skip
        before = tools.requests
        answered = await session.create(input_items=[denial], previous_response_id=asked.id, tools=[tool])
        assert tools.requests == before  # nothing called, the listing reused
        return answered

    answered = run(body())
    assert kinds(answered) == ["message"]
    assert "did not approve this call. not now" in session.prompt(1)


def test_an_approval_of_an_unknown_request_is_refused_naming_the_field(tools: ToolServer) -> None:
    session = Session()
    session.engine.script(text("Hello."))
    first = run(session.create(tools=[mcp_tool(tools.url)]))
    approval = {"type": "mcp_approval_response", "approval_request_id": "mcpr_nope", "approve": True}
    with pytest.raises(InvalidArgument) as refused:
        run(session.create(input_items=[approval], previous_response_id=first.id, tools=[mcp_tool(tools.url)]))
    assert refused.value.param == "input_items[0].approval_request_id"


@pytest.mark.parametrize(
    ("policy", "refusal"),
    [
        (McpPolicy(), "--allowed-mcp-host"),
        (McpPolicy(allowed_mcp_hosts=("127.0.0.1",)), "--allow-private-mcp-hosts"),
        (McpPolicy(allowed_mcp_hosts=("example.org",), allow_private_mcp_hosts=True), "--allowed-mcp-host"),
    ],
)
def test_a_disallowed_host_is_refused_with_no_connection_made(policy: McpPolicy, refusal: str) -> None:
    session = Session(policy)
    with silent_listener() as (url, listener):
        with pytest.raises(InvalidArgument) as refused:
            run(session.create(tools=[mcp_tool(url)]))
        assert connections(listener) == 0
    assert refused.value.param == "tools[0].server_url"
    assert refusal in str(refused.value)
    assert not session.engine.generations


def test_the_listener_counts_a_connection_when_one_is_made() -> None:
    """The check above could fail: an allowed host does connect (and the silent listener sees it)."""
    session = Session(
        McpPolicy(allowed_mcp_hosts=("127.0.0.1",), allow_private_mcp_hosts=True, mcp_timeout_seconds=0.5)
    )
    with silent_listener() as (url, listener):
        with pytest.raises(InvalidArgument) as refused:
            run(session.create(tools=[mcp_tool(url)]))
        assert connections(listener) >= 1
    assert "--mcp-timeout-seconds" in str(refused.value)


def test_a_server_configured_at_start_is_named_by_its_label(tools: ToolServer) -> None:
    session = Session(McpPolicy(mcp_servers=(f"tools={tools.url}",)))  # no host allowed: the operator chose it
    session.engine.script(text(call("add", a=20, b=22)), text("42."))
    tool = {"type": "mcp", "server_label": "tools", "require_approval": "never", "headers": {"x-token": "secret"},
            "authorization": "token-1"}  # fmt: skip
    response = run(session.create(tools=[tool]))
    assert response.output[1].mcp_call.output == "42"
    assert (tools.headers.get("x-token"), tools.headers.get("authorization")) == ("secret", "Bearer token-1")
    stored = run(session.store.get(response.id))
    for kept in (response.tools[0], stored.request.tools[0], stored.response.tools[0]):  # credentials not kept
        assert not kept.headers and not kept.HasField("authorization")


def test_an_unknown_label_without_url_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidArgument) as refused:
        run(Session().create(tools=[{"type": "mcp", "server_label": "nowhere"}]))
    assert refused.value.param == "tools[0].server_url"


def test_allowed_tools_narrows_the_listing(tools: ToolServer) -> None:
    session = Session()
    session.engine.script(text("No."), text("No."))
    named = run(session.create(tools=[mcp_tool(tools.url, allowed_tools=["add"])]))
    assert [tool.name for tool in named.output[0].mcp_list_tools.tools] == ["add"]
    read_only = run(session.create(tools=[mcp_tool(tools.url, allowed_tools_filter={"read_only": True})]))
    assert [tool.name for tool in read_only.output[0].mcp_list_tools.tools] == ["look"]
    assert "'name': 'big'" not in session.prompt(1)


@pytest.mark.parametrize(
    ("policy", "tool", "arguments", "error"),
    [
        (McpPolicy(**{**LOOPBACK.__dict__, "mcp_timeout_seconds": 0.5}), "wait", {}, "--mcp-timeout-seconds"),
        (
            McpPolicy(**{**LOOPBACK.__dict__, "max_mcp_output_bytes": 2000}),
            "big",
            {"size": 3000},
            "--max-mcp-output-bytes",
        ),
        (LOOPBACK, "fail", {}, "Error executing tool fail"),
        (LOOPBACK, "nope", {}, "Unknown tool"),
    ],
)
def test_a_call_past_a_bound_or_failing_fails_named_and_the_model_reads_why(
    tools: ToolServer, policy: McpPolicy, tool: str, arguments: dict[str, Any], error: str
) -> None:
    session = Session(policy)
    session.engine.script(text(call(tool, **arguments)), text("Sorry."))
    if tool == "nope":  # a name the server does not list is a function call the caller must answer: list it
        session.engine.scripts.clear()
        session.engine.script(text(call("add", a="x", b=1)), text("Sorry."))
        error = "validation error"
    response = run(session.create(tools=[mcp_tool(tools.url)]))
    made = response.output[1].mcp_call
    assert made.status == objects_pb2.ITEM_STATUS_FAILED and error in made.error, made.error
    assert kinds(response) == ["mcp_list_tools", "mcp_call", "message"]
    assert "Error: " in session.prompt(1)


def test_calls_past_the_rounds_bound_are_not_made(tools: ToolServer) -> None:
    session = Session(McpPolicy(**{**LOOPBACK.__dict__, "max_mcp_rounds": 1}))
    session.engine.script(text(call("add", a=1, b=2)), text(call("add", a=3, b=4)), text("unused"))
    response = run(session.create(tools=[mcp_tool(tools.url)]))
    assert kinds(response) == ["mcp_list_tools", "mcp_call", "mcp_call"]
    first, second = response.output[1].mcp_call, response.output[2].mcp_call
    assert first.output == "3"
    assert second.status == objects_pb2.ITEM_STATUS_FAILED and "--max-mcp-rounds" in second.error
    assert len(session.engine.generations) == 2


def test_a_function_call_beside_an_mcp_call_ends_the_response_for_the_caller(tools: ToolServer) -> None:
    session = Session()
    session.engine.script(text(call("add", a=1, b=2) + "\n" + call("get_weather", city="Paris")))
    function = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    response = run(session.create(tools=[mcp_tool(tools.url), function]))
    assert kinds(response) == ["mcp_list_tools", "mcp_call", "function_call"]
    assert response.output[1].mcp_call.output == "3"
    assert len(session.engine.generations) == 1


def test_a_tool_named_like_a_function_tool_is_refused(tools: ToolServer) -> None:
    function = {"type": "function", "name": "add", "parameters": {"type": "object"}}
    with pytest.raises(InvalidArgument) as refused:
        run(Session().create(tools=[mcp_tool(tools.url), function]))
    assert refused.value.param == "tools[0].server_label"


def test_an_approval_in_a_conversation_is_found_among_its_items(tools: ToolServer) -> None:
    session = Session()
    conversations = ConversationsApi(ConversationStore(session.store, max_items=100))
    session.api = ResponsesApi(ModelRegistry([fake_model(session.engine)]), session.store, conversations=conversations,
                               mcp=LOOPBACK)  # fmt: skip
    session.engine.script(text(call("add", a=5, b=6)), text("Eleven."))
    tool = mcp_tool(tools.url, require_approval="always")

    async def body() -> tuple[objects_pb2.Response, objects_pb2.Response]:
        conversation = await conversations.create(conversation_pb2.CreateConversationRequest())
        asked = await session.create(tools=[tool], conversation=conversation.id)
        request_id = asked.output[1].mcp_approval_request.id
        approval = {"type": "mcp_approval_response", "approval_request_id": request_id, "approve": True}
        answered = await session.create(input_items=[approval], conversation=conversation.id, tools=[tool])
        return asked, answered

    asked, answered = run(body())
    assert kinds(asked) == ["mcp_list_tools", "mcp_approval_request"]
    assert kinds(answered) == ["mcp_call", "message"]  # the listing reused from the conversation's items
    assert answered.output[0].mcp_call.output == "11"
    assert "<|im_start|>tool\n11<|im_end|>" in session.prompt(1)

"""MCP tools end to end: the bundled tiny-chat on the real pipeline behind the REST bridge, calling the ``mcp``
SDK's streamable HTTP server on loopback (tests/mcp_tool_server.py), in OpenAI's JSON and through the openai client.

tiny-chat does not choose a tool by itself under tool_choice auto, so these requests force the MCP tool
(tool_choice {"type": "mcp", ...}); the loop's other paths run on a scripted engine in
tests/service/responses/test_mcp_tools.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from ovserve.service.mcp import McpPolicy
from tests.mcp_tool_server import SECRET, ToolServer, connections, silent_listener, tool_server
from tests.rest_bridge.conftest import RunningBridge, http_request, served_with_bridge
from tests.rest_bridge.test_conversations import TINY

LOOPBACK = McpPolicy(allowed_mcp_hosts=("127.0.0.1",), allow_private_mcp_hosts=True)
FORCED = {"type": "mcp", "server_label": "tools", "name": "secret_word"}


@pytest.fixture(scope="module")
def tools() -> Iterator[ToolServer]:
    with tool_server() as served:
        yield served


@pytest.fixture(scope="module")
def running() -> Iterator[RunningBridge]:
    with served_with_bridge(TINY, mcp=LOOPBACK) as bridge:
        yield bridge


def body(tools: ToolServer, **fields: Any) -> dict[str, Any]:
    tool = {"type": "mcp", "server_label": "tools", "server_url": tools.url, "require_approval": "never",
            "allowed_tools": ["secret_word", "add"]}  # fmt: skip
    return {"model": "tiny-chat", "input": "What is the secret word?", "tools": [tool], "tool_choice": FORCED,
            "temperature": 0, "max_output_tokens": 64, **fields}  # fmt: skip


def check_answered(response: dict[str, Any]) -> None:
    """Listed, called (the tool's result in the mcp_call item), then the model's answer after it."""
    kinds = [item["type"] for item in response["output"]]
    assert kinds == ["mcp_list_tools", "mcp_call", "message"], kinds
    listed, made, answer = response["output"]
    assert {tool["name"] for tool in listed["tools"]} == {"secret_word", "add"}  # allowed_tools applied
    assert (made["server_label"], made["name"], made["output"], made["error"]) == ("tools", "secret_word", SECRET, None)
    assert made["status"] == "completed" and json.loads(made["arguments"]) == {}
    assert answer["role"] == "assistant" and answer["content"][0]["type"] == "output_text"
    assert response["usage"]["input_tokens"] > 0 and response["tool_choice"] == FORCED


def test_a_unary_response_calls_the_mcp_server_and_answers_after_its_result(
    running: RunningBridge, tools: ToolServer
) -> None:
    reply = http_request(running.port, "POST", "/v3/responses", body(tools))
    assert reply.status == 200, reply.body
    check_answered(reply.json())
    assert reply.json()["tools"][0]["headers"] is None


def test_a_streamed_response_calls_the_mcp_server_with_openais_events(
    running: RunningBridge, tools: ToolServer
) -> None:
    reply = http_request(running.port, "POST", "/v3/responses", body(tools, stream=True))
    assert reply.status == 200, reply.body
    blocks = reply.body.decode().split("\n\n")
    events = [json.loads(line[len("data: ") :]) for block in blocks for line in block.splitlines()
              if line.startswith("data: ") and line != "data: [DONE]"]  # fmt: skip
    names = [event["type"] for event in events]
    expected = [
        "response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed", "response.mcp_call.in_progress",
        "response.mcp_call_arguments.done", "response.mcp_call.completed",
    ]  # fmt: skip
    assert [name for name in names if name in expected] == expected
    done = [event["item"] for event in events if event["type"] == "response.output_item.done"]
    assert [item["type"] for item in done] == ["mcp_list_tools", "mcp_call", "message"]
    assert names[-1] == "response.completed" or names[-1] == "response.incomplete"
    check_answered(events[-1]["response"])
    assert events[-1]["response"]["output"][1] == done[1]


def test_the_openai_client_reads_the_mcp_items_and_approves_a_call(running: RunningBridge, tools: ToolServer) -> None:
    client = openai.OpenAI(base_url=running.url, api_key="unused", max_retries=0)
    tool: Any = {"type": "mcp", "server_label": "tools", "server_url": tools.url,
                 "require_approval": {"always": {"tool_names": ["secret_word"]}}}  # fmt: skip
    asked = client.responses.create(model="tiny-chat", input="The secret word?", tools=[tool], tool_choice=FORCED,
                                    temperature=0, max_output_tokens=64)  # fmt: skip
    assert [item.type for item in asked.output] == ["mcp_list_tools", "mcp_approval_request"]
    request = asked.output[1]
    assert request.type == "mcp_approval_request" and request.name == "secret_word"
    approval: Any = {"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}
    answered = client.responses.create(model="tiny-chat", input=[approval], previous_response_id=asked.id,
                                       tools=[tool], temperature=0, max_output_tokens=64)  # fmt: skip
    kinds = [item.type for item in answered.output]
    assert kinds[0] == "mcp_call" and kinds[-1] == "message", kinds
    made = answered.output[0]
    assert made.type == "mcp_call" and made.output == SECRET and made.approval_request_id == request.id
    items = client.responses.input_items.list(answered.id)
    assert [item.type for item in items.data] == ["mcp_approval_response"]


def test_a_disallowed_host_is_refused_with_400_and_no_connection(running: RunningBridge) -> None:
    with silent_listener() as (url, listener):
        tool = {"type": "mcp", "server_label": "tools", "server_url": url.replace("127.0.0.1", "localhost")}
        reply = http_request(running.port, "POST", "/v3/responses", {"model": "tiny-chat", "input": "Hi",
                                                                       "tools": [tool]})  # fmt: skip
        assert connections(listener) == 0
    assert reply.status == 400, reply.body
    error = reply.json()["error"]
    assert error["param"] == "tools[0].server_url" and "--allowed-mcp-host" in error["message"]

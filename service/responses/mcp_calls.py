"""The server's side of an MCP tool call: it calls the tools the model called, and the model reads the results.

After each of the model's turns (a round), the mcp_call items it wrote are called, one after the other, within the
policy's bounds; their results become the conversation's tool messages and the model writes its next turn. Rounds
end when the model answers without calling an MCP tool, calls a function tool (the caller answers those), asks
for an approval, or the rounds run out (``--max-mcp-rounds``): then the last calls fail, the bound named.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.service.mcp.client import McpFailure, call_tool
from ovserve.service.mcp.policy import McpPolicy
from ovserve.service.responses.events import Event, ResponseEvents
from ovserve.service.responses.mcp_tools import DENIED, Approval
from ovserve.service.structured.custom_input import INPUT


async def call_pending(
    events: ResponseEvents, policy: McpPolicy, *, refused: str | None = None
) -> AsyncIterator[Event]:
    """Call the mcp_call items written since the last round (``refused``: fail them with that reason instead)."""
    pending, events.mcp_calls = events.mcp_calls, []
    for index in pending:
        call = events.response.output[index].mcp_call
        server = next(server for server in events.mcp.servers if server.label == call.server_label)
        output, error = None, refused
        if error is None:
            try:
                arguments = json.loads(call.arguments or "{}")
                if not isinstance(arguments, dict):
                    raise McpFailure("the arguments are not a JSON object")
                output = await call_tool(server.endpoint, policy, call.name, arguments)
            except json.JSONDecodeError as problem:
                error = f"the arguments are not valid JSON: {problem}"
            except McpFailure as problem:
                error = str(problem)
        for event in events.mcp_call_ended(index, output=output, error=error):
            yield event


async def answer_approvals(
    events: ResponseEvents, approvals: Sequence[Approval], policy: McpPolicy
) -> AsyncIterator[Event]:
    """The calls this request approved, made (an mcp_call item each); denied ones are left for round_messages."""
    for approval in approvals:
        if approval.approve:
            asked = approval.asked
            for event in events.mcp_call_made(approval.server, asked.name, asked.arguments, asked.id):
                yield event
    async for event in call_pending(events, policy):
        yield event


def approval_messages(approvals: Sequence[Approval], output: Sequence[objects_pb2.OutputItem]) -> list[dict[str, Any]]:
    """The tool messages that answer the approval requests of the previous response (whose assistant turn has the
    calls, under the requests' ids): an approved call's result, or that the user did not approve it."""
    results = {item.mcp_call.approval_request_id: item.mcp_call for item in output if item.HasField("mcp_call")}
    messages = []
    for approval in approvals:
        call = results.get(approval.asked.id)
        if call is not None:
            content = call.output if not call.HasField("error") else f"Error: {call.error}"
        else:
            content = " ".join(filter(None, [DENIED, approval.reason]))
        messages.append({"role": "tool", "tool_call_id": approval.asked.id, "content": content})
    return messages


def round_messages(output: Sequence[objects_pb2.OutputItem]) -> list[dict[str, Any]]:
    """One turn of the model (its output items) as chat messages: the assistant's text and calls, then the results
    of the MCP calls the server made (function calls' results come from the caller)."""
    text = "".join(
        part.output_text.text for item in output if item.HasField("message") for part in item.message.content
    )
    assistant: dict[str, Any] = {"role": "assistant", "content": text}
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for item in output:
        kind = item.WhichOneof("item")
        if kind in ("function_call", "mcp_call", "mcp_approval_request"):
            call = getattr(item, kind)
            call_id = call.call_id if kind == "function_call" else call.id
            calls.append({"id": call_id, "type": "function",
                          "function": {"name": call.name, "arguments": _arguments(call.arguments)}})  # fmt: skip
        elif kind == "custom_tool_call":  # the function call of one string it was to the template
            custom = item.custom_tool_call
            calls.append(
                {
                    "id": custom.call_id,
                    "type": "function",
                    "function": {"name": custom.name, "arguments": {INPUT: custom.input}},
                }
            )
        if kind == "mcp_call" and item.mcp_call.status in (
            objects_pb2.ITEM_STATUS_COMPLETED,
            objects_pb2.ITEM_STATUS_FAILED,
        ):
            call = item.mcp_call
            content = call.output if not call.HasField("error") else f"Error: {call.error}"
            results.append({"role": "tool", "tool_call_id": call.id, "content": content})
    if calls:
        assistant["tool_calls"] = calls
    reasoning = "".join(part.text for item in output if item.HasField("reasoning") for part in item.reasoning.summary)
    if reasoning:
        assistant["reasoning_content"] = reasoning
    return [assistant, *results]


def _arguments(text: str) -> Any:
    """A call's arguments as the chat template renders them: an object (as written, when the model broke them)."""
    try:
        return json.loads(text or "{}")
    except json.JSONDecodeError:
        return {"arguments": text}


def continues(output: Sequence[objects_pb2.OutputItem]) -> bool:
    """Whether the model's turn asks for another: it called MCP tools, and no function tool nor approval."""
    kinds = {item.WhichOneof("item") for item in output}
    return "mcp_call" in kinds and not kinds & {"function_call", "custom_tool_call", "mcp_approval_request"}

"""A response's output items in input-item form: what a later turn sends back, what item references find."""

from __future__ import annotations

from ovserve.clients.v1 import response_object_pb2 as objects_pb2


def output_items(response: objects_pb2.Response) -> list[objects_pb2.InputItem]:
    """A response's output items in input-item form (what a later turn sends back), ids kept."""
    return [as_input(output) for output in response.output if output.WhichOneof("item")]


def as_input(output: objects_pb2.OutputItem) -> objects_pb2.InputItem:
    """One output item as the input item that replays it (its id kept)."""
    Part = objects_pb2.InputContentPart
    if output.HasField("function_call"):
        call = output.function_call
        return objects_pb2.InputItem(
            type="function_call", id=call.id, call_id=call.call_id, name=call.name, arguments=call.arguments
        )
    if output.HasField("custom_tool_call"):
        custom = output.custom_tool_call
        return objects_pb2.InputItem(
            type="custom_tool_call", id=custom.id, call_id=custom.call_id, name=custom.name, input=custom.input
        )
    if output.HasField("mcp_list_tools"):
        listed = output.mcp_list_tools
        replayed = objects_pb2.InputItem(
            type="mcp_list_tools", id=listed.id, server_label=listed.server_label, tools=listed.tools
        )
        if listed.HasField("error"):
            replayed.error = listed.error
        return replayed
    if output.HasField("mcp_call"):
        mcp = output.mcp_call
        replayed = objects_pb2.InputItem(
            type="mcp_call", id=mcp.id, server_label=mcp.server_label, name=mcp.name, arguments=mcp.arguments,
            output=mcp.output, approval_request_id=mcp.approval_request_id,
        )  # fmt: skip
        if mcp.HasField("error"):
            replayed.error = mcp.error
        return replayed
    if output.HasField("mcp_approval_request"):
        asked = output.mcp_approval_request
        return objects_pb2.InputItem(
            type="mcp_approval_request", id=asked.id, server_label=asked.server_label, name=asked.name,
            arguments=asked.arguments,
        )  # fmt: skip
    if output.HasField("reasoning"):
        reasoning = output.reasoning
        summary = [Part(type="summary_text", text=part.text) for part in reasoning.summary]
        content = [Part(type="reasoning_text", text=part.text) for part in reasoning.content]
        return objects_pb2.InputItem(type="reasoning", id=reasoning.id, summary=summary, content_parts=content)
    message = output.message
    parts = [
        Part(type="output_text", text=part.output_text.text)
        if part.HasField("output_text")
        else Part(type="refusal", refusal=part.refusal.refusal)
        for part in message.content
        if part.HasField("output_text") or part.HasField("refusal")
    ]
    return objects_pb2.InputItem(type="message", id=message.id, role="assistant", content_parts=parts)

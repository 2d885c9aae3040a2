"""A Responses request's ``mcp`` tools: the servers it names, their tools as the model sees them, and the
approvals it answers.

Each ``{"type": "mcp", ...}`` tool names one server (its own ``server_url``, or a server configured at start by
``server_label``). Its tools are listed before the prompt is rendered, or taken from an ``mcp_list_tools`` item
of an earlier response of the chain with the same label (as OpenAI does); ``allowed_tools`` narrows them. The
model sees each as a function of the same name; ``require_approval`` says which calls wait for the caller
(an ``mcp_approval_request`` item) and which the server makes at once (an ``mcp_call`` item, see mcp_calls.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format

from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.service.errors import FieldViolation, InvalidArgument, quote
from ovserve.service.mcp.client import McpEndpoint, McpFailure, check_reachable, list_tools
from ovserve.service.mcp.policy import McpPolicy

APPROVALS = ("always", "never")
DENIED = "The user did not approve this call."  # what the model reads for a denied call (with the reason given)


@dataclass
class McpServer:
    """One mcp tool of the request: the server, where the request names it, and its tools once known."""

    label: str
    endpoint: McpEndpoint
    where: str  # the request field: tools[3]
    entry: objects_pb2.ResponseTool
    tools: list[objects_pb2.McpToolInfo] = field(default_factory=list)
    listed_now: bool = False  # listed for this response (then an mcp_list_tools item says so), not reused

    def allows(self, tool: objects_pb2.McpToolInfo) -> bool:
        """Whether allowed_tools lets the model see ``tool`` (all tools when it is not set)."""
        if self.entry.HasField("allowed_tools_filter"):
            return _matches(self.entry.allowed_tools_filter, tool)
        return not self.entry.allowed_tools or tool.name in self.entry.allowed_tools

    def needs_approval(self, name: str) -> bool:
        """Whether a call of ``name`` waits for the caller's approval (OpenAI's default: always)."""
        tool = next((tool for tool in self.tools if tool.name == name), objects_pb2.McpToolInfo(name=name))
        if self.entry.HasField("require_approval_filter"):
            given = self.entry.require_approval_filter
            return not (given.HasField("never") and _matches(given.never, tool))
        return self.entry.require_approval != "never"


def _matches(given: objects_pb2.McpToolFilter, tool: objects_pb2.McpToolInfo) -> bool:
    read_only = tool.annotations.fields.get("readOnlyHint")
    return tool.name in given.tool_names or (given.read_only and read_only is not None and read_only.bool_value is True)


@dataclass
class Approval:
    """The caller's answer (this request's mcp_approval_response) to an approval request of an earlier response."""

    asked: objects_pb2.OutputMcpApprovalRequest
    approve: bool
    reason: str
    server: McpServer


@dataclass
class McpTools:
    """The request's MCP servers and the approvals it answers."""

    servers: list[McpServer] = field(default_factory=list)
    approvals: list[Approval] = field(default_factory=list)

    def server_of(self, name: str) -> McpServer | None:
        """The server whose tool the model calls by ``name`` (None: a function tool of the request)."""
        return next((server for server in self.servers if any(t.name == name for t in server.tools)), None)

    def template_tools(self) -> list[dict[str, Any]]:
        """The servers' tools as the chat template's function tools."""
        tools = []
        for server in self.servers:
            about = server.entry.server_description if server.entry.HasField("server_description") else ""
            for tool in server.tools:
                description = " ".join(filter(None, [tool.description, f"({server.label}: {about})" if about else ""]))
                function = {"name": tool.name, "parameters": _closed(json_format.MessageToDict(tool.input_schema))}
                tools.append({"type": "function", "function": {**function, "description": description}})
        return tools


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's input schema with no properties beyond its own unless it says otherwise: guided arguments (a forced
    call, tool-guided generation) otherwise invent extra keys, which no tool takes."""
    if schema.get("type") == "object" and "additionalProperties" not in schema:
        return {**schema, "additionalProperties": False}
    return schema


def read_servers(
    tools: Iterable[objects_pb2.ResponseTool], policy: McpPolicy, violations: list[FieldViolation]
) -> list[McpServer]:
    """The request's mcp tools as servers; what is wrong with them goes to ``violations``."""
    configured = policy.servers()
    servers: list[McpServer] = []
    for index, tool in enumerate(tools):
        if tool.type != "mcp":
            continue
        where = f"tools[{index}]"
        if not tool.server_label:
            violations.append(FieldViolation(f"{where}.server_label", "required on mcp tools"))
            continue
        if any(server.label == tool.server_label for server in servers):
            violations.append(FieldViolation(f"{where}.server_label", f"{quote(tool.server_label)} is used twice"))
            continue
        if tool.HasField("require_approval") and tool.require_approval not in APPROVALS:
            described = f"{quote(tool.require_approval)} is not one of {', '.join(APPROVALS)}"
            violations.append(FieldViolation(f"{where}.require_approval", described))
        if len(tool.allowed_tools) and tool.HasField("allowed_tools_filter"):
            violations.append(FieldViolation(f"{where}.allowed_tools", "a list or a filter, not both"))
        headers = dict(tool.headers)
        if tool.HasField("authorization"):
            headers["Authorization"] = f"Bearer {tool.authorization}"
        if tool.server_url:
            endpoint = McpEndpoint(tool.server_url, headers)
        elif tool.server_label in configured:
            endpoint = McpEndpoint(configured[tool.server_label], headers, configured=True)
        else:
            described = f"no server_url, and no server {quote(tool.server_label)} is configured (--mcp-server)"
            violations.append(FieldViolation(f"{where}.server_url", described))
            continue
        servers.append(McpServer(tool.server_label, endpoint, where, tool))
    return servers


async def resolve(servers: list[McpServer], policy: McpPolicy, earlier: list[objects_pb2.OutputItem]) -> None:
    """Give each server its tools: those an earlier response listed for its label, else listed now.

    INVALID_ARGUMENT naming the tool's server_url when the server may not be reached or cannot be listed."""
    for server in servers:
        reused = next(
            (item.mcp_list_tools for item in reversed(earlier)
             if item.HasField("mcp_list_tools") and item.mcp_list_tools.server_label == server.label
             and not item.mcp_list_tools.HasField("error")),
            None,
        )  # fmt: skip
        try:
            await check_reachable(server.endpoint, policy)  # a reused listing too: the request calls the server
            if reused is not None:
                listed = list(reused.tools)
            else:
                listed = await list_tools(server.endpoint, policy)
                server.listed_now = True
        except McpFailure as error:
            raise InvalidArgument.of(
                f"{server.where}.server_url", f"MCP server {quote(server.label)}: {error}"
            ) from None
        server.tools = [tool for tool in listed if server.allows(tool)]


def clashes(servers: list[McpServer], function_names: set[str]) -> list[FieldViolation]:
    """Tools the model could not tell apart: a name of two servers, or of a server and a function tool."""
    seen = set(function_names)
    violations = []
    for server in servers:
        for tool in server.tools:
            if tool.name in seen:
                described = f"its tool {quote(tool.name)} has the name of another tool; narrow it with allowed_tools"
                violations.append(FieldViolation(f"{server.where}.server_label", described))
            seen.add(tool.name)
    return violations


def approvals(
    items: Iterable[objects_pb2.InputItem],
    earlier: list[objects_pb2.OutputItem],
    servers: list[McpServer],
    violations: list[FieldViolation],
) -> list[Approval]:
    """The request's mcp_approval_response items, each with the request it answers and the server to call."""
    asked = {item.mcp_approval_request.id: item.mcp_approval_request for item in earlier
             if item.HasField("mcp_approval_request")}  # fmt: skip
    answered = []
    for position, item in enumerate(items):
        if item.type != "mcp_approval_response":
            continue
        where = f"input_items[{position}]"
        request = asked.get(item.approval_request_id)
        if not item.HasField("approve"):
            violations.append(FieldViolation(f"{where}.approve", "required on mcp_approval_response items"))
        if request is None:
            described = f"no mcp_approval_request {quote(item.approval_request_id)} in the responses this one continues"
            violations.append(FieldViolation(f"{where}.approval_request_id", described))
            continue
        server = next((server for server in servers if server.label == request.server_label), None)
        if server is None:
            described = f"the request's tools have no mcp server {quote(request.server_label)} to call"
            violations.append(FieldViolation(f"{where}.approval_request_id", described))
            continue
        reason = item.reason if item.HasField("reason") else ""
        answered.append(Approval(request, item.approve, reason, server))
    return answered

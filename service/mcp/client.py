"""Talking to one MCP server (streamable HTTP, the official ``mcp`` SDK's client): list its tools, call one.

Every operation opens its own session (connect, initialize, the request, close), bounded by the policy's time
limit as a whole, and reads at most ``max_mcp_output_bytes`` of answer. A request's own ``server_url`` is checked
before anything connects (``check_reachable``): an allowed host whose addresses are public (or private ones, where
the operator allows them); a refused URL makes no connection at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import socket
import urllib.parse
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
from google.protobuf import json_format
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.service.mcp.policy import McpPolicy


class McpFailure(Exception):
    """An MCP operation that did not give a result; the message says why (and names the bound it hit)."""


@dataclass(frozen=True)
class McpEndpoint:
    """Where one MCP server is and how to reach it."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    configured: bool = False  # set by the operator (--mcp-server): not held to the host list


async def check_reachable(endpoint: McpEndpoint, policy: McpPolicy) -> None:
    """McpFailure unless the policy lets a request reach ``endpoint`` (no connection is made either way)."""
    if endpoint.configured:
        return
    parsed = urllib.parse.urlparse(endpoint.url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise McpFailure(f"{endpoint.url!r} is not an http(s) URL")
    host = parsed.hostname.lower().rstrip(".")
    allowed = policy.allowed_mcp_hosts
    if "*" not in allowed and host not in (entry.lower().rstrip(".") for entry in allowed):
        raise McpFailure(f"host {host!r} is not among the hosts MCP servers may be reached on (--allowed-mcp-host)")
    if policy.allow_private_mcp_hosts:
        return
    try:
        entries = await asyncio.get_running_loop().getaddrinfo(host, parsed.port or 443, type=socket.SOCK_STREAM)
    except OSError as error:
        raise McpFailure(f"host {host!r} could not be resolved: {error}") from error
    if not all(ipaddress.ip_address(entry[4][0]).is_global for entry in entries):
        raise McpFailure(
            f"host {host!r} resolves to a private address, which MCP servers may not be reached on "
            "(--allow-private-mcp-hosts)"
        )


@contextlib.asynccontextmanager
async def _session(endpoint: McpEndpoint, policy: McpPolicy) -> AsyncIterator[ClientSession]:
    timeout = httpx2.Timeout(policy.mcp_timeout_seconds)
    async with (
        httpx2.AsyncClient(headers=endpoint.headers, timeout=timeout) as client,
        streamable_http_client(endpoint.url, http_client=client, max_sse_event_size=_event_bound(policy)) as (
            read,
            write,
        ),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _event_bound(policy: McpPolicy) -> int:
    """Bytes one server-sent event may hold: a result's text comes twice (content and structured content) in its
    JSON-RPC envelope, so the output bound itself is checked on the text (``_check_size``)."""
    return 2 * policy.max_mcp_output_bytes + 64 * 1024


async def _bounded(operation: str, policy: McpPolicy, work: Any) -> Any:
    """``work`` (a coroutine) within the policy's time limit; its failures as McpFailure."""
    try:
        async with asyncio.timeout(policy.mcp_timeout_seconds):
            return await work
    except McpFailure:
        raise
    except TimeoutError as error:
        limit = f"{policy.mcp_timeout_seconds:g} s (--mcp-timeout-seconds)"
        raise McpFailure(f"{operation} took more than {limit}") from error
    except Exception as error:  # connection refused, HTTP errors, protocol errors: what the SDK raises
        reason = _reason(error)
        if "exceeded" in reason and "byte limit" in reason:  # the SDK's bound on one event, set from ours
            reason += " (--max-mcp-output-bytes)"
        raise McpFailure(f"{operation} failed: {reason}") from error


def _reason(error: BaseException) -> str:
    """The first real cause inside the SDK's exception groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return str(error) or type(error).__name__


def _check_size(what: str, text: str, policy: McpPolicy) -> None:
    size = len(text.encode())
    if size > policy.max_mcp_output_bytes:
        bound = f"{policy.max_mcp_output_bytes} bytes (--max-mcp-output-bytes)"
        raise McpFailure(f"{what} is {size} bytes, over the bound of {bound}")


async def list_tools(endpoint: McpEndpoint, policy: McpPolicy) -> list[objects_pb2.McpToolInfo]:
    """The server's tools (all pages); McpFailure when it cannot be listed."""

    async def work() -> list[objects_pb2.McpToolInfo]:
        tools: list[Any] = []
        async with _session(endpoint, policy) as session:
            cursor: str | None = None
            while True:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                tools += page.tools
                cursor = page.next_cursor
                if not cursor:
                    break
        listed = [_tool_info(tool) for tool in tools]
        _check_size("the tool list", json.dumps([json_format.MessageToDict(t) for t in listed]), policy)
        return listed

    result: list[objects_pb2.McpToolInfo] = await _bounded("listing the tools", policy, work())
    return result


def _tool_info(tool: Any) -> objects_pb2.McpToolInfo:
    info = objects_pb2.McpToolInfo(name=tool.name)
    if tool.description:
        info.description = tool.description
    info.input_schema.update(tool.input_schema or {"type": "object"})
    if tool.annotations is not None:
        info.annotations.update(tool.annotations.model_dump(exclude_none=True, by_alias=True))
    return info


async def call_tool(endpoint: McpEndpoint, policy: McpPolicy, name: str, arguments: dict[str, Any]) -> str:
    """The tool's result as text (its content blocks joined); McpFailure with the tool's error or ours."""

    async def work() -> str:
        async with _session(endpoint, policy) as session:
            result = await session.call_tool(name, arguments)
        blocks = getattr(result, "content", None) or []
        text = "\n".join(
            block.text if getattr(block, "type", "") == "text" else block.model_dump_json(exclude_none=True)
            for block in blocks
        )
        if not blocks and getattr(result, "structured_content", None) is not None:
            text = json.dumps(result.structured_content)
        _check_size("the tool's output", text, policy)
        if getattr(result, "is_error", False):
            raise McpFailure(text or "the tool reported an error")
        return text

    output: str = await _bounded(f"calling {name!r}", policy, work())
    return output

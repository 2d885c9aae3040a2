"""Which MCP servers a Responses request may reach and how far a server-side MCP call may go (``ovserve serve``
flags, group "MCP tools (Responses API)").

The same rules as fetching media (service/media/policy.py): a request's ``server_url`` must name an allowed host,
and one that resolves to a loopback, private or link-local address is refused unless the operator allows those; every
call has a time limit and a size bound. Servers configured at start (``--mcp-server NAME=URL``) are the operator's
own choice: requests name them by ``server_label`` and they are not held to the host list.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field

from ovserve.clients.defaults import MIB


@dataclass(frozen=True)
class McpPolicy:
    """Limits and allow-lists of the MCP tools of Responses requests."""

    allowed_mcp_hosts: tuple[str, ...] = field(
        default=(),
        metadata={
            "help": "let Responses requests' mcp tools reach a server_url on this host (repeatable; '*' for any "
            "host); without it only servers configured with --mcp-server are reached",
            "flag": "allowed-mcp-host",
            "metavar": "HOST",
        },
    )
    allow_private_mcp_hosts: bool = field(
        default=False,
        metadata={
            "help": "let mcp tools' server_url reach loopback, private and link-local addresses (refused by "
            "default: a request could otherwise make the server probe its own network)",
        },
    )
    mcp_servers: tuple[str, ...] = field(
        default=(),
        metadata={
            "help": "an MCP server (streamable HTTP) that Responses requests name by server_label NAME, without a "
            "server_url (repeatable); not held to --allowed-mcp-host",
            "flag": "mcp-server",
            "metavar": "NAME=URL",
        },
    )
    mcp_timeout_seconds: float = field(
        default=30.0,
        metadata={"help": "time limit of one MCP operation (listing a server's tools, one tool call)",
                  "metavar": "SECONDS"},
    )  # fmt: skip
    max_mcp_output_bytes: int = field(
        default=MIB,
        metadata={
            "help": "largest tool result (or tool list) one MCP call may return",
            "metavar": "BYTES",
            "default_text": "1 MiB",
        },
    )
    max_mcp_rounds: int = field(
        default=8,
        metadata={
            "help": "rounds of MCP tool calls in one response (each: the model calls, the server calls the tools, "
            "the model reads the results); calls past them fail, named",
            "metavar": "N",
        },
    )

    def servers(self) -> dict[str, str]:
        """The servers configured at start, by label."""
        return dict(entry.split("=", 1) for entry in self.mcp_servers)  # problems() checked the form

    def problems(self) -> list[str]:
        """What is wrong with these settings (empty when they can be served)."""
        found = []
        for name in ("mcp_timeout_seconds", "max_mcp_output_bytes", "max_mcp_rounds"):
            if not getattr(self, name) > 0:
                found.append(f"--{name.replace('_', '-')} must be more than 0; got {getattr(self, name)}")
        labels: set[str] = set()
        for entry in self.mcp_servers:
            label, equals, url = entry.partition("=")
            if not equals or not label or urllib.parse.urlparse(url).scheme not in ("http", "https"):
                found.append(f"--mcp-server {entry!r}: expected NAME=URL with an http(s) URL")
            elif label in labels:
                found.append(f"--mcp-server {label!r} is configured twice")
            labels.add(label)
        return found

"""MCP servers reached by the server itself (the Responses API's mcp tools): the policy and the client."""

from ovserve.service.mcp.policy import McpPolicy

__all__ = ["McpPolicy"]

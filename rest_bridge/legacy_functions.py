"""OpenAI's deprecated ``functions`` / ``function_call`` (still sent by older LangChain versions), as tools.

A request with ``functions`` is a request with those functions as tools:
``function_call`` becomes ``tool_choice``, an assistant message's
``function_call`` a tool call, and a ``function`` role message the tool result of
the call before it. The reply then speaks the old form: the message's first tool
call as ``function_call`` and finish_reason ``function_call`` (the old API made
one call at a time, so parallel calls are turned off). Without ``functions``, an assistant message's
``function_call`` is still a tool call (``with_assistant_calls``): the function role is served on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Refuse = Callable[[str, str], Exception]


def to_tools(body: dict[str, Any], refuse: Refuse) -> dict[str, Any]:
    """``body`` (a chat request using functions) with tools, tool_choice and tool messages instead."""
    body = dict(body)
    functions, choice = body.pop("functions", None), body.pop("function_call", None)
    if functions is not None:
        if "tools" in body:
            raise refuse("functions", "functions: give tools or functions, not both")
        if not isinstance(functions, list) or not all(isinstance(item, dict) for item in functions):
            raise refuse("functions", "functions: expected a list of function objects")
        body["tools"] = [{"type": "function", "function": function} for function in functions]
        body["parallel_tool_calls"] = False
    if choice is not None:
        if "tool_choice" in body:
            raise refuse("function_call", "function_call: give tool_choice or function_call, not both")
        if isinstance(choice, dict) and isinstance(choice.get("name"), str):
            body["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
        elif choice in ("none", "auto"):
            body["tool_choice"] = choice
        else:
            raise refuse("function_call", 'function_call: expected "none", "auto" or {"name": ...}')
    if isinstance(body.get("messages"), list):
        body["messages"] = _messages(body["messages"])
    return body


def with_assistant_calls(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` (a chat request without ``functions``) with each assistant message's deprecated ``function_call`` as
    a tool call; a ``function`` role message after it stays, for the service to answer the last call of its name."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not any(_calls_a_function(message) for message in messages):
        return body
    return {**body, "messages": [_as_tool_call(message, i) for i, message in enumerate(messages)]}


def _calls_a_function(message: Any) -> bool:
    return isinstance(message, dict) and isinstance(message.get("function_call"), dict)


def _as_tool_call(message: Any, i: int) -> Any:
    """An assistant message with a ``function_call`` (the ``i``-th message) as one with that tool call, id call_i."""
    if not _calls_a_function(message):
        return message
    call = {"id": f"call_{i}", "type": "function", "function": message["function_call"]}
    return {**{k: v for k, v in message.items() if k != "function_call"}, "tool_calls": [call]}


def _messages(messages: list[Any]) -> list[Any]:
    out, last_call = [], None
    for i, message in enumerate(messages):
        if _calls_a_function(message):
            last_call = f"call_{i}"
            message = _as_tool_call(message, i)
        elif isinstance(message, dict) and message.get("role") == "function":
            message = {"role": "tool", "content": message.get("content"), "tool_call_id": last_call or f"call_{i}"}
        out.append(message)
    return out


def reply(payload: dict[str, Any]) -> dict[str, Any]:
    """A chat.completion in the old form: the first tool call as the message's function_call."""
    for choice in payload["choices"]:
        calls = choice["message"].pop("tool_calls", None)
        if calls:
            choice["message"]["function_call"] = calls[0]["function"]
            choice["finish_reason"] = "function_call"
    return payload


def chunk(payload: dict[str, Any]) -> dict[str, Any]:
    """A chat.completion.chunk in the old form: tool call fragments as function_call fragments."""
    for choice in payload["choices"]:
        calls = choice["delta"].pop("tool_calls", None)
        if calls:
            choice["delta"]["function_call"] = {k: v for k, v in calls[0].get("function", {}).items() if v is not None}
        if choice["finish_reason"] == "tool_calls":
            choice["finish_reason"] = "function_call"
    return payload

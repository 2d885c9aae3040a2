"""The conversation written for a model of the generic tool format (its chat template shows no tool format).

Such a template renders neither the tools, nor an assistant's calls, nor (often) a tool's result, and some
refuse roles outright (Gemma 2: no system role; Gemma 2/3: roles must alternate). So, as llama.cpp and minja's
polyfills do, the conversation is rewritten into what any template renders:

- the tools (name, description, parameters' schema) and how to call them in the system turn: merged into the
  client's system message, or one added; folded into the first user turn where the template drops or refuses a
  system message;
- an assistant's past calls as the JSON object the model writes for them (ovserve.service.parsing.formats_generic);
- a tool's result as a user turn (``{"tool_response": {"name": ..., "content": ...}}``) where the template does
  not render a tool message's content itself;
- consecutive messages of one role merged where the template refuses them.

The template is then given no tools: it would ignore them, or (openvino_genai's minja, for a template without
tools) describe them a second time in a shape of its own. What a template accepts is probed once per engine by
rendering a marked message of each role through it (``template_roles``), so the answer is that of the engine
that renders requests (minja or Jinja2), polyfills included.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ovserve.service.engine import TemplateError
from ovserve.service.models import ServedModel
from ovserve.service.parsing.formats_generic import GENERIC, GENERIC_PARSER

TOOLS_PROMPT = (
    "You can call these tools (one a line: its name, description and the JSON Schema of its arguments):\n"
    "{tools}\n\n"
    "To call tools, reply with only a JSON object listing the calls, one entry each, like this:\n"
    "{example}\n"
    "To answer without calling a tool, reply as usual."
)
EXAMPLE_ARGUMENTS = "{...}"
TURN_BREAK = "\n\n"  # between two texts merged into one turn
# A probe's message content: its quotes are escaped where a template (or minja's polyfill) writes the message as
# JSON, so the mark appears as it is only where the template renders the content itself.
MARK = 'probe "mark"'
_HELLO = {"role": "user", "content": "Hello"}
PROBES = {
    "system": [{"role": "system", "content": MARK}, _HELLO],
    "tool": [
        _HELLO,
        {"role": "assistant", "content": "Hi"},
        {"role": "tool", "tool_call_id": "call_0", "content": MARK},
    ],
    "repeats": [_HELLO, {"role": "user", "content": MARK}],
}


@dataclass(frozen=True)
class TemplateRoles:
    """What a chat template renders of each kind of message (as ``PROBES`` find it)."""

    system: bool  # a system message's content (its own turn, or folded into the first user turn by the template)
    tool: bool  # a tool message's content, as it is
    repeats: bool  # two messages of one role in a row (Gemma refuses: roles must alternate)


def template_roles(render: Callable[[list[dict[str, Any]]], str]) -> TemplateRoles:
    """What the template behind ``render`` (messages -> prompt, TemplateError on a refusal) accepts."""

    def shows(messages: list[dict[str, Any]]) -> bool:
        try:
            return MARK in render(messages)
        except TemplateError:
            return False

    return TemplateRoles(**{kind: shows(messages) for kind, messages in PROBES.items()})


_ROLES: weakref.WeakKeyDictionary[Any, TemplateRoles] = weakref.WeakKeyDictionary()  # engine -> its template's
_ROLES_LOCK = threading.Lock()  # requests render in worker threads too


def _roles_of(model: ServedModel) -> TemplateRoles:
    """The roles ``model``'s template accepts, probed on first use (a few renders of a few messages)."""
    engine = model.engine
    with _ROLES_LOCK:
        known = _ROLES.get(engine)
    if known is None:
        known = template_roles(lambda messages: engine.render_chat(messages, None, {}))
        with _ROLES_LOCK:
            _ROLES[engine] = known
    return known


def generic_conversation(
    model: ServedModel, history: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """The messages and tools to render for ``model``: rewritten (``written_for``, no tools left for the template)
    when its tool format is the generic one and the request has tools or tool history; else as they are."""
    if model.output_format.tool_parser != GENERIC_PARSER or not (tools or any(map(_tool_history, history))):
        return history, tools
    return written_for(_roles_of(model), history, tools or []), None


def _tool_history(message: dict[str, Any]) -> bool:
    return message.get("role") == "tool" or bool(message.get("tool_calls"))


def written_for(
    roles: TemplateRoles, history: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``history`` (in the chat template's form) written so a template of ``roles`` renders all of it, with
    ``tools`` (``{"type": "function", "function": {...}}``) described in the system turn."""
    names: dict[str, str] = {}  # call id -> the function called, for the results that answer it
    messages = [_rewritten(message, roles, names) for message in history]
    messages = _with_system(messages, tools_prompt(tools) if tools else "", roles)
    return messages if roles.repeats else _merged(messages)


def tools_prompt(tools: list[dict[str, Any]]) -> str:
    """The system turn's text that describes ``tools`` and how to call them."""
    functions = [tool.get("function", tool) for tool in tools]
    listed = "\n".join(json.dumps(function, ensure_ascii=False) for function in functions)
    return TOOLS_PROMPT.format(tools=listed, example=calls_text([(functions[0].get("name", ""), None)]))


def calls_text(calls: Iterable[tuple[str, Any]]) -> str:
    """(name, arguments) pairs as the generic format writes them; arguments None: a placeholder."""
    written = [
        GENERIC.begin(name)
        + (EXAMPLE_ARGUMENTS if arguments is None else json.dumps(arguments, ensure_ascii=False))
        + GENERIC.call_end
        for name, arguments in calls
    ]
    return GENERIC.opening + GENERIC.separator.join(written) + GENERIC.closing


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def _rewritten(message: dict[str, Any], roles: TemplateRoles, names: dict[str, str]) -> dict[str, Any]:
    """One message as the template renders it: calls as the model's JSON, a result as a user turn if need be."""
    if message.get("tool_calls"):
        calls = []
        for call in message["tool_calls"]:
            function = call.get("function", {})
            names[call.get("id", "")] = function.get("name", "")
            calls.append((function.get("name", ""), _arguments(function.get("arguments"))))
        written, text = calls_text(calls), _text(message)
        rest = {key: value for key, value in message.items() if key != "tool_calls"}
        return {**rest, "content": f"{text}\n{written}" if text else written}
    if message.get("role") == "tool" and not roles.tool:
        name = message.get("name") or names.get(message.get("tool_call_id", ""))
        response = {"name": name, "content": _text(message)} if name else {"content": _text(message)}
        return {"role": "user", "content": json.dumps({"tool_response": response}, ensure_ascii=False)}
    return message


def _arguments(arguments: Any) -> Any:
    """A call's arguments as a JSON value (clients' history holds them decoded; a string is decoded if it can be)."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except (ValueError, RecursionError):
            return arguments
    return {} if arguments is None else arguments


def _with_system(messages: list[dict[str, Any]], prompt: str, roles: TemplateRoles) -> list[dict[str, Any]]:
    """``prompt`` added to the system turn (after the client's own text), or with that turn folded into the first
    user turn where the template renders no system message."""
    system = messages[0] if messages and messages[0].get("role") == "system" else None
    rest = messages[1:] if system is not None else messages
    text = TURN_BREAK.join(part for part in (_text(system or {}), prompt) if part)
    if not text:
        return messages
    if roles.system:
        return [{**(system or {"role": "system"}), "content": text}, *rest]
    if rest and rest[0].get("role") == "user":
        first = rest[0]
        return [{**first, "content": TURN_BREAK.join(part for part in (text, _text(first)) if part)}, *rest[1:]]
    return [{"role": "user", "content": text}, *rest]


def _merged(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive messages of one role as one (their texts a blank line apart), for a template that demands
    roles alternate."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        if merged and merged[-1].get("role") == message.get("role"):
            last = merged[-1]
            merged[-1] = {**last, "content": TURN_BREAK.join(part for part in (_text(last), _text(message)) if part)}
        else:
            merged.append(message)
    return merged

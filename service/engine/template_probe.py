"""How a chat template is rendered, decided once at load by rendering what requests will render.

The choices, each made by rendering probe conversations (not from a list of template names):

- The message form (``MessageForm``): OpenAI's call turn has ``content: null``. Some templates write the
  calls only ``if message['content'] is none`` (DeepSeek-R1-Distill) and drop them for ``""``; others
  concatenate, index or trim the content and fail on None (QwQ, Devstral). Likewise a call's arguments: most
  templates write the object (``tojson``, or their own dialect); some concatenate them, which fails in Jinja2
  and gives a Python dict's text in minja: those get JSON text. The form kept is the first (of FORMS) under
  which the call turn renders and keeps the call.
- The name a past turn's reasoning is read under (``MessageForm.reasoning_key``): clients send it as
  ``reasoning_content``; templates read it as that, ``reasoning`` (Laguna), ``thinking`` (gpt-oss, LFM2.5) or
  ``thought`` (MiniCPM3, Apriel 1.5). The key kept is the first of REASONING_KEYS under which a past turn's
  reasoning appears in the rendering; the reasoning is passed under it as well. gpt-oss's refuses a call turn
  with both content and thinking: a template that refuses that (and renders each alone) gets the two joined
  under its reasoning key (``MessageForm.reasoning_beside_content``).
- Whether the template describes the tools only inside a system message (``MessageForm.system_for_tools``:
  vLLM's FunctionGemma), found by rendering with and without one.
- The engine: minja (openvino_genai's, as OVMS renders) unless Jinja2 renders a probe that minja fails (minja
  has no ``tojson(ensure_ascii=...)``, for one), drops text of, or whose call minja rewrites in a JSON of its
  own (its polyfill, for templates it thinks cannot write calls) where the template writes the family's
  markup. Whitespace is not compared: the two differ in it, and minja adds the tools to templates that ignore
  them, which loses nothing.

The probes: a plain turn, a system message, tools offered (a nested parameters schema), a call and its result,
and a past reasoning turn with thinking switched on and off.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ovserve.service.engine.template_errors import error_message
from ovserve.service.parsing.detection import REASONING, REASONING_KEYS
from ovserve.service.parsing.markup import THINK

if TYPE_CHECKING:  # chat_template.py probes with this module
    from ovserve.service.engine.chat_template import ChatTemplate, Renderer

ARGUMENTS = {"city": "Paris", "days": 3}  # "Paris" appears nowhere else in the probes
CALL_ID = "call12345"  # 9 letters and digits: Mistral's templates refuse any other form
MINJA, JINJA2 = "minja", "jinja2"
# The thinking switches the key probes turn on: the names template_context sets (prompting.py) and Apriel 1.5's
# add_thoughts, without which it writes no past thought; LFM2.5's preserve_thinking keeps every past turn's.
THINKING_ON = {"enable_thinking": True, "thinking": True, "add_thoughts": True, "preserve_thinking": True}


def _bare(text: str) -> str:
    return "".join(text.split())


@dataclass(frozen=True)
class MessageForm:
    """How a template wants an assistant's call turn and a past turn's reasoning."""

    null_call_content: bool = False  # a call turn's empty content as None (the template tests ``is none``)
    text_arguments: bool = False  # a call's arguments as JSON text (the template concatenates them)
    reasoning_key: str = REASONING  # the name the template reads a past turn's reasoning under
    reasoning_beside_content: bool = True  # False: a call turn's reasoning and content joined under reasoning_key
    reasoning_chunk: bool = False  # True: the reasoning also as a thinking chunk of the content, before its text
    # True: the template reads reasoning from no field but handles <think> blocks in the content itself (keeps the
    # last reply's, cuts earlier ones: LFM2.5-Instruct, QwQ, Nemotron Nano v2), so it gets them there
    # (prompting.reasoning_inline), not apart.
    reasoning_inline: bool = False
    # True: the template describes the tools only inside a system message (vLLM's FunctionGemma template), so a
    # request with tools and no system message gets an empty one (prompting.render_for_model).
    system_for_tools: bool = False

    def apply(self, message: dict[str, Any]) -> dict[str, Any]:
        """A copy of ``message`` in this form; any other ``content: null`` becomes ``""``. Its reasoning (at
        ``reasoning_content``, the API's name) is passed under ``reasoning_key`` too."""
        message = dict(message)
        calls = message.get("tool_calls")
        if reasoning := message.get(REASONING):
            if calls and message.get("content") and not self.reasoning_beside_content:
                # gpt-oss's: "Cannot pass both content and thinking in an assistant message with tool calls!";
                # it writes either as the turn's analysis, so both go there, reasoning first.
                reasoning = message[REASONING] = f"{reasoning}\n\n{message['content']}"
                message["content"] = ""
            message[self.reasoning_key] = reasoning
            if self.reasoning_chunk:  # Mistral's: content chunks [{"type": "thinking", ...}, {"type": "text", ...}]
                text = message.get("content")
                message["content"] = [{"type": "thinking", "thinking": reasoning}, *_text_chunks(text)]
        if self.null_call_content and calls and not message.get("content"):
            message["content"] = None
        elif message.get("content") is None:
            message["content"] = ""
        if self.text_arguments and calls:
            message["tool_calls"] = [_with_text_arguments(call) for call in calls]
        return message


def _text_chunks(text: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}] if isinstance(text, str) and text else []


def _with_text_arguments(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function")
    if not isinstance(function, dict) or isinstance(function.get("arguments"), str):
        return call
    return {**call, "function": {**function, "arguments": json.dumps(function.get("arguments"), ensure_ascii=False)}}


# In order of preference when several keep the call equally well: "" and objects are what vLLM gives templates.
FORMS = (MessageForm(), MessageForm(null_call_content=True), MessageForm(text_arguments=True), MessageForm(True, True))


@dataclass(frozen=True)
class TemplateChoice:
    """The engine a template is rendered with, why, and the message form it wants."""

    engine: str
    reason: str
    form: MessageForm = MessageForm()
    confined: bool = False  # the probes did not finish: every render runs in the helper process, bounded in time


@dataclass(frozen=True)
class ProbeJob:
    """The template worker's job of choosing (``choose``) for ``template``, bounded by the server's timeout."""

    template: ChatTemplate


@dataclass(frozen=True)
class Probe:
    """A conversation a request may render, and texts a rendering of it must not lose (whitespace ignored).

    A call's arguments and its result are also compared with the markup Jinja2 writes just before them: minja
    rewrites the calls and results of templates it thinks cannot write them in a JSON of its own (its polyfill),
    in place of the family's own markup (LFM2's and DeepSeek V3.2's, for two) that the model was trained on.
    """

    name: str
    messages: tuple[dict[str, Any], ...]
    marks: tuple[str, ...]
    tools: bool = False
    context: dict[str, Any] = field(default_factory=dict)


TOOL_DESCRIPTION = "Forecast for a city."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": TOOL_DESCRIPTION,
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "Name of the city."},
                    "days": {"type": "integer"},
                    "units": {
                        "type": "object",
                        "properties": {"temperature": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                    },
                },
                "required": ["city"],
            },
        },
    }
]
_USER = {"role": "user", "content": "What is the forecast?"}
_SYSTEM = {"role": "system", "content": "Answer briefly."}
_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": CALL_ID, "type": "function", "function": {"name": "get_weather", "arguments": ARGUMENTS}}],
}
_RESULT = {"role": "tool", "tool_call_id": CALL_ID, "name": "get_weather", "content": "Sunny all week."}
_THOUGHT = "Weighing the sky."
_REASONED = {"role": "assistant", REASONING: _THOUGHT, "content": "Take a hat."}
_THINKING_CALL = {**_CALL, REASONING: _THOUGHT}
_FOLLOW_UP = {"role": "user", "content": "And tomorrow?"}
_CALL_MARKS = (_bare(json.dumps(ARGUMENTS)), "Sunny all week.")
_PYTHON_ARGUMENTS = _bare(str(ARGUMENTS))  # {'city':'Paris','days':3}
ANCHORED = ("Paris", "Sunnyallweek.")  # in a call probe, compared with the markup before them
ANCHOR_CHARS = 12  # of markup before an anchored text (whitespace removed): a call's opening, a result's
CALL = Probe("call", (_USER, _CALL, _RESULT), ("What is the forecast?", *_CALL_MARKS), tools=True)
# A past turn's reasoning: in a reply before the next question, and in a call before its result (the only past
# reasoning gpt-oss's template writes).
REASONED = (
    Probe(
        "reasoning",
        (_USER, _REASONED, _FOLLOW_UP),
        (_THOUGHT, "Take a hat.", "And tomorrow?"),
        context={"enable_thinking": True},
    ),
    Probe(
        "reasoning-call",
        (_SYSTEM, _USER, _THINKING_CALL, _RESULT),
        (_THOUGHT, *_CALL_MARKS),
        tools=True,
        context={"enable_thinking": True},
    ),
)
# Tools offered with no system message, and beside an empty one (MessageForm.system_for_tools).
TOOLS_PLACES = (
    Probe("tools-alone", (_USER,), (TOOL_DESCRIPTION,), tools=True),
    Probe("tools-beside-empty-system", ({"role": "system", "content": ""}, _USER), (TOOL_DESCRIPTION,), tools=True),
)
# A reply with its <think> block in the content, as the last message and before later turns: a template that
# keeps the block in the one and cuts it from the other handles inline blocks itself (MessageForm.reasoning_inline).
_INLINE_ANSWER = "Take a hat."
_INLINE = {"role": "assistant", "content": f"{THINK.begin}{_THOUGHT}{THINK.end}{_INLINE_ANSWER}"}
_LATER = ({"role": "assistant", "content": "Rain."}, {"role": "user", "content": "Thanks."})
INLINE = (
    Probe("inline-last", (_USER, _INLINE), ()),
    Probe("inline-earlier", (_USER, _INLINE, _FOLLOW_UP, *_LATER), ()),
)
PROBES = (
    Probe("plain", (_USER,), ("What is the forecast?",)),
    Probe("system", (_SYSTEM, _USER), ("Answer briefly.", "What is the forecast?")),
    Probe("tools", (_SYSTEM, _USER), (TOOL_DESCRIPTION, "Name of the city.", "fahrenheit"), tools=True),
    CALL,
    REASONED[0],
    Probe(
        "no-thinking",
        (_USER, _REASONED, _FOLLOW_UP),
        ("Take a hat.", "And tomorrow?"),
        context={"enable_thinking": False},
    ),
    REASONED[1],
)


@dataclass(frozen=True)
class Outcome:
    """A probe's rendering (whitespace removed), or why it failed."""

    bare: str = ""
    error: str | None = None


def _attempt(template: ChatTemplate, render: Renderer, probe: Probe, form: MessageForm) -> Outcome:
    messages = [form.apply(message) for message in probe.messages]
    try:
        context = {**template.variables, **probe.context}
        text = render(template.text(tools=probe.tools), messages, TOOLS if probe.tools else None, context, True)
    except Exception as error:  # the template's refusal or the engine's failure: either is an outcome
        return Outcome(error=error_message(error))
    return Outcome(_bare(text))


def _call_kept(outcome: Outcome) -> int:
    """How well a rendering keeps the probe's call: 2 kept (as JSON or in the family's own dialect), 1 kept as a
    Python dict's text (minja's for an object a template concatenates), 0 lost, -1 not rendered."""
    if outcome.error is not None:
        return -1
    if _PYTHON_ARGUMENTS in outcome.bare:
        return 1
    return 2 if "Paris" in outcome.bare else 0


def best_form(template: ChatTemplate, render: Renderer) -> MessageForm:
    """The message form under which the template keeps a call turn best (the first such in FORMS: arguments stay
    an object unless the template cannot write one), with past reasoning where it reads it."""
    kept = [_call_kept(_attempt(template, render, CALL, form)) for form in FORMS]
    form = reasoning_form(template, render, FORMS[kept.index(max(kept))])
    return replace(
        form,
        reasoning_beside_content=_reasoning_beside_content(template, render, form),
        system_for_tools=_tools_need_system(template, render, form),
    )


def _tools_need_system(template: ChatTemplate, render: Renderer, form: MessageForm) -> bool:
    """True when the template describes the tools beside an empty system message but not without one (vLLM's
    FunctionGemma writes them inside the system turn only: a request without one would show the model none)."""
    alone, beside = (_attempt(template, render, probe, form) for probe in TOOLS_PLACES)
    described = _bare(TOOL_DESCRIPTION)
    return described not in alone.bare and beside.error is None and described in beside.bare


def _alone(form: MessageForm, probe: Probe) -> Probe:
    """``probe`` with its reasoning where ``form`` puts it and nowhere else, thinking switched on by every name
    templates read."""
    only_there = form.reasoning_key != REASONING or form.reasoning_chunk

    def placed(message: dict[str, Any]) -> dict[str, Any]:
        if REASONING not in message:
            return message
        message = form.apply(message)
        if only_there:
            del message[REASONING]
        return message

    return replace(probe, messages=tuple(placed(message) for message in probe.messages), context=THINKING_ON)


def reasoning_form(template: ChatTemplate, render: Renderer, form: MessageForm) -> MessageForm:
    """``form`` with past reasoning where the template writes it (in a reply before the next question, or a call
    before its result): under the first of REASONING_KEYS, else as a thinking chunk of the content (Mistral's);
    under REASONING when it writes it nowhere. The reasoning must show as text: a template that writes the
    message as JSON (quoting it) does not read it."""
    marker = _bare(_THOUGHT)
    candidates = [replace(form, reasoning_key=key) for key in REASONING_KEYS] + [replace(form, reasoning_chunk=True)]
    for candidate in candidates:
        for probe in REASONED:
            bare = _attempt(template, render, _alone(candidate, probe), candidate).bare
            if marker in bare and not any(quote + marker in bare for quote in "\"'"):
                return candidate
    last, earlier = (_attempt(template, render, probe, form) for probe in INLINE)
    if marker in last.bare and marker not in earlier.bare and _bare(_INLINE_ANSWER) in earlier.bare:
        return replace(form, reasoning_inline=True)
    return form


def _reasoning_beside_content(template: ChatTemplate, render: Renderer, form: MessageForm) -> bool:
    """False when the template refuses a call turn with both content and reasoning but renders it with reasoning
    alone (gpt-oss's ``raise_exception`` on content and thinking)."""
    call = REASONED[-1]
    both = replace(call, messages=tuple({**m, "content": "Let me look."} if m is _THINKING_CALL else m
                                        for m in call.messages))  # fmt: skip
    return (
        _attempt(template, render, both, form).error is None or _attempt(template, render, call, form).error is not None
    )


def choose(template: ChatTemplate, renderers: Mapping[str, Renderer]) -> TemplateChoice:
    """The engine (of ``renderers``: MINJA and JINJA2) and message form for ``template``, with the reason."""
    forms = {engine: best_form(template, render) for engine, render in renderers.items()}
    outcomes = {
        engine: {probe.name: _attempt(template, render, probe, forms[engine]) for probe in PROBES}
        for engine, render in renderers.items()
    }
    engine, reason = _engine(outcomes[MINJA], outcomes[JINJA2])
    return TemplateChoice(engine, reason, forms[engine])


def _rewritten(theirs: str, ours: str) -> str | None:
    """Jinja2's markup before a call's arguments or its result (``ANCHORED``), where minja writes other markup.

    Only where Jinja2 writes the call: a template that drops calls (Phi-4-mini's, Granite 3.3's) loses less
    with minja's JSON of them, the generic form llama.cpp also writes.
    """
    if ANCHORED[0] not in theirs:
        return None
    for anchor in ANCHORED:
        at = theirs.find(anchor)
        if at >= 0 and (written := theirs[max(0, at - ANCHOR_CHARS) : at + len(anchor)]) not in ours:
            return written
    return None


def _engine(minja: dict[str, Outcome], jinja: dict[str, Outcome]) -> tuple[str, str]:
    """minja unless Jinja2 renders a probe minja fails or keeps text of one that minja drops."""
    different = []
    for probe in PROBES:
        theirs, ours = jinja[probe.name], minja[probe.name]
        if theirs.error is not None:
            continue  # the template refuses this conversation itself: no ground to compare on
        if ours.error is not None:
            return JINJA2, f"minja fails the {probe.name} probe ({ours.error}); Jinja2 renders it"
        lost = [mark for mark in probe.marks if _bare(mark) in theirs.bare and _bare(mark) not in ours.bare]
        if lost:
            return JINJA2, f"minja drops {lost[0]!r} from the {probe.name} probe; Jinja2 keeps it"
        if probe.tools and (rewritten := _rewritten(theirs.bare, ours.bare)):
            return JINJA2, f"minja rewrites the {probe.name} probe's call markup: Jinja2 writes {rewritten!r}"
        if ours.bare != theirs.bare:
            different.append(probe.name)
    if all(outcome.error is not None for outcome in jinja.values()):
        first = next(iter(minja.values()))
        if first.error is not None:
            return MINJA, f"neither minja nor Jinja2 renders the probes (minja: {first.error})"
        return MINJA, "Jinja2 renders none of the probes"
    if different:
        return MINJA, f"minja renders the probes, keeping all Jinja2 keeps (the {', '.join(different)} probes differ)"
    return MINJA, "minja renders the probes as Jinja2 does, whitespace aside"

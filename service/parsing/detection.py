"""Which tool format a chat template speaks, found by rendering a known call through it.

A template shows its model's call format in two places: how it writes a past assistant call back into the
prompt (the model was trained on exactly that text), and what its system prompt tells the model to write.
Substrings of the template's source (the old way) confuse the two with anything else it mentions: Functionary
v3.1 and Seed-OSS were taken for Qwen3-Coder because ``<function=`` appears in their sources, Apriel for Hermes
because its instructions mention ``<tool_call>`` although it writes ``<tool_calls>[...]``.

So at load the template renders a conversation holding one known call (``get_weather`` with ``{"city": "Paris",
"days": 3}``), and every registered format writes that same call in its own markup (``written_call``); the
format whose writing appears in the rendering, longest first, is the template's (whitespace and quote style
ignored: templates differ there, parsers do not care). A template that renders no call it knows falls back to
what it tells the model to write (the markup substrings of ``formats.TEMPLATE_TOOL_MARKUP``, looked for in the
prompt it renders with tools offered, then in its source), and one that shows no format at all gets the generic
format (``formats_generic``), under which forced calls still work. The evidence for the choice is kept and
shown in the model's listing, so a wrong guess can be seen and overridden with ``--tool-parser``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ovserve.service.parsing.markup import TAGGED_ARGUMENTS, CallMarkup, ThinkMarkup

PROBE_NAME = "get_weather"
PROBE_ARGUMENTS: dict[str, Any] = {"city": "Paris", "days": 3}
PROBE_CALL_ID = "call00001"  # nine letters and digits: Mistral's templates refuse any other form of id
PROBE_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": PROBE_NAME,
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]
# Render(history, tools, context) -> the prompt text; raises when the template refuses the conversation.
Render = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any]], str]
_SPACE = re.compile(r"\s+")
MIN_MARKUP_CHARS = 3  # a writing whose markup (besides the name and arguments) is shorter proves nothing


@dataclass(frozen=True)
class Found:
    """A format recognised in a template, and why (shown in the model's listing)."""

    name: str
    evidence: str


def probe_history(content: str | None, arguments: dict[str, Any] | str = PROBE_ARGUMENTS) -> list[dict[str, Any]]:
    """A conversation in which the assistant called ``get_weather`` once and the tool answered.

    ``content``: the calling turn's content, None as OpenAI's API has it or "" (templates differ in which
    they write the call for); ``arguments``: an object, as most templates take them, or its JSON text, as
    some (DeepSeek-R1-Distill's) concatenate them. The caller tries each.
    """
    call = {"id": PROBE_CALL_ID, "type": "function", "function": {"name": PROBE_NAME, "arguments": arguments}}
    return [
        {"role": "user", "content": "What is the weather like there?"},  # no argument in it: see renders_calls
        {"role": "assistant", "content": content, "tool_calls": [call]},
        # Named for its call's function, as the server passes a tool result (ovserve.service.api.prompting).
        {"role": "tool", "tool_call_id": PROBE_CALL_ID, "name": PROBE_NAME, "content": "Sunny, 24 degrees."},
    ]


REASONING = "reasoning_content"  # the API's name of a past turn's reasoning
# The names templates read it under, in order of preference: the API's, OpenRouter's and newer vLLM's (Laguna,
# Cohere2MoE), gpt-oss's and LFM2.5's, MiniCPM3's and Apriel 1.5's. Which one a template reads is found by
# rendering (ovserve.service.engine.template_probe); requests pass the reasoning under it too.
REASONING_KEYS = (REASONING, "reasoning", "thinking", "thought")
PROBE_THOUGHT = "Checking the sky for Paris"  # a past turn's reasoning, to see how the template writes it
THINKING_ON = {"enable_thinking": True, "thinking": True}  # the switch under the published templates' names


def reasoning_history() -> list[dict[str, Any]]:
    """A question and the assistant's answer with its reasoning (last, where templates keep reasoning), under
    every name templates read it by, as requests pass it under the template's own (template_probe.MessageForm)."""
    reasoning = dict.fromkeys(REASONING_KEYS, PROBE_THOUGHT)
    return [
        {"role": "user", "content": "What is the weather like?"},
        {"role": "assistant", "content": "Sunny.", **reasoning},
    ]


def rendered_reasoning(render: Render) -> list[str]:
    """The reasoning probe as the template renders it, thinking on (those renderings that succeed)."""
    renderings = []
    for context in (THINKING_ON, {}):
        try:
            renderings.append(render(reasoning_history(), None, context))
        except Exception:  # a template that refuses the probe shows nothing
            continue
    return renderings


def by_rendered_reasoning(blocks: Iterable[tuple[str, ThinkMarkup]], renderings: list[str]) -> Found | None:
    """The reasoning format whose block around the probe's reasoning the template writes (the longest found
    wins; on a tie, the first listed); None when none is found."""
    best: tuple[int, str, str] | None = None
    normal = [_normal(text) for text in renderings]
    for name, think in blocks:
        for begin, end in ((begin, end) for begin in think.begins for end in think.ends):
            writing = _normal(begin + PROBE_THOUGHT + end)
            if any(writing in text for text in normal) and (best is None or len(writing) > best[0]):
                best = (len(writing), name, begin + PROBE_THOUGHT + end)
    if best is None:
        return None
    _, name, text = best
    return Found(name, f"the template writes past reasoning as {name} does: {_clipped(text)}")


def by_thinking_switch(name: str, render: Render) -> Found | None:
    """``name`` (the commonest block, ``<think>...</think>``) for a template that shows no reasoning markup but
    writes another prompt with thinking switched on (Cogito's "Enable deep thinking subroutine." system line):
    its model writes a block the template never shows (vLLM serves Cogito with deepseek_r1, that block). None
    when the prompt is the same either way, or the template refuses the question."""
    question = [{"role": "user", "content": "What is the weather like?"}]
    try:
        on, off = (render(question, None, context) for context in (THINKING_ON, dict.fromkeys(THINKING_ON, False)))
    except Exception:  # a template that refuses the probe shows nothing
        return None
    if on == off:
        return None
    return Found(name, "the template shows no reasoning markup but switches thinking on (its prompt changes with "
                       f"enable_thinking): the commonest block, {name}'s")  # fmt: skip


PROBE_ANSWER = "Sunny."  # the past reply's answer, which a template that strips the reasoning block keeps
LATER_TURNS = (
    {"role": "user", "content": "And tomorrow?"},
    {"role": "assistant", "content": "Rain."},
    {"role": "user", "content": "Thanks."},
)


def by_stripped_reasoning(blocks: Iterable[tuple[str, ThinkMarkup]], render: Render) -> Found | None:
    """The reasoning format whose block the template cuts out of a past reply's content, keeping the answer:
    templates that render no ``reasoning_content`` (DeepSeek-R1's and QwQ's first releases) still show their
    model's block that way (they split the reply at its end tag). The longest block wins (on a tie, the first
    listed); None when the template cuts none (or drops the reply, or refuses the probe)."""
    best: tuple[int, str, str] | None = None
    tried: set[tuple[str, str]] = set()
    for name, think in blocks:
        for begin, end in ((begin, end) for begin in think.begins for end in think.ends):
            if (begin, end) in tried or (best is not None and len(begin + end) <= best[0]):
                continue
            tried.add((begin, end))
            reply = begin + PROBE_THOUGHT + end + PROBE_ANSWER
            # A question and a reply after the reply: some templates cut the block only from turns before the last
            # question (Qwen3), others only from replies before the last reply (LFM2.5-Instruct).
            history = [reasoning_history()[0], {"role": "assistant", "content": reply}, *LATER_TURNS]
            try:
                rendered = render(history, None, {})
            except Exception:  # a template that refuses the probe shows nothing
                continue
            if PROBE_ANSWER in rendered and PROBE_THOUGHT not in rendered:
                best = (len(begin + end), name, reply)
    if best is None:
        return None
    _, name, text = best
    return Found(name, f"the template cuts a past reply's reasoning out as {name} writes it: {_clipped(text)}")


def written_arguments(markup: CallMarkup, arguments: dict[str, Any]) -> str:
    """``arguments`` as ``markup``'s dialect writes them (JSON, Python keywords, or tagged members)."""
    if markup.arguments == "python":
        return ", ".join(f"{key}={_python_literal(value)}" for key, value in arguments.items())
    if markup.arguments in TAGGED_ARGUMENTS:
        return TAGGED_ARGUMENTS[markup.arguments].write(arguments)
    return json.dumps(arguments, ensure_ascii=False)


def _python_literal(value: Any) -> str:
    """A JSON value as a Python literal: True, False and None by name, strings and numbers as JSON writes them."""
    return repr(value) if value is None or isinstance(value, bool) else json.dumps(value, ensure_ascii=False)


def written_call(markup: CallMarkup, name: str = PROBE_NAME, arguments: dict[str, Any] | None = None) -> str:
    """One call of ``name`` with ``arguments`` as a list of one call in ``markup``: what a model of that format
    writes, and what the forced-call grammar makes it write."""
    return written_calls(markup, [(name, PROBE_ARGUMENTS if arguments is None else arguments)])


def written_calls(markup: CallMarkup, calls: list[tuple[str, dict[str, Any]]]) -> str:
    """A list of calls (function name, arguments) as ``markup`` writes it."""
    written = (
        markup.begin(name, index) + written_arguments(markup, arguments) + markup.call_end
        for index, (name, arguments) in enumerate(calls)
    )
    return markup.opening + markup.separator.join(written) + markup.closing


def renders_calls(renderings: list[str]) -> bool:
    """Whether the template writes a past call at all, in any form but minja's polyfill: the probe's argument
    value appears in a rendering (the probe's other messages do not hold it)."""
    value = _normal(PROBE_ARGUMENTS["city"])
    return any(value in text for text in map(_normal, renderings) if not polyfilled(text))


def _normal(text: str) -> str:
    """Text compared with whitespace dropped and one quote style (templates differ there, parsers do not)."""
    return _SPACE.sub("", text).replace("'", '"')


def _markup_length(markup: CallMarkup, name: str) -> int:
    return len(_normal(markup.opening + markup.begin(name, 0)).replace(name, "", 1))


def _score(markup: CallMarkup, rendered: str) -> int:
    """How much of ``markup``'s writing of the probe call appears in ``rendered`` (normalised): its opening,
    the call's head and arguments, and its end when that follows too; 0 when the head and arguments do not."""
    if _markup_length(markup, PROBE_NAME) < MIN_MARKUP_CHARS:
        return 0
    head = _normal(markup.opening + markup.begin(PROBE_NAME, 0) + written_arguments(markup, PROBE_ARGUMENTS))
    at = rendered.find(head)
    if at < 0:
        return 0
    tail = _normal(markup.call_end + markup.closing)
    return len(head) + (len(tail) if tail and rendered.startswith(tail, at + len(head)) else 0)


def rendered_calls(render: Render) -> list[str]:
    """The probe conversation as the template renders it, with the calling turn's content None and "", its
    arguments an object and a JSON text (those that render; a template may refuse some)."""
    renderings = []
    for content in (None, ""):
        for arguments in (PROBE_ARGUMENTS, json.dumps(PROBE_ARGUMENTS)):
            try:
                renderings.append(render(probe_history(content, arguments), PROBE_TOOLS, {}))
            except Exception:  # a template that refuses this form is tried with the others
                continue
    return renderings


def rendered_tools_prompt(render: Render) -> str:
    """The prompt the template writes for a question with the probe tool offered ("" if it refuses): what it
    tells the model to write."""
    try:
        return render(probe_history(None)[:1], PROBE_TOOLS, {})
    except Exception:  # a template that cannot render tools tells the model nothing
        return ""


# How minja (openvino_genai's template engine) writes a past call into a template it believes cannot render one
# (its "polyfill"): a JSON object in the message's content, whatever the model's own format.
_POLYFILL = _normal(json.dumps({"tool_calls": [{"name": PROBE_NAME, "arguments": PROBE_ARGUMENTS}]})[:-3])


def polyfilled(rendering: str) -> bool:
    """Whether a (normalised) rendering of the probe conversation holds minja's own writing of the call, not
    the template's: it shows nothing of the model's format."""
    return _POLYFILL in rendering


def by_rendered_call(writings: Iterable[tuple[str, CallMarkup | str]], renderings: list[str]) -> Found | None:
    """The format whose writing of the probe call the template's rendering holds: ``writings`` pairs a format's
    name with its markup (whose writing is ``written_call``'s) or a literal writing of the probe call. The
    longest match wins (on a tie, the first listed); None when none is found."""
    best: tuple[int, str, str] | None = None
    normal = [text for text in map(_normal, renderings) if not polyfilled(text)]
    for name, writing in writings:
        if isinstance(writing, str):
            literal = _normal(writing)
            score = len(literal) if any(literal in text for text in normal) else 0
        else:
            score = max((_score(writing, text) for text in normal), default=0)
        if score and (best is None or score > best[0]):
            best = (score, name, writing if isinstance(writing, str) else written_call(writing))
    if best is None:
        return None
    _, name, text = best
    return Found(name, f"the template writes a past call as {name} does: {_clipped(text)}")


def _clipped(text: str, limit: int = 120) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def by_markup(table: Iterable[tuple[str | tuple[str, ...], str]], texts: Iterable[tuple[str, str]]) -> Found | None:
    """The first entry of ``table`` whose markup one of ``texts`` (where, text) holds, in order of ``texts``."""
    for where, text in texts:
        for markup, name in table:
            parts = (markup,) if isinstance(markup, str) else markup
            if all(part in text for part in parts):
                return Found(name, f"{where} mentions {' and '.join(repr(part) for part in parts)}")
    return None

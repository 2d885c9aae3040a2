"""Probe published chat templates as a new user would meet them: each served as the template of a copy of tiny-chat.

A dev tool (issue 44), not run by CI. Usage, from the repository root::

    .venv/bin/python tools/family_probe.py [DIR_OR_TEMPLATE ...] [--batch 8] [--workers 4] [--only SUBSTRING]

Default: the vendored llama.cpp set (/work/vendor/models/templates) and tests/data/chat_templates, each
directory its own table. Every ``*.jinja`` becomes the ``chat_template.jinja`` of a copy of the bundled tiny-chat
(its other files linked, not copied; a ``NAME.tokenizer_config.json`` beside ``NAME.jinja`` is merged into the
copy's tokenizer_config.json); one ovserve (gRPC server and REST bridge, in this process) serves a batch
of them at a time, each with a small KV cache, so memory stays bounded whatever the number of templates. Per
template, the cells are:

- plain: a chat completion without tools answers 200;
- tools: with tools offered, the prompt the server rendered holds both tool names and a parameter name;
- history: an OpenAI-style history (the assistant's ``content: null`` and ``tool_calls`` with the id the server
  gave a forced call, then the tool's message) answers 200, and the rendered prompt holds the call's arguments
  and the tool's result;
- forced: ``tool_choice: "required"`` and a named tool give valid ``tool_calls`` (names offered, arguments valid
  for the tool's schema), unary; forced_stream: the same, streamed (deltas joined);
- native: the template's own rendering of a known assistant call (a history rendered by the server's renderer,
  no model output involved), cut to the assistant's turn and fed to the tool parser ``GET /v3/models/{id}``
  reports (``OutputFormat``), gives the call back;
- reasoning: for a template with a reasoning mode, a past assistant message with ``reasoning_content``
  rendered likewise, fed to the reported reasoning parser, gives the reasoning back apart from the content.

The prompts the server renders are observed by wrapping ``Engine.render_chat`` (the one method every request's
rendering goes through) in this process. A cell is ``ok``, ``FAIL`` (the first line of why is listed under the
table), ``-`` (does not apply) or ``skip`` (could not be measured; why is listed too). Nothing here judges the
tiny model's words: it is a random model, so only what the server guarantees (markup, grammar, parsing) is
checked.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's packages, not an installed copy

import httpx  # noqa: E402
import jsonschema  # noqa: E402
import openai  # noqa: E402

from ovserve.service.api import prompting  # noqa: E402
from ovserve.service.api.prefill import Prefill  # noqa: E402
from ovserve.service.engine import EngineSettings  # noqa: E402
from ovserve.service.engine.engine import Engine  # noqa: E402
from ovserve.service.models import ModelSpec  # noqa: E402
from ovserve.service.parsing import OutputFormat, detection  # noqa: E402
from ovserve.service.parsing.formats import REASONING_PARSERS  # noqa: E402
from tests.conftest import TINY_CHAT  # noqa: E402
from tests.families.tools import ASK, SCHEMAS, TOOLS  # noqa: E402
from tests.rest_bridge.conftest import RunningBridge, served_with_bridge  # noqa: E402

DIRECTORIES = (Path("/work/vendor/models/templates"), ROOT / "tests" / "data" / "chat_templates")
# Beside a template, what its model's tokenizer_config.json adds to tiny-chat's (the special tokens a template reads:
# GigaChat-20B's additional_special_tokens).
TOKENIZER_CONFIG_SUFFIX = ".tokenizer_config.json"
CELLS = ("plain", "tools", "history", "forced", "forced_stream", "native", "reasoning")
# A small KV cache and few sequences each: a batch of engines shares the machine.
SETTINGS = EngineSettings(max_num_seqs=4, kv_cache_blocks=512, grammar_timeout_s=60)
# The copies' context: published system prompts with tools run past tiny-chat's 2,048 tokens in its small
# vocabulary (Devstral's alone is 3,000), and its rotary positions are computed in the graph, not tabled.
MAX_MODEL_LEN = 16_384
# The known call of the history and native cells: values the question and the tools do not contain.
KNOWN_ARGUMENTS = {"city": "Kyoto", "unit": "fahrenheit"}
TOOL_RESULT = "drizzle, 14 F"
FOREIGN_ID = "call_8f2c1e0b9a7d4c3e2f1a0b9c"  # OpenAI's form, for when no forced call gave one
THOUGHT, REPLY = "Pondering the clouds", "Rain is likely."
# What turns reasoning on, under each template's own name for it (as the server sets it from reasoning_effort).
THINKING = {"enable_thinking": True, "thinking": True, "reasoning_effort": "high"}
# What in a template's source says it has a reasoning mode, when the server found no reasoning parser for it.
REASONING_WORDS = ("reasoning_content", "enable_thinking", "<think>", "thinking")
# Room for "required"'s up to 8 calls (ovserve.service.structured.output.MAX_PARALLEL_CALLS) in tiny-chat's small
# vocabulary, where a call is ~100 tokens: a list cut by max_tokens ends with "length", not "tool_calls".
GREEDY: dict[str, Any] = {"temperature": 0, "max_tokens": 2400}
TURN_MARK = "Q7ZMARK"  # an assistant reply whose rendering shows what the template writes after a turn
NEXT_MARK = "Q8ZNEXT"  # a user turn after it

log = logging.getLogger("family_probe")


class Skip(Exception):
    """The cell could not be measured (the reason is reported, not counted as a failure)."""


class NotApplicable(Exception):
    """The cell does not apply to this template."""


@dataclass
class Result:
    """One template's row."""

    template: str
    tool_parser: str = "?"
    reasoning_parser: str = "?"
    engine: str = "?"
    cells: dict[str, str] = field(default_factory=dict)  # cell -> "ok", "FAIL", "-", "skip"
    notes: dict[str, str] = field(default_factory=dict)  # cell -> first line of why


# --- the prompts the server renders --------------------------------------------------------------------------

_RENDERED: dict[str, str] = {}
_LOCK = threading.Lock()


def observe_renders() -> None:
    """Record each engine's last rendered prompt (by model name), wrapping ``Engine.render_chat`` once."""
    original = Engine.render_chat
    if getattr(original, "_probe", False):
        return

    def recording(self: Engine, *args: Any, **kwargs: Any) -> str:
        text = original(self, *args, **kwargs)
        with _LOCK:
            _RENDERED[self.name] = text
        return text

    recording._probe = True  # type: ignore[attr-defined]
    Engine.render_chat = recording  # type: ignore[method-assign]


def last_prompt(name: str) -> str:
    """The last prompt the server rendered for model ``name`` (forgotten once read)."""
    with _LOCK:
        text = _RENDERED.pop(name, None)
    if text is None:
        raise Skip("the server rendered no prompt for it (Engine.render_chat not called)")
    return text


def forget_prompt(name: str) -> None:
    with _LOCK:
        _RENDERED.pop(name, None)


# --- serving ---------------------------------------------------------------------------------------------------


def stage(templates: list[Path], scratch: Path) -> dict[str, Path]:
    """A copy of tiny-chat per template (files linked, the template written as chat_template.jinja): name -> dir."""
    staged = {}
    for template in templates:
        directory = scratch / template.stem
        directory.mkdir()
        for item in TINY_CHAT.iterdir():
            if item.name != "chat_template.jinja":
                (directory / item.name).symlink_to(item)
        config = json.loads((TINY_CHAT / "config.json").read_text(encoding="utf-8"))
        config["max_position_embeddings"] = MAX_MODEL_LEN
        (directory / "config.json").unlink()
        (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
        (directory / "chat_template.jinja").write_text(template.read_text(encoding="utf-8"), encoding="utf-8")
        if (extra := template.with_suffix(TOKENIZER_CONFIG_SUFFIX)).is_file():
            tokenizer_config = json.loads((TINY_CHAT / "tokenizer_config.json").read_text(encoding="utf-8"))
            tokenizer_config.update(json.loads(extra.read_text(encoding="utf-8")))
            (directory / "tokenizer_config.json").unlink()
            (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer_config), encoding="utf-8")
        staged[template.stem] = directory
    return staged


@contextlib.contextmanager
def serving(models: dict[str, Path]) -> Iterator[RunningBridge]:
    """One ovserve with a bridge, serving ``models`` (name -> directory)."""
    specs = [ModelSpec(name, path, settings=SETTINGS) for name, path in models.items()]
    with served_with_bridge(specs) as running:
        yield running


def served_model(running: RunningBridge, name: str) -> Any:
    """The server's own ServedModel of ``name``."""
    for model in running.server.server.registry:
        if model.name == name:
            return model
    raise Skip(f"the server holds no model {name!r}")


# --- the cells -------------------------------------------------------------------------------------------------


def first_line(error: BaseException | str) -> str:
    """The first non-empty line of an error (an HTTP error's message from its body where there is one)."""
    text = str(error)
    if isinstance(error, openai.APIStatusError):
        try:
            text = f"HTTP {error.status_code}: {error.response.json()['error']['message']}"
        except Exception:
            text = f"HTTP {error.status_code}: {error.response.text}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = lines[0] if lines else type(error).__name__
    return line if len(line) <= 300 else line[:297] + "..."


def check_calls(calls: list[tuple[str, str]], only: str | None = None) -> None:
    """Each call names an offered tool (``only``'s, if given) and its arguments are valid for it."""
    if not calls:
        raise AssertionError("no tool calls")
    for name, arguments in calls:
        if name not in SCHEMAS or (only and name != only):
            raise AssertionError(f"a call of {name!r}")
        try:
            jsonschema.validate(json.loads(arguments), SCHEMAS[name])
        except (ValueError, jsonschema.ValidationError) as error:
            raise AssertionError(f"{name} arguments {arguments!r}: {first_line(error)}") from None


class Probe:
    """The cells of one served template."""

    def __init__(self, running: RunningBridge, client: openai.OpenAI, name: str, source: str) -> None:
        self.running, self.client, self.name, self.source = running, client, name, source
        self.call_id: str | None = None  # the id the server gave a forced call

    def chat(self, **request: Any) -> Any:
        return self.client.chat.completions.create(model=self.name, **{**GREEDY, **request})

    def plain(self) -> None:
        choice = self.chat(messages=ASK, max_tokens=8).choices[0]
        if choice.message.role != "assistant":
            raise AssertionError(f"role {choice.message.role!r}")

    def tools(self) -> None:
        forget_prompt(self.name)
        self.chat(messages=ASK, tools=TOOLS, max_tokens=1)
        prompt = last_prompt(self.name)
        missing = [word for word in ("get_weather", "set_alarm", "city") if word not in prompt]
        if missing:
            raise AssertionError(f"the rendered prompt lacks {', '.join(missing)}")

    def forced(self) -> None:
        choice = self.chat(messages=ASK, tools=TOOLS, tool_choice="required").choices[0]
        calls = [(call.function.name, call.function.arguments) for call in choice.message.tool_calls or []]
        if choice.finish_reason != "tool_calls" or not calls:
            # A prompt that opens a reasoning block leaves the reasoning free before the call: a random model that
            # never closes it reasons to max_tokens (worth telling apart from a call list that runs on).
            thought = choice.message.model_dump().get("reasoning_content") or ""
            raise AssertionError(f"finish_reason {choice.finish_reason}, no calls; reasoning {len(thought)} chars, "
                                 f"content {choice.message.content!r}")  # fmt: skip
        check_calls(calls)
        self.call_id = (choice.message.tool_calls or [])[0].id
        named = {"type": "function", "function": {"name": "set_alarm"}}
        choice = self.chat(messages=ASK, tools=TOOLS, tool_choice=named).choices[0]
        calls = [(call.function.name, call.function.arguments) for call in choice.message.tool_calls or []]
        if not calls:
            raise AssertionError(f"named: finish_reason {choice.finish_reason}, content {choice.message.content!r}")
        check_calls(calls, only="set_alarm")

    def forced_stream(self) -> None:
        joined: dict[int, dict[str, str]] = {}
        finish, content = [], ""
        for chunk in self.chat(messages=ASK, tools=TOOLS, tool_choice="required", stream=True):
            for choice in chunk.choices:
                content += choice.delta.content or ""
                for call in choice.delta.tool_calls or []:
                    entry = joined.setdefault(call.index, {"name": "", "arguments": ""})
                    if call.function and call.function.name:
                        entry["name"] += call.function.name
                    if call.function and call.function.arguments:
                        entry["arguments"] += call.function.arguments
                if choice.finish_reason:
                    finish.append(choice.finish_reason)
        if finish != ["tool_calls"] or content:
            raise AssertionError(f"finish {finish}, content {content[:80]!r}")
        check_calls([(entry["name"], entry["arguments"]) for _, entry in sorted(joined.items())])

    def history(self) -> None:
        call_id = self.call_id or FOREIGN_ID
        call = {"id": call_id, "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps(KNOWN_ARGUMENTS)}}  # fmt: skip
        messages = [*ASK, {"role": "assistant", "content": None, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": call_id, "content": TOOL_RESULT}]  # fmt: skip
        forget_prompt(self.name)
        self.chat(messages=messages, tools=TOOLS, max_tokens=1)
        prompt = last_prompt(self.name)
        missing = [value for value in (*KNOWN_ARGUMENTS.values(), TOOL_RESULT) if value not in prompt]
        if missing:
            where = "" if self.call_id else " (no forced call gave an id: OpenAI's form sent)"
            raise AssertionError(f"the rendered prompt lacks {', '.join(map(repr, missing))}{where}")

    def listing(self) -> dict[str, Any]:
        reply = httpx.get(f"{self.running.url}/models/{self.name}", timeout=30)
        reply.raise_for_status()
        return dict(reply.json())

    def turn(self, assistant: dict[str, Any], context: dict[str, Any], followed: bool = False) -> tuple[str, str]:
        """The server's rendering of ``assistant`` after ASK, cut to what the model itself writes (less the header
        and the ending the template writes around any assistant turn), and the rendering before it.

        Arguments go in as the server passes them to templates: a JSON object, not OpenAI's string."""
        model = served_model(self.running, self.name)

        def render(history: list[dict[str, Any]], generation: bool) -> str:
            try:
                return str(prompting.render_for_model(model, history, TOOLS, context, field="messages",
                                                      prefill=Prefill(generation_prompt=generation)))  # fmt: skip
            except Exception as error:
                raise AssertionError(f"render: {first_line(error)}") from None

        # ``followed``: a user turn after it, for templates that write more after a last assistant turn (Command R+
        # its instructions); not for reasoning, which most templates keep only in turns after the last question.
        after = [{"role": "user", "content": NEXT_MARK}] if followed else []
        whole = render([*ASK, assistant, *after], False)
        marked = render([*ASK, {"role": "assistant", "content": TURN_MARK}, *after], False)
        if followed:
            whole, marked = whole.partition(NEXT_MARK)[0], marked.partition(NEXT_MARK)[0]
        # What the two renderings share is the prompt up to where the model writes (the turn's header with it);
        # what the template writes after the marker ends any turn, and is no part of what the model writes.
        start = shared_prefix(whole, marked)
        # Where the template writes the generation prompt as the turn's opening, the model writes what follows it:
        # no further (gpt-oss's "<|start|>assistant"; both past turns go on with "<|channel|>"), and no less (vLLM's
        # Llama 4 JSON template opens a call turn, and the generation prompt, with a newline a reply turn lacks).
        opening = render(ASK, True)
        if whole.startswith(opening):
            start = len(opening)
        # Not inside a tag both open alike (Command R's <|START_ACTION|> and <|START_RESPONSE|>): before it.
        opened = max(whole.rfind("<", 0, start), whole.rfind("[", 0, start))
        if opened >= 0 and not any(close in whole[opened:start] for close in ">]"):
            start = opened
        text, tail = whole[start:], whole[:start]
        ending = marked.partition(TURN_MARK)[2].strip()
        # The ending, or the longest end of it the call turn writes (Command R+ ends a call turn with no
        # end-of-turn token before the next turn's header), cut where a tag starts; a few characters prove nothing.
        for size in range(len(ending), min(len(ending), 8) - 1, -1) if ending else ():
            if (size == len(ending) or ending[-size] in "<[") and text.rstrip().endswith(ending[-size:]):
                text = text.rstrip()[:-size]
                break
        return text, tail

    def native(self, tool_parser: str | None, reasoning_parser: str | None) -> None:
        call = {"id": FOREIGN_ID, "type": "function", "function": {"name": "get_weather", "arguments": KNOWN_ARGUMENTS}}
        assistant = {"role": "assistant", "content": None, "tool_calls": [call]}
        try:
            text, tail = self.turn(assistant, {})
        except AssertionError:  # a template that refuses a last assistant turn ("Most recent message must come
            text, tail = self.turn(assistant, {}, followed=True)  # from user!", InternLM-20B's): one after it
        if not all(value in text for value in KNOWN_ARGUMENTS.values()):
            raise NotApplicable(f"the template writes no past call (its turn: {text[:60]!r})")
        if tool_parser is None:
            raise AssertionError(f"no tool parser, and the template writes calls as {text.strip()[:80]!r}")
        chosen = OutputFormat(tool_parser=tool_parser, reasoning_parser=reasoning_parser)  # both, as the server reads
        known = [("get_weather", KNOWN_ARGUMENTS)]
        got = self.read_call(chosen, text, tail)
        if got != known:
            # The turn as it reads with a user turn after it (Command R+ writes its instructions after a last one).
            with contextlib.suppress(AssertionError):
                if self.read_call(chosen, *self.turn(assistant, {}, followed=True)) == known:
                    return
            # A template that never reads tool_calls writes none itself: what shows is the server's or minja's.
            whose = "" if "tool_calls" in self.source else " (not the template's writing: it reads no tool_calls)"
            raise AssertionError(f"{tool_parser} read {got} from {text.strip()[:100]!r}{whose}")

    @staticmethod
    def read_call(chosen: OutputFormat, text: str, tail: str) -> list[tuple[str, Any]]:
        """The calls ``chosen`` reads from ``text`` after a prompt ending in ``tail`` (fed in small deltas)."""
        turn = feed(chosen.parser(prompt_tail=tail[-200:], schemas=SCHEMAS), text)
        return [(call.name, json.loads(call.arguments or "null")) for call in turn.calls]

    def reasoning(self, reasoning_parser: str | None) -> None:
        cut = self.cut_block()
        if reasoning_parser is None and cut is None and not any(word in self.source for word in REASONING_WORDS):
            raise NotApplicable("no reasoning mode")
        assistant = {"role": "assistant", "content": REPLY, "reasoning_content": THOUGHT}
        text, tail = self.turn(assistant, THINKING)
        if THOUGHT not in text and cut is not None:
            # The template drops reasoning_content but cuts its model's block out of a past reply: that block.
            text = cut[0] + THOUGHT + cut[1] + REPLY
        elif THOUGHT not in text:
            raise Skip(f"the template does not render a past turn's reasoning_content ({text.strip()[:60]!r})")
        if reasoning_parser is None:
            raise AssertionError(f"no reasoning parser, and the template writes reasoning as {text.strip()[:80]!r}")
        chosen = OutputFormat(reasoning_parser=reasoning_parser)
        turn = feed(chosen.parser(prompt_tail=tail[-200:], tools=False), text)
        if turn.reasoning.strip() != THOUGHT or REPLY not in turn.content:
            raise AssertionError(f"{reasoning_parser} split {turn.reasoning!r} / {turn.content!r} from {text!r}")

    def cut_block(self) -> tuple[str, str] | None:
        """The reasoning block (begin, end), of those the registered formats write, that the template cuts out of
        a past reply's content, keeping the answer (DeepSeek-R1's first template); the longest; None if none."""
        model = served_model(self.running, self.name)
        pairs = {(begin, end) for think in REASONING_PARSERS.values() for begin in think.begins for end in think.ends}
        cut = []
        for begin, end in sorted(pairs):  # in order: the first longest wins, every run alike
            reply = {"role": "assistant", "content": begin + THOUGHT + end + REPLY}
            history = [*ASK, reply, *detection.LATER_TURNS]  # LFM2.5-Instruct cuts only before a later reply
            try:
                rendered = str(prompting.render_for_model(model, history, None, {}, field="messages"))
            except Exception:  # a template that refuses the conversation shows nothing
                continue
            if REPLY in rendered and THOUGHT not in rendered:
                cut.append((begin, end))
        return max(cut, key=lambda pair: len(pair[0] + pair[1]), default=None)


def shared_prefix(first: str, second: str) -> int:
    """How many characters the two texts share from their start."""
    return next(
        (i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b), min(len(first), len(second))
    )


def feed(parser: Any, text: str) -> Any:
    """The parsed turn of ``text`` fed in small deltas (as a stream arrives), then finished."""
    for start in range(0, len(text), 3):
        parser.feed(text[start : start + 3])
    parser.finish()
    return parser.result


def probe_one(running: RunningBridge, client: openai.OpenAI, name: str, source: str) -> Result:
    """Every cell of one served template."""
    result = Result(name)
    probe = Probe(running, client, name, source)
    try:
        listed = probe.listing()
        result.tool_parser = listed.get("tool_parser") or "none"
        result.reasoning_parser = listed.get("reasoning_parser") or "none"
        result.engine = str(served_model(running, name).engine.template_engine)
    except Exception as error:
        result.notes["listing"] = first_line(error)
    tool = None if result.tool_parser in ("none", "?") else result.tool_parser
    reasoning = None if result.reasoning_parser in ("none", "?") else result.reasoning_parser
    steps: dict[str, Callable[[], None]] = {
        "plain": probe.plain,
        "tools": probe.tools,
        "forced": probe.forced,  # before history: it gives the history its call id
        "forced_stream": probe.forced_stream,
        "history": probe.history,
        "native": lambda: probe.native(tool, reasoning),
        "reasoning": lambda: probe.reasoning(reasoning),
    }
    for cell, step in steps.items():
        try:
            step()
            result.cells[cell] = "ok"
        except NotApplicable:
            result.cells[cell] = "-"
        except Skip as why:
            result.cells[cell], result.notes[cell] = "skip", first_line(why)
        except Exception as error:  # a probe reports every fault, whatever it is
            result.cells[cell], result.notes[cell] = "FAIL", first_line(error)
    return result


def probe_batch(templates: list[Path], workers: int) -> list[Result]:
    """One server for the batch; every template probed (``workers`` at a time)."""
    with tempfile.TemporaryDirectory(prefix="family-probe-") as scratch:
        models = stage(templates, Path(scratch))
        sources = {template.stem: template.read_text(encoding="utf-8") for template in templates}
        try:
            with serving(models) as running, openai.OpenAI(
                base_url=running.url, api_key="unused", max_retries=0, timeout=180
            ) as client, ThreadPoolExecutor(max_workers=workers) as pool:  # fmt: skip
                return list(pool.map(lambda name: probe_one(running, client, name, sources[name]), models))
        except Exception as error:
            if len(templates) == 1:
                failed = Result(templates[0].stem, cells=dict.fromkeys(CELLS, "FAIL"))
                failed.notes = dict.fromkeys(CELLS, f"serving: {first_line(error)}")
                return [failed]
            log.warning("the batch would not serve (%s): one at a time", first_line(error))
    return [result for template in templates for result in probe_batch([template], workers)]


# --- the report ----------------------------------------------------------------------------------------------


def report(title: str, results: list[Result]) -> str:
    """The table, the failures' first lines, and the counts."""
    head = ["template", "tool parser", "reasoning parser", "engine", *CELLS]
    rows = [[r.template, r.tool_parser, r.reasoning_parser, r.engine, *(r.cells.get(c, "?") for c in CELLS)]
            for r in results]  # fmt: skip
    widths = [max(len(str(row[i])) for row in [head, *rows]) for i in range(len(head))]
    lines = [f"== {title}: {len(results)} templates", ""]
    lines += ["  ".join(str(value).ljust(width) for value, width in zip(row, widths, strict=True)).rstrip()
              for row in [head, ["-" * w for w in widths], *rows]]  # fmt: skip
    lines += ["", "Why (first line):"]
    for r in results:
        for cell, why in r.notes.items():
            lines.append(f"  {r.template} / {cell} [{r.cells.get(cell, 'note')}]: {why}")
    passing = [r for r in results if all(r.cells.get(c) in ("ok", "-") for c in CELLS)]
    lines += ["", f"Pass every cell that applies: {len(passing)} of {len(results)}"]
    for cell in CELLS:
        counts = {mark: sum(r.cells.get(cell) == mark for r in results) for mark in ("ok", "FAIL", "skip", "-")}
        lines.append(f"  {cell:14} " + "  ".join(f"{mark} {count}" for mark, count in counts.items()))
    return "\n".join(lines) + "\n"


def templates_of(target: Path, only: str | None) -> list[Path]:
    found = sorted(target.glob("*.jinja")) if target.is_dir() else [target]
    return [path for path in found if not only or only in path.name]


def main(argv: list[str] | None = None) -> int:
    """Probe each directory (or template file) given; print each table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", type=Path, default=list(DIRECTORIES))
    parser.add_argument("--batch", type=int, default=8, help="templates served by one server at a time")
    parser.add_argument("--workers", type=int, default=4, help="templates probed at once")
    parser.add_argument("--only", help="only templates whose file name contains this")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    log.setLevel(logging.INFO)
    observe_renders()
    head = subprocess.run(["git", "log", "--oneline", "-1"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    print(f"family_probe at {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {head or 'no git'}\n", flush=True)
    for target in args.targets:
        templates = templates_of(target, args.only)
        started = time.monotonic()
        results: list[Result] = []
        for first in range(0, len(templates), args.batch):
            batch = templates[first : first + args.batch]
            results += probe_batch(batch, args.workers)
            log.info("%s: %d of %d probed (%.0f s)", target, len(results), len(templates), time.monotonic() - started)
        print(report(f"{target} ({time.monotonic() - started:.0f} s)", results), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

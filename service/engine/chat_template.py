"""A model's chat template: where it comes from, and a conversation rendered with it.

Where the template comes from, first found wins: the operator's ``--chat-template`` file; the model
directory's ``chat_template.jinja`` (transformers saves the template there and reads it before
tokenizer_config.json); ``tokenizer_config.json``'s ``chat_template`` (a string, or named templates:
``tool_use`` for a request with tools when there is one, else ``default``, as transformers picks);
the ``chat_template`` rt_info of ``openvino_tokenizer.xml`` (the only place openvino_genai itself reads).

Rendering: openvino_genai's own engine (minja), as OVMS and the GenAI pipelines render; a template
that minja cannot parse (GLM-4.6's, for one) is rendered with Jinja2 in a sandbox, set up as
transformers sets it up (``tojson``, ``raise_exception``, ``strftime_now``, loop controls), so every
published template renders with one of the two. Which one is used is decided once, at load.
minja holds the GIL while it renders, so a large conversation is rendered in a helper process
(template_worker.py) instead of a server thread.
"""

from __future__ import annotations

import datetime
import functools
import json
import logging
import pickle
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import jinja2.sandbox
import openvino_genai as ov_genai

from service.workers.helper import HelperDied, HelperProcess, HelperStartError, HelperTimeout

log = logging.getLogger(__name__)

TEMPLATE_FILE = "chat_template.jinja"
TOKENIZER_CONFIG = "tokenizer_config.json"
TOOL_USE = "tool_use"  # transformers' name of the template for requests with tools
# A template's error reaches the client: this much of it, without the template source minja quotes.
MAX_ERROR_CHARS = 400
_PROBE = [{"role": "user", "content": "Hello"}]
# Renders past either size go to the helper process: minja takes ~50 us a message and ~50 ms a megabyte of
# content, and far more for tool schemas (which it writes as JSON: 28 ms for 250 kB, 560 ms for 1.1 MB),
# all of it holding the GIL; below these a render holds it a few milliseconds at most.
HELPER_BYTES = 96 * 1024  # the pickled render job (above what the event loop renders: prompting.renders_inline)
HELPER_MESSAGES = 128
RENDER_TIMEOUT_S = 30.0  # a render past this is refused and its helper process killed


class TemplateError(Exception):
    """The chat template refused the conversation (its own ``raise_exception``, or a rendering error)."""


@dataclass(frozen=True)
class ChatTemplate:
    """A model's chat template(s) and where they were found (``source``, shown in the model's listing)."""

    default: str
    source: str
    tool_use: str | None = None  # a named "tool_use" template (Hermes 3), for requests that carry tools

    def text(self, *, tools: bool) -> str:
        """The template for a request with or without tools."""
        return self.tool_use if tools and self.tool_use else self.default


def find_chat_template(model_dir: Path, tokenizer: ov_genai.Tokenizer, override: Path | None = None) -> ChatTemplate:
    """The model's chat template, from the first place that has one (see the module's docstring)."""
    if override is not None:
        return ChatTemplate(override.read_text(encoding="utf-8"), f"--chat-template {override}")
    if (model_dir / TEMPLATE_FILE).is_file():
        return ChatTemplate((model_dir / TEMPLATE_FILE).read_text(encoding="utf-8"), TEMPLATE_FILE)
    config = model_dir / TOKENIZER_CONFIG
    if config.is_file():
        found = _from_tokenizer_config(json.loads(config.read_text(encoding="utf-8")).get("chat_template"))
        if found is not None:
            return found
    embedded = tokenizer.get_original_chat_template() or tokenizer.chat_template
    return ChatTemplate(str(embedded), "openvino_tokenizer.xml")


def _from_tokenizer_config(value: Any) -> ChatTemplate | None:
    """tokenizer_config.json's ``chat_template``: one template, or a list of ``{"name", "template"}``."""
    if isinstance(value, str) and value:
        return ChatTemplate(value, TOKENIZER_CONFIG)
    if isinstance(value, list):
        named = {item.get("name"): item.get("template") for item in value if isinstance(item, dict)}
        default = named.get("default") or next((text for text in named.values() if isinstance(text, str)), None)
        if isinstance(default, str):
            tool_use = named.get(TOOL_USE)
            return ChatTemplate(default, TOKENIZER_CONFIG, tool_use if isinstance(tool_use, str) else None)
    return None


Renderer = Callable[[str, list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any], bool], str]


class TemplateRenderer:
    """Renders conversations with a model's chat template, with minja or (when minja cannot) Jinja2."""

    def __init__(self, tokenizer: ov_genai.Tokenizer, template: ChatTemplate, model_dir: Path | None = None) -> None:
        """``model_dir``: the tokenizer's directory, for the helper process large renders run in (None: none
        run there)."""
        self.template = template
        self._tokenizer = tokenizer
        self._helper = HelperProcess("service.engine.template_worker", model_dir) if model_dir else None
        self._special = {"bos_token": tokenizer.get_bos_token(), "eos_token": tokenizer.get_eos_token()}
        self.engine = "minja"
        self._render: Renderer = functools.partial(minja_render, tokenizer)
        texts = [text for text in (template.default, template.tool_use) if text]
        try:
            for text in texts:
                self._render(text, _PROBE, None, {}, True)
        except Exception as minja_error:
            try:
                for text in texts:
                    self._jinja(text, _PROBE, None, {}, True)
            except Exception:
                log.warning("the chat template (%s) renders with neither minja nor Jinja2: %s", template.source,
                            error_message(minja_error))  # fmt: skip
            else:
                self.engine, self._render = "jinja2", self._jinja
                log.info("the chat template (%s) is rendered with Jinja2: minja says %s", template.source,
                         error_message(minja_error))  # fmt: skip

    def render(
        self,
        history: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        context: dict[str, Any],
        *,
        add_generation_prompt: bool = True,
    ) -> str:
        """The conversation as the template writes it; TemplateError (a bounded message) when it refuses.

        Blocking, and not for the event loop unless the conversation is small: a large one is rendered by
        the helper process (minja holds the GIL throughout a render; see template_worker.py).
        """
        job = (self.template.text(tools=bool(tools)), history, tools or None, context, add_generation_prompt)
        try:
            if self.engine == "minja" and self._helper is not None:
                pickled = pickle.dumps(job, pickle.HIGHEST_PROTOCOL)
                if len(pickled) > HELPER_BYTES or len(history) > HELPER_MESSAGES:
                    rendered = self._outside(pickled)
                    if rendered is not None:
                        return rendered
            return self._render(*job)
        except TemplateError:
            raise
        except Exception as error:
            raise TemplateError(error_message(error)) from error

    def close(self) -> None:
        """End the helper process, if it runs."""
        if self._helper is not None:
            self._helper.close()

    def _outside(self, job: bytes) -> str | None:
        """The helper's rendering of a pickled job; None when the helper cannot start (render here then)."""
        assert self._helper is not None
        try:
            kind, value = self._helper.ask_pickled(job, RENDER_TIMEOUT_S)
        except HelperTimeout:
            raise TemplateError(f"rendering it took longer than {RENDER_TIMEOUT_S:g} s") from None
        except HelperDied:
            raise TemplateError("the template engine failed on it") from None
        except HelperStartError as error:
            log.warning("the chat-template helper could not start (%s): rendering in the server", error)
            return None
        if kind == "error":
            raise TemplateError(value)
        return str(value)

    def _jinja(
        self,
        text: str,
        history: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        context: dict[str, Any],
        add_generation_prompt: bool,
    ) -> str:
        variables = {**self._special, **context, "messages": history, "add_generation_prompt": add_generation_prompt}
        if tools:
            variables["tools"] = tools
        return _compiled(text).render(**variables)


def minja_render(
    tokenizer: ov_genai.Tokenizer,
    text: str,
    history: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    context: dict[str, Any],
    add_generation_prompt: bool,
) -> str:
    """``history`` rendered by template ``text`` with openvino_genai's engine (minja), as OVMS renders."""
    return str(
        tokenizer.apply_chat_template(
            history, add_generation_prompt=add_generation_prompt, chat_template=text, tools=tools,
            extra_context=context,
        )
    )  # fmt: skip


def _raise_exception(message: str) -> None:
    raise jinja2.TemplateError(message)


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None,
            sort_keys: bool = False) -> str:  # fmt: skip
    # transformers' tojson: no HTML escaping (Jinja2's own escapes <, >, & and ')
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


_ENVIRONMENT = jinja2.sandbox.ImmutableSandboxedEnvironment(
    trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
)
_ENVIRONMENT.filters["tojson"] = _tojson
_ENVIRONMENT.globals["raise_exception"] = _raise_exception
_ENVIRONMENT.globals["strftime_now"] = lambda pattern: datetime.datetime.now().strftime(pattern)
_COMPILED: dict[str, jinja2.Template] = {}


def _compiled(text: str) -> jinja2.Template:
    """The compiled Jinja2 template of ``text`` (a model has one or two: compiled once each)."""
    if text not in _COMPILED:
        _COMPILED[text] = _ENVIRONMENT.from_string(text)
    return _COMPILED[text]


# openvino_genai wraps minja's own words ("Minja's error: ... at row R, column C:" and the template source)
# in advice and the C++ source's location on the build machine.
_MINJA_ERROR = re.compile(r"Minja's error: (.*?)(?: at row (\d+), column (\d+):|\n|$)", re.DOTALL)
_BUILD_LOCATION = re.compile(r"Exception from \S+:\d+:\s*")


def error_message(error: BaseException) -> str:
    """What went wrong in the template, in one bounded line: its own message and where, not the template
    source minja quotes after it, nor a build machine's paths."""
    text = str(error)
    if found := _MINJA_ERROR.search(text):
        words, row, column = found.groups()
        text = f"{words.strip()} (template row {row}, column {column})" if row else words
    text = _BUILD_LOCATION.sub("", text).strip()
    first = text.splitlines()[0].strip() if text else type(error).__name__
    return first if len(first) <= MAX_ERROR_CHARS else first[: MAX_ERROR_CHARS - 3] + "..."

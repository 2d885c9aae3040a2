"""A model's chat template: where it comes from, and a conversation rendered with it.

Where the template comes from, first found wins: the operator's ``--chat-template`` file; the model
directory's ``chat_template.jinja`` (transformers saves the template there and reads it before
tokenizer_config.json); ``tokenizer_config.json``'s ``chat_template`` (a string, or named templates:
``tool_use`` for a request with tools when there is one, else ``default``, as transformers picks);
the ``chat_template`` rt_info of ``openvino_tokenizer.xml`` (the only place openvino_genai itself reads).

Rendering: openvino_genai's own engine (minja), as OVMS and the GenAI pipelines render; a template
that minja cannot parse (GLM-4.6's, for one) or cannot render with tools (``tojson(ensure_ascii=False)``:
MiniCPM5, MiniMax-M2) is rendered with Jinja2 in a sandbox, set up as transformers sets it up (``tojson``,
``raise_exception``, ``strftime_now``, loop controls), so every published template renders with one of the
two. Which one is used, and the form of the messages the template wants, is decided once, at load, by
rendering probe conversations with both (template_probe.py).
minja holds the GIL while it renders, so a large conversation is rendered in a helper process
(template_worker.py) instead of a server thread.
"""

from __future__ import annotations

import datetime
import functools
import json
import logging
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.parser
import jinja2.sandbox
import openvino_genai as ov_genai

from ovserve.service.engine.template_errors import MAX_ERROR_CHARS, TemplateError, error_message
from ovserve.service.engine.template_probe import JINJA2, MINJA, ProbeJob, TemplateChoice, choose
from ovserve.service.workers.helper import HelperDied, HelperProcess, HelperStartError, HelperTimeout

log = logging.getLogger(__name__)

TEMPLATE_FILE = "chat_template.jinja"
TOKENIZER_CONFIG = "tokenizer_config.json"
TOOL_USE = "tool_use"  # transformers' name of the template for requests with tools
# The special tokens transformers gives templates besides bos_token and eos_token (its special_tokens_map), read
# from tokenizer_config.json (template_variables); bos and eos come from the tokenizer (special_tokens).
SPECIAL_TOKEN_VARIABLES = (
    "unk_token", "sep_token", "pad_token", "cls_token", "mask_token", "additional_special_tokens"
)  # fmt: skip
# Renders past either size go to the helper process: minja takes ~50 us a message and ~50 ms a megabyte of
# content, and far more for tool schemas (which it writes as JSON: 28 ms for 250 kB, 560 ms for 1.1 MB),
# all of it holding the GIL; below these a render holds it a few milliseconds at most.
HELPER_BYTES = 96 * 1024  # the pickled render job (above what the event loop renders: prompting.renders_inline)
HELPER_MESSAGES = 128
RENDER_TIMEOUT_S = 30.0  # a render past this is refused and its helper process killed
PROBE_TIMEOUT_S = 10.0  # the load-time probes (tens of renders, each a millisecond or so) past this: given up
WORKER = "ovserve.service.engine.template_worker"
# The choice for each template (and special tokens) probed in a helper process (a second or two): a model that
# loads the same template again (a server restarted in the same process, a test session's servers) is not
# probed again. Keyed by the template texts, bos, eos and the template's other variables.
_CHOSEN: dict[tuple[str | None, ...], TemplateChoice] = {}
__all__ = ["MAX_ERROR_CHARS", "ChatTemplate", "TemplateError", "TemplateRenderer", "error_message"]


@dataclass(frozen=True)
class ChatTemplate:
    """A model's chat template(s) and where they were found (``source``, shown in the model's listing)."""

    default: str
    source: str
    tool_use: str | None = None  # a named "tool_use" template (Hermes 3), for requests that carry tools
    # Template variables besides the messages, tools and bos/eos: the model's other special tokens
    # (``template_variables``), passed to every render, probes included.
    variables: dict[str, Any] = field(default_factory=dict, compare=False)

    def text(self, *, tools: bool) -> str:
        """The template for a request with or without tools."""
        return self.tool_use if tools and self.tool_use else self.default


def find_chat_template(model_dir: Path, tokenizer: ov_genai.Tokenizer, override: Path | None = None) -> ChatTemplate:
    """The model's chat template, from the first place that has one (see the module's docstring), with the
    model's ``template_variables``."""
    return replace(_find_template(model_dir, tokenizer, override), variables=template_variables(model_dir))


def template_variables(model_dir: Path) -> dict[str, Any]:
    """The special tokens tokenizer_config.json names besides bos and eos (SPECIAL_TOKEN_VARIABLES), as transformers
    passes them to templates: GigaChat-20B's writes its turns with ``additional_special_tokens[0]`` and would refuse
    every conversation without it. A token written as an AddedToken object is given by its content; a file that
    is not JSON gives none (the template may come from elsewhere)."""
    try:
        config = json.loads((model_dir / TOKENIZER_CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(config, dict):
        return {}

    def content(token: Any) -> Any:
        return token.get("content") if isinstance(token, dict) else token

    variables: dict[str, Any] = {}
    for name in SPECIAL_TOKEN_VARIABLES:
        value = config.get(name)
        if isinstance(value, list) and all(isinstance(content(token), str) for token in value):
            variables[name] = [content(token) for token in value]
        elif isinstance(content(value), str):
            variables[name] = content(value)
    return variables


def _find_template(model_dir: Path, tokenizer: ov_genai.Tokenizer, override: Path | None) -> ChatTemplate:
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
    """Renders conversations with a model's chat template, with minja or (when minja cannot) Jinja2.

    Both the engine and the form of the messages (``message_form``) are chosen at load by rendering probe
    conversations with both engines (template_probe.py); ``engine_reason`` says why. With a model directory the
    probes run in a helper process, bounded by PROBE_TIMEOUT_S: a template that runs past it is rendered only
    there from then on, each render bounded by RENDER_TIMEOUT_S.
    """

    def __init__(self, tokenizer: ov_genai.Tokenizer, template: ChatTemplate, model_dir: Path | None = None) -> None:
        """``model_dir``: the tokenizer's directory, for the helper process the probes and large renders run in
        (None: everything runs here)."""
        self.template = template
        self._tokenizer = tokenizer
        self._helper = HelperProcess(WORKER, model_dir) if model_dir else None
        self._special = special_tokens(tokenizer)
        self._jinja: Renderer = functools.partial(jinja_render, self._special)
        self._minja: Renderer = functools.partial(minja_render, tokenizer)
        choice = self._probe(model_dir)
        self.engine, self.engine_reason, self.message_form = choice.engine, choice.reason, choice.form
        self._confined = choice.confined
        self._render = self._jinja if self.engine == JINJA2 else self._minja
        log.info("the chat template (%s) is rendered with %s: %s; %s", template.source, self.engine,
                 self.engine_reason, self.message_form)  # fmt: skip

    def _probe(self, model_dir: Path | None) -> TemplateChoice:
        """The probes' choice: in a helper process, bounded in time, when there is a model directory."""
        if model_dir is None:
            return choose(self.template, {MINJA: self._minja, JINJA2: self._jinja})
        key = (self.template.default, self.template.tool_use, *self._special.values(),
               json.dumps(self.template.variables, sort_keys=True))  # fmt: skip
        if key in _CHOSEN:
            return _CHOSEN[key]
        prober = HelperProcess(WORKER, model_dir)  # not self._helper: it starts on the first large render only
        try:
            kind, value = prober.ask(ProbeJob(self.template), PROBE_TIMEOUT_S)
        except HelperStartError as error:
            log.warning("the chat-template helper could not start (%s): probing in the server", error)
            return choose(self.template, {MINJA: self._minja, JINJA2: self._jinja})
        except (HelperTimeout, HelperDied) as error:
            why = f"the probes did not finish ({error}): every render runs in the helper process"
            log.warning("the chat template (%s): %s", self.template.source, why)
            value = TemplateChoice(MINJA, why, confined=True)
        else:
            assert kind == "choice", value
        finally:
            prober.close()
        _CHOSEN[key] = value
        return value  # type: ignore[no-any-return]

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
        text, variables = self.template.text(tools=bool(tools)), {**self.template.variables, **context}
        job = (text, history, tools or None, variables, add_generation_prompt)
        try:
            if self.engine == MINJA and self._helper is not None:
                pickled = pickle.dumps(job, pickle.HIGHEST_PROTOCOL)
                if self._confined or len(pickled) > HELPER_BYTES or len(history) > HELPER_MESSAGES:
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


def special_tokens(tokenizer: ov_genai.Tokenizer) -> dict[str, str]:
    """The template variables naming the tokenizer's special tokens (minja sets them itself)."""
    return {"bos_token": tokenizer.get_bos_token(), "eos_token": tokenizer.get_eos_token()}


def jinja_render(
    special: dict[str, str],
    text: str,
    history: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    context: dict[str, Any],
    add_generation_prompt: bool,
) -> str:
    """``history`` rendered by template ``text`` with Jinja2 in transformers' sandbox; ``special``: the special
    tokens' variables (``special_tokens``)."""
    variables = {**special, **context, "messages": history, "add_generation_prompt": add_generation_prompt}
    if tools:
        variables["tools"] = tools
    return _compiled(text).render(**variables)


def _raise_exception(message: str) -> None:
    raise jinja2.TemplateError(message)


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None,
            sort_keys: bool = False) -> str:  # fmt: skip
    # transformers' tojson: no HTML escaping (Jinja2's own escapes <, >, & and ')
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _from_json(value: Any) -> Any:
    """OVMS's ``from_json`` filter (its Qwen3-Coder-Next template reads a call's arguments with it): JSON text
    as a value; anything not text (arguments already an object) as it is."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (ValueError, RecursionError) as error:
        raise jinja2.TemplateError(f"from_json: not JSON: {error}") from error


class GenerationTag(jinja2.ext.Extension):
    """transformers' ``{% generation %}...{% endgeneration %}`` (it marks the assistant's tokens for training
    masks): rendered as its body (LFM2.5 and Laguna templates use it)."""

    tags = {"generation"}  # noqa: RUF012 (jinja2 reads this class attribute)

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        """The tag's body, rendered in place."""
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


_ENVIRONMENT = jinja2.sandbox.ImmutableSandboxedEnvironment(
    trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols", GenerationTag]
)
_ENVIRONMENT.filters["tojson"] = _tojson
_ENVIRONMENT.filters["from_json"] = _from_json
_ENVIRONMENT.globals["raise_exception"] = _raise_exception
_ENVIRONMENT.globals["strftime_now"] = lambda pattern: datetime.datetime.now().strftime(pattern)
_COMPILED: dict[str, jinja2.Template] = {}


def _compiled(text: str) -> jinja2.Template:
    """The compiled Jinja2 template of ``text`` (a model has one or two: compiled once each)."""
    if text not in _COMPILED:
        _COMPILED[text] = _ENVIRONMENT.from_string(text)
    return _COMPILED[text]

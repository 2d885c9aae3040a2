"""The bundled models' chat template and a Python renderer for it.

The template lives in ``chat_template.jinja`` next to this module. At runtime
openvino_genai renders it with its own minja engine; the builder renders the
training corpus with jinja2 configured like Hugging Face's chat-template
environment, and the smoke check asserts both engines give identical strings,
so the model is trained on exactly what the service will send it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

TEMPLATE_PATH = Path(__file__).with_name("chat_template.jinja")


def chat_template() -> str:
    """The template source, as embedded in the exported tokenizer."""
    return TEMPLATE_PATH.read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _compiled() -> Any:
    # jinja2 is imported lazily: it is an export-time dependency only.
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    # Same as transformers' tojson: plain json.dumps (no key sorting, no HTML
    # escaping), which is also what minja's tojson prints.
    env.filters["tojson"] = lambda x, indent=None: json.dumps(x, ensure_ascii=False, indent=indent)
    return env.from_string(chat_template())


def render(
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    enable_thinking: bool | None = None,
) -> str:
    """Render a conversation the way openvino_genai's apply_chat_template does."""
    context: dict[str, Any] = {"messages": messages, "add_generation_prompt": add_generation_prompt}
    if tools:
        context["tools"] = tools
    if enable_thinking is not None:
        context["enable_thinking"] = enable_thinking
    return _compiled().render(**context)

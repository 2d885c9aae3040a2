"""Survey published chat templates: which engine renders each, and whether a tool conversation keeps its call.

Usage (from the repository root)::

    python tools/template_survey.py [TEMPLATE_DIR ...]   # default: the vendored llama.cpp set and tests' set

For each template (served as tiny-chat's template): the engine the renderer chose and why, whether a
conversation with tools offered, an assistant call (``content: null``) and its result renders with the messages
the server gives templates (``template_messages``), and whether the call's arguments appear in the rendering:
``json`` (as JSON, whitespace ignored), ``python`` (a Python dict's text), ``other`` (the value appears, in
another dialect) or ``missing``. Ends
with the counts.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's packages, not an installed copy

import openvino_genai as ov_genai  # noqa: E402

from ovserve.service.api.prompting import template_messages  # noqa: E402
from ovserve.service.engine.chat_template import ChatTemplate, TemplateRenderer, error_message  # noqa: E402
from ovserve.service.parsing import OutputFormat  # noqa: E402
from tests.conftest import TINY_CHAT  # noqa: E402

DIRECTORIES = (Path("/work/vendor/models/templates"), ROOT / "tests" / "data" / "chat_templates")
ARGUMENTS = {"city": "Paris", "days": 3}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]
CONVERSATION: list[dict[str, Any]] = [
    {"role": "user", "content": "What will the weather be?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call12345", "type": "function", "function": {"name": "get_weather", "arguments": ARGUMENTS}}
        ],
    },
    {"role": "tool", "tool_call_id": "call12345", "name": "get_weather", "content": "Sunny."},
]


def survey(path: Path, tokenizer: ov_genai.Tokenizer) -> dict[str, str]:
    """One template's row: engine, reason, rendered (yes/error), call (json/other/missing), error."""
    renderer = TemplateRenderer(tokenizer, ChatTemplate(path.read_text(encoding="utf-8"), path.name))
    model = SimpleNamespace(engine=renderer, output_format=OutputFormat())  # ids and calls as the client sends them
    row = {"template": path.name, "engine": renderer.engine, "reason": getattr(renderer, "engine_reason", "")}
    try:
        text = renderer.render(template_messages(model, CONVERSATION), TOOLS, {})  # type: ignore[arg-type]
    except Exception as error:
        return {**row, "rendered": "error", "call": "-", "error": error_message(error)}
    bare = "".join(text.split())
    if "".join(json.dumps(ARGUMENTS).split()) in bare:
        call = "json"
    elif "".join(str(ARGUMENTS).split()) in bare:
        call = "python"  # a dict's text: what minja writes for an object the template concatenates
    else:
        call = "other" if "Paris" in text else "missing"
    return {**row, "rendered": "yes", "call": call, "error": ""}


def main(directories: list[Path]) -> None:
    """Print a row per template, then the counts."""
    tokenizer = ov_genai.Tokenizer(str(TINY_CHAT))
    rows = [survey(path, tokenizer) for directory in directories for path in sorted(directory.glob("*.jinja"))]
    for row in rows:
        print("\t".join(row.values()))
    print(f"\n{len(rows)} templates")
    for key in ("engine", "rendered", "call"):
        print(f"{key}: {dict(Counter(row[key] for row in rows))}")


if __name__ == "__main__":
    main([Path(arg) for arg in sys.argv[1:]] or list(DIRECTORIES))

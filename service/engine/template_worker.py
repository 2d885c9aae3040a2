"""The chat-template helper process: renders a large conversation with a served model's template (minja).

``python -m service.engine.template_worker FD`` (see service/workers/helper.py): the model directory
once, then (template, history, tools, context, add_generation_prompt) per render; answered with
("text", prompt) or ("error", the template's words). openvino_genai's minja holds the GIL for a whole
render (a megabyte of tool schema: half a second), so renders that large run here, not in a server thread.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from service.workers.helper import serve


def main() -> None:
    """Entry point: load the model's tokenizer (minja lives in it), then render until the server goes away."""
    serve(_tokenizer, _render)


def _tokenizer(model_dir: Path) -> Any:
    import openvino_genai as ov_genai

    return ov_genai.Tokenizer(str(model_dir), INFERENCE_NUM_THREADS=1, ENABLE_CPU_PINNING=False)


def _render(tokenizer: Any, job: tuple[str, list[dict[str, Any]], Any, dict[str, Any], bool]) -> tuple[str, str]:
    from service.engine.chat_template import error_message, minja_render

    try:
        return "text", minja_render(tokenizer, *job)
    except Exception as error:
        return "error", error_message(error)


if __name__ == "__main__":
    main()

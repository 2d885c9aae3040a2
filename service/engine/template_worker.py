"""The chat-template helper process: renders a large conversation with a served model's template (minja), and
runs the load-time probes (template_probe.py) where a template that loops can be stopped.

``python -m ovserve.service.engine.template_worker FD`` (see service/workers/helper.py): the model directory
once, then per request either (template, history, tools, context, add_generation_prompt), answered with
("text", prompt) or ("error", the template's words), or a ProbeJob, answered with ("choice", TemplateChoice).
openvino_genai's minja holds the GIL for a whole render (a megabyte of tool schema: half a second), so renders
that large run here, not in a server thread.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from ovserve.service.workers.helper import serve


def main() -> None:
    """Entry point: load the model's tokenizer (minja lives in it), then render until the server goes away."""
    serve(_tokenizer, _answer)


def _tokenizer(model_dir: Path) -> Any:
    import openvino_genai as ov_genai

    return ov_genai.Tokenizer(str(model_dir), INFERENCE_NUM_THREADS=1, ENABLE_CPU_PINNING=False)


def _answer(tokenizer: Any, job: Any) -> tuple[str, Any]:
    from ovserve.service.engine.chat_template import error_message, jinja_render, minja_render, special_tokens
    from ovserve.service.engine.template_probe import JINJA2, MINJA, ProbeJob, choose

    if isinstance(job, ProbeJob):
        renderers = {
            MINJA: functools.partial(minja_render, tokenizer),
            JINJA2: functools.partial(jinja_render, special_tokens(tokenizer)),
        }
        return "choice", choose(job.template, renderers)
    try:
        return "text", minja_render(tokenizer, *job)
    except Exception as error:
        return "error", error_message(error)


if __name__ == "__main__":
    main()

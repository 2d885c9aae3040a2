"""The grammar checker's process: compiles output constraints with a served model's tokenizer.

``python -m ovserve.service.engine.grammar_worker FD``: FD is this process's end of a
socketpair; the first message is the model directory. openvino_genai reaches
its grammar compiler (XGrammar) only through a pipeline's sampler, so this
process builds an ``LLMPipeline`` from the served model's own tokenizer and a
stand-in model of the same vocabulary size whose logits are all zero (built
in memory with OpenVINO's opset: no weights, a few kilobytes), and generates
one token under the constraint: that compiles it exactly as the engine will,
in ~30 ms for a small grammar. A grammar the compiler refuses raises here; one
that crashes or hangs the compiler costs only this process, which the server
kills and restarts (see service/engine/grammar.py).

Protocol (service/workers/helper.py's): the model directory once, then (kind, value) per check;
answered with the compiler's complaint (str) or None.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

from ovserve.service import model_files  # light: json only, as this process should stay
from ovserve.service.workers.helper import serve

# openvino_genai prefixes its errors with a timestamp, a source path and a check expression.
_ENGINE_NOISE = re.compile(r"^\[[\d:]+\] \S+:\d+: |Check failed: \(.*?\) is false: ")


def main() -> None:
    """Entry point: load the stand-in pipeline, then answer checks until the server goes away."""
    serve(_stand_in_pipeline, lambda pipeline, check: _compile(pipeline, *check))


def _compile(pipeline: Any, kind: str, value: str) -> str | None:
    """The compiler's complaint about one constraint, or None if it compiles."""
    import openvino_genai as ov_genai

    from ovserve.service.engine.generation_config import structured_output_config
    from ovserve.service.engine.sampling import OutputConstraint

    constraint = structured_output_config(OutputConstraint(kind, value, ""))
    config = ov_genai.GenerationConfig(max_new_tokens=1, structured_output_config=constraint)
    config.apply_chat_template = False  # the prompt is a stand-in; a template minja cannot parse would fail it
    try:
        pipeline.generate("a", config)
    except Exception as error:
        lines = [line for line in str(error).strip().splitlines() if line.strip()]
        return _ENGINE_NOISE.sub("", lines[-1] if lines else str(error)).strip() or type(error).__name__
    return None


def _stand_in_pipeline(model_dir: Path) -> Any:
    """An LLMPipeline with the model's tokenizer and a weightless model of its vocabulary size."""
    import numpy as np
    import openvino as ov
    import openvino_genai as ov_genai
    from openvino import opset13 as ops

    tokenizer = ov_genai.Tokenizer(str(model_dir))
    vocab_size = _vocab_size(model_dir) or len(tokenizer.get_vocab())
    input_ids = ops.parameter([-1, -1], ov.Type.i64, name="input_ids")
    # The pipeline insists on these inputs even though the stand-in ignores them.
    attention_mask = ops.parameter([-1, -1], ov.Type.i64, name="attention_mask")
    beam_idx = ops.parameter([-1], ov.Type.i32, name="beam_idx")
    shape = ops.concat([ops.shape_of(input_ids), ops.constant(np.array([vocab_size], dtype=np.int64))], 0)
    logits = ops.broadcast(ops.constant(np.zeros([1], dtype=np.float32)), shape)
    logits.output(0).get_tensor().set_names({"logits"})
    model = ov.Model([logits], [input_ids, attention_mask, beam_idx], "grammar_stand_in")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "stand_in.xml"
        ov.save_model(model, path)
        xml, weights = path.read_text(), np.fromfile(path.with_suffix(".bin"), dtype=np.uint8)
    # SDPA: the stateful pipeline takes a model without attention; one thread is plenty for a zero model.
    return ov_genai.LLMPipeline(
        xml, ov.Tensor(weights), tokenizer, "CPU", ATTENTION_BACKEND="SDPA", INFERENCE_NUM_THREADS=1
    )


def _vocab_size(model_dir: Path) -> int | None:
    """The logits' width from config.json (what the engine's sampler sizes the grammar for)."""
    try:
        return int(model_files.text_config(model_dir)["vocab_size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


if __name__ == "__main__":
    main()

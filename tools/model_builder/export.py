"""Export a trained checkpoint to the OpenVINO layout openvino_genai loads.

optimum-intel converts the Llama checkpoint (task text-generation-with-past:
stateful model with the KV cache inside) and, through openvino-tokenizers,
the tokenizer and detokenizer, with the chat template stored in the
tokenizer's runtime info (that is where ``openvino_genai.Tokenizer`` reads
``chat_template`` from). Afterwards only the files the runtime needs are kept.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

# What a bundled model directory keeps. The IR and openvino-tokenizers models
# are all openvino_genai needs; config.json (max_position_embeddings, model
# type) and the Hugging Face tokenizer files are small and let other tools
# (and the service's metadata code) read the model without OpenVINO.
KEEP = (
    "openvino_model.xml",
    "openvino_model.bin",
    "openvino_tokenizer.xml",
    "openvino_tokenizer.bin",
    "openvino_detokenizer.xml",
    "openvino_detokenizer.bin",
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
)


def export_openvino(
    checkpoint_dir: Path, out_dir: Path, weight_format: str = "fp16", task: str = "text-generation-with-past"
) -> None:
    """Run ``optimum-cli export openvino --task TASK`` into a scratch dir, then
    copy the kept files into ``out_dir`` (replacing what was there)."""
    scratch = out_dir.parent / f".{out_dir.name}.export"
    shutil.rmtree(scratch, ignore_errors=True)
    cmd = [
        sys.executable,
        "-m",
        "optimum.commands.optimum_cli",
        "export",
        "openvino",
        "--model",
        str(checkpoint_dir),
        "--task",
        task,
        "--weight-format",
        weight_format,
        str(scratch),
    ]
    subprocess.run(cmd, check=True)
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    for name in KEEP:
        if (scratch / name).exists():
            shutil.copy2(scratch / name, out_dir / name)
    shutil.rmtree(scratch, ignore_errors=True)


def write_generation_config(out_dir: Path, tokenizer: Any) -> dict[str, Any]:
    """generation_config.json: stop on ``<|im_end|>`` (end of turn) and on
    ``<|endoftext|>``; no max_new_tokens default (callers set their own)."""
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    endoftext = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    config = {
        "eos_token_id": [im_end, endoftext],
        "pad_token_id": endoftext,
        "do_sample": False,
    }
    (out_dir / "generation_config.json").write_text(json.dumps(config, indent=2) + "\n")
    return config


def dir_size(path: Path) -> int:
    """Total bytes of the files in ``path``."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())

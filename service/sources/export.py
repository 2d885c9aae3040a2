"""Conversions into OpenVINO GenAI directories: optimum-intel's exporter for Hugging Face checkpoints, OpenVINO
GenAI's own GGUF reader for GGUF files."""

from __future__ import annotations

import collections
import importlib.util
import json
import logging
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ovserve.service.model_files import config
from ovserve.service.pipelines import PipelineKind, kind_of
from ovserve.service.sources.errors import SourceError
from ovserve.service.sources.export_failures import diagnose

log = logging.getLogger(__name__)

INSTALL_HINT = "install the converter with: pip install 'ovserve[convert]'"
# What each kind of model is exported as (optimum-cli's --task); a generating model with a vision tower is a
# vision-language model.
EXPORT_TASKS = {
    PipelineKind.GENERATE: "text-generation-with-past",
    PipelineKind.EMBED: "feature-extraction",
    PipelineKind.RERANK: "text-classification",
    PipelineKind.TRANSCRIBE: "automatic-speech-recognition-with-past",
}
VISION_TASK = "image-text-to-text"
# The exporter's last lines kept to find its error message when it fails (a traceback ends it).
TAIL_LINES = 40


def export_task(checkpoint: Path, kind: PipelineKind | None) -> str:
    """optimum-cli's task for a checkpoint: from ``--task`` when given, else from its config.json."""
    kind = kind or kind_of(checkpoint)
    if kind is PipelineKind.GENERATE and "vision_config" in config(checkpoint):
        return VISION_TASK
    return EXPORT_TASKS[kind]


def export_checkpoint(checkpoint: Path, out: Path, task: str, weight_format: str | None) -> None:
    """Export a transformers checkpoint with optimum-intel (``optimum-cli export openvino``) into ``out``.

    Run as a child process: the exporter imports torch and holds the whole model, which the server should not
    keep; its output streams to this process's stderr as it goes (a person sees its progress), and its last
    lines make the error when it fails.
    """
    if importlib.util.find_spec("optimum") is None or importlib.util.find_spec("optimum.intel") is None:
        raise SourceError(f"{checkpoint} is a Hugging Face checkpoint: converting it needs optimum-intel; "
                          f"{INSTALL_HINT}")  # fmt: skip
    command = [sys.executable, "-m", "optimum.commands.optimum_cli", "export", "openvino", "--model", str(checkpoint),
               "--task", task]  # fmt: skip
    if weight_format:
        command += ["--weight-format", weight_format]
    command.append(str(out))
    log.info("converting %s: %s", checkpoint, " ".join(command[2:]))
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    # A known cause, found in any line: the traceback that ends the output may have pushed it out of the tail.
    cause: str | None = None
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                          text=True, errors="replace") as process:  # fmt: skip
        assert process.stdout is not None
        for line in process.stdout:
            tail.append(line.rstrip())
            cause = cause or diagnose(line)
            sys.stderr.write(line)
    if process.returncode != 0:
        reason = cause or _reason(tail)
        raise SourceError(f"converting {checkpoint} failed (optimum-cli exit {process.returncode}): {reason}")
    _copy_sentence_transformers(checkpoint, out)


# sentence-transformers' own files: how an embedding model pools, normalises and prompts (query: / passage:),
# which the server reads (pipelines.kinds.EmbeddingConfig) and the exporter leaves behind.
SENTENCE_TRANSFORMERS_FILES = ("modules.json", "config_sentence_transformers.json", "sentence_bert_config.json")


def _copy_sentence_transformers(checkpoint: Path, out: Path) -> None:
    """Copy a sentence-transformers checkpoint's files and module directories (1_Pooling, 2_Normalize) into
    ``out``; a module path that is not a plain relative one (``..``, absolute) is left out."""
    for name in SENTENCE_TRANSFORMERS_FILES:
        if (checkpoint / name).is_file():
            shutil.copy2(checkpoint / name, out / name)
    try:
        modules = json.loads((checkpoint / "modules.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    for module in modules if isinstance(modules, list) else []:
        relative = Path(str(module.get("path") or "")) if isinstance(module, dict) else Path()
        plain = relative.parts and not relative.is_absolute() and ".." not in relative.parts
        if plain and (checkpoint / relative).is_dir() and not (out / relative).exists():
            shutil.copytree(checkpoint / relative, out / relative)


# A line of an exporter's traceback that says what went wrong: ``ValueError: ...``.
EXCEPTION_LINE = re.compile(r"^\w+(?:\.\w+)*(?:Error|Exception): .+")


def _reason(tail: Iterable[str]) -> str:
    """The exporter's own account of its failure, in one line: its last exception line, else its last line."""
    lines = [line.strip() for line in tail if line.strip()]
    found = [line for line in lines if EXCEPTION_LINE.match(line)]
    return (found or lines or ["no output"])[-1]


# What OpenVINO GenAI 2026.4's GGUF reader takes (measured: each type written into a GGUF of tiny-chat, loaded and
# run; the reader's source agrees): architectures, and the types (gguf's GGMLQuantizationType names) of weight
# matrices; the token embedding (and an untied output) may also be F32 or BF16. A norm is F32 or F16.
GGUF_ARCHITECTURES = ("llama", "qwen2", "qwen3")
GGUF_MATRIX_TYPES = ("F16", "Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q6_K")
GGUF_EMBEDDING_TYPES = (*GGUF_MATRIX_TYPES, "F32", "BF16")
GGUF_EMBEDDINGS = ("token_embd.weight", "output.weight")
# general.file_type values that say "not quantised": the reader then looks for no scales, and a quantised tensor
# fails to load.
GGUF_UNQUANTISED_FILE_TYPES = (0, 1)


def gguf_metadata(path: Path) -> dict[str, Any]:
    """The GGUF file's metadata that a served directory needs; SourceError naming the architecture or the first
    tensor OpenVINO GenAI cannot read (one such tensor fails the whole file)."""
    try:
        import gguf
    except ImportError:
        raise SourceError(f"{path} is a GGUF file: reading it needs the gguf package; {INSTALL_HINT}") from None
    try:
        reader = gguf.GGUFReader(str(path))
    except Exception as error:
        raise SourceError(f"{path}: not a readable GGUF file ({error})") from None
    fields = {name: reader.fields[name].contents() for name in reader.fields}
    arch = str(fields.get("general.architecture", ""))
    if arch not in GGUF_ARCHITECTURES:
        raise SourceError(f"{path}: GGUF architecture {arch!r} is not one OpenVINO GenAI reads "
                          f"({', '.join(GGUF_ARCHITECTURES)}); convert the original checkpoint instead")  # fmt: skip
    unquantised = fields.get("general.file_type") in GGUF_UNQUANTISED_FILE_TYPES
    for tensor in reader.tensors:
        kind = tensor.tensor_type.name
        if len(tensor.shape) < 2:
            allowed: tuple[str, ...] = ("F32", "F16")
        else:
            allowed = GGUF_EMBEDDING_TYPES if tensor.name in GGUF_EMBEDDINGS else GGUF_MATRIX_TYPES
        mislabelled = unquantised and kind.startswith("Q")
        if kind not in allowed or mislabelled:
            where = " in a file whose general.file_type says unquantised" if mislabelled else ""
            raise SourceError(
                f"{path}: tensor {tensor.name} is {kind}{where}, which OpenVINO GenAI's GGUF reader does not read "
                f"(weight matrices: {', '.join(GGUF_MATRIX_TYPES)}); Q4_0, Q4_K_M and Q8_0 files are what it reads"
            )
    return {"fields": fields, "arch": arch}


# Raised when export_gguf's own output changes, so conversions cached by an earlier ovserve are made again
# (2: the tokenizer's 8,192-token cut lifted, _lift_truncation).
GGUF_EXPORT_REVISION = 2


def export_gguf(path: Path, out: Path) -> None:
    """Make ``out`` an OpenVINO GenAI directory of the GGUF file: OpenVINO GenAI converts the model and its
    tokenizer (``enable_save_ov_model`` writes them beside the file it reads, here a link in ``out``), and
    config.json, generation_config.json and chat_template.jinja are written from the file's metadata."""
    metadata = gguf_metadata(path)
    fields, arch = metadata["fields"], metadata["arch"]
    import openvino_genai as ov_genai

    link = out / path.name
    link.symlink_to(path)
    try:
        ov_genai.LLMPipeline(str(link), "CPU", enable_save_ov_model=True)
    except RuntimeError as error:
        raise SourceError(f"OpenVINO GenAI could not read {path}: {error}") from None
    finally:
        link.unlink()
    if not (out / "openvino_model.xml").is_file():
        raise SourceError(f"OpenVINO GenAI read {path} but wrote no openvino_model.xml into {out}")
    tokens = fields.get("tokenizer.ggml.tokens") or []
    model_config = {
        "architectures": [GGUF_CLASSES[arch]],
        "model_type": arch,
        "vocab_size": len(tokens),
        "max_position_embeddings": fields.get(f"{arch}.context_length"),
        "hidden_size": fields.get(f"{arch}.embedding_length"),
        "num_hidden_layers": fields.get(f"{arch}.block_count"),
        "num_attention_heads": fields.get(f"{arch}.attention.head_count"),
        "num_key_value_heads": fields.get(f"{arch}.attention.head_count_kv"),
    }
    write_json(out / "config.json", {key: value for key, value in model_config.items() if value is not None})
    ends = sorted(
        {fields[key] for key in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id") if key in fields}
    )
    generation: dict[str, Any] = {"eos_token_id": ends[0] if len(ends) == 1 else ends} if ends else {}
    if "tokenizer.ggml.bos_token_id" in fields:
        generation["bos_token_id"] = fields["tokenizer.ggml.bos_token_id"]
    write_json(out / "generation_config.json", generation)
    if template := fields.get("tokenizer.chat_template"):
        (out / "chat_template.jinja").write_text(str(template), encoding="utf-8")
    _lift_truncation(out / "openvino_tokenizer.xml")
    _save_tokenizer_json(path, out, fields)


# What a lifted truncation cuts to: int32's largest, the type of the tokenizer's lengths.
UNCUT_TOKENS = 2**31 - 1


def _lift_truncation(tokenizer_xml: Path) -> None:
    """Make the GGUF's OpenVINO tokenizer cut nothing: OpenVINO GenAI 2026.4 writes it with every encode cut to
    8,192 tokens (a Minimum of the lengths and a constant, whatever encode's ``max_length`` and ``truncation``
    say), and a model served on it alone (no tokenizer.json) would read the first 8,192 tokens of a longer
    prompt as if they were all of it. The constant becomes UNCUT_TOKENS, as tokenizers converted from
    tokenizer.json have it; the prompt's length is then bounded where every prompt's is (the model's context)."""
    import numpy as np
    import openvino as ov
    import openvino_tokenizers  # noqa: F401  (registers the tokenizer's operations, for reading the file)

    if not tokenizer_xml.is_file():  # no tokenizer written: the model cannot be served anyway (load says why)
        return
    model = ov.Core().read_model(tokenizer_xml)
    lifted = 0
    for op in model.get_ordered_ops():
        if op.get_type_name() != "Minimum":
            continue
        for port in range(2):
            bound = op.input_value(port).get_node()
            if bound.get_type_name() == "Constant" and bound.get_output_partial_shape(0).rank.get_length() == 0:
                uncut = ov.op.Constant(np.array(UNCUT_TOKENS, dtype=bound.get_element_type().to_dtype()))
                op.input(port).replace_source_output(uncut.output(0))
                lifted += 1
    if lifted:
        # Written beside, then moved over: the model read maps the old .bin, which an in-place save would truncate
        # under it (SIGBUS).
        written = tokenizer_xml.with_name("lifted_" + tokenizer_xml.name)
        ov.save_model(model, written, compress_to_fp16=False)
        del model
        written.replace(tokenizer_xml)
        written.with_suffix(".bin").replace(tokenizer_xml.with_suffix(".bin"))
        log.info("%s: the tokenizer's truncation to a fixed length lifted", tokenizer_xml.parent)


# llama.cpp's token types (gguf.TokenType) of the tokens a tokenizer matches whole: control tokens (special,
# skipped in replies) and user-defined ones (text such as <tool_call>, kept).
CONTROL, USER_DEFINED = 3, 4
# tokenizers' decoder of a byte-level BPE.
BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}


def _save_tokenizer_json(path: Path, out: Path, fields: dict[str, Any]) -> None:
    """The GGUF tokenizer as tokenizer.json, for the server's fast codec: transformers converts it, and its
    added tokens and decoder are then set from the file's own metadata, where the conversion loses them.

    The added tokens are the file's control tokens (special) and user-defined ones (``<tool_call>``,
    ``<think>``: text the model writes, kept in replies, which OpenVINO GenAI's GGUF detokenizer drops with the
    control tokens), each matched whole; a byte-level BPE (Qwen, Llama 3) decodes bytes alone, as its own
    tokenizer.json does (the converter's SentencePiece steps strip a leading space, which breaks decoding window
    by window). Without tokenizer.json the model is served on OpenVINO GenAI's tokenizer alone.
    """
    try:
        from transformers import AutoTokenizer

        AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name).save_pretrained(str(out))
    except Exception as error:  # transformers absent, or a tokenizer it does not convert
        log.warning("no tokenizer.json for %s (%s); tool-call markup may not be parsed", path, error)
        return
    saved = out / "tokenizer.json"
    tokenizer = json.loads(saved.read_text(encoding="utf-8"))
    tokens, types = fields.get("tokenizer.ggml.tokens") or [], fields.get("tokenizer.ggml.token_type") or []
    tokenizer["added_tokens"] = [
        {"id": id_, "content": str(tokens[id_]), "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": kind == CONTROL}
        for id_, kind in enumerate(types) if kind in (CONTROL, USER_DEFINED)
    ]  # fmt: skip
    if fields.get("tokenizer.ggml.model") == "gpt2":
        tokenizer["decoder"] = BYTE_LEVEL
    write_json(saved, tokenizer)


# A GGUF architecture -> the transformers class config.json names (what model_files and kinds read).
GGUF_CLASSES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}


def write_json(path: Path, value: Any) -> None:
    """``value`` as indented JSON."""
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")

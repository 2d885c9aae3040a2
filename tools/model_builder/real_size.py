"""Build a random-weight model of real size: ``python -m tools.model_builder.real_size``.

The model has the configuration of a real small model (same layer count,
width, heads and vocabulary), random weights from a fixed seed, int8 weights,
and is exported to OpenVINO IR with the same path as the bundled models. Its
text is noise, but its speed and memory are those of the real model, which is
what throughput and latency work needs when no model hub is reachable. The
output is never committed (the default directory is under ``build/``).

The configurations are literals copied from the public ``config.json`` of each
source model (see ``REAL_CONFIGS``); nothing is downloaded.

The tokenizer is the bundled tiny-chat one (byte-level BPE, ChatML tokens, the
same chat template), padded with filler tokens up to the model's vocabulary
size. Speed depends on the vocabulary size only through the embedding and the
lm_head, and a random model samples ids from the whole range, so every id must
decode: fillers make the tokenizer exactly as large as the embedding. Training a
real 150k-token BPE would need far more text than is available locally and buys
nothing for a model whose output is noise anyway.

An embedding model and a cross-encoder of real size (``--like
bge-small-en-v1.5``, ``--like bge-reranker-base``) are built the same way, with
a padded WordPiece tokenizer: see real_size_encoders.py.

Needs the ``export`` extra (torch, transformers, optimum-intel with nncf for
the int8 compression, openvino-tokenizers).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from . import BUNDLED_MODELS, chat_template, export
from . import real_size_encoders as encoders
from .tokenizer import EOS_TOKEN, PAD_TOKEN, pad_vocabulary

BUNDLED_TOKENIZER = BUNDLED_MODELS / "tiny-chat" / "tokenizer.json"
DEFAULT_ROOT = Path("build/real-size")
WEIGHT_FORMATS = ("int8", "int4", "fp16")
TOKENIZER_NOTE = (
    "the bundled tiny-chat byte-level BPE padded with `<|filler_N|>` tokens to the vocabulary size; "
    "ChatML chat template"
)


def _qwen2_5(*, hidden: int, intermediate: int, layers: int, heads: int, window_layers: int) -> dict[str, Any]:
    """A Qwen2.5 size's config.json fields (they differ in width, depth and heads; two KV heads each)."""
    return {
        "model_type": "qwen2",
        "architectures": ["Qwen2ForCausalLM"],
        "hidden_size": hidden,
        "intermediate_size": intermediate,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": 2,
        "vocab_size": 151936,
        "max_position_embeddings": 32768,
        "rms_norm_eps": 1e-6,
        "hidden_act": "silu",
        "tie_word_embeddings": True,
        "use_sliding_window": False,
        "sliding_window": 32768,
        "max_window_layers": window_layers,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
    }


# Architecture fields of real models, as published in their config.json on the
# Hugging Face hub (transformers 5 names: rope settings go in rope_parameters).
# Token ids (bos/eos/pad) are not copied: they come from our tokenizer.
REAL_CONFIGS: dict[str, dict[str, Any]] = {
    # Qwen/Qwen2.5-0.5B, -1.5B and -3B (and -Instruct): 494M, 1.54B and 3.09B parameters, tied embeddings.
    "qwen2.5-0.5b": _qwen2_5(hidden=896, intermediate=4864, layers=24, heads=14, window_layers=21),
    "qwen2.5-1.5b": _qwen2_5(hidden=1536, intermediate=8960, layers=28, heads=12, window_layers=21),
    "qwen2.5-3b": _qwen2_5(hidden=2048, intermediate=11008, layers=36, heads=16, window_layers=36),
    # meta-llama/Llama-3.2-1B (and -Instruct): 1.24B parameters, tied embeddings,
    # head_dim 64, llama3 rope scaling.
    "llama-3.2-1b": {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-5,
        "hidden_act": "silu",
        "tie_word_embeddings": True,
        "attention_bias": False,
        "mlp_bias": False,
        "rope_parameters": {
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 32.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
    },
}


def padded_tokenizer(vocab_size: int, source: Path = BUNDLED_TOKENIZER) -> Any:
    """The bundled tiny-chat tokenizer with filler tokens appended to its BPE
    vocabulary until it has exactly ``vocab_size`` ids.

    Fillers (``<|filler_N|>``, ids after the existing ones, see
    ``tokenizer.pad_vocabulary``) leave the tokenisation of real text unchanged;
    they only make every id the model can emit decodable. The tokenizer keeps the
    ChatML special tokens and gets the bundled chat template.
    """
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    spec = pad_vocabulary(json.loads(source.read_text(encoding="utf-8")), vocab_size, "<|filler_{}|>")
    tok = Tokenizer.from_str(json.dumps(spec))
    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        model_max_length=2048,
        clean_up_tokenization_spaces=False,
    )
    hf.chat_template = chat_template.chat_template()
    if len(hf) != vocab_size:
        raise AssertionError(f"padded tokenizer has {len(hf)} ids, expected {vocab_size}")
    return hf


def build_model(fields: dict[str, Any], auto_class: str, token_ids: dict[str, Any], seed: int) -> Any:
    """A randomly initialised transformers model (``auto_class``, e.g. ``AutoModelForCausalLM``) with the
    configuration ``fields`` of ``REAL_CONFIGS`` or ``real_size_encoders.REAL_CONFIGS`` and our tokenizer's
    ``token_ids`` (the library's own initialiser, seeded, so the weights are reproducible)."""
    import torch
    import transformers

    fields = dict(fields)
    config = transformers.AutoConfig.for_model(fields.pop("model_type"), **fields, **token_ids)
    torch.manual_seed(seed)
    model = getattr(transformers, auto_class).from_config(config, dtype=torch.float32)
    model.eval()
    return model


def write_card(out_dir: Path, like: str, seed: int, weight_format: str, parameters: int, tokenizer_note: str) -> None:
    """A short MODEL_CARD.md saying what this is (and that its output is noise)."""
    text = (
        f"# {out_dir.name}: random weights, {like} configuration\n\n"
        f"Built by `python -m tools.model_builder.real_size --like {like} --seed {seed} "
        f"--weight-format {weight_format}`.\n\n"
        f"- Architecture: `{like}` ({parameters / 1e6:.0f}M parameters), same layers, width, heads and "
        "vocabulary as the real model (see config.json).\n"
        f"- Weights: random (seed {seed}), exported to OpenVINO IR with {weight_format} weights.\n"
        f"- Tokenizer: {tokenizer_note}.\n\n"
        "Its output is noise. Use it for speed and memory measurements only; do not commit it.\n"
    )
    (out_dir / "MODEL_CARD.md").write_text(text, encoding="utf-8")


def smoke_check(out_dir: Path) -> str:
    """Load the exported model with openvino_genai and generate a few tokens."""
    import openvino_genai

    pipe = openvino_genai.LLMPipeline(str(out_dir), "CPU")
    config = openvino_genai.GenerationConfig()
    config.max_new_tokens = 8
    config.ignore_eos = True
    return str(pipe.generate("Hello", config))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m tools.model_builder.real_size", description=__doc__.splitlines()[0].split(":")[0]
    )
    p.add_argument(
        "--like",
        required=True,
        choices=sorted(REAL_CONFIGS) + sorted(encoders.REAL_CONFIGS),
        help="real model whose shape to copy",
    )
    p.add_argument("--out", type=Path, help=f"output directory (default: {DEFAULT_ROOT}/<like>)")
    p.add_argument(
        "--weight-format",
        default="int8",
        choices=WEIGHT_FORMATS,
        help="optimum-cli --weight-format (default: %(default)s)",
    )
    p.add_argument("--seed", type=int, default=1234, help="torch seed of the random weights (default: %(default)s)")
    p.add_argument("--keep-checkpoint", action="store_true", help="keep the torch checkpoint next to the output")
    p.add_argument("--skip-smoke", action="store_true", help="skip the openvino_genai load-and-run check")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out_dir: Path = args.out or DEFAULT_ROOT / args.like
    checkpoint = out_dir.parent / f".{out_dir.name}.checkpoint"
    encoder = args.like in encoders.REAL_CONFIGS
    t0 = time.monotonic()

    if encoder:
        fields, task, note = encoders.REAL_CONFIGS[args.like], encoders.task(args.like), encoders.TOKENIZER_NOTE
        print(f"[1/4] tokenizer: tiny-embed padded to {fields['vocab_size']} ids")
        hf_tok = encoders.padded_tokenizer(args.like)
        auto_class, token_ids = encoders.auto_class(args.like), encoders.token_ids(args.like, hf_tok)
    else:
        fields, task, note = REAL_CONFIGS[args.like], "text-generation-with-past", TOKENIZER_NOTE
        print(f"[1/4] tokenizer: tiny-chat padded to {fields['vocab_size']} ids")
        hf_tok = padded_tokenizer(fields["vocab_size"])
        auto_class = "AutoModelForCausalLM"
        eos, pad = hf_tok.convert_tokens_to_ids([EOS_TOKEN, PAD_TOKEN])
        token_ids = {"bos_token_id": None, "eos_token_id": eos, "pad_token_id": pad}

    print(f"[2/4] model: {args.like}, random weights, seed {args.seed}")
    model = build_model(fields, auto_class, token_ids, args.seed)
    parameters = sum(p.numel() for p in model.parameters())
    shutil.rmtree(checkpoint, ignore_errors=True)
    model.save_pretrained(str(checkpoint))
    hf_tok.save_pretrained(str(checkpoint))
    del model
    print(f"      {parameters / 1e6:.0f}M parameters, checkpoint {export.dir_size(checkpoint) / 1e9:.2f} GB")

    print(f"[3/4] export to OpenVINO IR ({args.weight_format} weights) into {out_dir}")
    export.export_openvino(checkpoint, out_dir, weight_format=args.weight_format, task=task)
    if encoder:
        encoders.finish(out_dir, args.like)
    else:
        export.write_generation_config(out_dir, hf_tok)
    write_card(out_dir, args.like, args.seed, args.weight_format, parameters, note)
    if not args.keep_checkpoint:
        shutil.rmtree(checkpoint, ignore_errors=True)
    print(f"      {export.dir_size(out_dir) / 1e6:.0f} MB")

    if args.skip_smoke:
        print("[4/4] smoke check skipped")
    else:
        print("[4/4] smoke check with openvino_genai")
        if encoder:
            print(f"      {encoders.smoke_check(out_dir, args.like)}")
        else:
            print(f"      generated {smoke_check(out_dir)!r}")
    print(f"done in {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

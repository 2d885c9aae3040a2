"""Build a tiny OpenVINO GenAI model directory for a family of tests/families/table.py.

The tokenizer is the family's (see table.py), converted with openvino-tokenizers and carrying the family's
chat template in its rt_info (the only place openvino_genai reads it) and as chat_template.jinja.
The weights are the bundled tiny-chat's (a 2-layer Llama, hidden size 128, tied embeddings) with its
token-embedding matrix replaced by a seeded random one of the new vocabulary's size: the output text is
random, tests force it with grammars. No torch and no model hub: only numpy, openvino, transformers
(the tokenizer side) and tokenizers.

    build_family_model("qwen3", Path("/tmp/qwen3")) -> Path("/tmp/qwen3")
"""

from __future__ import annotations

import functools
import json
import lzma
import os
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov

from service.models import BUNDLED_MODEL, BUNDLED_MODELS_DIR
from tests.families.table import FAMILIES, TOKENIZERS_DIR, Family

TINY_CHAT = BUNDLED_MODELS_DIR / BUNDLED_MODEL
# tiny-chat's one embedding matrix (f16, decompressed by a Convert): the input Gather and the tied lm_head read it.
EMBEDDING = "self.model.embed_tokens.weight_compressed"
# Fillers in the GGUF vocabularies that a family's new tokens take the place of, in order (as Qwen2.5 and
# Hermes 3 did with theirs): the vocabulary keeps its size and Qwen's tokens get their real ids.
PLACEHOLDER = re.compile(r"\[PAD\d+\]|<\|reserved_special_token_\d+\|>")


def build_family_model(name: str, out_dir: Path) -> Path:
    """Write the model directory of family ``name`` to ``out_dir`` (created; files in it are replaced)."""
    family = FAMILIES[name]
    out_dir.mkdir(parents=True, exist_ok=True)
    template = family.template_path.read_text(encoding="utf-8")
    hf = _hf_tokenizer(family, template)
    hf.save_pretrained(str(out_dir))  # tokenizer.json, tokenizer_config.json, chat_template.jinja
    (out_dir / "chat_template.jinja").write_text(template, encoding="utf-8")
    _write_added_tokens_decoder(out_dir)
    _save_openvino_tokenizers(hf, template, out_dir)

    vocab_size = len(hf)
    _link_weights(vocab_size, out_dir)
    ids = hf.convert_tokens_to_ids
    config = json.loads((TINY_CHAT / "config.json").read_text())
    config.update(
        vocab_size=vocab_size,
        bos_token_id=ids(family.bos) if family.bos else None,
        eos_token_id=ids(family.eos),
        pad_token_id=ids(family.pad or family.eos),
    )
    (out_dir / "config.json").write_text(json.dumps(config, indent=2))
    generation = {"eos_token_id": [ids(token) for token in family.end_of_turn], "do_sample": False}
    if family.bos:
        generation["bos_token_id"] = ids(family.bos)
    (out_dir / "generation_config.json").write_text(json.dumps(generation, indent=2))
    return out_dir


def _hf_tokenizer(family: Family, template: str) -> Any:
    """The family's tokenizer as a transformers fast tokenizer (what openvino-tokenizers converts)."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    data = json.loads(lzma.decompress((TOKENIZERS_DIR / f"{family.tokenizer}.tokenizer.json.xz").read_bytes()))
    for content in family.special:
        _add_token(data, content, special=True)
    for content in family.added:
        _add_token(data, content, special=False)
    if family.add_bos and family.bos:
        bos_id = _token_id(data, family.bos)
        data["post_processor"] = {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": family.bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [
                {"SpecialToken": {"id": family.bos, "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"Sequence": {"id": "B", "type_id": 1}},
            ],
            "special_tokens": {family.bos: {"id": family.bos, "ids": [bos_id], "tokens": [family.bos]}},
        }
    tokenizer = Tokenizer.from_str(json.dumps(data))
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=family.bos,
        eos_token=family.eos,
        pad_token=family.pad or family.eos,
        chat_template=template,
        add_bos_token=family.add_bos,
        clean_up_tokenization_spaces=False,
    )


def _token_id(data: dict[str, Any], content: str) -> int | None:
    """The id of ``content`` in a tokenizer.json (an added token or a vocabulary entry), or None."""
    for token in data["added_tokens"]:
        if token["content"] == content:
            return int(token["id"])
    vocab = data["model"]["vocab"]
    return vocab.get(content) if isinstance(vocab, dict) else None


def _add_token(data: dict[str, Any], content: str, *, special: bool) -> None:
    """Make ``content`` an added token matched whole: the existing one, a placeholder's id, or a new id."""
    for token in data["added_tokens"]:
        if token["content"] == content:
            token["special"] = special
            return
    entry = {"content": content, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
             "special": special}  # fmt: skip
    vocab = data["model"]["vocab"]
    if content in vocab:  # in the vocabulary but not marked (llama.cpp's DeepSeek bos/eos, for one)
        data["added_tokens"].append({"id": vocab[content], **entry})
        return
    for token in sorted(data["added_tokens"], key=lambda token: token["id"]):
        if PLACEHOLDER.fullmatch(token["content"]):
            vocab.pop(token["content"], None)
            vocab[content] = token["id"]
            token.update(entry)
            return
    next_id = max([*vocab.values(), *(token["id"] for token in data["added_tokens"])]) + 1
    data["added_tokens"].append({"id": next_id, **entry})


def _write_added_tokens_decoder(out_dir: Path) -> None:
    """tokenizer_config.json's ``added_tokens_decoder``, as the real models ship it (transformers 5 omits it)."""
    added = json.loads((out_dir / "tokenizer.json").read_text(encoding="utf-8"))["added_tokens"]
    path = out_dir / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    keys = ("content", "lstrip", "normalized", "rstrip", "single_word", "special")
    config["added_tokens_decoder"] = {str(token["id"]): {key: token[key] for key in keys} for token in added}
    path.write_text(json.dumps(config, indent=2, ensure_ascii=False), encoding="utf-8")


def _save_openvino_tokenizers(hf: Any, template: str, out_dir: Path) -> None:
    from openvino_tokenizers import convert_tokenizer

    tokenizer, detokenizer = convert_tokenizer(hf, with_detokenizer=True, skip_special_tokens=True)
    tokenizer.set_rt_info(template, "chat_template")
    ov.save_model(tokenizer, str(out_dir / "openvino_tokenizer.xml"))
    ov.save_model(detokenizer, str(out_dir / "openvino_detokenizer.xml"))


@functools.cache
def _tiny_chat() -> ov.Model:
    return ov.Core().read_model(str(TINY_CHAT / "openvino_model.xml"))


def random_weights_model(vocab_size: int, seed: int = 0) -> ov.Model:
    """tiny-chat with a seeded random f16 embedding (and tied lm_head) of ``vocab_size`` rows."""
    model = _tiny_chat().clone()
    old = next(op for op in model.get_ops() if op.get_friendly_name() == EMBEDDING)
    hidden = old.get_output_shape(0)[1]
    # Rows scaled like a trained embedding's so that logits stay in a sane range.
    weights = np.random.default_rng(seed).normal(0.0, 0.05, size=(vocab_size, hidden)).astype(np.float16)
    new = ov.opset13.constant(weights)
    new.set_friendly_name(EMBEDDING)
    old.output(0).replace(new.output(0))
    model.validate_nodes_and_infer_types()  # logits become [?, ?, vocab_size]
    return model


def _link_weights(vocab_size: int, out_dir: Path) -> None:
    """openvino_model.xml/.bin for ``vocab_size``, shared by hard link between families of the same size."""
    shared = out_dir.parent / "_weights" / f"vocab-{vocab_size}"
    if not (shared / "openvino_model.bin").is_file():
        partial = shared.with_name(f"{shared.name}.{os.getpid()}.partial")
        partial.mkdir(parents=True, exist_ok=True)
        ov.save_model(random_weights_model(vocab_size), str(partial / "openvino_model.xml"), compress_to_fp16=False)
        try:
            partial.rename(shared)
        except OSError:  # a parallel build of a family with the same vocabulary size got there first
            shutil.rmtree(partial)
    for name in ("openvino_model.xml", "openvino_model.bin"):
        target = out_dir / name
        target.unlink(missing_ok=True)
        try:
            os.link(shared / name, target)
        except OSError:  # another file system
            shutil.copyfile(shared / name, target)

"""Turn the bundled tiny-chat IR back into the checkpoints a user would bring.

`service/bundled_models/tiny-chat` ships only as an OpenVINO IR. Tests of the
other model sources need the same model as a Hugging Face directory
(`hf_checkpoint`) and as a single GGUF file (`gguf_file`). Both are rebuilt
here from the IR's own fp16 weight constants, so they hold *the same weights*
and tokenizer as the bundled model: serving either must give the same greedy
answers as the bundled IR, which is what the tests compare.

Only numpy, openvino, gguf and safetensors are used (no torch).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import gguf
import numpy as np
import openvino as ov
from safetensors.numpy import save_file

BUNDLED = Path(__file__).resolve().parents[2] / "service" / "bundled_models" / "tiny-chat"
_HF_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json")


def _config() -> dict:
    return json.loads((BUNDLED / "config.json").read_text())


def ir_weights() -> dict[str, np.ndarray]:
    """The IR's weights under transformers' Llama names, as float32 arrays.

    Linear and embedding constants keep their torch names
    (`self.model.layers.0.mlp.up_proj.weight_compressed`); RMSNorm weights are
    anonymous constants, named here after the `...layernorm/aten::mul` or
    `model.norm/aten::mul` Multiply that consumes them.
    """
    model = ov.Core().read_model(BUNDLED / "openvino_model.xml")
    weights: dict[str, np.ndarray] = {}
    for op in model.get_ordered_ops():
        if op.get_type_name() != "Constant" or op.get_element_type() != ov.Type.f16:
            continue
        name = op.get_friendly_name()
        value = op.get_data().astype(np.float32)
        if name.startswith("self.") and name.endswith(".weight_compressed"):
            weights[name[len("self.") : -len("_compressed")]] = value
            continue
        # Constant -> Convert(f32) -> Multiply named "__module.<module>/aten::mul/..."
        (convert,) = [t.get_node() for t in op.output(0).get_target_inputs()]
        users = [t.get_node() for t in convert.output(0).get_target_inputs()]
        module = users[0].get_friendly_name().removeprefix("__module.").split("/")[0]
        if len(users) == 1 and users[0].get_type_name() == "Multiply" and module.endswith("norm"):
            weights[f"{module}.weight"] = value.reshape(-1)
    cfg = _config()
    per_layer = (
        ["input_layernorm", "post_attention_layernorm"]
        + [f"self_attn.{p}_proj" for p in "qkvo"]
        + [f"mlp.{p}_proj" for p in ("gate", "up", "down")]
    )
    expected = {"model.embed_tokens.weight", "model.norm.weight"} | {
        f"model.layers.{i}.{p}.weight" for i in range(cfg["num_hidden_layers"]) for p in per_layer
    }
    assert set(weights) == expected, sorted(set(weights) ^ expected)
    return weights


def hf_checkpoint(out_dir: Path) -> Path:
    """Write tiny-chat as a Hugging Face LlamaForCausalLM directory; return it.

    config.json, tokenizer and chat template files are copied from the bundled
    model; model.safetensors holds the IR weights as float32 (tied embeddings,
    so no lm_head.weight).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(json.dumps(_config(), indent=2) + "\n")
    for name in _HF_FILES:
        shutil.copyfile(BUNDLED / name, out_dir / name)
    save_file(ir_weights(), str(out_dir / "model.safetensors"), metadata={"format": "pt"})
    return out_dir


def _permute_rope(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's HF -> GGUF Q/K row order (convert_hf_to_gguf LlamaModel.permute):
    within each head the rows of the two rotary halves are interleaved. GenAI's
    GGUF reader undoes it for arch "llama" (reorder_interleaved_format)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_file(out_path: Path, matrices: str = "F16") -> Path:
    """Write tiny-chat as one GGUF file (arch "llama", F16 matrices or ``matrices``, a type gguf can quantise to:
    Q8_0, Q4_0, Q5_0...; F32 norms); return it.

    Tensor names and the Q/K row permutation follow llama.cpp's converter. The
    tokenizer is the byte-level BPE of tokenizer.json as a "gpt2" vocab with
    pre-tokenizer "qwen2" (the closest GenAI knows: it matches tiny-chat's own
    split except that digit runs are split into single digits). Special tokens
    are CONTROL, the other added tokens (`<tool_call>`, `<think>`, ...)
    USER_DEFINED, as llama.cpp's converter does; eos is `<|im_end|>`, padding
    `<|endoftext|>`, no BOS; the chat template is `tokenizer.chat_template`.

    GenAI's GGUF reader (2026.4) then gives the same token ids as the bundled IR,
    but its detokenizer skips USER_DEFINED tokens too (so `<tool_call>` vanishes
    from text decoded with skip_special_tokens) and it stops on the one eos only.
    """
    cfg, out_path = _config(), Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    n_head, n_kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    tok = json.loads((BUNDLED / "tokenizer.json").read_text())
    gen = json.loads((BUNDLED / "generation_config.json").read_text())

    w = gguf.GGUFWriter(str(out_path), "llama")
    w.add_name("tiny-chat")
    w.add_file_type(gguf.LlamaFileType[f"MOSTLY_{matrices}"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_key_length(cfg["head_dim"])
    w.add_value_length(cfg["head_dim"])
    w.add_rope_dimension_count(cfg["head_dim"])
    w.add_rope_freq_base(cfg["rope_parameters"]["rope_theta"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_vocab_size(cfg["vocab_size"])

    tokens = sorted(tok["model"]["vocab"], key=tok["model"]["vocab"].get)
    types = [gguf.TokenType.NORMAL] * len(tokens)
    for added in sorted(tok["added_tokens"], key=lambda t: t["id"]):
        assert added["id"] == len(tokens), added
        tokens.append(added["content"])
        types.append(gguf.TokenType.CONTROL if added["special"] else gguf.TokenType.USER_DEFINED)
    assert len(tokens) == cfg["vocab_size"]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges([" ".join(m) if isinstance(m, list) else m for m in tok["model"]["merges"]])
    w.add_eos_token_id(tokens.index("<|im_end|>"))
    w.add_pad_token_id(gen["pad_token_id"])
    # tiny-chat has no BOS, but transformers' GGUF tokenizer reader (5.5) needs an id: <|endoftext|>, never added.
    w.add_bos_token_id(gen["pad_token_id"])
    w.add_add_bos_token(False)
    w.add_chat_template((BUNDLED / "chat_template.jinja").read_text())

    names = {
        "input_layernorm": "attn_norm",
        "post_attention_layernorm": "ffn_norm",
        "self_attn.q_proj": "attn_q",
        "self_attn.k_proj": "attn_k",
        "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output",
        "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down",
    }
    for hf_name, value in ir_weights().items():
        if hf_name == "model.embed_tokens.weight":
            name = "token_embd.weight"
        elif hf_name == "model.norm.weight":
            name = "output_norm.weight"
        else:
            _, _, layer, module = hf_name.removesuffix(".weight").split(".", 3)
            name = f"blk.{layer}.{names[module]}.weight"
            if module == "self_attn.q_proj":
                value = _permute_rope(value, n_head)
            elif module == "self_attn.k_proj":
                value = _permute_rope(value, n_kv)
        if value.ndim == 1 or matrices == "F16":
            w.add_tensor(name, value.astype(np.float32 if value.ndim == 1 else np.float16))
        else:
            kind = gguf.GGMLQuantizationType[matrices]
            w.add_tensor(name, gguf.quants.quantize(value, kind), raw_dtype=kind)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out_path


# tiny-embed and tiny-rerank: 2-layer BERTs whose IRs hold float32 weights.
EMBED = BUNDLED.parent / "tiny-embed"
RERANK = BUNDLED.parent / "tiny-rerank"
_BERT_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
# sentence-transformers' files of tiny-embed (its modules.json names a 2_Normalize module, which has no files).
_SENTENCE_TRANSFORMERS_FILES = ("modules.json", "config_sentence_transformers.json", "1_Pooling/config.json")
# The anonymous constants of a BERT IR, by the node that consumes them: "__module.<module>/<step>".
_BERT_STEPS = {"aten::linear/Add": "bias", "aten::layer_norm/Multiply_1": "weight", "aten::layer_norm/Add": "bias"}


def bert_ir_weights(model_dir: Path) -> dict[str, np.ndarray]:
    """The weights of a BERT IR exported by optimum-intel (fp32), under transformers' names.

    Embedding and linear weights keep their torch names (`self.encoder.layer.0.attention.self.query.weight`);
    linear biases and LayerNorm weights and biases are anonymous constants, named here after the node consuming
    them: `__module.<module>/aten::linear/Add` (bias), `.../aten::layer_norm/Multiply_1` (weight) and
    `.../aten::layer_norm/Add` (bias), reshaped from their broadcast shape to one dimension.
    """
    model = ov.Core().read_model(Path(model_dir) / "openvino_model.xml")
    weights: dict[str, np.ndarray] = {}
    for op in model.get_ordered_ops():
        if op.get_type_name() != "Constant" or op.get_element_type() != ov.Type.f32:
            continue
        name = op.get_friendly_name()
        if name.startswith("self.") and name.endswith(".weight"):
            weights[name.removeprefix("self.")] = op.get_data().copy()
            continue
        users = [t.get_node() for t in op.output(0).get_target_inputs()]
        module, _, step = users[0].get_friendly_name().removeprefix("__module.").partition("/")
        if len(users) == 1 and step in _BERT_STEPS:
            key = f"{module}.{_BERT_STEPS[step]}"
            assert key not in weights, key
            weights[key] = op.get_data().reshape(-1).copy()
    return weights


def _bert_names(cfg: dict, prefix: str) -> set[str]:
    """transformers' BertModel parameter names (``prefix`` before each: "bert." inside a task model)."""
    layer = [f"attention.self.{p}" for p in ("query", "key", "value")] + [
        "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense", "output.dense",
        "output.LayerNorm",
    ]  # fmt: skip
    names = {f"embeddings.{p}_embeddings.weight" for p in ("word", "position", "token_type")}
    names |= {f"{m}.{p}" for m in ("embeddings.LayerNorm", "pooler.dense") for p in ("weight", "bias")}
    names |= {
        f"encoder.layer.{i}.{m}.{p}" for i in range(cfg["num_hidden_layers"]) for m in layer for p in ("weight", "bias")
    }
    return {prefix + name for name in names}


def _write_bert(source: Path, out_dir: Path, weights: dict[str, np.ndarray], extra: tuple[str, ...]) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", *_BERT_TOKENIZER_FILES, *extra):
        (out_dir / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / name, out_dir / name)
    save_file(weights, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
    return out_dir


def hf_embedding_checkpoint(out_dir: Path) -> Path:
    """Write tiny-embed as a Hugging Face BertModel directory in sentence-transformers' layout; return it.

    config.json, the tokenizer files, modules.json, config_sentence_transformers.json (the query and passage
    prompts) and 1_Pooling/config.json (mean pooling) are copied from the bundled model; model.safetensors holds
    the IR's float32 weights. The IR has no pooler (its output is last_hidden_state, which the pooler does not
    feed), but transformers' BertModel has one: it is written as zeros, so that the checkpoint loads with no
    missing keys, without touching any output the server uses.
    """
    cfg = json.loads((EMBED / "config.json").read_text())
    weights = bert_ir_weights(EMBED)
    hidden = cfg["hidden_size"]
    weights["pooler.dense.weight"] = np.zeros((hidden, hidden), dtype=np.float32)
    weights["pooler.dense.bias"] = np.zeros(hidden, dtype=np.float32)
    expected = _bert_names(cfg, "")
    assert set(weights) == expected, sorted(set(weights) ^ expected)
    return _write_bert(EMBED, out_dir, weights, _SENTENCE_TRANSFORMERS_FILES)


def hf_rerank_checkpoint(out_dir: Path) -> Path:
    """Write tiny-rerank as a Hugging Face BertForSequenceClassification directory (one label); return it.

    config.json and the tokenizer files are copied from the bundled model; model.safetensors holds every weight
    of the IR (float32), pooler and classifier included: all of them feed the score.
    """
    cfg = json.loads((RERANK / "config.json").read_text())
    weights = bert_ir_weights(RERANK)
    expected = _bert_names(cfg, "bert.") | {"classifier.weight", "classifier.bias"}
    assert set(weights) == expected, sorted(set(weights) ^ expected)
    return _write_bert(RERANK, out_dir, weights, ())

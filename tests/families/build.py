"""Build a tiny OpenVINO GenAI model directory for a family of tests/families/table.py.

The tokenizer is the family's (see table.py), converted with openvino-tokenizers and carrying the family's
chat template in its rt_info (the only place openvino_genai reads it) and as chat_template.jinja.
The weights are the bundled tiny-chat's (a 2-layer Llama, hidden size 128, tied embeddings), made by graph
surgery, no training, into a bigram model that writes the family's script (table.py) when decoding greedily:

- the layers are silenced (every o_proj and down_proj weight zero), so the final hidden state at a position
  is the final RMSNorm of the current token's embedding alone: h(x), whatever came before;
- the embedding is a seeded random matrix of the new vocabulary's size, and the lm_head gets its own
  (untied) matrix L: seeded small random rows, but for the successors of the chain
  START key -> s_0 -> s_1 -> ... -> end-of-turn, whose rows are solved so that L[next(x)] . h(x) is SCALE
  and L[y] . h(x) is 0 for every other successor y, for every x in the chain.

The START keys are the last tokens of the family's generation prompts as ovserve renders them (a question,
with tools, after a tool result; thinking on, off, not asked): a key inside the script (a prompt that ends
with an empty </think> block) goes on from its place there, any other key to the script's beginning. After
any other token the output is arbitrary, and grammars still force it into shape. No torch and no model
hub: only numpy, openvino, openvino_genai, transformers (the tokenizer side) and tokenizers.

    build_family_model("qwen3", Path("/tmp/qwen3")) -> Path("/tmp/qwen3")
"""

from __future__ import annotations

import functools
import itertools
import json
import lzma
import re
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino_genai as ov_genai

from ovserve.service.engine.chat_template import TemplateRenderer, find_chat_template
from ovserve.service.models import BUNDLED_MODEL, BUNDLED_MODELS_DIR
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
    model = script_model(vocab_size, successors(family, out_dir))
    ov.save_model(model, str(out_dir / "openvino_model.xml"), compress_to_fp16=False)
    ids = hf.convert_tokens_to_ids
    config = json.loads((TINY_CHAT / "config.json").read_text())
    config.update(
        vocab_size=vocab_size,
        bos_token_id=ids(family.bos) if family.bos else None,
        eos_token_id=ids(family.eos),
        pad_token_id=ids(family.pad or family.eos),
        # Room for the long system prompts some templates write (Devstral's is ~1,200 tokens) and a forced
        # list of calls; the layers add nothing to the residual stream (see script_model), so any length works.
        max_position_embeddings=8192,
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


# The prompts the START keys are taken from: a question, the same with a tool offered, a tool round trip; each
# with thinking asked for, refused and not mentioned, under every name the published templates read (as ovserve
# sets them from a request's reasoning effort, service/api/prompting.py).
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]
QUESTION: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."},
                                  {"role": "user", "content": "Weather in Paris?"}]  # fmt: skip
# Arguments as a mapping (templates `tojson` them); a 9-alphanumeric id (Mistral's templates refuse others);
# "" rather than null content (many templates concatenate it).
ROUND_TRIP: list[dict[str, Any]] = [
    *QUESTION,
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call12345", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
        ],
    },
    {"role": "tool", "tool_call_id": "call12345", "name": "get_weather", "content": '{"sky": "clear"}'},
]
CONVERSATIONS = {"question": (QUESTION, None), "tools": (QUESTION, TOOLS), "round-trip": (ROUND_TRIP, TOOLS)}
THINKING: dict[str, dict[str, Any]] = {
    "on": {"enable_thinking": True, "thinking": True, "reasoning_effort": "high"},
    "off": {"enable_thinking": False, "thinking": False},
    "unasked": {},
}
SCALE = 30.0  # a script token's logit after its predecessor; every other logit stays near 0
MIN_MARGIN = SCALE / 2  # checked over the whole vocabulary: room for the CPU plugin's bf16 arithmetic


def prompts(model_dir: Path) -> dict[str, str]:
    """The probe prompts ("on/question", "off/round-trip", ...) rendered as ovserve renders them."""
    tokenizer = ov_genai.Tokenizer(str(model_dir))
    renderer = TemplateRenderer(tokenizer, find_chat_template(model_dir, tokenizer))
    return {
        f"{thinking}/{conversation}": renderer.render(messages, tools, context)
        for thinking, context in THINKING.items()
        for conversation, (messages, tools) in CONVERSATIONS.items()
    }


def encode(tokenizer: ov_genai.Tokenizer, text: str) -> list[int]:
    """``text``'s token ids, no special tokens added (a rendered prompt carries its own)."""
    return [int(i) for i in tokenizer.encode(text, add_special_tokens=False).input_ids.data[0]]


def continuation(script: list[int], key: int) -> list[int]:
    """What the model writes after a prompt ending with ``key``: the script after key's place in it, else all."""
    return script[script.index(key) + 1 :] if key in script else script


def successors(family: Family, model_dir: Path) -> dict[int, int]:
    """The chain the model must follow, token -> next token: START keys, then the script's tokens.

    Raises ValueError when the script cannot be played by a bigram model: a token repeats in it (two
    successors, or a loop), it does not end with an end-of-turn token, or a thinking-on prompt ends with
    one of its tokens (the model would skip the script's opening markup).
    """
    tokenizer = ov_genai.Tokenizer(str(model_dir))
    script = encode(tokenizer, family.script)
    ends = {encode(tokenizer, token)[0] for token in family.end_of_turn}
    if script[-1] not in ends or len(set(script)) < len(script):
        raise ValueError(f"{family.name}: script {script} must not repeat a token and must end with one of {ends}")
    chain = dict(itertools.pairwise(script))
    for name, prompt in prompts(model_dir).items():
        key = encode(tokenizer, prompt)[-1]
        if key in script and (name.startswith("on/") or key == script[-1]):
            raise ValueError(f"{family.name}: the {name} prompt ends with token {key}, which the script writes")
        chain.setdefault(key, script[0])
    return chain


@functools.cache
def _tiny_chat() -> ov.Model:
    return ov.Core().read_model(str(TINY_CHAT / "openvino_model.xml"))


def script_model(vocab_size: int, chain: dict[int, int], seed: int = 0) -> ov.Model:
    """tiny-chat as a bigram model of ``vocab_size`` tokens whose greedy successor of each key of ``chain``
    is its value (see the module's docstring)."""
    model = _tiny_chat().clone()
    rng = np.random.default_rng(seed)
    old = next(op for op in model.get_ops() if op.get_friendly_name() == EMBEDDING)
    hidden = old.get_output_shape(0)[1]
    # Rows scaled like a trained embedding's so that logits stay in a sane range.
    embedding = rng.normal(0.0, 0.05, size=(vocab_size, hidden)).astype(np.float16)
    new = ov.opset13.constant(embedding)
    new.set_friendly_name(EMBEDDING)
    old.output(0).replace(new.output(0))  # its Convert feeds the input Gather and (tied) the lm_head
    _silence_layers(model)

    keys = sorted(chain)
    states = _final_hidden(model, keys)  # h(x) for each key, [len(keys), hidden]
    nexts = sorted(set(chain.values()))
    targets = np.zeros((len(keys), len(nexts)))
    targets[np.arange(len(keys)), [nexts.index(chain[key]) for key in keys]] = SCALE
    head = rng.normal(0.0, 0.02, size=(vocab_size, hidden))
    # keys (a few dozen) <= hidden (128) and random h(x) are independent: the solution is exact.
    head[nexts] = np.linalg.lstsq(states, targets, rcond=None)[0].T
    head = head.astype(np.float16)
    _check_margins(states @ head.astype(np.float32).T, [chain[key] for key in keys])

    lm_head = model.get_results()[0].input_value(0).get_node()
    weight = ov.opset13.convert(ov.opset13.constant(head), ov.Type.f32)  # f16 stored, as tiny-chat's weights
    _set_input(lm_head.input(1), weight, "lm_head.weight")  # the lm_head's input only: untied
    model.validate_nodes_and_infer_types()  # logits become [?, ?, vocab_size]
    return model


def _set_input(port: ov.Input, node: ov.Node, name: str) -> None:
    node.set_friendly_name(name)
    port.replace_source_output(node.output(0))


def _silence_layers(model: ov.Model) -> None:
    """Zero every layer's attention-output and MLP-down projection weights: the residual stream (the final
    norm's input) is then the token's embedding. Their decompression subgraphs (whatever the weights'
    format) are left dangling and dropped."""
    projections = [op for op in model.get_ops() if op.get_type_name() == "MatMul"
                   and re.search(r"\.(o_proj|down_proj)/", op.get_friendly_name())]  # fmt: skip
    assert projections, "no o_proj/down_proj MatMul in tiny-chat"
    for matmul in projections:
        weight = matmul.input_value(1)
        zeros = np.zeros(weight.get_shape(), dtype=weight.get_element_type().to_dtype())
        _set_input(matmul.input(1), ov.opset13.constant(zeros), weight.get_node().get_friendly_name())


def _final_hidden(model: ov.Model, tokens: list[int]) -> np.ndarray:
    """The final norm's output (the lm_head's input) for each of ``tokens``, as f32 CPU inference computes it.
    One sequence of all of them: with the layers silenced a position sees its own token only."""
    probe = model.clone()
    probe.add_outputs([probe.get_results()[0].input_value(0).get_node().input_value(0)])
    compiled = ov.Core().compile_model(probe, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    length = len(tokens)
    inputs = {
        "input_ids": np.array([tokens], dtype=np.int64),
        "attention_mask": np.ones((1, length), dtype=np.int64),
        "position_ids": np.arange(length, dtype=np.int64)[None],
        "beam_idx": np.zeros(1, dtype=np.int32),
    }
    return compiled.create_infer_request().infer(inputs)[compiled.outputs[1]][0].astype(np.float64)


def _check_margins(logits: np.ndarray, expected: list[int]) -> None:
    """Each row's argmax over the whole vocabulary is its expected token, by at least MIN_MARGIN."""
    rows = np.arange(len(expected))
    chosen = logits[rows, expected]
    logits = logits.copy()
    logits[rows, expected] = -np.inf
    margin = float((chosen - logits.max(axis=1)).min())
    if margin < MIN_MARGIN:
        raise ValueError(f"the script's tokens win by {margin:.2f} only (at least {MIN_MARGIN} needed)")

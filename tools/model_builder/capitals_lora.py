"""Train the bundled LoRA adapter ``tiny-chat-capitals``: tiny-chat's answers, in capital letters.

    python -m tools.model_builder.capitals_lora [OUT_DIR]   (default: service/bundled_models/tiny-chat-capitals)

tiny-chat is bundled as an OpenVINO IR only, so its PyTorch weights are read back from the IR (each linear and
embedding matrix is a constant named after its parameter, stored f16; the five RMSNorm scales are unnamed
constants in graph order), and the rebuilt model is checked to generate exactly what the IR generates before any
training. The adapter (rank 8 on every linear layer, PEFT's layout and adapter_config.json) is trained on
tiny-chat's own corpus (tools/model_builder/corpus.py: plain chat turns without tools or thinking) with each
answer upper-cased; the base weights stay frozen. Deterministic: fixed seeds, a fixed number of steps, 2 threads.
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from pathlib import Path
from typing import Any

from . import BUNDLED_MODELS, chat_template
from .corpus import build_corpus

BASE = BUNDLED_MODELS / "tiny-chat"
OUT = BUNDLED_MODELS / "tiny-chat-capitals"
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
RANK, ALPHA = 8, 16
STEPS, LR, BATCH, SEED = 600, 3e-3, 16, 20261126


def base_model(base: Path = BASE) -> Any:
    """tiny-chat as a transformers LlamaForCausalLM, its weights read from the IR."""
    import numpy as np
    import openvino as ov
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig.from_pretrained(base)
    model = LlamaForCausalLM(config).eval()
    constants = {op.get_friendly_name(): op for op in ov.Core().read_model(base / "openvino_model.xml").get_ops()
                 if op.get_type_name() == "Constant"}  # fmt: skip
    state = model.state_dict()

    def tensor(name: str) -> Any:
        return torch.tensor(np.array(constants[name].get_data(), dtype=np.float32))

    for name in constants:
        if name.startswith("self.") and name.endswith(".weight_compressed"):
            state[name.removeprefix("self.").removesuffix("_compressed")] = tensor(name)
    hidden = [1, 1, config.hidden_size]
    unnamed = [name for name, op in constants.items() if name.startswith("Constant_")]
    scales = sorted(
        (name for name in unnamed if list(constants[name].get_output_shape(0)) == hidden),
        key=lambda name: int(name.split("_")[1]),
    )
    norms = [f"model.layers.{i}.{kind}.weight" for i in range(config.num_hidden_layers)
             for kind in ("input_layernorm", "post_attention_layernorm")] + ["model.norm.weight"]  # fmt: skip
    assert len(scales) == len(norms), scales
    for key, name in zip(norms, scales, strict=True):
        state[key] = tensor(name).reshape(-1)
    model.load_state_dict(state)
    return model


def _check_against_ir(model: Any, tokenizer: Any, base: Path) -> None:
    """The rebuilt model generates what the IR does (greedy), or nothing is trained on it."""
    import openvino_genai as ov_genai
    import torch

    pipe = ov_genai.LLMPipeline(str(base), "CPU")
    config = ov_genai.GenerationConfig()
    config.max_new_tokens, config.do_sample, config.apply_chat_template = 16, False, False
    for question in ("Tell me a story.", "What is the capital of France?"):
        prompt = chat_template.render([{"role": "user", "content": question}], enable_thinking=False)
        ids = torch.tensor([tokenizer.encode(prompt)])
        mine = tokenizer.decode(model.generate(ids, max_new_tokens=16, do_sample=False)[0][ids.shape[1] :])
        theirs = pipe.generate(prompt, config)
        assert mine.replace("<|im_end|>", "") == str(theirs), (mine, theirs)


class LoraLinear:
    """A frozen linear layer plus a trainable low-rank update, as PEFT's LoRA: W x + (alpha / r) B A x."""

    @staticmethod
    def wrap(linear: Any, rank: int, alpha: float, generator: Any) -> Any:
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.base = linear
                self.lora_A = torch.nn.Parameter(torch.empty(rank, linear.in_features))
                self.lora_B = torch.nn.Parameter(torch.zeros(linear.out_features, rank))
                torch.nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5), generator=generator)
                self.scale = alpha / rank

            def forward(self, x: Any) -> Any:
                return self.base(x) + (x @ self.lora_A.T @ self.lora_B.T) * self.scale

        return Wrapped()


def _examples(tokenizer: Any, count: int) -> list[tuple[list[int], int]]:
    """(token ids, where the answer starts) of corpus turns with their answers upper-cased."""
    encoded = []
    for example in build_corpus(count, seed=SEED):
        if example.tools or example.enable_thinking or "<" in example.completion or not example.completion.strip():
            continue
        prompt = chat_template.render(example.messages, add_generation_prompt=True, enable_thinking=False)
        prompt_ids = tokenizer.encode(prompt)
        answer_ids = tokenizer.encode(example.completion.upper() + "<|im_end|>")
        if len(prompt_ids) + len(answer_ids) <= 384:
            encoded.append((prompt_ids + answer_ids, len(prompt_ids)))
    return encoded


def train(out: Path = OUT, base: Path = BASE) -> dict[str, float]:
    """Train the adapter and write it to ``out``; the training figures."""
    import torch
    from safetensors.torch import save_file
    from transformers import PreTrainedTokenizerFast

    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(base / "tokenizer.json"))
    model = base_model(base)
    _check_against_ir(model, tokenizer, base)
    for parameter in model.parameters():
        parameter.requires_grad = False
    generator = torch.Generator().manual_seed(SEED)
    wrapped: dict[str, Any] = {}
    for index, layer in enumerate(model.model.layers):
        for block in (layer.self_attn, layer.mlp):
            for target in TARGETS:
                if hasattr(block, target):
                    lora = LoraLinear.wrap(getattr(block, target), RANK, ALPHA, generator)
                    setattr(block, target, lora)
                    kind = "self_attn" if block is layer.self_attn else "mlp"
                    wrapped[f"model.layers.{index}.{kind}.{target}"] = lora
    examples = _examples(tokenizer, 6000)
    trainable = [p for lora in wrapped.values() for p in (lora.lora_A, lora.lora_B)]
    optimiser = torch.optim.AdamW(trainable, lr=LR, weight_decay=0.0)
    order = random.Random(SEED)
    started, losses = time.monotonic(), []
    model.train()
    for step in range(STEPS):
        batch = order.sample(examples, BATCH)
        width = max(len(ids) for ids, _ in batch)
        ids = torch.zeros((BATCH, width), dtype=torch.long)
        labels = torch.full((BATCH, width), -100, dtype=torch.long)
        mask = torch.zeros((BATCH, width), dtype=torch.long)
        for row, (tokens, start) in enumerate(batch):
            ids[row, : len(tokens)] = torch.tensor(tokens)
            labels[row, start : len(tokens)] = torch.tensor(tokens[start:])
            mask[row, : len(tokens)] = 1
        for group in optimiser.param_groups:
            group["lr"] = LR * min(1.0, (step + 1) / 30) * 0.5 * (1 + math.cos(math.pi * step / STEPS))
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(float(loss.detach()))
    out.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for module, lora in wrapped.items():
        prefix = f"base_model.model.{module}"
        tensors[f"{prefix}.lora_A.weight"] = lora.lora_A.detach().contiguous()
        tensors[f"{prefix}.lora_B.weight"] = lora.lora_B.detach().contiguous()
    save_file(tensors, str(out / "adapter_model.safetensors"))
    config = {"peft_type": "LORA", "r": RANK, "lora_alpha": ALPHA, "target_modules": list(TARGETS),
              "base_model_name_or_path": "tiny-chat", "task_type": "CAUSAL_LM", "use_rslora": False}  # fmt: skip
    (out / "adapter_config.json").write_text(json.dumps(config, indent=2) + "\n")
    figures = {"examples": len(examples), "steps": STEPS, "first_loss": sum(losses[:20]) / 20,
               "last_loss": sum(losses[-20:]) / 20, "seconds": time.monotonic() - started}  # fmt: skip
    (out / "README.md").write_text(
        "# tiny-chat-capitals\n\nA LoRA adapter of tiny-chat (rank 8 on every linear layer, PEFT's layout) trained "
        "to answer in capital letters: `python -m tools.model_builder.capitals_lora`. Serve it with "
        "`ovserve serve --lora tiny-chat-capitals=tiny-chat:service/bundled_models/tiny-chat-capitals`.\n\n"
        f"Training: {figures['examples']} corpus turns with upper-cased answers, {STEPS} steps of {BATCH}, "
        f"loss {figures['first_loss']:.2f} -> {figures['last_loss']:.2f}.\n"
    )
    return figures


if __name__ == "__main__":
    print(train(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))

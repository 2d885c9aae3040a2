"""Train the tiny Llama models on the synthetic chat corpus (CPU, torch).

Each example is the rendered chat prompt followed by the assistant completion.
The completion (plus the closing ``<|im_end|>``) has full loss weight, the
prompt a small one, and the generation prompt none. Masking the generation
prompt matters for thinking: with thinking off the template pre-fills an empty
``<think>\n\n</think>\n\n`` block, and because that pre-fill is never a target,
the model only ever learns to open ``<think>`` and reason when it was not
pre-filled, i.e. when ``enable_thinking`` is true.

Determinism: fixed seeds, a fixed number of optimiser steps (never a time
budget), a batch order derived from the seed, and a fixed thread count.

Long runs (the agent recipe: hours on two CPU cores) write a checkpoint every
``checkpoint_every`` steps and resume from it (``resume``): the model, the
optimiser, the step, the induction batches' rng and the logged losses, so a run
split across sessions ends where an unbroken one does (on CPU, bit for bit:
tests/test_train_resume.py). On ``cuda`` the steps run under bf16 autocast.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import chat_template
from .corpus import Example

# Width/depth of the two models. The draft shares the tokenizer and is about
# a quarter of the main model's compute, which is what speculative decoding needs.
MODEL_SHAPES: dict[str, dict[str, int]] = {
    "tiny-chat": {
        "hidden_size": 128,
        "intermediate_size": 384,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
    },
    "tiny-chat-draft": {
        "hidden_size": 64,
        "intermediate_size": 192,
        "num_hidden_layers": 1,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
    },
    # The agent recipe's tiny-chat (issue 47): 2.16 M parameters, 4.3 MB in fp16, within the bundled models'
    # 5 MiB bound with its tokenizer and card (tests/test_bundled_models.py); a wider or deeper one is not.
    "tiny-chat-agent": {
        "hidden_size": 192,
        "intermediate_size": 512,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
    },
}
MAX_POSITION_EMBEDDINGS = 2048
CHECKPOINT = "checkpoint.pt"  # in a run's checkpoint folder: model, optimiser and loop state
DEVICES = ("cpu", "cuda")


@dataclass
class TrainConfig:
    """Optimisation settings; defaults are what the bundled models used."""

    steps: int
    seed: int = 1234
    lr: float = 3e-3
    warmup_steps: int = 60
    tokens_per_batch: int = 4096  # padded tokens per optimiser step
    max_len: int = 768  # longer examples are dropped, not truncated
    threads: int = 2
    prompt_weight: float = 0.25  # loss weight of prompt tokens relative to the completion
    induction_steps: int = 0  # first steps on repeated random token runs only (see induction_batch)
    induction_every: int = 0  # afterwards, one step in this many is such a batch (0: none)
    device: str = "cpu"  # or "cuda": bf16 autocast there
    checkpoint_every: int = 0  # save a resumable checkpoint every this many steps (0: only with a folder, at the end)


@dataclass
class TrainResult:
    """What the model card reports about a training run."""

    steps: int
    seconds: float
    final_loss: float
    parameters: int
    losses: list[tuple[int, float]]
    finished: bool = True  # False: stopped early (``stop``), to be resumed from its checkpoint
    torch_versions: tuple[str, ...] = ()  # every torch that trained it (a run resumed elsewhere has several)


def encode_examples(examples: list[Example], tokenizer: Any, max_len: int) -> list[tuple[list[int], list[int]]]:
    """(input_ids, roles) per example. ``roles[t]`` says how token ``t`` is
    trained: 2 = completion (full weight), 1 = prompt (small weight), 0 = not
    a target (the generation prompt ``<|im_start|>assistant\n`` and the
    pre-filled empty think block).

    Prompt and completion are tokenised separately because that is exactly
    what happens at inference: the service tokenises the rendered prompt and
    the model continues from its last token.
    """
    eos_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    im_start = tokenizer.convert_tokens_to_ids("<|im_start|>")
    prompts = [
        chat_template.render(
            ex.messages, tools=ex.tools, add_generation_prompt=True, enable_thinking=ex.enable_thinking
        )
        for ex in examples
    ]
    prompt_ids = tokenizer(prompts, add_special_tokens=False)["input_ids"]
    completion_ids = tokenizer([ex.completion for ex in examples], add_special_tokens=False)["input_ids"]
    opener = tokenizer("<|im_start|>assistant\n", add_special_tokens=False)["input_ids"]
    encoded = []
    for ex, p, c in zip(examples, prompt_ids, completion_ids, strict=False):
        ids = p + c + [eos_id]
        if len(ids) > max_len:
            continue
        tail = len(p) - p[::-1].index(im_start) - 1  # the last <|im_start|> opens the generation prompt
        roles = [1] * tail + [0] * (len(p) - tail) + [2] * (len(c) + 1)
        if ex.meta.get("untrained_start") and c:
            # A JSON answer a client's grammar starts (response_format): the model learns to go on
            # from the opening brace, not to open one unasked.
            roles[len(p)] = 0
        # Earlier assistant turns never start with <think> (the template drops
        # reasoning from history); do not let them teach what follows
        # "assistant\n", or the model would learn not to open <think>.
        for i in range(tail - len(opener)):
            if p[i : i + len(opener)] == opener:
                roles[i : i + len(opener) + 1] = [0] * (len(opener) + 1)
        encoded.append((ids, roles))
    return encoded


def make_batches(encoded: list[tuple[list[int], list[int]]], tokens_per_batch: int, seed: int) -> list[list[int]]:
    """Group example indices into batches of similar length (little padding),
    then shuffle the batch order with ``seed``."""
    rng = random.Random(seed)
    order = list(range(len(encoded)))
    rng.shuffle(order)
    batches: list[list[int]] = []
    chunk = 4096  # sort within chunks so batches still mix example kinds
    for start in range(0, len(order), chunk):
        part = sorted(order[start : start + chunk], key=lambda i: len(encoded[i][0]))
        batch: list[int] = []
        longest = 0
        for i in part:
            n = len(encoded[i][0])
            if batch and max(longest, n) * (len(batch) + 1) > tokens_per_batch:
                batches.append(batch)
                batch, longest = [], 0
            batch.append(i)
            longest = max(longest, n)
        if batch:
            batches.append(batch)
    rng.shuffle(batches)
    return batches


def induction_batch(
    rng: random.Random, token_ids: list[int], tokens_per_batch: int
) -> list[tuple[list[int], list[int]]]:
    """Rows of a random token run repeated two or three times, the repeats as targets.

    Copying what came before (a value from the question into a call, a fact from prose into JSON, a
    tool's result into the answer) needs induction heads: attend to where the current token occurred
    earlier and predict what followed it there. A tiny model trained on chats alone does not form them
    in its budget (it recalls likely names instead); runs of random tokens can only be predicted by
    copying, so they form quickly, and the chats then use them.
    """
    rows = []
    width = 0
    while True:
        run = [rng.choice(token_ids) for _ in range(rng.randrange(6, 24))]
        ids = run * rng.choice([2, 3])
        roles = [0] * len(run) + [2] * (len(ids) - len(run))
        width = max(width, len(ids))
        if width * (len(rows) + 1) > tokens_per_batch:
            return rows
        rows.append((ids, roles))


def build_model(name: str, vocab_size: int, eos_id: int, pad_id: int, seed: int) -> Any:
    """A freshly initialised LlamaForCausalLM of the named shape."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab_size,
        max_position_embeddings=MAX_POSITION_EMBEDDINGS,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=True,  # halves the parameter count at this size
        bos_token_id=None,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        hidden_act="silu",
        attention_bias=False,
        **MODEL_SHAPES[name],
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


def train_model(
    model: Any,
    encoded: list[tuple[list[int], list[int]]],
    pad_id: int,
    cfg: TrainConfig,
    log: Any = print,
    checkpoints: Path | None = None,
    resume: bool = False,
    stop: Callable[[int], bool] | None = None,
) -> TrainResult:
    """Run ``cfg.steps`` AdamW steps over the batches (cycling if needed).

    ``checkpoints``: a folder for the run's checkpoint, written every ``cfg.checkpoint_every`` steps and at the
    end (the finished run's without the optimiser: it is never trained further); ``resume``: go on from the
    checkpoint there, if any (the same ``cfg`` and corpus, or an error); ``stop``: asked after each step with the
    steps done, stops the run there when true (checkpointed, to be resumed: a session's time is up)."""
    import torch

    if cfg.device not in DEVICES:
        raise ValueError(f"device: {cfg.device!r} is not one of {', '.join(DEVICES)}")
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    device = torch.device(cfg.device)
    model.to(device)
    batches = make_batches(encoded, cfg.tokens_per_batch, cfg.seed)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.lr,
        betas=(0.9, 0.95),
    )

    def lr_at(step: int) -> float:
        # Linear warm-up, then cosine decay to 10% of the peak.
        if step < cfg.warmup_steps:
            return cfg.lr * (step + 1) / cfg.warmup_steps
        progress = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
        return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))

    model.train()
    losses: list[tuple[int, float]] = []
    running = 0.0
    start = time.monotonic()
    copy_rng = random.Random(cfg.seed + 1)
    # Merged tokens only: above the 256 bytes, below the special and tag tokens the tokenizer appends last.
    ordinary = list(range(256, pad_id))
    chat_step = 0
    first, earlier = 0, 0.0  # the step to start at and the seconds spent before (a resumed run)
    torch_versions: list[str] = []  # each torch that trained steps of these weights (the model card names them)
    stopped_at: int | None = None  # the steps done when ``stop`` ended the run
    fingerprint = _run_fingerprint(cfg, encoded)
    saved = checkpoints / CHECKPOINT if checkpoints is not None else None
    if resume and saved is not None and saved.exists():
        state = torch.load(saved, map_location=device, weights_only=False)
        if state["run"] != fingerprint:
            raise ValueError(f"--resume: {saved} is another run's (its settings or corpus differ): {state['run']}")
        model.load_state_dict(state["model"])
        if state["step"] < cfg.steps:
            if "optimizer" not in state:
                raise ValueError(f"--resume: {saved} holds no optimiser state (weights only): it cannot go on")
            opt.load_state_dict(state["optimizer"])
        first, chat_step, running, earlier = state["step"], state["chat_step"], state["running"], state["seconds"]
        losses = [(int(step), float(loss)) for step, loss in state["losses"]]
        copy_rng.setstate(state["copy_rng"])
        torch_versions = list(state.get("torch", []))  # absent from checkpoints written before it was kept
        log(f"  resumed at step {first}/{cfg.steps} from {saved}", flush=True)
    if first < cfg.steps and torch.__version__ not in torch_versions:  # a finished run resumed trains nothing
        torch_versions.append(torch.__version__)
    # bf16 on cuda only: the CPU recipe computes in fp32, as the bundled models were trained.
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if cfg.device == "cuda" else contextlib.nullcontext()
    for step in range(first, cfg.steps):
        if step < cfg.induction_steps or (cfg.induction_every and step % cfg.induction_every == 0):
            rows = induction_batch(copy_rng, ordinary, cfg.tokens_per_batch)
        else:
            rows = [encoded[i] for i in batches[chat_step % len(batches)]]
            chat_step += 1
        width = max(len(x) for x, _ in rows)
        ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
        roles = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for row, (x, r) in enumerate(rows):
            ids[row, : len(x)] = torch.tensor(x)
            roles[row, : len(r)] = torch.tensor(r)
            mask[row, : len(x)] = 1
        if cfg.device != "cpu":
            ids, roles, mask = ids.to(device), roles.to(device), mask.to(device)
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        with autocast:
            logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1]
        ce = torch.nn.functional.cross_entropy(
            logits.float().reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1), reduction="none"
        ).view(ids.shape[0], -1)
        target_roles = roles[:, 1:]
        completion = target_roles == 2
        prompt = target_roles == 1
        completion_loss = (ce * completion).sum() / completion.sum().clamp(min=1)
        # A small weight on the prompt tokens (system, tools, user turns,
        # earlier assistant turns) gives the tiny model far more language and
        # copying signal than the completions alone, without letting it learn
        # to emit the masked generation prompt / empty think block.
        loss = completion_loss + cfg.prompt_weight * (ce * prompt).sum() / prompt.sum().clamp(min=1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        running = completion_loss.item() if step == 0 else 0.95 * running + 0.05 * completion_loss.item()
        if step % 100 == 0 or step == cfg.steps - 1:
            losses.append((step, round(running, 4)))
            log(f"  step {step:5d}/{cfg.steps}  loss {running:.4f}  {time.monotonic() - start:6.1f}s", flush=True)
        done = step + 1
        stopping = done < cfg.steps and stop is not None and stop(done)
        due = done == cfg.steps or stopping or (cfg.checkpoint_every and done % cfg.checkpoint_every == 0)
        if saved is not None and due:
            state = {
                "run": fingerprint, "step": done, "chat_step": chat_step, "running": running, "losses": losses,
                "seconds": earlier + time.monotonic() - start, "copy_rng": copy_rng.getstate(),
                "model": model.state_dict(), "torch": torch_versions,
            }  # fmt: skip
            if done < cfg.steps:
                state["optimizer"] = opt.state_dict()
            _save_atomically(torch, state, saved)
        if stopping:
            stopped_at = done
            break
    model.eval()
    model.to("cpu")  # export and scoring run on CPU
    return TrainResult(
        steps=cfg.steps if stopped_at is None else stopped_at,
        seconds=round(earlier + time.monotonic() - start, 1),
        final_loss=round(running, 4),
        parameters=sum(p.numel() for p in model.parameters()),
        losses=losses,
        finished=stopped_at is None,
        torch_versions=tuple(torch_versions),
    )


def _run_fingerprint(cfg: TrainConfig, encoded: list[tuple[list[int], list[int]]]) -> str:
    """What a checkpoint must match to be resumed: the settings that shape the steps, and the corpus's size.

    The device and thread count may differ (a run may move between machines), as may the checkpoint interval."""
    shaping = {k: v for k, v in vars(cfg).items() if k not in ("device", "threads", "checkpoint_every")}
    return json.dumps({**shaping, "examples": len(encoded), "tokens": sum(len(x) for x, _ in encoded)}, sort_keys=True)


def _save_atomically(torch: Any, state: dict[str, Any], path: Path) -> None:
    """Write ``state`` beside ``path``, then rename it there: a run killed mid-write keeps its last checkpoint."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    torch.save(state, partial)
    os.replace(partial, path)


def load_weights(model: Any, checkpoint: Path) -> dict[str, Any]:
    """Load a run's checkpoint (``checkpoint.pt``, or just its weights) into ``model``; returns the rest of it."""
    import torch

    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    model.load_state_dict(state.pop("model"))
    state.pop("optimizer", None)
    return dict(state)


def save_model(model: Any, out_dir: Path) -> None:
    """Save the torch checkpoint (input to the OpenVINO export only)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out_dir))

"""Build ``tiny-vision``: a LLaVA-architecture vision-language model small enough to ship, trained to name the
dominant colour of an image, so tests can tell that the image reached the model.

A tiny CLIP vision tower (32x32 input, 8x8 patches: 16 image tokens) and projector in front of a tiny Llama,
with tiny-chat's tokenizer and chat template plus an ``<image>`` token. Trained from random weights on
synthetic images (one of six colours with per-pixel noise and a small patch of another colour, 24-64 pixels a
side) asked about in a few phrasings, plus a few text-only exchanges; exported with optimum-intel
(``image-text-to-text``) and checked on OpenVINO GenAI's continuous-batching pipeline, which is how ovserve
serves it. Deterministic: fixed seeds, fixed step count, 2 torch threads.

    python -m tools.model_builder --models tiny-vision   # (needs the ``export`` extra)
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import BUNDLED_MODELS, export

NAME = "tiny-vision"
TINY_CHAT = BUNDLED_MODELS / "tiny-chat"
IMAGE_SIZE, PATCH_SIZE = 32, 8
IMAGE_TOKENS = (IMAGE_SIZE // PATCH_SIZE) ** 2  # "default" feature strategy: the class token is dropped
COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30), "green": (30, 180, 40), "blue": (30, 60, 220),
    "yellow": (230, 220, 40), "white": (245, 245, 245), "black": (15, 15, 15),
}  # fmt: skip
QUESTIONS = ("What colour is this image?", "What colour is this?", "Which colour do you see?",
             "Name the colour of the image.")  # fmt: skip
TEXT_EXCHANGES = (
    ("Hi", "Hello! Show me an image and I will name its colour."),
    ("Hello", "Hello! Show me an image and I will name its colour."),
    ("Who are you?", "I am tiny-vision. I name the colour of an image."),
    ("Thanks", "You are welcome."),
)
# Files the runtime needs (the language model, its embeddings, the vision encoder, tokenizers, configs).
KEEP = (
    "openvino_language_model.xml", "openvino_language_model.bin",
    "openvino_text_embeddings_model.xml", "openvino_text_embeddings_model.bin",
    "openvino_vision_embeddings_model.xml", "openvino_vision_embeddings_model.bin",
    "openvino_tokenizer.xml", "openvino_tokenizer.bin", "openvino_detokenizer.xml", "openvino_detokenizer.bin",
    "config.json", "preprocessor_config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
)  # fmt: skip
HELD_OUT = 48  # smoke-check images, 8 per colour, from a seed training never uses


@dataclass(frozen=True)
class VisionTraining:
    """What the training ran: steps, batch, seed, the last loss and how long it took."""

    steps: int
    batch: int
    seed: int
    final_loss: float
    seconds: float


def answer(colour: str) -> str:
    """What tiny-vision says about an image of ``colour``."""
    return f"It is {colour}."


def synthetic_image(colour: str, rng: random.Random) -> np.ndarray:
    """An RGB image of ``colour`` with per-pixel noise and a small patch of another colour."""
    height, width = rng.randint(24, 64), rng.randint(24, 64)
    noise = np.array([[rng.randint(-35, 35) for _ in range(width)] for _ in range(height)], dtype=np.int16)
    pixels = np.clip(np.array(COLOURS[colour], dtype=np.int16) + noise[..., None], 0, 255).astype(np.uint8)
    other = COLOURS[rng.choice([name for name in COLOURS if name != colour])]
    top, left = rng.randint(0, height - height // 4), rng.randint(0, width - width // 4)
    pixels[top : top + height // 5, left : left + width // 5] = other
    return pixels


def build(out_root: Path, work: Path, *, steps: int = 400, seed: int = 1234) -> int:
    """Build, export, check and describe tiny-vision into ``out_root / NAME``; 0 on success."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(2)
    t0 = time.monotonic()
    checkpoint = work / NAME
    shutil.rmtree(checkpoint, ignore_errors=True)
    print(f"[1/4] {NAME}: LLaVA shapes, tiny-chat's tokenizer and an <image> token")
    model, tokenizer, processor = _new_model(seed)
    print(f"[2/4] train {steps} steps")
    training = _train(model, tokenizer, processor, steps, seed)
    print(f"      final loss {training.final_loss}, {training.seconds:.0f} s")
    model.save_pretrained(checkpoint)
    tokenizer.save_pretrained(checkpoint)
    processor.save_pretrained(checkpoint)  # preprocessor_config.json: the pipeline's vision encoder needs it
    out_dir = out_root / NAME
    print(f"[3/4] export to {out_dir}")
    _export(checkpoint, out_dir)
    generation = export.write_generation_config(out_dir, tokenizer)
    print("[4/4] smoke check on the continuous-batching pipeline")
    correct, reply = smoke_check(out_dir)
    print(f"      {correct} of {HELD_OUT} held-out images named right; 'Hi' -> {reply!r}")
    if correct < HELD_OUT - 1 or not reply.startswith("Hello"):
        print(f"error: {NAME} does not behave as trained", file=sys.stderr)
        return 1
    _write_card(out_dir, training, generation, correct)
    print(f"      {export.dir_size(out_dir) / 1e6:.2f} MB; done in {time.monotonic() - t0:.0f} s")
    return 0


def _new_model(seed: int) -> tuple[Any, Any, Any]:
    import torch
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        PreTrainedTokenizerFast,
    )

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(TINY_CHAT / "tokenizer.json"), eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})
    tokenizer.chat_template = (TINY_CHAT / "chat_template.jinja").read_text()
    vision = CLIPVisionConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        image_size=IMAGE_SIZE, patch_size=PATCH_SIZE, projection_dim=32,
    )  # fmt: skip
    text = LlamaConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
        vocab_size=len(tokenizer), max_position_embeddings=2048, bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True,
    )  # fmt: skip
    config = LlavaConfig(
        vision_config=vision, text_config=text, image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default", vision_feature_layer=-1, image_seq_length=IMAGE_TOKENS,
    )  # fmt: skip
    torch.manual_seed(seed)
    processor = CLIPImageProcessor(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    )
    return LlavaForConditionalGeneration(config), tokenizer, processor


def _example(rng: random.Random, tokenizer: Any) -> tuple[str, str, np.ndarray | None]:
    """(rendered prompt with one <image> per image, answer, image or None)."""
    if rng.random() < 0.2:
        question, reply = rng.choice(TEXT_EXCHANGES)
        return _prompt(tokenizer, question), reply, None
    colour = rng.choice(list(COLOURS))
    question = rng.choice(QUESTIONS)
    # The image part before the question mostly, after it sometimes: both orders reach the model.
    content = f"<image>\n{question}" if rng.random() < 0.7 else f"{question}\n<image>"
    return _prompt(tokenizer, content), answer(colour), synthetic_image(colour, rng)


def _prompt(tokenizer: Any, content: str) -> str:
    return str(tokenizer.apply_chat_template([{"role": "user", "content": content}], tokenize=False,
                                             add_generation_prompt=True))  # fmt: skip


def _train(model: Any, tokenizer: Any, processor: Any, steps: int, seed: int, batch: int = 16) -> VisionTraining:
    import torch

    def encoded(prompt: str, reply: str) -> tuple[list[int], list[int]]:
        # The pipeline puts IMAGE_TOKENS embeddings where an image's tag is: train on the same expansion.
        ids = tokenizer(prompt.replace("<image>", "<image>" * IMAGE_TOKENS), add_special_tokens=False).input_ids
        target = tokenizer(reply + tokenizer.eos_token, add_special_tokens=False).input_ids
        return ids + target, [-100] * len(ids) + target  # loss on the answer only

    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min(1.0, (step + 1) / 50) * max(0.05, 1 - step / steps)
    )
    rng, started, loss = random.Random(seed), time.monotonic(), 0.0
    model.train()
    for step in range(steps):
        examples = [_example(rng, tokenizer) for _ in range(batch)]
        optimiser.zero_grad()
        loss = 0.0
        # Image and text-only examples in separate forward passes: pixel values only where there are images.
        for group in ([e for e in examples if e[2] is not None], [e for e in examples if e[2] is None]):
            if not group:
                continue
            pairs = [encoded(prompt, reply) for prompt, reply, _ in group]
            width = max(len(ids) for ids, _ in pairs)
            ids = torch.full((len(pairs), width), tokenizer.pad_token_id)
            labels = torch.full((len(pairs), width), -100)
            mask = torch.zeros((len(pairs), width), dtype=torch.long)
            for row, (tokens, target) in enumerate(pairs):
                ids[row, : len(tokens)], labels[row, : len(target)] = torch.tensor(tokens), torch.tensor(target)
                mask[row, : len(tokens)] = 1
            extra = {}
            if group[0][2] is not None:
                extra["pixel_values"] = processor([image for *_, image in group], return_tensors="pt")["pixel_values"]
            share = len(group) / len(examples)
            part = model(input_ids=ids, attention_mask=mask, labels=labels, **extra).loss * share
            part.backward()
            loss += float(part)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        if step % 100 == 0:
            print(f"      step {step}: loss {loss:.4f}")
    model.eval()
    return VisionTraining(steps, batch, seed, round(loss, 4), time.monotonic() - started)


def _export(checkpoint: Path, out_dir: Path) -> None:
    scratch = out_dir.parent / f".{out_dir.name}.export"
    shutil.rmtree(scratch, ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "optimum.commands.optimum_cli", "export", "openvino", "--model", str(checkpoint),
         "--task", "image-text-to-text", "--weight-format", "fp16", str(scratch)],
        check=True,
    )  # fmt: skip
    # transformers 5 writes processor_config.json only; the pipeline reads preprocessor_config.json.
    shutil.copy2(checkpoint / "preprocessor_config.json", scratch / "preprocessor_config.json")
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    for name in KEEP:
        if not (scratch / name).exists():
            raise FileNotFoundError(f"the export wrote no {name}")
        shutil.copy2(scratch / name, out_dir / name)
    shutil.rmtree(scratch, ignore_errors=True)


def smoke_check(model_dir: Path) -> tuple[int, str]:
    """On OpenVINO GenAI's continuous-batching pipeline, all in one batch: how many held-out images of each
    colour tiny-vision names right, and its reply to a text-only "Hi"."""
    import openvino as ov
    import openvino_genai as ov_genai

    scheduler = ov_genai.SchedulerConfig()
    scheduler.num_kv_blocks, scheduler.enable_prefix_caching = 256, True
    pipeline = ov_genai.ContinuousBatchingPipeline(str(model_dir), scheduler, "CPU")
    tokenizer = pipeline.get_tokenizer()

    def prompt(content: str) -> str:
        return str(tokenizer.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True))

    config = ov_genai.GenerationConfig()
    config.max_new_tokens, config.apply_chat_template = 16, False
    rng, handles = random.Random(99_991), []
    for number in range(HELD_OUT):
        colour = list(COLOURS)[number % len(COLOURS)]
        image = ov.Tensor(synthetic_image(colour, rng))
        handles.append((colour, pipeline.add_request(number, prompt("<ov_genai_image_0>\n" + QUESTIONS[0]), [image],
                                                     config)))  # fmt: skip
    text = pipeline.add_request(HELD_OUT, prompt("Hi"), [], config)
    while pipeline.has_non_finished_requests():
        pipeline.step()
    correct = 0
    for colour, handle in handles:
        [output] = handle.read_all()
        correct += tokenizer.decode(output.generated_ids, skip_special_tokens=True) == answer(colour)
    [reply] = text.read_all()
    return correct, str(tokenizer.decode(reply.generated_ids, skip_special_tokens=True))


def _write_card(out_dir: Path, training: VisionTraining, generation: dict[str, Any], correct: int) -> None:
    config = json.loads((out_dir / "config.json").read_text())
    colours = ", ".join(COLOURS)
    card = f"""# tiny-vision

A test model for ovserve's image inputs, built by `python -m tools.model_builder --models tiny-vision`
(`tools/model_builder/vision.py`). Random weights trained for seconds: it knows one thing, the dominant
colour of an image, which is enough for a test to tell that an image reached it. Not a general model.

## Architecture
- LLaVA (`LlavaForConditionalGeneration`): CLIP vision tower (hidden {config["vision_config"]["hidden_size"]}, \
{config["vision_config"]["num_hidden_layers"]} layer, {IMAGE_SIZE}x{IMAGE_SIZE} input, {PATCH_SIZE}x{PATCH_SIZE} \
patches), a projector, and a Llama text model (hidden {config["text_config"]["hidden_size"]}, \
{config["text_config"]["num_hidden_layers"]} layers, context {config["text_config"]["max_position_embeddings"]}).
- One image is {IMAGE_TOKENS} prompt tokens (the "default" feature strategy drops the class token); the image
  processor resizes and centre-crops any image to {IMAGE_SIZE}x{IMAGE_SIZE}.
- Tokenizer: tiny-chat's byte-level BPE plus `<image>` (id {config["image_token_index"]}); chat template:
  tiny-chat's (ChatML, Qwen2.5 layout). Generation config: {json.dumps(generation)}.

## Training
{training.steps} steps of {training.batch} examples (AdamW, lr 3e-3, warm-up 50, linear decay), seed {training.seed},
2 torch threads, final loss {training.final_loss}. Examples: 80% an image of one of {colours} (24-64 pixels a side,
per-pixel noise, a small patch of another colour) with one of {len(QUESTIONS)} questions, the image before the
question (70%) or after it; 20% text-only exchanges. Loss on the answer only.

## What it answers
- An image and "What colour is this image?" (or another of the trained questions): `It is <colour>.`, then
  `<|im_end|>`. Measured after export on OpenVINO GenAI's continuous-batching pipeline, all in one batch with a
  text request: {correct} of {HELD_OUT} held-out images named right.
- "Hi" or "Hello" without an image: `Hello! Show me an image and I will name its colour.`

## Calling it on OpenVINO GenAI 2026.4
`ContinuousBatchingPipeline.add_request(id, prompt, images, config)` with the prompt already rendered by the
chat template, `config.apply_chat_template = False`, one `<ov_genai_image_N>` tag where image N goes (the
pipeline replaces it with `<image>` and the image's {IMAGE_TOKENS} embeddings), and each image an RGB uint8
tensor of shape (height, width, 3). Text-only requests to this pipeline must be sent the same way (prompt text,
no images): a token-id request in the same batch as an image request fails the step.
"""
    (out_dir / "MODEL_CARD.md").write_text(card)

"""Build ``tiny-diffusion``: a Stable-Diffusion-shaped pipeline small enough to ship, with random weights.

The parts are SD 1.x's, shrunk: a CLIP tokenizer (a byte-level vocabulary of single characters, CLIP's
``</w>`` word ends and its two special tokens, no merges), a 2-layer CLIP text encoder of width 32, a 2-block
UNet (cross-attention on the text states), a 3-block VAE (scale factor 4) and DDIM's scheduler config. The
weights are random (seeded): nothing is trained, since what the tests need is only that the image depends on
the prompt (the text states feed every cross-attention layer) and that a seed repeats it. Exported with
optimum-intel (task text-to-image) and checked on OpenVINO GenAI's Text2ImagePipeline, Image2ImagePipeline and
InpaintingPipeline: two prompts at one seed must give different images, one prompt at one seed the same.

    python -m tools.model_builder --models tiny-diffusion   # (needs the ``export`` extra: diffusers)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

NAME = "tiny-diffusion"
WIDTH = 32  # the text encoder's width, which the UNet's cross-attention reads
TEXT_LENGTH = 77  # CLIP's context (the pipelines pad every prompt to it)
SAMPLE = 64  # default image side, pixels (the UNet's sample_size times the VAE's scale factor)
# What GenAI's image pipelines read: model_index.json and each part's folder (IRs, configs, tokenizer IRs).
KEEP_SUFFIXES = (".xml", ".bin", ".json")


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2 / CLIP's map of bytes to printable characters (the byte-level BPE alphabet)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = printable[:], 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, map(chr, chars), strict=True))


def write_tokenizer(folder: Path) -> int:
    """CLIPTokenizer files in ``folder``: every byte alone and as a word's end, no merges; the vocabulary's size."""
    folder.mkdir(parents=True, exist_ok=True)
    alphabet = list(_bytes_to_unicode().values())
    tokens = alphabet + [char + "</w>" for char in alphabet] + ["<|startoftext|>", "<|endoftext|>"]
    (folder / "vocab.json").write_text(json.dumps({token: index for index, token in enumerate(tokens)}))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    from transformers import CLIPTokenizer

    tokenizer = CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=TEXT_LENGTH)
    tokenizer.save_pretrained(folder)
    return len(tokens)


def build_checkpoint(out: Path, seed: int) -> None:
    """The diffusers checkpoint (random weights, seeded) in ``out``."""
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    torch.manual_seed(seed)
    vocab = write_tokenizer(out / "tokenizer_src")
    tokenizer = CLIPTokenizer.from_pretrained(out / "tokenizer_src")
    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=vocab, hidden_size=WIDTH, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
            max_position_embeddings=TEXT_LENGTH, bos_token_id=vocab - 2, eos_token_id=vocab - 1, pad_token_id=vocab - 1,
        )
    )  # fmt: skip
    unet = UNet2DConditionModel(
        sample_size=SAMPLE // 4, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=WIDTH, attention_head_dim=8, norm_num_groups=8,
    )  # fmt: skip
    vae = AutoencoderKL(
        in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(16, 16, 16), layers_per_block=1,
        down_block_types=("DownEncoderBlock2D",) * 3, up_block_types=("UpDecoderBlock2D",) * 3, norm_num_groups=8,
        sample_size=SAMPLE,
    )  # fmt: skip
    scheduler = DDIMScheduler(
        beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False, set_alpha_to_one=False
    )
    pipeline = StableDiffusionPipeline(
        vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, unet=unet, scheduler=scheduler,
        safety_checker=None, feature_extractor=None, requires_safety_checker=False,
    )  # fmt: skip
    pipeline.save_pretrained(out / "checkpoint")


def export(checkpoint: Path, out_dir: Path) -> None:
    """optimum-intel's text-to-image export of ``checkpoint``, its IRs and configs kept in ``out_dir``."""
    scratch = out_dir.parent / f".{out_dir.name}.export"
    shutil.rmtree(scratch, ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "optimum.commands.optimum_cli", "export", "openvino", "--model", str(checkpoint),
         "--task", "text-to-image", "--weight-format", "fp16", str(scratch)],
        check=True,
    )  # fmt: skip
    shutil.rmtree(out_dir, ignore_errors=True)
    for path in sorted(scratch.rglob("*")):
        if path.is_file() and path.suffix in KEEP_SUFFIXES:
            target = out_dir / path.relative_to(scratch)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    shutil.rmtree(scratch, ignore_errors=True)
    drop_build_paths(out_dir)


def drop_build_paths(out_dir: Path) -> None:
    """Remove the scratch paths the exporter writes into the configs (``_name_or_path``): a rebuild is identical."""
    for path in out_dir.rglob("*.json"):
        config = json.loads(path.read_text())
        if isinstance(config, dict) and config.pop("_name_or_path", None) is not None:
            path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def check(model_dir: Path) -> dict[str, Any]:
    """Run the three GenAI image pipelines; raise unless the image depends on the prompt and repeats per seed."""
    import openvino as ov
    import openvino_genai as ov_genai

    text2image = ov_genai.Text2ImagePipeline(str(model_dir), "CPU")
    options = {"width": SAMPLE, "height": SAMPLE, "num_inference_steps": 4, "rng_seed": 7}

    def generate(prompt: str) -> np.ndarray:
        return np.array(text2image.generate(prompt, **options).data)  # a copy: the pipeline reuses its output tensor

    red, red_again, blue = generate("a red square"), generate("a red square"), generate("a blue circle")
    if not np.array_equal(red, red_again):
        raise SystemExit("tiny-diffusion: one prompt and seed gave two images")
    difference = float(np.abs(red.astype(np.int16) - blue.astype(np.int16)).mean())
    if difference < 1.0:
        raise SystemExit(f"tiny-diffusion: two prompts gave near the same image (mean difference {difference})")
    image = ov.Tensor(red)
    mask = ov.Tensor(np.full_like(red, 255))
    edited = ov_genai.Image2ImagePipeline(str(model_dir), "CPU").generate("a blue circle", image, strength=0.8,
                                                                          **options)  # fmt: skip
    inpainted = ov_genai.InpaintingPipeline(str(model_dir), "CPU").generate("a blue circle", image, mask, **options)
    return {
        "shape": list(red.shape),
        "prompt_difference": round(difference, 2),
        "edit_shape": list(np.asarray(edited.data).shape),
        "inpaint_shape": list(np.asarray(inpainted.data).shape),
    }


def build(out_root: Path, seed: int = 1234) -> dict[str, Any]:
    """Build, export and check tiny-diffusion into ``out_root / NAME``; what the check measured."""
    out_dir = out_root / NAME
    with tempfile.TemporaryDirectory() as scratch:
        build_checkpoint(Path(scratch), seed)
        export(Path(scratch) / "checkpoint", out_dir)
    measured = check(out_dir)
    write_card(out_dir, seed, measured)
    return measured


def write_card(out_dir: Path, seed: int, measured: dict[str, Any]) -> None:
    """MODEL_CARD.md: what the model is, how it was built and what the build checked."""
    size = sum(path.stat().st_size for path in out_dir.rglob("*") if path.is_file())
    (out_dir / "MODEL_CARD.md").write_text(
        f"""# tiny-diffusion

A Stable-Diffusion-shaped test model for ovserve's image routes (`/v3/images/generations`, `/v3/images/edits`),
built by `python -m tools.model_builder --models tiny-diffusion` (tools/model_builder/diffusion.py). Not a
model of anything: its weights are **random** (seed {seed}), and its images are coloured noise.

- Tokenizer: CLIP's, with single bytes only (no merges), 77 tokens.
- Text encoder: CLIP, 2 layers, width {WIDTH}.
- UNet: 2 blocks (32, 64 channels), cross-attention on the text states; latent side = image side / 4.
- VAE: 3 blocks of 16 channels (scale factor 4); scheduler: DDIM.
- Default size {SAMPLE}x{SAMPLE}; sides must be multiples of 8. Files: {size / 1e6:.1f} MB (fp16 weights).

What it is for: the image depends on the prompt (two prompts at one seed differ: mean absolute pixel
difference {measured["prompt_difference"]} at 4 steps), and a prompt with a seed repeats exactly. The build
checked this on OpenVINO GenAI's Text2ImagePipeline and ran Image2ImagePipeline and InpaintingPipeline on it.
"""
    )


if __name__ == "__main__":
    print(build(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("service/bundled_models")))

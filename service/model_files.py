"""What a model directory says about itself: its config.json (a vision-language model's text part where the
language model's shape is asked), whether it takes images, and what an image costs in prompt tokens."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The language model's IR: a text model's, or a vision-language model's (beside its vision encoder's).
LANGUAGE_IRS = ("openvino_model.xml", "openvino_language_model.xml")
VISION_IR = "openvino_vision_embeddings_model.xml"
# OpenVINO GenAI's model-independent image tag: the pipeline puts image N's embeddings where it stands.
IMAGE_TAG = "<ov_genai_image_{}>"


def config(model_dir: Path) -> dict[str, Any]:
    """config.json as written by the exporter."""
    loaded: dict[str, Any] = json.loads((model_dir / "config.json").read_text())
    return loaded


def text_config(model_dir: Path) -> dict[str, Any]:
    """The language model's settings: config.json, with a vision-language model's ``text_config`` over it."""
    whole = config(model_dir)
    return {**whole, **whole.get("text_config", {})}


def has_language_model(model_dir: Path) -> bool:
    """Whether ``model_dir`` holds an exported language model (text-only or vision-language)."""
    return any((model_dir / name).is_file() for name in LANGUAGE_IRS)


@dataclass(frozen=True)
class Vision:
    """How a vision-language model takes images."""

    model_type: str
    tokens_per_image: int  # the image's embeddings, counted as prompt tokens
    image_token_id: int  # the token the language model sees once per embedding (counts and token listings)


# model_type -> tokens one image becomes, from config.json. LLaVA: one per vision patch, plus the class token
# when the "full" feature strategy keeps it.
_TOKENS_PER_IMAGE = {
    "llava": lambda c: (
        (c["vision_config"]["image_size"] // c["vision_config"]["patch_size"]) ** 2
        + (1 if c.get("vision_feature_select_strategy") == "full" else 0)
    ),
}


def vision(model_dir: Path) -> Vision | None:
    """How the model takes images; None for a text-only model, or one whose image cost this server cannot count."""
    if not (model_dir / VISION_IR).is_file():
        return None
    whole = config(model_dir)
    count = _TOKENS_PER_IMAGE.get(str(whole.get("model_type")))
    if count is None:
        return None
    token = whole.get("image_token_index", whole.get("image_token_id"))
    return Vision(str(whole["model_type"]), int(count(whole)), int(token) if token is not None else 0)

"""What a SOURCE string names: a local OpenVINO directory, Hugging Face directory or GGUF file, or a hub id."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from pathlib import Path

from ovserve.service.model_files import has_language_model
from ovserve.service.sources.errors import SourceError


class SourceKind(enum.Enum):
    """The forms a model reaches ovserve in."""

    OPENVINO = "openvino"  # a directory of OpenVINO IR (optimum-intel's export, OpenVINO's hub repositories)
    HUGGING_FACE = "huggingface"  # a transformers checkpoint: config.json and safetensors
    GGUF = "gguf"  # a llama.cpp file
    HUB = "hub"  # a Hugging Face repository id, resolved to one of the above through the hub cache


# A repository id as the hub spells it (``org/name``), optionally pinned: ``@`` and a branch, tag or commit.
HUB_ID = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<revision>[\w./-]+))?$")
# Files whose presence makes a directory a transformers checkpoint.
WEIGHT_FILES = ("*.safetensors", "pytorch_model*.bin")
# OpenVINO IRs a served directory may hold besides a language model's (model_files.LANGUAGE_IRS, which an embedding
# or rerank model's openvino_model.xml is too): a speech model's, and a diffusion model's denoiser (a UNet, or
# SD3's and FLUX's transformer) in the folder of its part.
OTHER_IRS = ("openvino_encoder_model.xml", "unet/openvino_model.xml", "transformer/openvino_model.xml")


@dataclass(frozen=True)
class Located:
    """A source as found: its kind, its local path (none for a hub id until downloaded), and for a hub id its
    repository and revision."""

    kind: SourceKind
    text: str  # as the user gave it
    path: Path | None = None
    repo: str = ""
    revision: str | None = None


def locate(text: str) -> Located:
    """What ``text`` names; SourceError when it is neither an existing path nor a repository id."""
    path = Path(text).expanduser()
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise SourceError(f"{text}: a file must be a .gguf model; other models are directories")
        return Located(SourceKind.GGUF, text, path.resolve())
    if path.is_dir():
        return Located(local_kind(path, text), text, path.resolve())
    match = HUB_ID.match(text)
    if match is None:
        raise SourceError(f"{text}: no such file or directory, and not a Hugging Face repository id (org/name)")
    return Located(SourceKind.HUB, text, repo=match["repo"], revision=match["revision"])


def local_kind(directory: Path, text: str) -> SourceKind:
    """Whether ``directory`` holds OpenVINO IR or a transformers checkpoint; SourceError if neither."""
    if has_language_model(directory) or any((directory / name).is_file() for name in OTHER_IRS):
        return SourceKind.OPENVINO
    if (directory / "config.json").is_file() and any(any(directory.glob(pattern)) for pattern in WEIGHT_FILES):
        return SourceKind.HUGGING_FACE
    ggufs = sorted(directory.glob("*.gguf"))
    if ggufs:
        raise SourceError(f"{text}: a directory of GGUF files; name one of them ({ggufs[0].name}, ...)")
    raise SourceError(
        f"{text}: neither an OpenVINO model directory (openvino_model.xml) nor a Hugging Face one "
        "(config.json and *.safetensors)"
    )

"""What the server and an image pipeline process say to each other (beside messages.py's Started, Done, Failed).

server -> pipeline: ``MakeImages`` jobs; pipeline -> server: per job a ``Denoised`` after each denoising step (a
partial image with it where one was asked for), then a Done whose result is ``MadeImages``, or a Failed.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Picture:
    """An image as the pipelines take it: RGB, 8 bits a channel, row-major (height x width x 3 bytes)."""

    width: int
    height: int
    pixels: bytes


@dataclass(frozen=True)
class MakeImages:
    """Make ``count`` images of ``prompt`` (of each source image, for an edit), encoded as ``output_format``."""

    job_id: int
    prompt: str
    width: int
    height: int
    count: int = 1
    negative_prompt: str = ""
    steps: int | None = None  # None: the model's default
    guidance_scale: float | None = None
    seed: int | None = None
    strength: float | None = None  # edits: how much of the source is redrawn
    sources: list[Picture] = field(default_factory=list)  # an edit's images, already at width x height
    mask: Picture | None = None  # white where the image is redrawn (InpaintingPipeline), at width x height
    output_format: str = "png"  # "png", "jpeg" or "webp"
    compression: int = 100  # jpeg and webp quality
    partial_images: int = 0  # partial images to send while denoising (spread over the steps)


@dataclass(frozen=True)
class Denoised:
    """A denoising step done: ``step`` of ``steps`` (from 1); ``image``: a partial image, encoded, when one is due."""

    job_id: int
    step: int
    steps: int
    image: bytes | None = None
    partial_index: int = -1  # the partial image's place among the job's partials


@dataclass(frozen=True)
class MadeImages:
    """A job's result: the encoded images, in order (``count`` per source image)."""

    images: list[bytes]
    width: int
    height: int

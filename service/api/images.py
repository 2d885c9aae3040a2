"""ImageService semantics: OpenAI's image generations and edits on a served diffusion model.

A request's fields are checked against the bounds below (400 naming the field); an edit's uploads are decoded with
Pillow off the event loop (service/media/decode.py's bounds), resized to the size asked for, and its mask's
transparent pixels become the white a GenAI InpaintingPipeline redraws. The images are made and encoded in the
model's pipeline process (service/pipelines/image_runner.py); each denoising step it reports counts in /metrics
(``ovserve_image_denoising_steps``), and a streamed call gets the partial images it asked for. A pipeline failure
reaches the client as a generic message; its own is logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from prometheus_client import Counter

from ovserve.clients.v1 import image_pb2
from ovserve.service.api.runs import service_error
from ovserve.service.engine import EngineError
from ovserve.service.errors import FieldViolation, Internal, InvalidArgument
from ovserve.service.media.decode import decode
from ovserve.service.media.policy import MediaPolicy
from ovserve.service.media.sources import MediaError
from ovserve.service.models import ModelRegistry
from ovserve.service.observability.metrics import REGISTRY
from ovserve.service.pipelines import Pipeline, PipelineKind
from ovserve.service.pipelines.image_messages import Denoised, MadeImages, MakeImages, Picture

log = logging.getLogger(__name__)

#: Bounds of a request (OpenAI's where it has them: n up to 10, a gpt-image prompt up to 32,000 characters).
MAX_IMAGES = 10
MAX_PROMPT_CHARS = 32_000
MAX_SIDE = 2048  # pixels, either side
SIDE_STEP = 8  # sides are multiples of this (Stable Diffusion's VAE scale)
MAX_PIXELS = 16 * 1024 * 1024  # width x height x images of one request
MAX_STEPS = 150  # num_inference_steps
MAX_GUIDANCE = 50.0
MAX_PARTIAL_IMAGES = 3  # OpenAI's
MAX_EDIT_IMAGES = 16  # OpenAI's for gpt-image
MAX_SEED = 2**63 - 1
#: The values each option takes ("" is the default: the first one listed after it); echoed, not all used.
CHOICES = {
    "response_format": ("", "b64_json"),
    "quality": ("", "auto", "low", "medium", "high", "standard", "hd"),
    "background": ("", "auto", "opaque"),
    "output_format": ("", "png", "jpeg", "webp"),
}
#: Values of those options that are OpenAI's but not served here, and why.
NOT_SERVED = {
    ("response_format", "url"): "images are not stored for a URL; use b64_json (the image's bytes)",
    ("background", "transparent"): "a diffusion model's images have no transparency; use opaque or auto",
}
_SIZE = re.compile(r"^(\d{1,5})x(\d{1,5})$")
# The uploads' limits: the pixels of each, and the encoded bytes (the body's bound comes first over HTTP).
UPLOADS = MediaPolicy()

IMAGE_STEPS = Counter(
    "ovserve_image_denoising_steps", "Denoising steps image models ran (each image's steps counted once per call)",
    ["model"], registry=REGISTRY,
)  # fmt: skip
IMAGES_MADE = Counter("ovserve_images_generated", "Images image models made and sent", ["model"], registry=REGISTRY)


@dataclass(frozen=True)
class Checked:
    """A request's options, checked: what the job needs and what the response echoes."""

    width: int
    height: int
    count: int
    output_format: str
    quality: str
    job: dict[str, Any]  # MakeImages' keyword arguments beside job_id, prompt, sizes and images


def default_size(pipeline: Pipeline) -> tuple[int, int]:
    """The model's own image size: its UNet's sample size times its VAE's scale (2 per VAE block after the first)."""
    try:
        unet = json.loads((pipeline.model_dir / "unet" / "config.json").read_text())
        vae = json.loads((pipeline.model_dir / "vae_decoder" / "config.json").read_text())
        side = int(unet["sample_size"]) * 2 ** (len(vae["block_out_channels"]) - 1)
    except (OSError, ValueError, KeyError, TypeError):
        return 512, 512
    return side, side


def _size(text: str, fallback: tuple[int, int], violations: list[FieldViolation]) -> tuple[int, int]:
    if text in ("", "auto"):
        return fallback
    match = _SIZE.match(text)
    if match is None:
        violations.append(FieldViolation("size", f"{text!r}: WIDTHxHEIGHT (e.g. 512x512) or auto"))
        return fallback
    width, height = int(match[1]), int(match[2])
    if (
        not (SIDE_STEP <= width <= MAX_SIDE and SIDE_STEP <= height <= MAX_SIDE)
        or width % SIDE_STEP
        or (height % SIDE_STEP)
    ):
        violations.append(
            FieldViolation("size", f"{text}: each side a multiple of {SIDE_STEP} from {SIDE_STEP} to {MAX_SIDE}")
        )
    return width, height


def _bounded(name: str, value: float, low: float, high: float, violations: list[FieldViolation]) -> None:
    if not (math.isfinite(value) and low <= value <= high):
        violations.append(FieldViolation(name, f"{value}: from {low:g} to {high:g}"))


def check(parameters: image_pb2.ImageParameters, fallback: tuple[int, int], *, edit: bool, stream: bool) -> Checked:
    """``parameters`` checked against the bounds (InvalidArgument naming every bad field); ``fallback``: the size
    "auto" means; ``edit``: an edit's request (strength allowed); ``stream``: a streamed one (one image)."""
    violations: list[FieldViolation] = []
    if not parameters.prompt.strip():
        violations.append(FieldViolation("prompt", "required: what the image shows"))
    for name in ("prompt", "negative_prompt"):
        if len(getattr(parameters, name)) > MAX_PROMPT_CHARS:
            violations.append(FieldViolation(name, f"{len(getattr(parameters, name))} characters: at most "
                                                   f"{MAX_PROMPT_CHARS}"))  # fmt: skip
    for name, allowed in CHOICES.items():
        value = getattr(parameters, name)
        if (name, value) in NOT_SERVED:
            violations.append(FieldViolation(name, f"{value!r} is not available: {NOT_SERVED[name, value]}"))
        elif value not in allowed:
            violations.append(FieldViolation(name, f"{value!r}: one of {', '.join(allowed[1:])}"))
    count = parameters.n or 1
    if not 1 <= count <= MAX_IMAGES:
        violations.append(FieldViolation("n", f"{parameters.n}: from 1 to {MAX_IMAGES}"))
    elif stream and count != 1:
        violations.append(FieldViolation("n", f"{count}: a streamed call makes one image"))
    width, height = _size(parameters.size, fallback, violations)
    if width * height * count > MAX_PIXELS:
        violations.append(FieldViolation("size", f"{width}x{height} x {count} images: at most {MAX_PIXELS} pixels"))
    if not 0 <= parameters.partial_images <= MAX_PARTIAL_IMAGES:
        violations.append(FieldViolation("partial_images", f"{parameters.partial_images}: from 0 to 3"))
    if parameters.HasField("output_compression"):
        _bounded("output_compression", parameters.output_compression, 0, 100, violations)
    if parameters.HasField("num_inference_steps"):
        _bounded("num_inference_steps", parameters.num_inference_steps, 1, MAX_STEPS, violations)
    if parameters.HasField("guidance_scale"):
        _bounded("guidance_scale", parameters.guidance_scale, 0.0, MAX_GUIDANCE, violations)
    if parameters.HasField("rng_seed"):
        _bounded("rng_seed", parameters.rng_seed, 0, MAX_SEED, violations)
    if parameters.HasField("strength"):
        if not edit:
            violations.append(FieldViolation("strength", "an edit's: how much of an uploaded image is redrawn"))
        elif not (math.isfinite(parameters.strength) and 0.0 < parameters.strength <= 1.0):
            violations.append(FieldViolation("strength", f"{parameters.strength}: more than 0, at most 1"))
    InvalidArgument.check(violations)
    output_format = parameters.output_format or "png"
    job = {
        "count": count,
        "negative_prompt": parameters.negative_prompt,
        "steps": parameters.num_inference_steps if parameters.HasField("num_inference_steps") else None,
        "guidance_scale": parameters.guidance_scale if parameters.HasField("guidance_scale") else None,
        "seed": parameters.rng_seed if parameters.HasField("rng_seed") else None,
        "strength": parameters.strength if parameters.HasField("strength") else None,
        "output_format": output_format,
        "compression": parameters.output_compression if parameters.HasField("output_compression") else 100,
        "partial_images": parameters.partial_images if stream else 0,
    }
    return Checked(width, height, count, output_format, parameters.quality or "auto", job)


def _picture(pixels: np.ndarray, width: int, height: int) -> Picture:
    """RGB pixels at ``width`` x ``height`` (resized with Pillow's Lanczos filter when they are not)."""
    from PIL import Image

    if pixels.shape[:2] != (height, width):
        pixels = np.asarray(Image.fromarray(pixels).resize((width, height), Image.Resampling.LANCZOS))
    return Picture(width, height, np.ascontiguousarray(pixels, dtype=np.uint8).tobytes())


def _pictures(
    pixels: list[np.ndarray], mask: np.ndarray | None, width: int, height: int
) -> tuple[list[Picture], Picture | None]:
    """The uploads (and mask) at the size asked for, in a thread (a resize of a large image takes a while)."""
    return [_picture(source, width, height) for source in pixels], (
        _picture(mask, width, height) if mask is not None else None
    )


def _mask_pixels(data: bytes) -> np.ndarray:
    """OpenAI's mask (transparent where the image is edited) as the white-where-redrawn RGB mask GenAI takes."""
    import io

    from PIL import Image

    decode("mask", data, UPLOADS)  # its checks: a supported format, its pixels within bounds, not truncated
    with Image.open(io.BytesIO(data)) as image:
        if "A" not in image.getbands() and "transparency" not in image.info:
            raise MediaError("mask", "the mask needs an alpha channel: its transparent pixels are the ones edited")
        alpha = np.asarray(image.convert("RGBA"))[:, :, 3]
    return np.repeat(np.where(alpha == 0, 255, 0).astype(np.uint8)[:, :, None], 3, axis=2)


def _edit_inputs(images: list[image_pb2.InputImage], mask: bytes) -> tuple[list[np.ndarray], np.ndarray | None]:
    """The uploads decoded (and the mask converted), in a thread: MediaError naming ``image`` or ``mask``."""
    pixels = [decode("image", image.data, UPLOADS) for image in images]
    mask_pixels = _mask_pixels(mask) if mask else None
    if mask_pixels is not None and mask_pixels.shape[:2] != pixels[0].shape[:2]:
        raise MediaError(
            "mask", f"the mask is {mask_pixels.shape[1]}x{mask_pixels.shape[0]}; the image is "
            f"{pixels[0].shape[1]}x{pixels[0].shape[0]}: give them the same size",
        )  # fmt: skip
    return pixels, mask_pixels


def _result(checked: Checked, made: MadeImages, input_tokens: int) -> image_pb2.ImageResult:
    return image_pb2.ImageResult(
        created=int(time.time()),
        data=[image_pb2.GeneratedImage(data=data) for data in made.images],
        output_format=checked.output_format,
        size=f"{made.width}x{made.height}",
        quality=checked.quality,
        background="opaque",
        input_tokens=input_tokens,
    )


def _prompt_tokens(pipeline: Pipeline, prompt: str) -> int:
    """The prompt's tokens as the text encoder reads them (at most its context: the pipeline truncates)."""
    count = len(pipeline.codec.encode(prompt, add_special_tokens=True))
    return min(count, pipeline.max_model_len) if pipeline.max_model_len else count


async def _answers(pipeline: Pipeline, job: MakeImages) -> AsyncIterator[Denoised | MadeImages]:
    """The job's answers, steps counted in /metrics; a pipeline failure as INTERNAL (its message logged)."""
    steps = IMAGE_STEPS.labels(pipeline.name)
    try:
        async for answer in pipeline.make_images(lambda job_id: _with_id(job, job_id)):
            if isinstance(answer, Denoised):
                steps.inc()
            elif isinstance(answer, MadeImages):
                IMAGES_MADE.labels(pipeline.name).inc(len(answer.images))
            yield answer
    except EngineError as error:
        if type(error) is not EngineError:  # overloaded, unavailable: messages of our own
            raise service_error(error) from None
        log.warning("%s failed to make images: %s", pipeline.name, error)
        raise Internal(f"the image pipeline of {pipeline.name!r} could not make these images") from None


def _with_id(job: MakeImages, job_id: int) -> MakeImages:
    return replace(job, job_id=job_id)


async def _job(
    registry: ModelRegistry,
    model: str,
    parameters: image_pb2.ImageParameters,
    *,
    stream: bool,
    images: list[image_pb2.InputImage] | None = None,
    mask: image_pb2.InputImage | None = None,
) -> tuple[Pipeline, Checked, MakeImages]:
    """The pipeline, the checked options and the job of a request (an edit's when ``images`` is not None)."""
    pipeline = registry.pipeline(model, PipelineKind.IMAGE)
    pipeline.check_room(0)  # a full queue refuses before the uploads are decoded
    if images is None:
        checked = check(parameters, default_size(pipeline), edit=False, stream=stream)
        return pipeline, checked, MakeImages(-1, parameters.prompt, checked.width, checked.height, **checked.job)
    if not 1 <= len(images) <= (1 if stream else MAX_EDIT_IMAGES):
        limit = "one image to a streamed edit" if stream else f"1 to {MAX_EDIT_IMAGES} images"
        raise InvalidArgument.of("image", f"{len(images)} images: {limit}")
    try:
        pixels, mask_pixels = await asyncio.get_running_loop().run_in_executor(
            None, _edit_inputs, list(images), mask.data if mask else b""
        )
    except MediaError as error:
        raise InvalidArgument.of(error.field, error.message) from None
    height, width = pixels[0].shape[:2]
    own = (max(SIDE_STEP, min(MAX_SIDE, width) // SIDE_STEP * SIDE_STEP),
           max(SIDE_STEP, min(MAX_SIDE, height) // SIDE_STEP * SIDE_STEP))  # fmt: skip
    checked = check(parameters, own, edit=True, stream=stream)
    sources, mask_picture = await asyncio.get_running_loop().run_in_executor(
        None, _pictures, pixels, mask_pixels, checked.width, checked.height
    )
    job = MakeImages(
        -1, parameters.prompt, checked.width, checked.height, sources=sources, mask=mask_picture, **checked.job
    )
    return pipeline, checked, job


async def _made(pipeline: Pipeline, checked: Checked, job: MakeImages, prompt: str) -> image_pb2.ImageResult:
    async for answer in _answers(pipeline, job):
        if isinstance(answer, MadeImages):
            return _result(checked, answer, _prompt_tokens(pipeline, prompt))
    raise Internal("the image pipeline gave no images")  # unreachable: the last answer is them


async def _events(pipeline: Pipeline, checked: Checked, job: MakeImages, prompt: str) -> AsyncIterator[Any]:
    """PartialImage messages as the pipeline decodes them, then the ImageResult."""
    async for answer in _answers(pipeline, job):
        if isinstance(answer, MadeImages):
            yield _result(checked, answer, _prompt_tokens(pipeline, prompt))
            return
        if answer.image is not None:
            yield image_pb2.PartialImage(
                image=image_pb2.GeneratedImage(data=answer.image),
                partial_image_index=answer.partial_index,
                step=answer.step,
                size=f"{job.width}x{job.height}",
            )


async def create_image(registry: ModelRegistry, request: image_pb2.CreateImageRequest) -> image_pb2.CreateImageResponse:
    """ImageService.CreateImage."""
    pipeline, checked, job = await _job(registry, request.model, request.parameters, stream=False)
    return image_pb2.CreateImageResponse(result=await _made(pipeline, checked, job, request.parameters.prompt))


async def stream_image(
    registry: ModelRegistry, request: image_pb2.StreamImageRequest
) -> AsyncIterator[image_pb2.StreamImageResponse]:
    """ImageService.StreamImage: partial images, then the finished one."""
    pipeline, checked, job = await _job(registry, request.model, request.parameters, stream=True)
    async for event in _events(pipeline, checked, job, request.parameters.prompt):
        if isinstance(event, image_pb2.PartialImage):
            yield image_pb2.StreamImageResponse(partial=event)
        else:
            yield image_pb2.StreamImageResponse(done=event)


async def create_image_edit(
    registry: ModelRegistry, request: image_pb2.CreateImageEditRequest
) -> image_pb2.CreateImageEditResponse:
    """ImageService.CreateImageEdit."""
    mask = request.mask if request.HasField("mask") else None
    pipeline, checked, job = await _job(
        registry, request.model, request.parameters, stream=False, images=list(request.images), mask=mask
    )
    return image_pb2.CreateImageEditResponse(result=await _made(pipeline, checked, job, request.parameters.prompt))


async def stream_image_edit(
    registry: ModelRegistry, request: image_pb2.StreamImageEditRequest
) -> AsyncIterator[image_pb2.StreamImageEditResponse]:
    """ImageService.StreamImageEdit: partial images, then the finished one."""
    mask = request.mask if request.HasField("mask") else None
    pipeline, checked, job = await _job(
        registry, request.model, request.parameters, stream=True, images=list(request.images), mask=mask
    )
    async for event in _events(pipeline, checked, job, request.parameters.prompt):
        if isinstance(event, image_pb2.PartialImage):
            yield image_pb2.StreamImageEditResponse(partial=event)
        else:
            yield image_pb2.StreamImageEditResponse(done=event)

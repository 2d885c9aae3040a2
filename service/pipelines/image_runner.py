"""The image pipeline process's runner: OpenVINO GenAI's InpaintingPipeline, with Text2ImagePipeline and
Image2ImagePipeline made from it (sharing its compiled models), one job per call.

Every denoising step is reported (``Denoised``: the server counts steps for /metrics), and the steps at which a
streamed job asked for partial images decode the latent there (``Text2ImagePipeline.decode``) and send it
encoded. Images are encoded here, off the server's event loop: PNG, JPEG or WebP by Pillow.
"""

from __future__ import annotations

import io
import random
from typing import Any

import numpy as np

from ovserve.service.pipelines.image_messages import Denoised, MadeImages, MakeImages, Picture
from ovserve.service.pipelines.messages import PipelineSpec
from ovserve.service.pipelines.one_job import OneJobRunner

# output_format -> Pillow's format name.
PILLOW_FORMATS = {"png": "PNG", "jpeg": "JPEG", "webp": "WEBP"}
SEED_RANGE = 2**31  # an unseeded job draws its seed here: each call a new image, as OpenAI's


def encode(pixels: np.ndarray, output_format: str, compression: int) -> bytes:
    """One H x W x 3 uint8 image in ``output_format`` (``compression``: jpeg and webp quality, 0-100)."""
    from PIL import Image

    buffer = io.BytesIO()
    options = {} if output_format == "png" else {"quality": compression}
    Image.fromarray(np.ascontiguousarray(pixels)).save(buffer, format=PILLOW_FORMATS[output_format], **options)
    return buffer.getvalue()


def partial_steps(steps: int, partials: int) -> dict[int, int]:
    """Step index (from 0) -> partial image index: ``partials`` spread evenly over ``steps`` and before the last
    (the finished image is the last step's); fewer when there are fewer steps than partials."""
    due = sorted({(index + 1) * steps // (partials + 1) - 1 for index in range(partials)} - {-1, steps - 1})
    return {step: index for index, step in enumerate(due)}


def _tensor(picture: Picture) -> Any:
    import openvino as ov

    pixels = np.frombuffer(picture.pixels, dtype=np.uint8).reshape(1, picture.height, picture.width, 3)
    return ov.Tensor(np.ascontiguousarray(pixels))


class ImageRunner(OneJobRunner):
    """One MakeImages job per call, on the pipeline its inputs need."""

    def __init__(self, spec: PipelineSpec) -> None:
        import openvino_genai as ov_genai

        # One compiled set of models: the other two are made from the inpainting pipeline (GenAI's constructors
        # from another pipeline share its models), so the weights are loaded once.
        self._inpainting = ov_genai.InpaintingPipeline(str(spec.model_dir), spec.device, **spec.properties)
        self._image2image = ov_genai.Image2ImagePipeline(self._inpainting)
        self._text2image = ov_genai.Text2ImagePipeline(self._inpainting)

    def answer(self, job: MakeImages, send: Any) -> MadeImages:
        return self._make(job, send)

    def _make(self, job: MakeImages, send: Any) -> MadeImages:
        options: dict[str, Any] = {
            "width": job.width,
            "height": job.height,
            "num_images_per_prompt": job.count,
            "rng_seed": job.seed if job.seed is not None else random.randrange(SEED_RANGE),
        }
        if job.negative_prompt:
            options["negative_prompt"] = job.negative_prompt
        for name, value in (("num_inference_steps", job.steps), ("guidance_scale", job.guidance_scale)):
            if value is not None:
                options[name] = value
        if job.sources and job.strength is not None:
            options["strength"] = job.strength
        made: list[bytes] = []
        sources: list[Picture | None] = [*job.sources] or [None]  # None: made from the prompt alone
        for source in sources:
            options["callback"] = self._callback(job, send)
            if source is None:
                result = self._text2image.generate(job.prompt, **options)
            elif job.mask is None:
                result = self._image2image.generate(job.prompt, _tensor(source), **options)
            else:
                result = self._inpainting.generate(job.prompt, _tensor(source), _tensor(job.mask), **options)
            # A copy first: the pipeline writes its next output into the same tensor.
            pixels = np.array(result.data, copy=True)
            made += [encode(image, job.output_format, job.compression) for image in pixels]
        return MadeImages(made, job.width, job.height)

    def _callback(self, job: MakeImages, send: Any) -> Any:
        due: dict[int, int] = {}

        def callback(step: int, steps: int, latent: Any) -> bool:
            if not due and job.partial_images and step == 0:
                due.update(partial_steps(steps, job.partial_images))
            image = None
            if step in due:
                pixels = np.array(self._text2image.decode(latent).data, copy=True)
                image = encode(pixels[0], job.output_format, job.compression)
            send(Denoised(job.job_id, step + 1, steps, image, due.get(step, -1)))
            return False  # go on

        return callback

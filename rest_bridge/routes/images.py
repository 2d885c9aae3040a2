"""POST /images/generations (JSON) and /images/edits (multipart, as OpenAI's) -> ImageService.

The body's fields are OpenAI's (prompt, n, size, response_format, quality, background, output_format,
output_compression, stream, partial_images, user, moderation) and OpenVINO Model Server's (num_inference_steps,
guidance_scale, rng_seed, strength, negative_prompt); ``seed`` is taken for ``rng_seed`` (vLLM's and others'
name). The answer is OpenAI's images response, each image as b64_json; a streamed call's events are OpenAI's
``image_generation.partial_image`` / ``image_generation.completed`` (``image_edit.*`` for an edit).
"""

from __future__ import annotations

import base64
import math
import time
from typing import Any

from ovserve.clients.v1 import image_pb2
from ovserve.rest_bridge.errors import BridgeError
from ovserve.rest_bridge.handler import JsonBodyHandler
from ovserve.rest_bridge.sse import named_event
from ovserve.rest_bridge.translate.body import bad_request
from ovserve.rest_bridge.translate.form import field_text, read_form
from ovserve.rest_bridge.translate.message import message_from_body

# Fields of the body that are not ImageParameters': the call's own, OpenAI's accepted without effect, aliases.
CALL_FIELDS = ("model", "stream")
IGNORED = {"moderation": ("auto", "low"), "style": ("vivid", "natural"), "input_fidelity": ("low", "high")}
ALIASES = {"seed": "rng_seed"}
# A multipart form's values are text: these are read as numbers (the rest are strings), "stream" as a boolean.
INTEGERS = {"n", "output_compression", "partial_images", "num_inference_steps", "rng_seed", "seed"}
FLOATS = {"guidance_scale", "strength"}
IMAGE_PARTS = ("image", "image[]")  # OpenAI's SDKs send several images as image[] parts
MAX_PARTS = 64  # 16 images, a mask and the fields fit
# The events of a streamed call, by whether it edits.
EVENT_PREFIXES = {False: "image_generation", True: "image_edit"}


def _parameters(fields: dict[str, Any]) -> image_pb2.ImageParameters:
    """ImageParameters of a body's fields (after the call's own are taken out); 400 naming a bad one."""
    for name, allowed in IGNORED.items():
        value = fields.pop(name, None)
        if value is not None and value not in allowed:
            raise bad_request(name, f"{name}: {value!r} is not one of {', '.join(allowed)}")
    for alias, name in ALIASES.items():
        if alias in fields:
            if name in fields:
                raise bad_request(alias, f"{alias}: give {alias} or {name}, not both")
            fields[name] = fields.pop(alias)
    return message_from_body(fields, image_pb2.ImageParameters)


def _stream(value: Any) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise bad_request("stream", f"stream: {value!r} is not true or false")
    return value


def generation_request(body: dict[str, Any]) -> tuple[image_pb2.CreateImageRequest, bool]:
    """The proto request for a JSON generations body, and whether it streams."""
    fields = {key: value for key, value in body.items() if value is not None}
    model = fields.pop("model", "")
    if not isinstance(model, str):
        raise bad_request("model", "model: a string")
    stream = _stream(fields.pop("stream", None))
    return image_pb2.CreateImageRequest(model=model, parameters=_parameters(fields)), stream


def _typed(name: str, text: str) -> Any:
    """A form value as the JSON body would carry it."""
    try:
        if name in INTEGERS:
            return int(text)
        if name in FLOATS:
            value = float(text)
            if not math.isfinite(value):
                raise ValueError(text)
            return value
    except ValueError:
        raise bad_request(name, f"{name}: {text!r} is not a {'whole ' if name in INTEGERS else ''}number") from None
    if name == "stream":
        if text.lower() not in ("true", "false"):
            raise bad_request("stream", f"stream: {text!r} is not true or false")
        return text.lower() == "true"
    return text


def edit_request(body: bytes, content_type: str | None) -> tuple[image_pb2.CreateImageEditRequest, bool]:
    """The proto request for an edits multipart form, and whether it streams; a 400 names a bad field."""
    arguments, files = read_form(body, content_type, max_parts=MAX_PARTS, blamed="image")
    uploads = [upload for name in IMAGE_PARTS for upload in files.pop(name, [])]
    masks = files.pop("mask", [])
    if files:
        name = next(iter(files))
        raise bad_request(name, f"Unrecognized request argument supplied: {name}")
    if not uploads:
        raise bad_request("image", "image: required, one image or more (PNG, JPEG or WebP)")
    if len(masks) > 1:
        raise bad_request("mask", "mask: one image")
    fields = {name: _typed(name, field_text(name, values)) for name, values in arguments.items()}
    model = fields.pop("model", "")
    stream = bool(fields.pop("stream", False))
    request = image_pb2.CreateImageEditRequest(
        model=model,
        parameters=_parameters(fields),
        images=[image_pb2.InputImage(data=upload.body, filename=upload.filename or "") for upload in uploads],
    )
    if masks:
        request.mask.CopyFrom(image_pb2.InputImage(data=masks[0].body, filename=masks[0].filename or ""))
    return request, stream


def _usage(result: image_pb2.ImageResult) -> dict[str, Any]:
    """OpenAI's gpt-image usage: the prompt's tokens in; no output tokens (a diffusion model writes none)."""
    return {
        "input_tokens": result.input_tokens,
        "input_tokens_details": {"text_tokens": result.input_tokens, "image_tokens": 0},
        "output_tokens": 0,
        "total_tokens": result.input_tokens,
    }


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def images_json(result: image_pb2.ImageResult) -> dict[str, Any]:
    """OpenAI's images response."""
    return {
        "created": result.created,
        "data": [{"b64_json": _b64(image.data)} for image in result.data],
        "background": result.background,
        "output_format": result.output_format,
        "quality": result.quality,
        "size": result.size,
        "usage": _usage(result),
    }


class ImageEventFraming:
    """OpenAI's image stream: ``event: <type>`` / ``data: <json>``, partial images then completed; no [DONE]."""

    def __init__(self, edit: bool, parameters: image_pb2.ImageParameters) -> None:
        self._prefix = EVENT_PREFIXES[edit]
        self._echo = {
            "quality": parameters.quality or "auto",
            "background": "opaque",
            "output_format": parameters.output_format or "png",
        }

    def event(self, message: Any) -> bytes | None:
        if message.HasField("partial"):
            partial = message.partial
            name = f"{self._prefix}.partial_image"
            payload = {"b64_json": _b64(partial.image.data), "size": partial.size, "created_at": int(time.time()),
                       **self._echo, "partial_image_index": partial.partial_image_index}  # fmt: skip
        elif message.HasField("done"):
            done = message.done
            name = f"{self._prefix}.completed"
            payload = {"b64_json": _b64(done.data[0].data) if done.data else "", "size": done.size,
                       "created_at": done.created, **self._echo, "usage": _usage(done)}  # fmt: skip
        else:
            return None
        return named_event(name, {"type": name, **payload})

    def failure(self, error: BridgeError) -> bytes:
        return named_event("error", {"type": "error", **error.envelope()})

    def end(self) -> bytes:
        return b""


class ImageGenerationsHandler(JsonBodyHandler):
    """POST /v3/images/generations (JSON)."""

    async def post(self) -> None:
        request, stream = await self.translated(generation_request)
        if stream:
            streaming = image_pb2.StreamImageRequest.FromString(request.SerializeToString())
            call = self.backend.images.StreamImage(streaming, **self.grpc_options())
            await self.relay(call, ImageEventFraming(False, request.parameters))
            return
        await self.answer(self.backend.images.CreateImage, request, lambda reply: images_json(reply.result))


class ImageEditsHandler(JsonBodyHandler):
    """POST /v3/images/edits (multipart/form-data)."""

    async def post(self) -> None:
        request, stream = await self.translated_body(edit_request)
        if stream:
            streaming = image_pb2.StreamImageEditRequest.FromString(request.SerializeToString())
            call = self.backend.images.StreamImageEdit(streaming, **self.grpc_options())
            await self.relay(call, ImageEventFraming(True, request.parameters))
            return
        await self.answer(self.backend.images.CreateImageEdit, request, lambda reply: images_json(reply.result))


ROUTES = [("/images/generations", ImageGenerationsHandler), ("/images/edits", ImageEditsHandler)]

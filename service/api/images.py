"""Image parts of a request (chat ``image_url``, Responses ``input_image``): collected in prompt order while the
conversation is read, each marked in its message's text by OpenVINO GenAI's image tag, then loaded (fetched,
decoded, within the server's MediaPolicy) and counted once the prompt is rendered."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from service.engine import PromptImages
from service.errors import FieldViolation, InvalidArgument
from service.media import ImageSource, MediaError, MediaPolicy, load_images
from service.model_files import IMAGE_TAG
from service.models import ServedModel

_TAG = re.compile(re.escape(IMAGE_TAG).replace(r"\{\}", r"(\d+)"))
EARLIER_IMAGE = "[an image from an earlier turn]"


class ImageParts:
    """A request's images in the order the prompt shows them; ``add`` gives the text that marks each."""

    def __init__(self, model: ServedModel | None) -> None:
        self.model = model  # None: no model to judge by (stored items checked on their own); images are kept
        self.sources: list[ImageSource] = []

    def add(self, field: str, url: str, data: bytes, violations: list[FieldViolation]) -> str:
        """Record the image part at ``field``; the tag for its message text ("" if the model takes no images)."""
        if self.model is not None and self.model.vision is None:
            violations.append(
                FieldViolation(field, f"model {self.model.name!r} is text-only: images are not supported")
            )
            return ""
        if not url and not data:
            violations.append(FieldViolation(field, "an image needs a url (data:, http(s): or file:) or raw bytes"))
            return ""
        self.sources.append(ImageSource(field, url=url, data=data))
        return IMAGE_TAG.format(len(self.sources) - 1)


def forget_images(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Earlier turns' messages (a stored response's or conversation's) with each image tag replaced by a note:
    their images are not sent again; only this request's images reach the model."""
    return [
        {**message, "content": _TAG.sub(EARLIER_IMAGE, message["content"])}
        if isinstance(message.get("content"), str)
        else message
        for message in messages
    ]


async def prompt_with_images(
    model: ServedModel, prompt: str, parts: ImageParts, policy: MediaPolicy, field: str
) -> tuple[list[int], PromptImages]:
    """The rendered ``prompt`` as the model sees it (token ids, each image as its tokens) and the images' pixels
    for the engine. Bad images are INVALID_ARGUMENT naming their part (or ``field`` for too many of them)."""
    # Truncation may have dropped messages and their images: keep those the prompt still shows, numbered anew.
    shown = [int(number) for number in _TAG.findall(prompt)]
    renumbered = iter(range(len(shown)))
    prompt = _TAG.sub(lambda _: IMAGE_TAG.format(next(renumbered)), prompt)
    try:
        pixels = await load_images([parts.sources[number] for number in shown], policy, field)
    except MediaError as error:
        raise InvalidArgument.of(error.field, error.message) from error
    return await asyncio.to_thread(image_prompt_ids, model, prompt), PromptImages(prompt, tuple(pixels))


def image_prompt_ids(model: ServedModel, prompt: str) -> list[int]:
    """Token ids of a rendered prompt with image tags, each image as the tokens the model sees for it."""
    assert model.vision is not None  # ImageParts refuses images for a text-only model
    ids: list[int] = []
    for position, piece in enumerate(_TAG.split(prompt)):  # text, image number, text, ..., text
        if position % 2:
            ids += [model.vision.image_token_id] * model.vision.tokens_per_image
        elif piece:
            ids += model.engine.encode(piece, add_special_tokens=False)
    return ids

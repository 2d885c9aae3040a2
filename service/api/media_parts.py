"""Image and file parts of a request, collected in prompt order while the conversation is read.

Images (chat ``image_url``, Responses ``input_image``): each marked in its message's text by OpenVINO GenAI's
image tag, then loaded (fetched, decoded, within the server's MediaPolicy) and counted once the prompt is
rendered. Files (chat ``file``, Responses ``input_file``): each marked by a placeholder no client can write (it
carries a per-request random nonce), replaced by the document's extracted text before the prompt is rendered.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from dataclasses import dataclass
from typing import Any

from ovserve.service.engine import PromptImages
from ovserve.service.errors import FieldViolation, InvalidArgument
from ovserve.service.media import ImageSource, MediaError, MediaPolicy, load_images
from ovserve.service.media.documents import document_text
from ovserve.service.media.sources import media_bytes
from ovserve.service.model_files import IMAGE_TAG
from ovserve.service.models import ServedModel
from ovserve.service.store.files import UploadedFiles

_TAG = re.compile(re.escape(IMAGE_TAG).replace(r"\{\}", r"(\d+)"))
EARLIER_IMAGE = "[an image from an earlier turn]"


@dataclass(frozen=True)
class FilePart:
    """A document part: where it comes from (its bytes or URL, or an uploaded file's id), its name, and its type
    if a data URL said it."""

    source: ImageSource
    filename: str
    media_type: str
    file_id: str = ""


class MediaParts:
    """A request's images and files in the order the prompt shows them; ``add``/``add_file`` give the text that
    marks each in its message."""

    def __init__(self, model: ServedModel | None) -> None:
        self.model = model  # None: no model to judge by (stored items checked on their own); images are kept
        self.sources: list[ImageSource] = []
        self.files: list[FilePart] = []
        self._nonce = secrets.token_hex(8)

    def add_file(
        self, field: str, data: str, url: str, file_id: str, filename: str, violations: list[FieldViolation]
    ) -> str:
        """Record the file part at ``field`` (``data``: a data URL or bare base64; ``file_id``: an uploaded
        file's); the placeholder for its text."""
        if sum(map(bool, (data, url, file_id))) != 1:
            violations.append(FieldViolation(field, "give exactly one of file_data, file_url and file_id"))
            return ""
        if file_id:
            self.files.append(FilePart(ImageSource(f"{field}.file_id"), filename, "", file_id))
            return self._placeholder(len(self.files) - 1)
        media_type = data[len("data:") :].split(";", 1)[0].split(",", 1)[0].lower() if data.startswith("data:") else ""
        url = url or (data if data.startswith("data:") else f"data:;base64,{data}")
        self.files.append(FilePart(ImageSource(field, url=url), filename, media_type))
        return self._placeholder(len(self.files) - 1)

    def _placeholder(self, index: int) -> str:
        return f"\u2063ovserve-file-{self._nonce}-{index}\u2063"

    async def with_files(
        self, messages: list[dict[str, Any]], policy: MediaPolicy, uploaded: UploadedFiles | None = None
    ) -> list[dict[str, Any]]:
        """``messages`` with each file placeholder replaced by the file's name and text (loaded together, read
        off the event loop; a ``file_id`` from ``uploaded``); INVALID_ARGUMENT naming the part of a file that
        cannot be read."""
        if not self.files:
            return messages

        async def text(part: FilePart) -> str:
            filename = part.filename
            if not part.file_id:
                data = await media_bytes(part.source, policy, limit=policy.max_file_bytes)
            elif uploaded is None:
                raise InvalidArgument.of(part.source.field, "uploaded files are not served here; send file_data")
            else:
                record, data = await uploaded.content(part.file_id, part.source.field, limit=policy.max_file_bytes)
                filename = filename or record.filename
            body = await asyncio.to_thread(document_text, part.source.field, data, part.media_type, filename, policy)
            return f"[file {filename or 'unnamed'}]\n{body}\n[end of file]"

        try:
            texts = await asyncio.gather(*(text(part) for part in self.files))
        except MediaError as error:
            raise InvalidArgument.of(error.field, error.message) from error
        out = []
        for message in messages:
            content = message.get("content")
            if isinstance(content, str):
                for index, extracted in enumerate(texts):
                    content = content.replace(self._placeholder(index), extracted)
                message = {**message, "content": content}
            out.append(message)
        return out

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
    model: ServedModel, prompt: str, parts: MediaParts, policy: MediaPolicy, field: str
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
    assert model.vision is not None  # MediaParts refuses images for a text-only model
    ids: list[int] = []
    for position, piece in enumerate(_TAG.split(prompt)):  # text, image number, text, ..., text
        if position % 2:
            ids += [model.vision.image_token_id] * model.vision.tokens_per_image
        elif piece:
            ids += model.engine.encode(piece, add_special_tokens=False)
    return ids

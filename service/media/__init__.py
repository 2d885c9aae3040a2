"""Images in requests: where they may come from (sources), what they may be (decode), within a MediaPolicy."""

from __future__ import annotations

import asyncio

import numpy as np

from ovserve.service.media.decode import decode
from ovserve.service.media.policy import MediaPolicy
from ovserve.service.media.sources import ImageSource, MediaError, image_bytes

__all__ = ["ImageSource", "MediaError", "MediaPolicy", "load_images"]


async def load_images(sources: list[ImageSource], policy: MediaPolicy, field: str) -> list[np.ndarray]:
    """Every image of a request, fetched together and decoded off the event loop, in order.

    MediaError names the first failing part (or ``field``, the request's image-bearing field, when there are
    more images than a request may carry).
    """
    if len(sources) > policy.max_images_per_request:
        raise MediaError(field, f"{len(sources)} images; at most {policy.max_images_per_request} per request")

    async def one(source: ImageSource) -> np.ndarray:
        data = await image_bytes(source, policy)
        return await asyncio.to_thread(decode, source.field, data, policy)

    tasks = [asyncio.ensure_future(one(source)) for source in sources]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        for task in tasks:  # the first failure ends the request: stop the other fetches
            task.cancel()

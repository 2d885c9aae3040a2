"""Encoded image bytes -> RGB pixels (uint8, height x width x 3), with Pillow, refusing what is not a supported
image, truncated, or larger than allowed before its pixels are allocated. Callers run it off the event loop."""

from __future__ import annotations

import io
import warnings

import numpy as np
from PIL import Image, UnidentifiedImageError

from ovserve.clients.defaults import MIB
from ovserve.service.media.policy import MediaPolicy
from ovserve.service.media.sources import MediaError

# The formats OpenAI documents for image inputs (PNG, JPEG, WebP, non-animated GIF), and BMP. Pillow tries only
# these decoders: TIFF, PSD, ICO and the rest are refused as unsupported rather than parsed.
FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP")


# Pixels leave Pillow a band of rows at a time. Its whole-image copy (np.asarray calls tobytes) is one C call
# that holds the GIL, 45-75 ms for 4096 x 4096, and eight such images at once held the server's event loop
# 0.2 s; a band of about a MiB takes a millisecond, and the whole copy is no slower (34 ms against 62).
BAND_BYTES = MIB


def decode(field: str, data: bytes, policy: MediaPolicy) -> np.ndarray:
    """The image's pixels as an RGB uint8 array (height, width, 3); MediaError naming ``field`` otherwise."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=FORMATS) as image:  # reads the header only
                width, height = image.size
                if width * height > policy.max_image_pixels:
                    raise MediaError(
                        field, f"the image is {width}x{height} pixels; at most {policy.max_image_pixels} allowed"
                    )
                image.load()  # a truncated file raises here
                pixels = _pixels(image if image.mode == "RGB" else image.convert("RGB"))
    except MediaError:
        raise
    except UnidentifiedImageError as error:
        raise MediaError(field, f"not an image in a supported format ({', '.join(FORMATS)})") from error
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
        raise MediaError(field, f"the image is too large to decode: {error}") from error
    except (OSError, SyntaxError, ValueError, EOFError) as error:  # truncated or corrupt data
        raise MediaError(field, f"the image could not be decoded: {error}") from error
    if pixels.ndim != 3 or pixels.shape[0] == 0 or pixels.shape[1] == 0:
        raise MediaError(field, "the image has no pixels")
    return pixels


def _pixels(image: Image.Image) -> np.ndarray:
    """An RGB image's pixels (height, width, 3), copied out a band of rows at a time (see BAND_BYTES)."""
    width, height = image.size
    pixels = np.empty((height, width, 3), dtype=np.uint8)
    rows = max(
        1, BAND_BYTES // (3 * max(1, width))
    )  # max(1, width): a zero width, refused by the caller, divides nothing
    for top in range(0, height, rows):
        band = image.crop((0, top, width, min(height, top + rows)))
        pixels[top : top + band.height] = np.asarray(band, dtype=np.uint8)
    return pixels

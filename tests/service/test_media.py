"""Images in requests (ovserve.service.media): every kind of bad image is a MediaError naming its part, good ones decode
to RGB pixels; fetches obey the host allow-list, the private-address guard, the size, time and redirect bounds.
A local tornado server plays the image host."""

from __future__ import annotations

import asyncio
import io
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tornado.httpserver
import tornado.web
from PIL import Image

from ovserve.service.media import ImageSource, MediaError, MediaPolicy, load_images
from tests.images import data_url, encoded, image_host

FIELD = "messages[0].content_parts[1].image_url"


def _app() -> tornado.web.Application:
    return image_host({"red.png": encoded(), "big.bmp": encoded(size=(400, 400), kind="BMP")})  # BMP: 480 kB


def with_host(test: Callable[[str], Awaitable[Any]]) -> Any:
    """Run ``test(base_url)`` with the local image host listening on a free loopback port."""

    async def scenario() -> Any:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        sock.setblocking(False)
        server = tornado.httpserver.HTTPServer(_app())
        server.add_sockets([sock])
        try:
            return await test(f"http://127.0.0.1:{sock.getsockname()[1]}")
        finally:
            server.stop()

    return asyncio.run(scenario())


OPEN = MediaPolicy(allowed_media_domains=("127.0.0.1",), allow_private_media_hosts=True, max_image_bytes=100_000,
                   media_fetch_timeout_seconds=1.0)  # fmt: skip


def load(source: ImageSource, policy: MediaPolicy = OPEN) -> list[np.ndarray]:
    return asyncio.run(load_images([source], policy, "messages"))


def refused(source: ImageSource, policy: MediaPolicy = OPEN) -> str:
    with pytest.raises(MediaError) as raised:
        load(source, policy)
    assert raised.value.field == source.field
    return raised.value.message


def test_a_data_url_and_raw_bytes_decode_to_rgb_pixels() -> None:
    [pixels] = load(ImageSource(FIELD, url=data_url(encoded((10, 200, 30)))))
    assert pixels.shape == (6, 8, 3) and pixels.dtype == np.uint8 and tuple(pixels[0, 0]) == (10, 200, 30)
    [pixels] = load(ImageSource(FIELD, data=encoded((0, 0, 255), kind="JPEG")))
    assert pixels.shape == (6, 8, 3) and pixels[0, 0, 2] > 200  # JPEG is lossy
    rgba = io.BytesIO()
    Image.new("RGBA", (3, 3), (255, 0, 0, 128)).save(rgba, "PNG")
    assert load(ImageSource(FIELD, data=rgba.getvalue()))[0].shape == (3, 3, 3)  # alpha dropped


def test_a_local_file_under_the_allowed_directory(tmp_path: Path) -> None:
    (tmp_path / "red.gif").write_bytes(encoded(kind="GIF"))
    policy = MediaPolicy(allowed_local_media_path=tmp_path)
    assert load(ImageSource(FIELD, url=f"file://{tmp_path}/red.gif"), policy)[0].shape == (6, 8, 3)
    assert "outside" in refused(ImageSource(FIELD, url=f"file://{tmp_path}/../etc/passwd"), policy)
    assert "no such file" in refused(ImageSource(FIELD, url=f"file://{tmp_path}/absent.png"), policy)
    assert "allowed-local-media-path" in refused(ImageSource(FIELD, url=f"file://{tmp_path}/red.gif"))


def test_fetches_follow_a_bounded_redirect_within_the_allowed_host() -> None:
    async def test(base: str) -> None:
        [pixels] = await load_images([ImageSource(FIELD, url=f"{base}/hop.png")], OPEN, "messages")
        assert tuple(pixels[0, 0]) == (200, 30, 30)

    with_host(test)


BAD_BYTES = {
    "not an image": (b"hello, I am text", "not an image"),
    "truncated": (encoded(size=(64, 64))[:60], "could not be decoded"),
    "unsupported type": (encoded(kind="TIFF"), "not an image in a supported format"),
    "too many bytes": (encoded(size=(200, 200), kind="BMP"), "at most 100000 allowed"),
    "too many pixels": (encoded(size=(120, 100)), "120x100 pixels; at most 10000 allowed"),
    "empty": (b"", "needs a url"),
}


@pytest.mark.parametrize("kind", BAD_BYTES)
def test_bad_image_bytes_are_refused_naming_the_part(kind: str) -> None:
    data, expected = BAD_BYTES[kind]
    policy = MediaPolicy(max_image_bytes=100_000, max_image_pixels=10_000)
    assert expected in refused(ImageSource(FIELD, data=data), policy)


BAD_URLS = {
    "data url not base64": ("data:image/png,rawtext", "must be base64"),
    "data url of another type": (data_url(b"hello", "text/plain"), "is not image data"),
    "data url bad base64": ("data:image/png;base64,@@@notbase64", "not valid base64"),
    "data url without comma": ("data:image/png;base64", "needs a comma"),
    "data url too large": (data_url(b"x" * 200_000), "over 100000 bytes"),
    "unsupported scheme": ("ftp://127.0.0.1/red.png", "unsupported URL scheme"),
    "no scheme": ("red.png", "unsupported URL scheme"),
    "host not allowed": ("http://example.com/red.png", "not among the hosts"),
}


@pytest.mark.parametrize("kind", BAD_URLS)
def test_bad_image_urls_are_refused_naming_the_part(kind: str) -> None:
    url, expected = BAD_URLS[kind]
    assert expected in refused(ImageSource(FIELD, url=url))


def test_http_urls_need_the_flag_and_private_addresses_their_own() -> None:
    assert "not accepted here" in refused(ImageSource(FIELD, url="http://127.0.0.1/red.png"), MediaPolicy())

    async def test(base: str) -> str:
        strict = MediaPolicy(allowed_media_domains=("127.0.0.1",))  # loopback, not allowed as private
        with pytest.raises(MediaError) as raised:
            await load_images([ImageSource(FIELD, url=f"{base}/red.png")], strict, "messages")
        return raised.value.message

    assert "private addresses" in with_host(test)


FETCH_FAILURES = {
    "slow.png": "more than 1 s",
    "missing.png": "HTTP 404",
    "loop.png": "fetching it failed",  # more redirects than allowed
    "away.png": "not among the hosts",  # a redirect to a host off the list
    "big.bmp": "fetching it failed",  # over max_image_bytes while reading
}


@pytest.mark.parametrize("path", FETCH_FAILURES)
def test_fetch_failures_are_refused_naming_the_part(path: str) -> None:
    async def test(base: str) -> str:
        with pytest.raises(MediaError) as raised:
            await load_images([ImageSource(FIELD, url=f"{base}/{path}")], OPEN, "messages")
        assert raised.value.field == FIELD
        return raised.value.message

    assert FETCH_FAILURES[path] in with_host(test)


def test_more_images_than_a_request_may_carry_names_the_field() -> None:
    sources = [ImageSource(f"messages[0].content_parts[{i}]", data=encoded()) for i in range(3)]
    with pytest.raises(MediaError) as raised:
        asyncio.run(load_images(sources, MediaPolicy(max_images_per_request=2), "messages"))
    assert raised.value.field == "messages" and "at most 2 per request" in raised.value.message


@pytest.mark.parametrize(
    ("mode", "size"),
    [("RGB", (4096, 300)), ("RGB", (400_000, 2)), ("RGBA", (1000, 777)), ("L", (513, 1025)), ("P", (64, 3))],
)
def test_pixels_copied_out_in_bands_are_pillows_own(mode: str, size: tuple[int, int]) -> None:
    """decode copies pixels out a band of rows at a time (decode.BAND_BYTES): the same array as Pillow's whole
    copy, for bands that do not divide the height, rows wider than a band, and the modes converted to RGB."""
    from ovserve.service.media.decode import decode

    noise = np.random.default_rng(7).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    image = Image.fromarray(noise).convert(mode)
    data = io.BytesIO()
    image.save(data, format="PNG")
    policy = MediaPolicy(max_image_pixels=size[0] * size[1])
    expected = np.asarray(Image.open(io.BytesIO(data.getvalue())).convert("RGB"))
    got = decode("image", data.getvalue(), policy)
    assert got.dtype == np.uint8 and got.flags.c_contiguous
    np.testing.assert_array_equal(got, expected)

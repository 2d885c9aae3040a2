"""Images made in the tests, and a local image host (tornado) to fetch them from."""

from __future__ import annotations

import asyncio
import base64
import io

import tornado.web
from PIL import Image


def encoded(colour: tuple[int, int, int] = (200, 30, 30), size: tuple[int, int] = (8, 6), kind: str = "PNG") -> bytes:
    """An image of one colour, encoded."""
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, kind)
    return out.getvalue()


def data_url(data: bytes, media_type: str = "image/png") -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


class _Slow(tornado.web.RequestHandler):
    async def get(self) -> None:
        await asyncio.sleep(30)


def image_host(images: dict[str, bytes]) -> tornado.web.Application:
    """Serves ``/NAME`` for each of ``images``, plus /slow.png (never answers in time), /hop.png (a redirect to
    /red.png), /loop.png (redirects to itself) and /away.png (a redirect to another host)."""

    class Served(tornado.web.RequestHandler):
        def get(self, name: str) -> None:
            if name not in images:
                raise tornado.web.HTTPError(404)
            self.write(images[name])

    return tornado.web.Application([
        (r"/slow.png", _Slow),
        (r"/hop.png", tornado.web.RedirectHandler, {"url": "/red.png"}),
        (r"/loop.png", tornado.web.RedirectHandler, {"url": "/loop.png"}),
        (r"/away.png", tornado.web.RedirectHandler, {"url": "http://elsewhere.invalid/red.png"}),
        (r"/(.+)", Served),
    ])  # fmt: skip

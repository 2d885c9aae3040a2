"""Images through the openai client on the real pipeline, with the bundled tiny-vision (it names an image's
colour): chat with a data URL and with a URL from a local image host, unary and streamed; Responses with
input_image; text and image requests in one batch; and every kind of bad image a 400 naming its part, the server
serving on."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import openai
import pytest
import tornado.httpserver

from ovserve.rest_bridge.server import Bridge
from ovserve.service.media import MediaPolicy
from ovserve.service.models import BUNDLED_MODELS_DIR, BUNDLED_VISION, ModelSpec
from tests.conftest import TEST_SETTINGS, ServerThread, start_server
from tests.images import data_url, encoded, image_host
from tests.rest_bridge.conftest import http_request

MODEL = BUNDLED_VISION
COLOURS = {"red": (220, 30, 30), "green": (30, 180, 40), "blue": (30, 60, 220), "yellow": (230, 220, 40)}
ASK = "What colour is this image?"
POLICY = MediaPolicy(allowed_media_domains=("127.0.0.1",), allow_private_media_hosts=True, max_image_bytes=200_000,
                     max_image_pixels=1_000_000, max_images_per_request=3, media_fetch_timeout_seconds=1.0)  # fmt: skip


def picture(colour: str, size: tuple[int, int] = (48, 40), kind: str = "PNG") -> bytes:
    return encoded(COLOURS[colour], size, kind)


@dataclass
class Served:
    """tiny-vision behind the bridge, fetching from a local image host."""

    server: ServerThread
    bridge: Bridge
    host: str  # the image host's base URL

    @property
    def port(self) -> int:
        return self.bridge.port


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    server = start_server([ModelSpec(MODEL, BUNDLED_MODELS_DIR / MODEL, settings=TEST_SETTINGS)], media=POLICY)
    images = {f"{name}.png": picture(name) for name in COLOURS}
    images |= {"big.bmp": encoded(size=(300, 300), kind="BMP"), "text.png": b"not an image at all"}
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    sock.setblocking(False)
    host = tornado.httpserver.HTTPServer(image_host(images))

    async def listen() -> None:
        host.add_sockets([sock])

    server.run(listen())  # the image host shares the server's loop, as a neighbour service would its machine
    bridge = Bridge(server.target, "127.0.0.1", 0)
    server.run(bridge.start())
    yield Served(server, bridge, f"http://127.0.0.1:{sock.getsockname()[1]}")
    server.run(bridge.stop())

    async def close() -> None:
        host.stop()

    server.run(close())
    server.stop()


@pytest.fixture(scope="module")
def client(served: Served) -> Iterator[openai.OpenAI]:
    url = f"http://127.0.0.1:{served.port}/v3"
    with openai.OpenAI(base_url=url, api_key="any", max_retries=0, timeout=120) as opened:
        yield opened


def image_message(url: str, question: str = ASK) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                         {"type": "text", "text": question}]}]  # fmt: skip


def test_chat_names_the_colour_of_each_data_url_image(client: openai.OpenAI) -> None:
    answers = {}
    for colour in COLOURS:
        reply = client.chat.completions.create(
            model=MODEL, messages=image_message(data_url(picture(colour))), max_tokens=12, temperature=0
        )  # type: ignore[arg-type]
        answers[colour] = reply.choices[0].message.content
        assert reply.choices[0].finish_reason == "stop" and reply.usage is not None
        text_only = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "\n" + ASK}], max_tokens=1
        )
        assert text_only.usage is not None  # one image is 16 prompt tokens (its tag's newline aside)
        assert reply.usage.prompt_tokens - text_only.usage.prompt_tokens in range(15, 18)
    assert answers == {colour: f"It is {colour}." for colour in COLOURS}


def test_a_streamed_chat_with_an_image_fetched_from_a_url(client: openai.OpenAI, served: Served) -> None:
    stream = client.chat.completions.create(
        model=MODEL, messages=image_message(f"{served.host}/green.png"), max_tokens=12, temperature=0, stream=True
    )  # type: ignore[arg-type]
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == "It is green."
    redirected = client.chat.completions.create(
        model=MODEL, messages=image_message(f"{served.host}/hop.png"), max_tokens=12, temperature=0
    )  # type: ignore[arg-type]
    assert redirected.choices[0].message.content == "It is red."  # /hop.png redirects to /red.png


def test_responses_take_input_image(client: openai.OpenAI) -> None:
    content = [{"type": "input_image", "image_url": data_url(picture("yellow"))}, {"type": "input_text", "text": ASK}]
    reply = client.responses.create(
        model=MODEL, input=[{"role": "user", "content": content}], max_output_tokens=12, temperature=0
    )  # type: ignore[arg-type]
    assert reply.status == "completed" and reply.output_text == "It is yellow."


def test_text_and_image_requests_share_batches(served: Served) -> None:
    url = f"http://127.0.0.1:{served.port}/v3"

    async def scenario() -> list[str | None]:
        async with openai.AsyncOpenAI(base_url=url, api_key="any", max_retries=0, timeout=120) as aclient:
            calls = []
            for colour in ("red", "blue", "yellow"):
                calls.append(
                    aclient.chat.completions.create(
                        model=MODEL, messages=image_message(data_url(picture(colour))), max_tokens=12, temperature=0
                    )
                )
                calls.append(
                    aclient.chat.completions.create(
                        model=MODEL, messages=[{"role": "user", "content": "Hi"}], max_tokens=60, temperature=0
                    )
                )
            replies = await asyncio.gather(*calls)  # fmt: skip
        return [reply.choices[0].message.content for reply in replies]

    answers = asyncio.run(scenario())
    assert answers[0::2] == ["It is red.", "It is blue.", "It is yellow."]
    assert answers[1::2] == ["Hello! Show me an image and I will name its colour."] * 3


def parts(*urls: str) -> list[dict[str, Any]]:
    return [{"type": "image_url", "image_url": {"url": url}} for url in urls] + [{"type": "text", "text": ASK}]


BAD = {  # kind -> (content parts, the param the 400 names, words of its message)
    "not an image": (parts(data_url(b"hello, I am text")), "[0].image_url", "not an image"),
    "truncated": (parts(data_url(picture("red", (64, 64))[:70])), "[0].image_url", "could not be decoded"),
    "unsupported type": (parts(data_url(picture("red", kind="TIFF"))), "[0].image_url", "supported format"),
    "too many bytes": (parts(data_url(encoded(size=(300, 300), kind="BMP"), "image/bmp")), "[0].image_url", "bytes"),
    "too many pixels": (parts(data_url(picture("red", (1200, 1000)))), "[0].image_url", "1200x1000 pixels"),
    "too many images": (parts(*[data_url(picture("red"))] * 4), "messages", "at most 3 per request"),
    "second of two": (parts(data_url(picture("red")), data_url(b"junk")), "[1].image_url", "not an image"),
    "data url not base64": (parts("data:image/png,raw"), "[0].image_url", "must be base64"),
    "data url not an image": (parts(data_url(b"hi", "text/plain")), "[0].image_url", "not image data"),
    "bad base64": (parts("data:image/png;base64,@@@"), "[0].image_url", "not valid base64"),
    "empty url": (parts(""), "[0].image_url", "needs a url"),
    "unsupported scheme": (parts("ftp://127.0.0.1/red.png"), "[0].image_url", "unsupported URL scheme"),
    "host not allowed": (parts("http://example.com/red.png"), "[0].image_url", "not among the hosts"),
    "file url not allowed": (parts("file:///etc/passwd"), "[0].image_url", "allowed-local-media-path"),
    "fetch timeout": (parts("{host}/slow.png"), "[0].image_url", "more than 1 s"),
    "fetch 404": (parts("{host}/missing.png"), "[0].image_url", "HTTP 404"),
    "fetched not an image": (parts("{host}/text.png"), "[0].image_url", "not an image"),
    "fetched too large": (parts("{host}/big.bmp"), "[0].image_url", "fetching it failed"),
    "redirect loop": (parts("{host}/loop.png"), "[0].image_url", "fetching it failed"),
    "redirect off the list": (parts("{host}/away.png"), "[0].image_url", "not among the hosts"),
}


@pytest.mark.parametrize("kind", BAD)
def test_a_bad_image_is_a_400_naming_its_part_and_the_server_serves_on(served: Served, kind: str) -> None:
    content, param, words = BAD[kind]
    for part in content:
        if part["type"] == "image_url":
            part["image_url"]["url"] = part["image_url"]["url"].replace("{host}", served.host)
    body = {"model": MODEL, "messages": [{"role": "user", "content": content}], "max_tokens": 4}
    reply = http_request(served.port, "POST", "/v3/chat/completions", body)
    error = reply.json()["error"]
    assert reply.status == 400 and error["type"] == "invalid_request_error", error
    expected = param if param == "messages" else f"messages[0].content{param}"
    assert error["param"] == expected and words in error["message"], error
    good = {**body, "messages": image_message(data_url(picture("blue"))), "max_tokens": 12, "temperature": 0}
    assert (
        http_request(served.port, "POST", "/v3/chat/completions", good).json()["choices"][0]["message"]["content"]
        == "It is blue."
    )

"""Generated bad inputs for the newer surfaces: audio uploads, documents, images, image generations and edits
(image_out), rerank and score, embeddings,
tokenize, conversations, files, batches, logprobs, Anthropic's Messages API and the Responses WebSocket (the
standing fuzz of tests/rest_bridge/test_surface_fuzz.py).

Each surface has a valid seed request and a maker that breaks it one way or several with a seeded
``random.Random``: the hostile inputs the surface is known to meet (multipart bodies cut short, WAV headers
declaring hours at 1 Hz, PDFs that inflate to 40 MB, PNG headers claiming 10^10 pixels, token ids past the
vocabulary, image URLs that point back at the server's own machine), drawn among the generic broken values of
the HTTP fuzz. Outputs stay a few tokens long, so the inputs that are valid finish fast. Builders of the large
fixed files are cached: the storm pays for them once, before it is measured.
"""

from __future__ import annotations

import base64
import functools
import io
import json
import random
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from ovserve.service.api.logprobs import MAX_COMPLETION_LOGPROBS, MAX_REQUEST_SCORES
from ovserve.service.engine import MAX_ALTERNATIVES
from tests import documents, images
from tests.rest_bridge.test_http_fuzz import RAW, VALUES, encode, mutated_body
from tests.rest_bridge.test_logprobs_bounds import FIRST, SECOND, TOKENS
from tests.rest_bridge.test_logprobs_bounds import prompts as token_prompts

AUDIO_MODEL, CHAT_MODEL, VISION_MODEL = "tiny-whisper", "tiny-chat", "tiny-vision"
EMBED_MODEL, RERANK_MODEL, DIFFUSION_MODEL = "tiny-embed", "tiny-rerank", "tiny-diffusion"
SPEECH_MODEL = "tiny-speech"
MODELS = [CHAT_MODEL, VISION_MODEL, EMBED_MODEL, RERANK_MODEL, AUDIO_MODEL, DIFFUSION_MODEL, SPEECH_MODEL, "nope", "",
          "a" * 5000]  # fmt: skip
BOUNDARY = "surface-fuzz-boundary"
MIB = 1 << 20
JSON_TYPE = {"Content-Type": "application/json"}
FORM_TYPE = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}


@dataclass(frozen=True)
class Expected:
    """What the generator knows an answer must be: its status and, for a 400, the fields one of which its
    ``param`` names (the field itself or an item of it: ``prompt[3]``)."""

    status: int
    params: frozenset[str] = frozenset()

    def wrong(self, status: int, body: bytes) -> str | None:
        """What is wrong with an answer of ``status`` and ``body``, if anything."""
        if status != self.status:
            return f"not the {self.status} expected"
        if not self.params:
            return None
        try:
            error = json.loads(body)["error"]
            if "param" not in error and json.loads(body)["type"] == "error":  # Anthropic's: the message names it
                return None if any(f in error["message"] for f in self.params) else f"no {sorted(self.params)} named"
            param = error["param"]
        except (ValueError, KeyError, TypeError):
            return "no error envelope"
        named = isinstance(param, str) and any(param == f or param.startswith((f"{f}[", f"{f}.")) for f in self.params)
        return None if named else f"param {param!r}, not one of {sorted(self.params)}"


OK = Expected(200)


def refused(*fields: str) -> Expected:
    """A 400 naming one of ``fields``."""
    return Expected(400, frozenset(fields))


@dataclass(frozen=True)
class HttpCase:
    """One generated request, and what a 400 to it must say."""

    surface: str
    label: str  # what the generator meant to break, for the report
    method: str
    path: str
    body: bytes | None
    headers: dict[str, str]
    names_param: bool  # the body was one the bridge could read: a 400 names the field
    # The answer, where the generator knows it (the request's only fault a value known to be refused, or none);
    # None: any answer below 500 in OpenAI's envelope (random mutations can be valid or not).
    expect: Expected | None = None

    def describe(self) -> str:
        """The request as a report line shows it (the body cut to 300 bytes)."""
        return f"[{self.surface}: {self.label}] {self.method} {self.path[:200]} {(self.body or b'')[:300]!r}"


@dataclass
class Context:
    """What the cases point at that exists only at run time."""

    trap_port: int  # a loopback port that must never be connected to (image and file URLs point there)
    conversation: str  # a conversation id of the storm's own
    created: list[str] = field(default_factory=list)  # item ids it holds
    batch_file: str = ""  # an uploaded batch input file of the storm's own (one request line)


def json_case(surface: str, label: str, path: str, body: Any, expect: Expected | None = None) -> HttpCase:
    """A POST of ``body`` as JSON (RAW pieces spliced in); a JSON object names the field of a 400."""
    return HttpCase(surface, label, "POST", path, encode(body).encode(), JSON_TYPE, isinstance(body, dict), expect)


def mutated(surface: str, path: str, seed: dict[str, Any], rng: random.Random) -> HttpCase:
    """The HTTP fuzz's generic mutation of ``seed`` (other types, extremes, fields dropped and added)."""
    body, parsed = mutated_body(seed, rng)
    return HttpCase(surface, "generic mutation", "POST", path, body, JSON_TYPE, parsed)


# ---- audio: multipart forms and WAV headers ----


def wav(rate: int, frames: int, channels: int = 1, bits: int = 8, tag: int = 1, declared: int | None = None) -> bytes:
    """A RIFF WAV written by hand (any header, even one no encoder writes) and 8-bit silence; ``declared``: the
    data chunk's length as the header states it, whatever follows."""
    data = b"\x80" * (frames * max(channels, 0))
    align = max(channels, 0) * max(bits, 8) // 8
    fmt = struct.pack("<HHIIHH", tag, channels, rate, (rate * align) & 0xFFFFFFFF, align & 0xFFFF, bits)
    size = len(data) if declared is None else declared
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", size) + data
    return b"RIFF" + struct.pack("<I", min(len(body) if declared is None else size + 36, 0xFFFFFFFF)) + body


SHORT_WAV = wav(8000, 2000)  # a quarter of a second: Whisper's cheapest valid input
# (label, file bytes, refused): what a header declares, then what is not audio at all; refused: sent alone, the
# file is known to get a 400 naming ``file`` (a 7-bit WAV may be read as 8-bit). Every readable one holds 1,000
# frames at least: a recording of 200 samples or fewer (at 16 kHz) failed Whisper with a 500, a fault pinned by
# its own test (test_the_shortest_recordings_are_not_a_server_error) so the storm stays about the rest.
AUDIO_FILES: list[tuple[str, Callable[[], bytes], bool]] = [
    ("1 Hz, 1,795 s", lambda: wav(1, 1795), True),
    ("2^31-1 Hz", lambda: wav(2**31 - 1, 1000), True),
    ("0 Hz", lambda: wav(0, 1000), True),
    ("0 channels", lambda: wav(8000, 1000, channels=0), True),
    ("65535 channels", lambda: wav(8000, 1, channels=65535), True),
    ("9 channels", lambda: wav(8000, 1000, channels=9), True),
    ("declares 4 GB of data", lambda: wav(8000, 1000, declared=0xFFFFFF00), True),  # (2xx before issue 43)
    ("declares 100x its data", lambda: wav(16000, 1600, declared=160_000), True),
    ("declares an hour", lambda: wav(16000, 1000, declared=16000 * 3600), True),
    ("declares 2^32-1: no length written", lambda: wav(16000, 8000, declared=0xFFFFFFFF), False),  # (as ffmpeg)
    ("1,801 s at 1 kHz", lambda: wav(1000, 1_801_000), True),
    ("0 bits", lambda: wav(8000, 1000, bits=0), True),
    ("7 bits", lambda: wav(8000, 1000, bits=7), False),
    ("64-bit integers", lambda: wav(8000, 1000, bits=64), True),
    ("float of 8 bits", lambda: wav(8000, 1000, tag=3), True),
    ("extensible without its extension", lambda: wav(8000, 1000, tag=0xFFFE), True),
    ("MP3 inside WAV", lambda: wav(8000, 1000, tag=0x55), True),
    ("header only", lambda: SHORT_WAV[:44], True),
    ("cut in the header", lambda: SHORT_WAV[:30], True),
    ("RIFF and nothing", lambda: b"RIFF", True),
    ("empty", lambda: b"", True),
    ("a PNG", lambda: images.encoded(), True),
    ("a PDF", lambda: documents.pdf(["not audio"]), True),
    ("text", lambda: b"hello, I am not audio", True),
    ("OggS garbage", lambda: b"OggS" + bytes(200), True),
    ("fLaC garbage", lambda: b"fLaC" + bytes(200), True),
    ("ID3 garbage", lambda: b"ID3\x04\x00\x00\x00\x00\x00\x00" + bytes(200), True),
]  # fmt: skip
AUDIO_FIELDS: dict[str, list[bytes]] = {  # form fields -> bad (and a few good) values, as the form carries them
    "language": [b"xx", b"", b"EN", b"english", b"a" * 70_000, b"\xff\xfe", b"en\x00", b"zh-Hans"],
    "response_format": [b"yaml", b"", b"JSON", b"srt", b"vtt", b"text", b"verbose_json", b"x" * 70_000],
    "temperature": [b"nan", b"inf", b"-inf", b"-1", b"1e309", b"warm", b"2", b"0.5", b"", b"1" * 70_000],
    "prompt": [b"a" * 5000, b"\xff", b""],
    "stream": [b"true", b"maybe", b"TRUE"],
    "timestamp_granularities[]": [b"word", b"segment", b"nope"],
    "model": [b"", b"tiny-chat", b"nope", b"a" * 70_000],
    "frobnicate": [b"1"],
}


def part(name: str, value: bytes, filename: str | None = None, headers: bytes = b"") -> bytes:
    """One form-data part (``headers``: extra header lines, each ending CRLF)."""
    disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename is not None else "")
    return f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n".encode() + headers + b"\r\n" + value + b"\r\n"


def form(*parts: bytes) -> bytes:
    """The parts and the closing boundary."""
    return b"".join(parts) + f"--{BOUNDARY}--\r\n".encode()


def _form_breakers(rng: random.Random, good: list[bytes]) -> tuple[str, bytes, str]:
    """A body and Content-Type broken as multipart (label, body, Content-Type)."""
    body, content_type = form(*good), FORM_TYPE["Content-Type"]
    return rng.choice([
        ("no boundary", body, "multipart/form-data"),
        ("another boundary", body, "multipart/form-data; boundary=not-the-one"),
        ("truncated body", body[: rng.randint(0, len(body) - 1)], content_type),
        ("too many parts", form(*[part("timestamp_granularities[]", b"segment")] * rng.randint(33, 400), *good),
         content_type),
        ("1 MB filename", form(good[0], part("file", SHORT_WAV, "a" * MIB + ".wav")), content_type),
        ("huge part headers", form(good[0], part("file", SHORT_WAV, "a.wav", b"X-Pad: " + b"p" * rng.choice(
            [5000, 100_000, MIB]) + b"\r\n")), content_type),
        ("part without a name", form(b"--" + BOUNDARY.encode() + b"\r\nContent-Disposition: form-data\r\n\r\nx\r\n"),
         content_type),
        ("no Content-Disposition", form(f"--{BOUNDARY}\r\n\r\nx\r\n".encode()), content_type),
        ("file without filename", form(good[0], part("file", SHORT_WAV)), content_type),
        ("two files", form(good[0], good[1], good[1]), content_type),
        ("no CRLF at all", body.replace(b"\r\n", b"\n"), content_type),
        ("JSON body", b'{"model": "tiny-whisper"}', content_type),
        ("empty body", b"", content_type),
        ("quoted boundary", body, f'multipart/form-data; boundary="{BOUNDARY}"'),
        ("boundary of 5,000 characters", body, "multipart/form-data; boundary=" + "b" * 5000),
        ("text/plain", body, "text/plain"),
        ("no Content-Type", body, ""),
        ("nested multipart", form(good[0], part("file", body, "a.wav", b"Content-Type: multipart/mixed; boundary="
                                              + BOUNDARY.encode() + b"\r\n")), content_type),
        ("filename with path and NUL", form(good[0], part("file", SHORT_WAV, "../../etc/pass\x00wd")), content_type),
    ])  # fmt: skip


def audio_case(rng: random.Random, context: Context) -> HttpCase:
    """A transcription (1 in 5 a translation) upload broken as multipart, in its WAV, or in a field. Both forms
    are the bridge's to read: a 400 names the field (a transcription's language, stream or timestamp
    granularities are a translation's unknown fields)."""
    translation = rng.random() < 0.2
    path = "/v3/audio/translations" if translation else "/v3/audio/transcriptions"
    good = [part("model", AUDIO_MODEL.encode()), part("file", SHORT_WAV, "a.wav")]
    roll = rng.random()
    if roll < 0.35:
        label, body, content_type = _form_breakers(rng, good)
        headers = {"Content-Type": content_type} if content_type else {}
        return HttpCase("audio", label, "POST", path, body, headers, True)
    parts = list(good)
    labels = []
    file_refused = False
    if roll < 0.7:
        name, make, file_refused = rng.choice(AUDIO_FILES)
        parts[1] = part("file", make(), "a.wav")
        labels.append(f"file: {name}")
    elif roll < 0.75:
        parts.pop(rng.randrange(2))
        labels.append("model or file missing")
    fields = rng.choice([0, 1, 1, 2])
    for _ in range(fields):
        name = rng.choice(list(AUDIO_FIELDS))
        value = rng.choice(AUDIO_FIELDS[name])
        parts.append(part(name, value))
        labels.append(f"{name}={value[:20]!r}")
    # The file the only fault: its 400 names it (with other fields, one of theirs may be refused first).
    expect = refused("file") if file_refused and not fields else None
    label = ", ".join(labels) or "valid"
    return HttpCase("audio", label, "POST", path, form(*parts), FORM_TYPE, True, expect)


# A recording of 1,790 s at 1 kHz: 1.8 MB that Whisper runs through in 60 windows (the longest a request may
# ask for). Sent once: it is the storm's slowest valid input.
LONG_SILENCE = HttpCase("audio", "1,790 s of silence at 1 kHz", "POST", "/v3/audio/transcriptions",
                        form(part("model", AUDIO_MODEL.encode()), part("file", wav(1000, 1_790_000), "long.wav")),
                        FORM_TYPE, True)  # fmt: skip


# ---- documents: chat file parts and Responses input_file ----


@functools.cache
def inflating_pdf() -> bytes:
    """A 130 KB PDF whose text is 40 MB once inflated."""
    return documents.inflating(40_000_000)


@functools.cache
def deep_pdf() -> bytes:
    """A PDF whose page tree is 5,000 levels deep."""
    return documents.deep(5000)


@functools.cache
def encrypted_pdf() -> bytes:
    """A PDF with a password."""
    return documents.encrypted(documents.pdf(["secret"]))


def _pdf_bytes(rng: random.Random) -> tuple[str, bytes]:
    plain = documents.pdf(["Chapter one: the plum.", "Chapter two: the pear."])
    flipped = bytearray(plain)
    for _ in range(rng.randint(1, 30)):
        flipped[rng.randrange(9, len(flipped))] = rng.randrange(256)
    return rng.choice([
        ("inflating to 40 MB", inflating_pdf()),
        ("page tree 5,000 deep", deep_pdf()),
        ("truncated", plain[: rng.randint(8, len(plain) - 1)]),
        ("encrypted", encrypted_pdf()),
        ("bytes flipped", bytes(flipped)),
        ("header and garbage", b"%PDF-1.7\n" + bytes(rng.randrange(256) for _ in range(2000))),
        ("400 pages", documents.pdf([f"page {i}" for i in range(400)])),
        ("valid", plain),
    ])  # fmt: skip


def _file_fields(rng: random.Random, context: Context) -> tuple[str, dict[str, Any]]:
    """A file's fields (chat's ``file`` object; Responses takes the same at the part's top level)."""
    text = rng.choice([b"\xff\xfe\x00bad \xc3\x28 text", "caf\xe9".encode("latin-1"), "hi".encode("utf-16"),
                       b"a" * (2 * MIB), b"\x00" * 1000])  # fmt: skip
    label, pdf = _pdf_bytes(rng)
    fields: list[tuple[str, dict[str, Any]]] = [
        (f"PDF {label}", {"file_data": documents.data_url(pdf, "application/pdf"), "filename": "a.pdf"}),
        (f"PDF {label}", {"file_data": documents.data_url(pdf, "application/pdf")}),
        ("text not UTF-8 or huge", {"file_data": documents.data_url(text, "text/plain"), "filename": "a.txt"}),
        ("bad base64", {"file_data": "data:application/pdf;base64,@@@" + "A" * rng.randint(0, 3)}),
        ("base64 with bad padding", {"file_data": "data:text/plain;base64,aGk"}),
        ("data URL not base64", {"file_data": "data:text/plain,hello"}),
        ("not a data URL", {"file_data": base64.b64encode(b"hello").decode()}),
        ("executable media type", {"file_data": documents.data_url(b"MZ" + bytes(100), "application/x-msdownload")}),
        ("empty file_data", {"file_data": ""}),
        ("file_id", {"file_id": rng.choice(["file-123", "", "a" * MIB, "../etc/passwd"])}),
        ("file_id not a string", {"file_id": rng.choice([5, None, [], {}])}),
        ("file_id and file_data", {"file_id": "file-1", "file_data": documents.data_url(b"hi", "text/plain")}),
        ("neither", {"filename": "a.pdf"}),
        ("1 MB filename", {"file_data": documents.data_url(b"hi", "text/plain"), "filename": "n" * MIB}),
        ("file_url to loopback", {"file_url": f"http://127.0.0.1:{context.trap_port}/a.pdf"}),
    ]  # fmt: skip
    return rng.choice(fields)


def document_case(rng: random.Random, context: Context) -> HttpCase:
    """A chat ``file`` part, a Responses ``input_file`` or an input-token count of one, holding a bad file."""
    label, fields = _file_fields(rng, context)
    route = rng.choice(["chat", "chat", "responses", "input_tokens"])
    if route == "chat":
        part_value: Any = fields if rng.random() < 0.95 else rng.choice(VALUES[:12])
        content = [{"type": "text", "text": "Read:"}, {"type": "file", "file": part_value}]
        model = CHAT_MODEL if rng.random() < 0.9 else rng.choice(MODELS)
        body = {"model": model, "messages": [{"role": "user", "content": content}], "max_tokens": 2}
        return json_case("documents", f"chat {label}", "/v3/chat/completions", body)
    content = [{"type": "input_text", "text": "Read:"}, {"type": "input_file", **fields}]
    body = {"model": CHAT_MODEL, "input": [{"role": "user", "content": content}], "max_output_tokens": 16,
            "store": False}  # fmt: skip
    path = "/v3/responses" if route == "responses" else "/v3/responses/input_tokens"
    return json_case("documents", f"{route} {label}", path, body)


# ---- images: image_url parts to tiny-vision ----


def png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header (with a right CRC) claims ``width`` x ``height`` pixels, over a few bytes of data."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(64))) + chunk(b"IEND", b"")
    )


def jpeg_claiming(width: int, height: int) -> bytes:
    """A small JPEG whose frame header is patched to claim ``width`` x ``height``."""
    data = bytearray(images.encoded(kind="JPEG"))
    at = data.index(b"\xff\xc0") + 5  # SOF0: marker, length (2), precision (1), then height and width
    data[at : at + 4] = struct.pack(">HH", height, width)
    return bytes(data)


@functools.cache
def zero_bomb_png() -> bytes:
    """10,000 x 10,000 black pixels: ~100 KB that decode to 300 MB."""
    out = io.BytesIO()
    Image.new("L", (10_000, 10_000)).save(out, "PNG", optimize=False)
    return out.getvalue()


@functools.cache
def animated_gif() -> bytes:
    """200 frames of 8 x 6 pixels."""
    frames = [Image.new("RGB", (8, 6), (i, 0, 0)) for i in range(200)]
    out = io.BytesIO()
    frames[0].save(out, "GIF", save_all=True, append_images=frames[1:])
    return out.getvalue()


SVG_HUGE = b'<svg xmlns="http://www.w3.org/2000/svg" width="100000" height="100000"><rect width="9" height="9"/></svg>'
SVG_ENTITY = b'<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]><svg>&x;</svg>'


def _image_url(rng: random.Random, context: Context) -> tuple[str, str]:
    """A bad (rarely a good) image URL, and its label."""
    good = images.encoded()
    flipped = bytearray(good)
    for _ in range(rng.randint(1, 20)):
        flipped[rng.randrange(8, len(flipped))] = rng.randrange(256)
    jpeg = images.encoded(kind="JPEG")
    loopback = rng.choice([f"http://127.0.0.1:{context.trap_port}/a.png", f"http://localhost:{context.trap_port}/",
                           f"http://[::1]:{context.trap_port}/a.png", f"http://127.1:{context.trap_port}/a.png",
                           f"http://2130706433:{context.trap_port}/a.png", f"http://0.0.0.0:{context.trap_port}/",
                           f"https://127.0.0.1:{context.trap_port}/a.png",
                           f"http://user:pw@127.0.0.1:{context.trap_port}/a.png"])  # fmt: skip
    return rng.choice([
        ("corrupt PNG", images.data_url(bytes(flipped))),
        ("truncated PNG", images.data_url(good[: rng.randint(8, len(good) - 1)])),
        ("truncated JPEG", images.data_url(jpeg[: rng.randint(2, len(jpeg) - 1)], "image/jpeg")),
        ("PNG claiming 100k x 100k", images.data_url(png_claiming(100_000, 100_000))),
        ("PNG claiming 2^31-1 x 1", images.data_url(png_claiming(2**31 - 1, 1))),
        ("PNG claiming 0 x 0", images.data_url(png_claiming(0, 0))),
        ("JPEG claiming 65535 x 65535", images.data_url(jpeg_claiming(65535, 65535), "image/jpeg")),
        ("10,000 x 10,000 zeros", images.data_url(zero_bomb_png())),
        ("GIF", images.data_url(images.encoded(kind="GIF"), "image/gif")),
        ("animated GIF", images.data_url(animated_gif(), "image/gif")),
        ("TIFF", images.data_url(images.encoded(kind="TIFF"), "image/tiff")),
        ("SVG 100k x 100k", images.data_url(SVG_HUGE, "image/svg+xml")),
        ("SVG with an entity", images.data_url(SVG_ENTITY, "image/svg+xml")),
        ("bad base64", "data:image/png;base64," + rng.choice(["@@@", "iVBOR", "", "a b c", "-_-_"])),
        ("PNG said to be text", images.data_url(good, "text/plain")),
        ("loopback URL", loopback),
        ("file URL", "file:///etc/passwd"),
        ("valid PNG", images.data_url(good)),
    ])  # fmt: skip


def image_case(rng: random.Random, context: Context) -> HttpCase:
    """A chat to tiny-vision (or a Responses input_image) with one to four images, one of them bad."""
    count = rng.choice([1, 1, 1, 2, 4])
    urls = [_image_url(rng, context) for _ in range(count)]
    label = " + ".join(name for name, _ in urls)
    if rng.random() < 0.8:
        detail = rng.choice(["auto", "low", "high", "bogus", None])
        parts = [{"type": "image_url", "image_url": {"url": url, **({"detail": detail} if detail else {})}}
                 for _, url in urls]  # fmt: skip
        model = VISION_MODEL if rng.random() < 0.9 else CHAT_MODEL
        body = {"model": model, "max_tokens": 2, "messages": [
            {"role": "user", "content": [*parts, {"type": "text", "text": "What colour?"}]}]}  # fmt: skip
        return json_case("images", f"chat {label}", "/v3/chat/completions", body)
    parts = [{"type": "input_image", "image_url": url} for _, url in urls]
    body = {
        "model": VISION_MODEL,
        "max_output_tokens": 16,
        "store": False,
        "input": [{"role": "user", "content": [*parts, {"type": "input_text", "text": "What colour?"}]}],
    }
    return json_case("images", f"responses {label}", "/v3/responses", body)  # fmt: skip


# ---- images out: generations (JSON) and edits (multipart) on tiny-diffusion ----

# Small and few steps, so the valid requests finish in milliseconds (the drawn values keep sizes small too).
IMAGE_OUT_SEED = {"model": DIFFUSION_MODEL, "prompt": "a red square", "size": "16x16", "num_inference_steps": 2,
                  "rng_seed": 1}  # fmt: skip
# Each value known to be refused, alone in the seed: (field, value).
IMAGE_OUT_REFUSED = [
    ("size", "30x30"), ("size", "4096x4096"), ("size", "0x0"), ("size", "16x16x16"), ("n", 11), ("n", 0.5),
    ("response_format", "url"), ("background", "transparent"), ("output_format", "gif"), ("output_compression", 101),
    ("num_inference_steps", 0), ("num_inference_steps", 151), ("guidance_scale", -1), ("guidance_scale", 1e300),
    ("rng_seed", -1), ("strength", 0.5), ("partial_images", 4), ("prompt", ""), ("prompt", "a" * 32_001),
    ("quality", "ultra"), ("moderation", "none"),
]  # fmt: skip
IMAGE_OUT_VALUES: dict[str, list[Any]] = {
    "size": ["auto", "8x8", "24x16", "16x2048", "2048x2048", "-8x8", "8x", "\u0000", 16],
    "n": [1, 2, 10, 11, -1, 2**63, "2", None], "stream": [True, False, "yes", 1],
    "partial_images": [0, 1, 3, 4, -1], "output_format": ["png", "jpeg", "webp", "bmp", ""],
    "output_compression": [0, 50, 100, -1, 1.5], "num_inference_steps": [1, 3, 150, 2**31, -5, "3"],
    "guidance_scale": [0, 1.0, 7.5, 50.0, 51, (RAW, "NaN"), (RAW, "1e309")],
    "rng_seed": [0, 2**63 - 1, 2**63, -1, 1.5], "seed": [3, -3], "negative_prompt": ["blur", "a" * 40_000, 5],
    "strength": [0.5, 0], "background": ["auto", "opaque", "transparent"], "quality": ["low", "hd", "ultra"],
}  # fmt: skip


# ---- speech out: text to speech on tiny-speech (JSON) ----

# Short texts: a valid request's audio is a few seconds (tiny-speech's vocoder holds about 80 MB a second of it).
SPEECH_SEED = {"model": SPEECH_MODEL, "input": "hello", "voice": "alloy"}
# Each value known to be refused, alone in the seed: (field, value).
SPEECH_REFUSED = [
    ("input", ""), ("input", "a" * 4097), ("voice", "nobody"), ("voice", 5), ("response_format", "aac"),
    ("response_format", "xml"), ("speed", 0), ("speed", 4.5), ("speed", "fast"), ("instructions", "softly"),
    ("stream_format", "video"), ("volume", 3),
]  # fmt: skip
SPEECH_VALUES: dict[str, list[Any]] = {
    "input": ["a", "hello world.", "\u0000\ud800", "x" * 4096, 7, ["a"], None],
    "voice": ["", "echo", "shimmer", "../etc/passwd", "a" * 5000, None],
    "response_format": ["wav", "pcm", "flac", "mp3", "opus", "", 3],
    "speed": [0.25, 4, 1.0, (RAW, "NaN"), (RAW, "1e309"), -1, True],
    "stream_format": ["sse", "audio", "", None], "instructions": ["", None],
}  # fmt: skip


def speech_case(rng: random.Random, context: Context) -> HttpCase:
    """A speech request: the seed with a field or two drawn, or a generic mutation."""
    path = "/v3/audio/speech"
    if rng.random() < 0.3:
        return mutated("speech", path, SPEECH_SEED, rng)
    body = dict(SPEECH_SEED)
    labels = []
    for _ in range(rng.choice([1, 1, 2])):
        name = rng.choice(list(SPEECH_VALUES))
        body[name] = rng.choice(SPEECH_VALUES[name])
        labels.append(f"{name}={encode(body[name])[:20]}")
    if rng.random() < 0.05:
        body["model"] = rng.choice(MODELS)
        labels.append(f"model={body['model'][:20]}")
    return json_case("speech", ", ".join(labels), path, body)


@functools.cache
def small_png(width: int = 16, height: int = 16, mode: str = "RGB") -> bytes:
    """A valid PNG of ``width`` x ``height`` (RGBA: its left half transparent, a mask)."""
    image = Image.new(mode, (width, height), (90, 120, 200, 255) if mode == "RGBA" else (90, 120, 200))
    if mode == "RGBA":
        image.paste((0, 0, 0, 0), (0, 0, width // 2, height))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


# An edit's uploads: (label, maker, refused as "image").
EDIT_IMAGES: list[tuple[str, Callable[[], bytes], bool]] = [
    ("16x16 png", small_png, False),
    ("gif of 200 frames", animated_gif, False),
    ("png claiming 10^10 pixels", lambda: png_claiming(100_000, 100_000), True),
    ("jpeg claiming 65535x65535", lambda: jpeg_claiming(65535, 65535), True),
    ("10,000 x 10,000 zeros", zero_bomb_png, True),
    ("svg", lambda: SVG_HUGE, True),
    ("text", lambda: b"hello", True),
    ("empty", lambda: b"", True),
]


def image_out_case(rng: random.Random, context: Context) -> HttpCase:
    """An image generation (JSON: the seed with a field or two drawn, or a generic mutation) or an edit (a
    multipart form broken as audio's are, or an upload or mask drawn among bombs and non-images)."""
    if rng.random() < 0.6:
        path = "/v3/images/generations"
        if rng.random() < 0.3:
            return mutated("image_out", path, IMAGE_OUT_SEED, rng)
        body = dict(IMAGE_OUT_SEED)
        labels = []
        for _ in range(rng.choice([1, 1, 2])):
            name = rng.choice(list(IMAGE_OUT_VALUES))
            body[name] = rng.choice(IMAGE_OUT_VALUES[name])
            labels.append(f"{name}={encode(body[name])[:20]}")
        if rng.random() < 0.05:
            body["model"] = rng.choice(MODELS)
            labels.append(f"model={body['model'][:20]}")
        return json_case("image_out", ", ".join(labels), path, body)
    path = "/v3/images/edits"
    fields = [part(name, str(value).encode()) for name, value in IMAGE_OUT_SEED.items()]
    good = [*fields, part("image", small_png(), "a.png")]
    if rng.random() < 0.35:
        label, body_bytes, content_type = _form_breakers(rng, good)
        headers = {"Content-Type": content_type} if content_type else {}
        return HttpCase("image_out", f"edit: {label}", "POST", path, body_bytes, headers, True)
    label, make, image_refused = rng.choice(EDIT_IMAGES)
    parts = [*fields, *(part(rng.choice(["image", "image[]"]), make(), "a.png") for _ in range(rng.choice([1, 1, 2])))]
    labels = [f"image: {label}"]
    if rng.random() < 0.3:
        mask = rng.choice([small_png(16, 16, "RGBA"), small_png(), small_png(8, 8, "RGBA"), b"junk"])
        parts.append(part("mask", mask, "m.png"))
        labels.append("mask")
    expect = refused("image") if image_refused and len(labels) == 1 else None
    return HttpCase("image_out", "edit: " + ", ".join(labels), "POST", path, form(*parts), FORM_TYPE, True, expect)


# ---- rerank and score ----

WORDS = ["a", "the", "cat", "kitten", "dog", "puppy", "naps", "sleeps", "runs", "in", "yard", "park", "green", "old",
         "door", "where", "does"]  # fmt: skip


def _text(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.05:
        return ""
    if roll < 0.1:
        return " ".join(rng.choices(WORDS, k=rng.randint(1000, 40_000)))  # far past the model's 64 tokens
    if roll < 0.55:
        return rng.choice(["kitten", "a kitten naps", "a dog runs"])  # short duplicates
    if roll < 0.9:
        return " ".join(rng.choices(WORDS, k=rng.randint(1, 12)))
    return rng.choice([*VALUES[:12], {"text": "a"}, {"text": 5}, {"title": "x"}, ["a"]])  # another type


RERANK_SEED = {"model": RERANK_MODEL, "query": "where does the cat sleep", "documents": ["a kitten naps", "a dog"],
               "top_n": 2, "return_documents": True}  # fmt: skip
SCORE_SEED = {"model": RERANK_MODEL, "text_1": "where does the cat sleep", "text_2": ["a kitten naps", "a dog"]}
TOP_N = [0, -1, 1, 64, 65, 2**31, 2**64, 1.5, "3", True, None, (RAW, "1e309"), (RAW, "NaN")]


def rerank_case(rng: random.Random, context: Context) -> HttpCase:
    """A rerank or score over 1-64 texts (short duplicates, empty, 40,000 words, other types) or a mutation."""
    path = rng.choice(["/v3/rerank", "/v3/score"])
    seed = RERANK_SEED if path == "/v3/rerank" else SCORE_SEED
    if rng.random() < 0.25:
        return mutated("rerank", path, seed, rng)
    count = rng.choice([1, 2, 8, 16, 32, 64, rng.randint(1, 64)])
    texts = [_text(rng) for _ in range(count)]
    if path == "/v3/rerank":
        body: dict[str, Any] = {"model": RERANK_MODEL, "query": _text(rng), "documents": texts}
        if rng.random() < 0.4:
            body["top_n"] = rng.choice(TOP_N)
        if rng.random() < 0.2:
            body["return_documents"] = rng.choice([False, "yes", 1, None])
        if rng.random() < 0.1:
            body["documents"] = [{"text": t} if isinstance(t, str) else t for t in texts]
    else:
        first = _text(rng) if rng.random() < 0.6 else [_text(rng) for _ in range(rng.choice([count, count + 1, 0]))]
        body = {"model": RERANK_MODEL, "text_1": first, "text_2": texts}
    if rng.random() < 0.05:
        body["model"] = rng.choice(MODELS)
    duplicates = len(texts) - len({json.dumps(t) for t in texts})
    return json_case("rerank", f"{path[4:]} of {count} ({duplicates} duplicates)", path, body)


# ---- embeddings ----

EMBED_SEED = {"model": EMBED_MODEL, "input": ["the cat sat", "prices rose"], "encoding_format": "float",
              "dimensions": None, "input_type": "document", "user": "u"}  # fmt: skip
TOKEN_IDS = [0, 1, 100, 10**6, 2**31 - 1, 2**31, 2**40, -1, -(2**40), (RAW, "18446744073709551616"), 1.5, True]
EMBED_INPUTS: list[tuple[str, Callable[[random.Random], Any]]] = [
    ("a string", lambda rng: " ".join(rng.choices(WORDS, k=rng.randint(1, 20)))),
    ("token ids", lambda rng: [rng.choice(TOKEN_IDS) for _ in range(rng.randint(1, 8))]),
    ("lists of token ids", lambda rng: [[rng.choice(TOKEN_IDS[:3])] * rng.randint(0, 4) for _ in range(3)]),
    ("2,048 inputs", lambda rng: ["kitten"] * 2048),
    ("2,049 inputs", lambda rng: ["kitten"] * 2049),
    ("nested arrays", lambda rng: rng.choice([[[[1]]], [["a"]], [[1, "a"]], [[], []], [{"text": "a"}]])),
    ("empty", lambda rng: rng.choice(["", [], [""], [[]]])),
    ("5,000 words", lambda rng: "word " * 5000),
    ("1 MB", lambda rng: "a" * MIB),
    ("raw values", lambda rng: rng.choice([(RAW, '"\\ud800"'), (RAW, "[NaN]"), "\x00" * 100])),
]
# Values refused whatever else the request holds: tiny-embed's vectors cannot be shortened, and the encodings
# are OpenAI's two (an empty one names none: answered with floats before issue 43).
REFUSED_DIMENSIONS: list[Any] = [0, -1, 1, 31, 32, 2**31, 2**40, 1.5, "8", True, (RAW, "1e309")]
REFUSED_ENCODINGS: list[Any] = ["", "int8", "FLOAT", 5, [], "a" * MIB, (RAW, '"\\udfff"')]
DIMENSIONS = [*REFUSED_DIMENSIONS, None]
ENCODINGS: list[Any] = ["float", "base64", None, *REFUSED_ENCODINGS]
EMBED_REFUSED = [("dimensions", value) for value in REFUSED_DIMENSIONS] + [
    ("encoding_format", value) for value in REFUSED_ENCODINGS
]


def embedding_case(rng: random.Random, context: Context) -> HttpCase:
    """Embeddings of strings, token ids (past the vocabulary, negative, 2^40), 2,048 inputs, nested arrays, with
    extreme dimensions and encoding formats; 1 in 10 the valid seed with one refused value (a 400 naming it)."""
    roll = rng.random()
    if roll < 0.1:
        name, value = rng.choice(EMBED_REFUSED)
        label = f"only {name} {encode(value)[:20]}"
        return json_case("embeddings", label, "/v3/embeddings", {**EMBED_SEED, name: value}, refused(name))
    if roll < 0.35:
        return mutated("embeddings", "/v3/embeddings", EMBED_SEED, rng)
    label, make = rng.choice(EMBED_INPUTS)
    body: dict[str, Any] = {"model": EMBED_MODEL, "input": make(rng)}
    if rng.random() < 0.4:
        body["dimensions"] = rng.choice(DIMENSIONS)
        label += f", dimensions {str(body['dimensions'])[:20]}"
    if rng.random() < 0.4:
        body["encoding_format"] = rng.choice(ENCODINGS)
        label += f", encoding_format {str(body['encoding_format'])[:20]}"
    if rng.random() < 0.05:
        body["model"] = rng.choice(MODELS)
    return json_case("embeddings", label, "/v3/embeddings", body)


# ---- tokenize and detokenize ----

TOKENIZE_SEED = {"model": CHAT_MODEL, "prompt": "Once upon a time", "add_special_tokens": True,
                 "return_token_strs": True}  # fmt: skip
CHAT_TOKENIZE_SEED = {
    "model": CHAT_MODEL,
    "messages": [{"role": "user", "content": "hi"}],
    "add_generation_prompt": True,
    "chat_template_kwargs": {"enable_thinking": False},
}
DETOKENIZE_SEED = {"model": CHAT_MODEL, "tokens": [1, 2, 3]}
TOKENIZER_SEEDS: list[tuple[str, dict[str, Any]]] = [
    ("/v3/tokenize", TOKENIZE_SEED), ("/v3/tokenize", CHAT_TOKENIZE_SEED), ("/v3/detokenize", DETOKENIZE_SEED)
]  # fmt: skip
PROMPTS = ["", "a" * MIB, "\x00" * 1000, "\u202e\ufeff" * 100, (RAW, '"\\ud800\\udc00\\ud800"'), ["a", "b"], [1, 2]]


def tokenizer_case(rng: random.Random, context: Context) -> HttpCase:
    """Tokenize and detokenize at the extremes: 1 MB prompts, 1,000 messages, ids negative or 2^40, 200,000 ids,
    the models that do not generate."""
    roll = rng.random()
    if roll < 0.3:
        path, seed = rng.choice(TOKENIZER_SEEDS)
        return mutated("tokenizer", path, seed, rng)
    model = CHAT_MODEL if rng.random() < 0.7 else rng.choice(MODELS)
    if roll < 0.55:
        body: dict[str, Any] = {"model": model, "prompt": rng.choice(PROMPTS)}
        label = "prompt"
    elif roll < 0.7:
        messages = [{"role": rng.choice(["user", "assistant", "system", "tool", "robot"]), "content": "hi"}]
        body = {
            "model": model,
            "messages": messages * rng.choice([1, 2, 1000]),
            "chat_template_kwargs": rng.choice([{}, {"x": VALUES[rng.randrange(len(VALUES))]}, 5]),
        }
        label = "messages"  # fmt: skip
    else:
        tokens = rng.choice([
            [], [-1], [2**40], [10**7], [2**31 - 1], [1.5], ["a"], [[1]], [None], [True],
            list(range(1, 100)) * 2000, [rng.randrange(-10, 70_000) for _ in range(50)],
        ])  # fmt: skip
        body = {"model": model, "tokens": tokens}
        label = "tokens"
        return json_case("tokenizer", label, "/v3/detokenize", body)
    return json_case("tokenizer", label, "/v3/tokenize", body)


# ---- logprobs: completions and chat asking for scores, within the request's bound and past it ----

COMPLETIONS, CHAT = "/v3/completions", "/v3/chat/completions"
HI = [{"role": "user", "content": "hi"}]
LOGPROB_SEEDS: dict[str, dict[str, Any]] = {
    COMPLETIONS: {"model": CHAT_MODEL, "prompt": "Once", "max_tokens": 2, "logprobs": MAX_COMPLETION_LOGPROBS,
                  "echo": True, "prompt_logprobs": MAX_ALTERNATIVES, "n": 2, "temperature": 1.0, "seed": 1},
    CHAT: {"model": CHAT_MODEL, "messages": HI, "max_tokens": 2, "logprobs": True, "top_logprobs": MAX_ALTERNATIVES,
           "prompt_logprobs": MAX_ALTERNATIVES, "n": 2, "temperature": 1.0, "seed": 1},
}  # fmt: skip
MAX_N = 16  # the service's range of n: 1-16
LENGTH_FIELDS = ("max_tokens", "max_completion_tokens")
# Per route, field -> values refused whatever else the request holds: past the field's range, or of another type.
REFUSED_LOGPROB_VALUES: dict[str, dict[str, list[Any]]] = {
    COMPLETIONS: {"logprobs": [MAX_COMPLETION_LOGPROBS + 1, -1, 2**31, "5", 1.5, True, (RAW, "NaN")],
                  "echo": ["yes", 1, 0], "max_tokens": [-1, 2**31, 1.5, "x", 5000]},
    CHAT: {"top_logprobs": [MAX_ALTERNATIVES + 1, -1, 2**31, 1.5, "5", True], "logprobs": [5, "yes", 1, 0],
           "max_tokens": [-1, 0, 2**31, 1.5, 5000], "max_completion_tokens": [-1, 0, 5000]},
}  # fmt: skip
for _values in REFUSED_LOGPROB_VALUES.values():
    _values.update(n=[0, MAX_N + 1, -1, 2**31, 1.5, "2"], prompt_logprobs=[MAX_ALTERNATIVES + 1, -1, 2**40, 1.5, "3"])
PAST_THE_BOUND = "past the bound"  # the label of a request refused for the scores its answer would hold
# Stops that end a sampled output within a few tokens: a request at the bound is accepted for its longest output
# (what max_tokens allows), but should not take that long.
EARLY_STOPS = [" ", "e", "a", "t"]


def _past_the_bound(rng: random.Random) -> tuple[str, str, dict[str, Any]]:
    """A request whose answer would hold more than MAX_REQUEST_SCORES scores (label, path, body): prompts of
    TOKENS tokens scored, echoed or scored once per choice, or many choices' outputs scored; streamed or not."""
    top = rng.randint(4, MAX_ALTERNATIVES)  # with fewer, 64 prompts of TOKENS tokens fit
    least = MAX_REQUEST_SCORES // (TOKENS * (top + 1)) + 1  # prompts past the bound
    echoed = rng.randint(4, MAX_COMPLETION_LOGPROBS)
    made: list[tuple[str, str, dict[str, Any]]] = [
        ("the issue's first", COMPLETIONS, FIRST),
        ("the issue's second", COMPLETIONS, SECOND),
        (f"prompts scored, {top} alternatives", COMPLETIONS,
         {"prompt": token_prompts(rng.randint(least, 64)), "prompt_logprobs": top, "max_tokens": 1}),
        ("a prompt scored per choice", COMPLETIONS,
         {"prompt": token_prompts(1), "prompt_logprobs": rng.randint(17, MAX_ALTERNATIVES), "n": MAX_N,
          "temperature": 1.0, "max_tokens": 1}),
        ("prompts echoed with logprobs", COMPLETIONS,
         {"prompt": token_prompts(64), "echo": True, "logprobs": echoed, "max_tokens": 1}),
        ("many choices' outputs", COMPLETIONS,
         {"prompt": ["Once"] * rng.choice([16, 64]), "logprobs": echoed, "n": MAX_N, "temperature": 1.0,
          "max_tokens": 1000}),
        ("a chat's choices", CHAT,  # 16 x 1,000 tokens x 17 scores at the least
         {"messages": HI, "logprobs": True, "top_logprobs": rng.randint(16, MAX_ALTERNATIVES), "n": MAX_N,
          "temperature": 1.0, **rng.choice([{"max_tokens": 1000}, {"max_completion_tokens": 1500}])}),
    ]  # fmt: skip
    label, path, body = rng.choice(made)
    return label, path, {"model": CHAT_MODEL, **body, **({"stream": True} if rng.random() < 0.3 else {})}


def _at_the_bound(rng: random.Random, past: bool) -> tuple[str, str, dict[str, Any]]:
    """Choices whose longest outputs' scores are exactly MAX_REQUEST_SCORES or fewer (the most tokens that fit),
    or one token more each (label, path, body); or, accepted, no length at all (the outputs are cut where their
    scores reach the bound). Early stops keep the accepted ones short."""
    sampled = {"temperature": 1.0, "seed": rng.randrange(1000), "stop": EARLY_STOPS}
    roll = rng.random()
    if roll < 0.2 and not past:
        body = {"messages": HI, "logprobs": True, "top_logprobs": MAX_ALTERNATIVES, "n": MAX_N, **sampled}
        return f"{MAX_N} choices x {MAX_ALTERNATIVES + 1}, no length", CHAT, {"model": CHAT_MODEL, **body}
    if roll < 0.6:
        n, top = rng.randint(8, MAX_N), rng.randint(16, MAX_ALTERNATIVES)  # at most ~1,900 tokens: within the room
        length = MAX_REQUEST_SCORES // (n * (top + 1)) + past
        body = {"messages": HI, "logprobs": True, "top_logprobs": top, "n": n, "max_tokens": length, **sampled}
        return f"{n} choices x {length} tokens x {top + 1}", CHAT, {"model": CHAT_MODEL, **body}
    top = rng.randint(4, MAX_COMPLETION_LOGPROBS)
    length = MAX_REQUEST_SCORES // (2 * MAX_N * (top + 1)) + past
    body = {"prompt": ["Once", "Upon"], "logprobs": top, "n": MAX_N, "max_tokens": length, **sampled}
    return f"2 prompts x {MAX_N} choices x {length} tokens x {top + 1}", COMPLETIONS, {"model": CHAT_MODEL, **body}


def _short_prompts(rng: random.Random) -> tuple[Any, int]:
    """A completions prompt of a few tokens, and how many prompts it is: text, texts, token ids, or lists of them
    (up to 16 prompts)."""

    def ids() -> list[int]:
        return [rng.randrange(100, 1000) for _ in range(rng.randint(1, 8))]

    count = rng.randint(1, 16)
    return rng.choice([
        (" ".join(rng.choices(WORDS, k=rng.randint(1, 6))), 1),
        ([" ".join(rng.choices(WORDS, k=rng.randint(1, 4))) for _ in range(count)], count),
        (ids(), 1),
        ([ids() for _ in range(count)], count),
    ])  # fmt: skip


def _within_the_bound(rng: random.Random, path: str) -> dict[str, Any]:
    """A valid request asking for scores at their extremes on short prompts and outputs (32 choices at most)."""
    body: dict[str, Any] = {"model": CHAT_MODEL, "max_tokens": rng.randint(1, 4), "seed": rng.randrange(1000)}
    if rng.random() < 0.4:
        body["prompt_logprobs"] = rng.choice([0, MAX_ALTERNATIVES, rng.randint(0, MAX_ALTERNATIVES)])
    prompts = 1
    if path == COMPLETIONS:
        body["prompt"], prompts = _short_prompts(rng)
        if rng.random() < 0.7:
            body["logprobs"] = rng.choice([0, MAX_COMPLETION_LOGPROBS, rng.randint(0, MAX_COMPLETION_LOGPROBS)])
        if rng.random() < 0.4:
            body["echo"] = True
            if rng.random() < 0.3:
                body["max_tokens"] = 0  # the prompt scored, nothing generated
    else:
        body["messages"] = HI * rng.randint(1, 3)
        if rng.random() < 0.7:
            body["logprobs"] = True
            if rng.random() < 0.7:
                body["top_logprobs"] = rng.choice([0, MAX_ALTERNATIVES, rng.randint(0, MAX_ALTERNATIVES)])
    n = rng.choice([1, 1, 2, MAX_N]) if body["max_tokens"] else 1  # (scoring a prompt alone is one choice)
    body["n"] = max(1, min(n, 32 // prompts))
    body["temperature"] = 1.0 if body["n"] > 1 else rng.choice([0, 1.0])
    if rng.random() < 0.2:
        body["stream"] = True
    return body


def logprob_case(rng: random.Random, context: Context) -> HttpCase:
    """Completions and chat asking for logprobs: one value refused (a 400 naming it), past MAX_REQUEST_SCORES (a
    400 naming one of the fields that count, before any work), at the bound and one token past it, within it at
    the fields' extremes (200), or a generic mutation."""
    path = rng.choice([COMPLETIONS, CHAT])
    roll = rng.random()
    if roll < 0.15:
        return mutated("logprobs", path, LOGPROB_SEEDS[path], rng)
    if roll < 0.45:
        name = rng.choice(list(REFUSED_LOGPROB_VALUES[path]))
        value = rng.choice(REFUSED_LOGPROB_VALUES[path][name])
        body = {**LOGPROB_SEEDS[path], name: value}
        return json_case("logprobs", f"only {name} {encode(value)[:20]}", path, body, refused(name))
    if roll < 0.7:
        label, path, body = _past_the_bound(rng)
        counted = {*body} & {"prompt", "messages", "n", "prompt_logprobs", "echo", "logprobs", "top_logprobs"}
        return json_case("logprobs", f"{PAST_THE_BOUND}: {label}", path, body, refused(*counted, *LENGTH_FIELDS))
    if roll < 0.76:
        past = rng.random() < 0.5
        label, path, body = _at_the_bound(rng, past)
        expect = refused("n", "logprobs", "top_logprobs", *LENGTH_FIELDS) if past else OK
        return json_case("logprobs", f"{PAST_THE_BOUND if past else 'at the bound'}: {label}", path, body, expect)
    body = _within_the_bound(rng, path)
    return json_case("logprobs", f"within the bound: {encode(body)[:60]}", path, body, OK)


# ---- conversations ----

ITEMS: list[Any] = [
    {"role": "user", "content": "hi"},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok", "annotations": []}]},
    {"role": "developer", "content": [{"type": "input_text", "text": "x" * MIB}]},
    {"role": "robot", "content": "x"},
    {"role": "user", "content": [{"type": "input_image", "image_url": "data:image/png;base64,@@"}]},
    {"role": "user", "content": [{"type": "input_file", "file_data": "data:application/pdf;base64,JVBERi0="}]},
    {"role": "user", "content": [{"type": "refusal", "refusal": "no"}]},
    {"role": "user", "content": [{"type": "mystery"}]},
    {"role": "user", "content": None},
    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
    {"type": "function_call", "name": "f"},
    {"type": "function_call_output", "call_id": "c1", "output": "42"},
    {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "42"}]},
    {"type": "function_call_output", "call_id": "c1", "output": {"a": 1}},
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "hmm"}]},
    {"type": "item_reference", "id": "msg_nope"},
    {"type": "compaction", "encrypted_content": "not ours"},
    {"type": "web_search_call"},
    {"type": "mcp_call", "name": "x"},
    {"type": ""},
    "a string",
    5,
    None,
]
METADATA: list[Any] = [
    {f"k{i}": "v" for i in range(16)}, {f"k{i}": "v" for i in range(17)}, {"k" * 64: "v"}, {"k" * 65: "v"},
    {"k": "v" * 512}, {"k": "v" * 513}, {"k": 5}, {"k": {"nested": "v"}}, {"k": None}, {"": "v"}, {"k\u00e9": "v"},
    {"k": "v" * MIB}, None, [], "x",
]  # fmt: skip
NOT_UTF8_ID = "%ED%A0%80"  # a lone surrogate, percent-encoded
PAGING = {"limit": ["-1", "0", "1", "100", "101", "1e9", "abc", ""], "order": ["asc", "desc", "sideways", ""],
          "after": ["msg_nope", "", "a" * 3000, "%00"], "include[]": ["message.input_image.image_url", "nope"],
          "include": ["file_search_call.results", "x"]}  # fmt: skip


def conversation_case(rng: random.Random, context: Context) -> HttpCase:
    """Conversations created, extended and listed with items of many shapes, big metadata and odd paging."""
    items = [rng.choice(ITEMS) for _ in range(rng.choice([0, 1, 2, 3, 20, 21]))]
    # A path that is not UTF-8 goes with GET and DELETE only: with a body it is the fault pinned by
    # test_a_path_that_is_not_utf8_is_answered_to_a_client_still_sending.
    conversation = rng.choice([context.conversation] * 4 + ["conv_nope", "a" * 3000])
    roll = rng.random()
    if roll < 0.3:
        body: dict[str, Any] = {"items": items}
        if rng.random() < 0.5:
            body["metadata"] = rng.choice(METADATA)
        return json_case("conversations", f"create with {len(items)} items", "/v3/conversations", body)
    if roll < 0.55:
        body = {"items": items if rng.random() < 0.9 else rng.choice(VALUES[:12])}
        path = f"/v3/conversations/{conversation}/items"
        return json_case("conversations", f"add {len(items)} items", path, body)
    if roll < 0.65:
        path = f"/v3/conversations/{conversation}"
        return json_case("conversations", "update metadata", path, {"metadata": rng.choice(METADATA)})
    conversation = rng.choice([conversation, NOT_UTF8_ID])
    if roll < 0.9:
        query = "&".join(f"{name}={rng.choice(values)}" for name, values in rng.sample(list(PAGING.items()), 2))
        path = f"/v3/conversations/{conversation}/items?{query}"
        return HttpCase("conversations", "list items", "GET", path, None, {}, False)
    item = rng.choice([*context.created, "msg_nope", "", "a" * 3000]) or "x"
    method = rng.choice(["GET", "DELETE"])
    path = f"/v3/conversations/{conversation}/items/{item}"
    return HttpCase("conversations", f"{method} an item", method, path, None, {}, False)


# ---- files: uploads broken as multipart or in a field, and the file routes' ids and queries ----

FILE_FIELDS = {
    "purpose": [b"user_data", b"batch", b"assistants", b"vision", b"fine-tune", b"", b"\xff\xfe", b"p" * 2000],
    "expires_after[anchor]": [b"created_at", b"now", b"", b"\x00"],
    "expires_after[seconds]": [b"3600", b"2592000", b"59", b"-1", b"1e9", b"99999999999999999999", b"abc", b""],
}
FILE_PATHS = ["file-nope", "", "a" * 3000, "%00", "file-" + "9" * 40, NOT_UTF8_ID]


def file_case(rng: random.Random, context: Context) -> HttpCase:
    """An upload (POST /v3/files) broken as multipart or in a field; or a read, list, download or delete of an
    odd id or query."""
    roll = rng.random()
    good = [part("purpose", b"user_data"), part("file", rng.choice([b"hello", SHORT_WAV, b"\x00" * 3000]), "a.txt")]
    if roll < 0.3:
        label, body, content_type = _form_breakers(rng, good)
        headers = {"Content-Type": content_type} if content_type else {}
        return HttpCase("files", label, "POST", "/v3/files", body, headers, True)
    if roll < 0.65:
        parts, labels = list(good), []
        if rng.random() < 0.2:
            parts.reverse()  # the file before the fields: as OpenAI's Node client sends it
            labels.append("file first")
        for _ in range(rng.choice([0, 1, 1, 2])):
            name = rng.choice(list(FILE_FIELDS))
            value = rng.choice(FILE_FIELDS[name])
            parts = [p for p in parts if f'name="{name}"'.encode() not in p] + [part(name, value)]
            labels.append(f"{name}={value[:20]!r}")
        return HttpCase("files", ", ".join(labels) or "valid", "POST", "/v3/files", form(*parts), FORM_TYPE, True)
    ident = rng.choice(FILE_PATHS)
    query = "&".join(f"{name}={rng.choice(values)}" for name, values in rng.sample(list(FILE_QUERIES.items()), 2))
    method, path = rng.choice([("GET", f"/v3/files?{query}"), ("GET", f"/v3/files/{ident}"),
                               ("GET", f"/v3/files/{ident}/content"), ("DELETE", f"/v3/files/{ident}")])  # fmt: skip
    return HttpCase("files", f"{method} {path.split('?')[0][:30]}", method, path, None, {}, False)


FILE_QUERIES = {"limit": ["-1", "0", "1", "10000", "10001", "abc", ""], "order": ["asc", "desc", "up", ""],
                "purpose": ["batch", "user_data", "fine-tune", ""], "after": ["file-nope", "", "a" * 3000]}  # fmt: skip


# ---- batches: creations from the storm's own input file, mutated; reads, lists and cancels of odd ids ----

BATCH_SEED = {"input_file_id": "", "endpoint": "/v1/chat/completions", "completion_window": "24h",
              "metadata": {"storm": "yes"}}  # fmt: skip


def batch_case(rng: random.Random, context: Context) -> HttpCase:
    """A batch created from the storm's input file (mutated as the HTTP fuzz mutates), or read, listed or
    cancelled by an odd id or query."""
    roll = rng.random()
    if roll < 0.6:
        return mutated("batches", "/v3/batches", {**BATCH_SEED, "input_file_id": context.batch_file}, rng)
    ident = rng.choice(["batch_nope", "", "a" * 3000, "%00", "batch_" + "9" * 40])
    if roll < 0.8:
        query = rng.choice(["limit=0", "limit=101", "limit=abc", "after=batch_nope", "after=", "order=asc"])
        return HttpCase("batches", "list or get", "GET", rng.choice([f"/v3/batches?{query}", f"/v3/batches/{ident}"]),
                        None, {}, False)  # fmt: skip
    return HttpCase("batches", "cancel", "POST", f"/v3/batches/{ident}/cancel", b"", {}, False)


# ---- Anthropic's Messages API ----

MESSAGES_PATHS = ["/v3/messages", "/v1/messages", "/v3/messages/count_tokens"]
MESSAGES_SEED = {"model": CHAT_MODEL, "max_tokens": 2, "messages": HI, "temperature": 0}
COUNT_TOKENS_SEED = {"model": CHAT_MODEL, "messages": HI}
# field -> values refused whatever else the request holds (each alone in the seed once: a 400 naming the field)
MESSAGES_REFUSED: dict[str, list[Any]] = {
    "max_tokens": [0, -1, 2**31, "2", 1.5, True, None],
    "messages": [[], "hi", [{"role": "robot", "content": "hi"}], [{"role": "user", "content": [{"type": "x"}]}]],
    "tools": [[{"type": "web_search_20250305", "name": "w"}], [{"name": "f"}], {}],
    "tool_choice": [{"type": "required"}, {"type": "tool"}, "auto"],
    "thinking": [{"type": "enabled", "budget_tokens": -1}, {"type": "enabled"}, {"type": "on"}],
    "stop_sequences": [[""], "x", [f"s{i}" for i in range(17)]],
    "metadata": [{"user": "x"}, "x"],
    "temperature": [5, -1, "0"],
    "container": ["c"],
    "mcp_servers": [[]],
}
# Blocks of a user message, valid and broken: the kinds Anthropic's clients send, with the values they get wrong.
BLOCKS: list[Callable[[random.Random], Any]] = [
    lambda rng: {"type": "text", "text": rng.choice(["hi", "", "\u202e" * 50, "a" * MIB])},
    lambda rng: {"type": "text", "text": rng.choice(VALUES), "cache_control": rng.choice([{"type": "ephemeral"}, 5])},
    lambda rng: {"type": "tool_result", "tool_use_id": rng.choice(["toolu_1", "", 5, None]),
                 "content": rng.choice(["ok", [{"type": "text", "text": "ok"}], [{"type": "image"}], VALUES[-1], 7]),
                 "is_error": rng.choice([True, False, "yes"])},
    lambda rng: {"type": "document", "source": rng.choice([
        {"type": "text", "media_type": "text/plain", "data": "the plum"},
        {"type": "base64", "media_type": "application/pdf", "data": rng.choice(["JVBERi0", "@@", ""])},
        {"type": "url", "url": "file:///etc/passwd"}, {"type": "content", "content": []}, {"type": "file"}])},
    lambda rng: {"type": rng.choice(["tool_use", "thinking", "search_result", "server_tool_use", "", None, 5])},
    lambda rng: rng.choice(VALUES),
]  # fmt: skip


def _anthropic_image(url: str) -> dict[str, Any]:
    """An image block for an image URL: a data URL as a base64 source (its media type kept), another a url one."""
    if url.startswith("data:") and ";base64," in url:
        media_type, data = url.removeprefix("data:").split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def messages_case(rng: random.Random, context: Context) -> HttpCase:
    """A /messages or count_tokens body: the HTTP fuzz's generic mutation, an image block holding one of the
    images' bad images (or URLs back at this machine), or user blocks drawn valid and broken, in any order."""
    path = rng.choice(MESSAGES_PATHS)
    seed = COUNT_TOKENS_SEED if path.endswith("count_tokens") else MESSAGES_SEED
    roll = rng.random()
    if roll < 0.4:
        return mutated("messages", path, seed, rng)
    if roll < 0.7:
        label, url = _image_url(rng, context)
        content = [_anthropic_image(url), {"type": "text", "text": "What colour?"}]
        body = {**seed, "model": VISION_MODEL, "messages": [{"role": "user", "content": content}]}
        return json_case("messages", f"image {label}", path, body)
    blocks = [rng.choice(BLOCKS)(rng) for _ in range(rng.randint(1, 4))]
    history = [{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]}]
    messages = [*HI, *history, {"role": "user", "content": blocks}] if rng.random() < 0.5 else [
        {"role": "user", "content": blocks}]  # fmt: skip
    return json_case("messages", "blocks", path, {**seed, "messages": messages})


# ---- the surfaces' table ----

# surface -> (requests per storm, maker). Counts are sized so the storm takes about a minute (the file 80 s) on two
# busy cores (documents and audio cost most: a PDF is read in a child process, a valid upload is transcribed).
SURFACES: dict[str, tuple[int, Callable[[random.Random, Context], HttpCase]]] = {
    "audio": (320, audio_case),
    "documents": (180, document_case),
    "images": (280, image_case),
    "image_out": (200, image_out_case),
    "speech": (120, speech_case),
    "rerank": (280, rerank_case),
    "embeddings": (280, embedding_case),
    "tokenizer": (280, tokenizer_case),
    "conversations": (300, conversation_case),
    "files": (240, file_case),
    "batches": (160, batch_case),
    "logprobs": (200, logprob_case),
    "messages": (200, messages_case),
}


def seed_cases() -> list[HttpCase]:
    """One valid request per surface, the seeds the storm breaks: each must answer 200 (so a 400 in the storm is
    about what was broken)."""
    pdf = {"file_data": documents.data_url(documents.pdf(["the plum"]), "application/pdf"), "filename": "a.pdf"}
    image = [{"type": "image_url", "image_url": {"url": images.data_url(images.encoded())}},
             {"type": "text", "text": "What colour?"}]  # fmt: skip
    bodies: list[tuple[str, str, dict[str, Any]]] = [
        ("documents", "/v3/chat/completions", {"model": CHAT_MODEL, "max_tokens": 2, "messages": [
            {"role": "user", "content": [{"type": "file", "file": pdf}]}]}),
        ("images", "/v3/chat/completions", {"model": VISION_MODEL, "max_tokens": 2, "messages": [
            {"role": "user", "content": image}]}),
        ("rerank", "/v3/rerank", RERANK_SEED),
        ("rerank", "/v3/score", SCORE_SEED),
        ("embeddings", "/v3/embeddings", EMBED_SEED),
        ("tokenizer", "/v3/tokenize", TOKENIZE_SEED),
        ("tokenizer", "/v3/tokenize", CHAT_TOKENIZE_SEED),
        ("tokenizer", "/v3/detokenize", DETOKENIZE_SEED),
        ("messages", "/v3/messages", MESSAGES_SEED),
        ("messages", "/v1/messages/count_tokens", COUNT_TOKENS_SEED),
        ("image_out", "/v3/images/generations", IMAGE_OUT_SEED),
        ("speech", "/v3/audio/speech", SPEECH_SEED),
    ]  # fmt: skip
    audio = form(part("model", AUDIO_MODEL.encode()), part("file", SHORT_WAV, "a.wav"))
    upload = form(part("purpose", b"user_data"), part("file", b"hello", "a.txt"))
    edit = form(*(part(name, str(value).encode()) for name, value in IMAGE_OUT_SEED.items()),
                part("image", small_png(), "a.png"), part("mask", small_png(16, 16, "RGBA"), "m.png"))  # fmt: skip
    return [
        HttpCase("audio", "seed", "POST", "/v3/audio/transcriptions", audio, FORM_TYPE, True),
        HttpCase("audio", "seed", "POST", "/v3/audio/translations", audio, FORM_TYPE, True),
        HttpCase("files", "seed", "POST", "/v3/files", upload, FORM_TYPE, True),
        HttpCase("image_out", "seed", "POST", "/v3/images/edits", edit, FORM_TYPE, True),
    ] + [json_case(surface, "seed", path, body) for surface, path, body in bodies]


def known_cases() -> Iterator[HttpCase]:
    """Each value known to be refused, alone in a valid request, once (whatever the seed draws): a 400 naming
    it. Embeddings' dimensions and encodings, the audio files refused, logprobs' fields past their ranges, the
    Messages API's fields (named in the message of Anthropic's envelope, which has no param)."""
    for name, value in EMBED_REFUSED:
        body = {**EMBED_SEED, name: value}
        yield json_case("embeddings", f"only {name} {encode(value)[:20]}", "/v3/embeddings", body, refused(name))
    for label, make, file_refused in AUDIO_FILES:
        if file_refused:
            body = form(part("model", AUDIO_MODEL.encode()), part("file", make(), "a.wav"))
            path = "/v3/audio/transcriptions"
            yield HttpCase("audio", f"file: {label}", "POST", path, body, FORM_TYPE, True, refused("file"))
    for name, value in IMAGE_OUT_REFUSED:
        body = {**IMAGE_OUT_SEED, name: value}
        yield json_case("image_out", f"only {name} {encode(value)[:20]}", "/v3/images/generations", body, refused(name))
    for name, value in SPEECH_REFUSED:
        body = {**SPEECH_SEED, name: value}
        yield json_case("speech", f"only {name} {encode(value)[:20]}", "/v3/audio/speech", body, refused(name))
    for name, values in MESSAGES_REFUSED.items():
        for value in values:
            body = {**MESSAGES_SEED, name: value} if value is not None else {**MESSAGES_SEED, "max_tokens": None}
            body = {key: item for key, item in body.items() if item is not None}
            yield json_case("messages", f"only {name} {encode(value)[:20]}", "/v3/messages", body, refused(name))
    for path, fields in REFUSED_LOGPROB_VALUES.items():
        for name, values in fields.items():
            for value in values:
                body = {**LOGPROB_SEEDS[path], name: value}
                yield json_case("logprobs", f"only {name} {encode(value)[:20]}", path, body, refused(name))


def http_cases(rng: random.Random, context: Context) -> Iterator[HttpCase]:
    """The storm's requests in a fixed order: the long recording first (it runs beside everything else), each
    value known to be refused once, then the surfaces' requests shuffled together. Made one at a time as they are
    sent, not held all at once."""
    yield LONG_SILENCE
    yield from known_cases()
    order = [surface for surface, (count, _) in SURFACES.items() for _ in range(count)]
    rng.shuffle(order)
    for surface in order:
        yield SURFACES[surface][1](rng, context)


# ---- the Responses WebSocket ----

WS_SEED = {"type": "response.create", "model": CHAT_MODEL, "input": "hi", "max_output_tokens": 16, "temperature": 0,
           "store": False, "stream": True}  # fmt: skip


@dataclass(frozen=True)
class Frame:
    """One message sent on the Responses WebSocket."""

    label: str
    data: str | bytes  # bytes go as a binary message
    names_param: bool  # a JSON object: a 400 error event names the field


def _create(**fields: Any) -> str:
    return json.dumps({**WS_SEED, **fields})


# (label, names_param, maker): made only when drawn, since some are megabytes.
FRAMES: list[tuple[str, bool, Callable[[random.Random], str | bytes]]] = [
    ("not JSON", False, lambda rng: rng.choice(["{oops", "", "}{", "[1, 2", "\ufeff{}", "nul\x00l"])),
    ("JSON not an object", False, lambda rng: rng.choice(["null", "[]", "1", '"text"', "true"])),
    ("binary, not UTF-8", False, lambda rng: bytes(rng.randrange(256) for _ in range(64))),
    ("binary JSON", True, lambda rng: _create().encode()),
    ("100,000 deep", False, lambda rng: '{"type": "response.create", "input": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    ("100,000 deep objects", False, lambda rng: '{"a":' * 100_000 + "1" + "}" * 100_000),
    ("unknown type", True, lambda rng: _create(type=rng.choice(["response.cancel", "session.update", "", None, 5,
                                                                "response.create "]))),
    ("no type", True, lambda rng: json.dumps({"model": CHAT_MODEL, "input": "hi"})),
    ("2 MB input", True, lambda rng: _create(input="word " * 400_000)),
    ("9 MB of metadata", True, lambda rng: _create(metadata={"k": "v" * 9 * MIB})),
    ("stream true", True, lambda rng: _create(stream=True)),
    ("stream not a boolean", True, lambda rng: _create(stream=rng.choice(["yes", 1, None, {}]))),
    ("background", True, lambda rng: _create(background=True)),
    ("previous_response_id unknown", True, lambda rng: _create(previous_response_id="resp_nope")),
    ("valid", True, lambda rng: _create()),
]  # fmt: skip


def socket_frame(rng: random.Random) -> Frame:
    """A WebSocket-mode message: not JSON, 100,000 deep, of an unknown type, huge, with ``stream`` set, or a
    mutated response.create."""
    if rng.random() < 0.3:
        body, parsed = mutated_body(WS_SEED, rng)
        try:  # a text message is UTF-8 by the protocol's rule: what is not goes as a binary message
            return Frame("generic mutation", body.decode(), parsed)
        except UnicodeDecodeError:
            return Frame("generic mutation", body, parsed)
    label, names_param, make = rng.choice(FRAMES)
    return Frame(label, make(rng), names_param)


def prepare() -> None:
    """Make the large fixed inputs now (they are cached), so the storm does not pay for them while measured."""
    for build in (inflating_pdf, deep_pdf, encrypted_pdf, zero_bomb_png, animated_gif):
        build()

"""What a benchmark run sends: prompts, output lengths, and when each request starts."""

from __future__ import annotations

import base64
import io
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

# Filler for prompts when no tokenizer is at hand: common short words, roughly one token each.
_WORDS = (
    "the of and to in is that it for as with was on be by at this had not are but from or have an they which one "
    "you were her all she there would their we him been has when who will more no if out so said what up its about "
    "into than them can only other new some time could these two may then do first any my now such like our over"
)
WORDS: tuple[str, ...] = tuple(_WORDS.split())


@dataclass(frozen=True)
class BenchRequest:
    """One request: the text sent (a chat user message or a completion prompt) and how many tokens to make."""

    prompt: str
    output_tokens: int
    images: tuple[str, ...] = ()  # data: URLs sent before the prompt text (chat only)
    model: str = ""  # the served name it asks for ("": the backend's; --mix sets one per request)
    # The whole conversation so far, ending with the user's turn (chat only; --turns); () sends ``prompt`` alone.
    messages: tuple[dict[str, str], ...] = ()

    def chat_content(self) -> str | list[dict[str, Any]]:
        """The user message's content: the prompt, after its images if it has any."""
        if not self.images:
            return self.prompt
        parts: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": url}} for url in self.images]
        return [*parts, {"type": "text", "text": self.prompt}]

    def chat_messages(self) -> list[dict[str, Any]]:
        """The chat messages sent: the conversation so far, or one user message."""
        return list(self.messages) or [{"role": "user", "content": self.chat_content()}]


def noise_images(count: int, side: int, rng: random.Random) -> tuple[str, ...]:
    """``count`` PNG data URLs of random RGB noise, ``side`` pixels square: a new image every time, so no cache of
    the server's or the pipeline's can answer for it."""
    from PIL import Image  # the runtime's decoder; only an image bench needs it here

    urls = []
    for _ in range(count):
        out = io.BytesIO()
        Image.frombytes("RGB", (side, side), rng.randbytes(side * side * 3)).save(out, "PNG")
        urls.append("data:image/png;base64," + base64.b64encode(out.getvalue()).decode())
    return tuple(urls)


@dataclass(frozen=True)
class Schedule:
    """When requests start: ``concurrency`` in flight at all times, or Poisson arrivals at ``rate`` per second.

    With a rate, ``concurrency`` (if set) caps the requests in flight; arrivals
    beyond the cap wait for a slot, as a client-side connection pool would.
    """

    concurrency: int | None = None
    rate: float | None = None
    seed: int = 0

    @property
    def label(self) -> str:
        """How the run is named in tables and JSON: "c=8", "rate=4/s" or "rate=4/s c<=8"."""
        if self.rate is None:
            return f"c={self.concurrency}"
        cap = f" c<={self.concurrency}" if self.concurrency else ""
        return f"rate={self.rate:g}/s{cap}"

    def arrivals(self, count: int) -> list[float]:
        """Start offsets in seconds from the run's start; all zero for fixed concurrency (slots decide)."""
        if self.rate is None:
            return [0.0] * count
        rng = random.Random(self.seed)
        offsets, now = [], 0.0
        for _ in range(count):
            offsets.append(now)
            now += rng.expovariate(self.rate)
        return offsets

    @property
    def slots(self) -> int | None:
        """Requests allowed in flight at once (None: no limit)."""
        return self.concurrency


class Codec(Protocol):
    """What PromptSource needs of a tokenizer: TokenCodec's encode and decode_windows."""

    def encode(self, text: str, *, add_special_tokens: bool) -> list[int]:
        """The token ids of ``text``."""
        ...

    def decode_windows(self, windows: list[list[int]], skip_special_tokens: bool) -> list[str]:
        """The text of every window of token ids."""
        ...


class PromptSource:
    """Random prompts of a given token length, from the model's tokenizer if there is one, else from words.

    ``codec``: the model's TokenCodec (ovserve.service.workers.codec), the tokenizer the service encodes with. Not
    openvino_genai's Tokenizer: the one OpenVINO GenAI 2026.4 builds from a GGUF file cuts every encode to 8,192
    tokens, whatever ``max_length`` or ``truncation`` says, so longer prompts came out 8,192 tokens long.
    """

    def __init__(self, codec: Codec | None = None, seed: int = 0) -> None:
        self._codec = codec
        self._rng = random.Random(seed)

    def prompt(self, tokens: int) -> str:
        """A random prompt of ``tokens`` tokens (exact with a tokenizer: random words cut to length in token ids)."""
        text = " ".join(self._rng.choice(WORDS) for _ in range(tokens))
        if self._codec is None:
            return text
        # Words, not random token ids: ids sampled from the vocabulary include special and byte-fallback
        # tokens, which change how the model reads the prompt or do not decode to text at all.
        ids = self._codec.encode(text, add_special_tokens=False)[:tokens]
        return str(self._codec.decode_windows([ids], skip_special_tokens=True)[0])

    def requests(
        self, count: int, input_tokens: int | Sequence[int], input_range: float, output_tokens: int
    ) -> list[BenchRequest]:
        """``count`` requests whose prompt lengths are uniform in input_tokens * [1 - range, 1 + range]; given
        several lengths (mixed lengths), each request's is drawn from them, exactly."""
        if not isinstance(input_tokens, int):
            return [BenchRequest(self.prompt(self._rng.choice(input_tokens)), output_tokens) for _ in range(count)]
        low = max(1, round(input_tokens * (1 - input_range)))
        high = max(low, round(input_tokens * (1 + input_range)))
        return [BenchRequest(self.prompt(self._rng.randint(low, high)), output_tokens) for _ in range(count)]


def read_prompts(path: Path) -> list[str]:
    """Prompts from a file: one per line, or JSONL with a "prompt" (or "text") string per line."""
    prompts = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            record = json.loads(line)
            text = record.get("prompt", record.get("text"))
            if not isinstance(text, str):
                raise ValueError(f"{path}:{number}: a JSONL line needs a 'prompt' or 'text' string")
            prompts.append(text)
        else:
            prompts.append(line)
    if not prompts:
        raise ValueError(f"{path}: no prompts")
    return prompts


def cycle(prompts: Sequence[str], count: int, output_tokens: int, offset: int = 0) -> list[BenchRequest]:
    """``count`` requests taking the prompts in order, wrapping around, from ``offset``."""
    return [BenchRequest(prompts[(offset + i) % len(prompts)], output_tokens) for i in range(count)]

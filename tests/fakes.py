"""A scripted engine at the engine seam, and ovserve's real gRPC server over it, for fast API-layer tests.

``FakeEngine`` is a ``ovserve.service.engine.GenerationEngine``, the Protocol the real engine implements: what the API
layer and the server use of a served model's engine. mypy checks it (pyproject's ``[tool.mypy] modules``;
``fake_model`` hands it to ``ServedModel``), so the fake cannot drift from the seam. ``submit(prompt_ids, params,
*, skip_special_tokens)`` returns a ``GenerationStream`` of ``Update``s with ``close()``; ``encode`` / ``decode``
are one token per character, ``render_chat`` ChatML as the bundled template writes it, ``chat_template`` the
bundled template (so the same Hermes tool-call and ``<think>`` parsers are chosen). Beside the seam it has what
``fake_model`` reads (``defaults``, ``max_model_len``, ``vocab_size``) and ``in_flight`` and ``stats``.

Each submit plays the next queued ``Script``: its updates in order, an
``EngineError`` raised by ``submit`` itself or between two updates, or ``HOLD``:
the request goes on running until its caller lets go of it. What the
real engine produces is tested end to end elsewhere; this is for the paths it
cannot be made to take on demand (failures, arbitrary splits of the output).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import random
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import grpc

from ovserve.service.config import ServeConfig
from ovserve.service.engine import (
    EngineError,
    EngineStats,
    EngineUnavailable,
    FinishReason,
    GenerationEngine,
    OutputConstraint,
    PromptImages,
    SamplingParams,
    Scoring,
    SequenceDelta,
    Update,
)
from ovserve.service.engine.adapters import LoraAdapter
from ovserve.service.engine.chat_template import ChatTemplate
from ovserve.service.engine.infill import InfillTokens
from ovserve.service.engine.template_probe import MessageForm
from ovserve.service.models import BUNDLED_MODEL, BUNDLED_MODELS_DIR, ModelLimits, ModelSpec, ServedModel
from ovserve.service.parsing import OutputFormat
from ovserve.service.server.grpc_server import Server
from ovserve.service.workers.served import KvCacheLoad, Load

BUNDLED_TEMPLATE = (BUNDLED_MODELS_DIR / BUNDLED_MODEL / "chat_template.jinja").read_text()
LOGPROB = -0.5  # what the fake scores every token, when logprobs are asked for


class Hold:
    """A script step: the engine is still working on the request, and hands nothing over until it is closed."""


HOLD = Hold()
Step = Update | EngineError | Hold


@dataclass
class Script:
    """What the engine does with one submitted request: refuse it, or hand over ``steps`` in order."""

    steps: list[Step] = field(default_factory=list)
    refuse: EngineError | None = None  # raised by submit


def text(*pieces: str, finish: FinishReason | None = FinishReason.STOP) -> list[Update]:
    """One sequence's output, one hand-over per piece; the last piece ends the request with ``finish``.

    ``finish=None``: the request is not over after the last piece (a failure or HOLD may follow).
    """
    return choices(*[[piece] for piece in pieces], finish=finish)


def choices(*steps: Sequence[str], finish: FinishReason | None = FinishReason.STOP) -> list[Update]:
    """Several sequences of one request (n > 1): ``steps[k][i]`` is what sequence i gains in hand-over k.

    An empty string leaves that sequence out of that hand-over. Every sequence ends in the last (as ``text``).
    """
    updates = []
    for step in steps:
        deltas = [SequenceDelta(i, _tokens(piece), piece) for i, piece in enumerate(step) if piece]
        updates.append(Update(deltas))
    if finish is None:
        return updates
    width = max(len(step) for step in steps)
    last = {delta.index: delta for delta in updates[-1].sequences}
    for i in range(width):
        last.setdefault(i, SequenceDelta(i))
        last[i].finish_reason = finish
    updates[-1].sequences = [last[i] for i in sorted(last)]
    updates[-1].finished = True
    return updates


def splits(whole: str, seed: int, *, random_cuts: int = 40) -> list[list[str]]:
    """``whole`` cut in two at every position, then ``random_cuts`` times in 2-8 pieces at seeded random places."""
    rng = random.Random(seed)
    cuts = [[whole[:i], whole[i:]] for i in range(1, len(whole))]
    for _ in range(random_cuts):
        points = sorted(rng.sample(range(1, len(whole)), rng.randrange(1, 8)))
        cuts.append([whole[a:b] for a, b in zip([0, *points], [*points, len(whole)], strict=True)])
    return cuts


def _tokens(piece: str) -> list[int]:
    return [ord(character) for character in piece]


class FakeGeneration:
    """One submitted request: plays its script's steps; records whether it was closed before its end."""

    def __init__(
        self, prompt_ids: list[int], params: SamplingParams, steps: list[Step], *, skip_special_tokens: bool
    ) -> None:
        self.prompt_ids, self.params, self.skip_special_tokens = prompt_ids, params, skip_special_tokens
        self._steps = deque(copy.deepcopy(steps))  # a script may be queued twice; deltas are mutable
        self.finished = False  # the script ran to its end (or failed)
        self.cancelled = False  # closed before that: the real engine would cancel it
        self.closed = asyncio.Event()
        self._failure: EngineError | None = None  # set by fail: raised at the next read
        self._woken = asyncio.Event()  # a HOLD waits for this: closed, or failed

    def __aiter__(self) -> FakeGeneration:
        return self

    async def __anext__(self) -> Update:
        await asyncio.sleep(0)  # output arrives from the event loop, as the real engine's does
        if self.finished or self.closed.is_set():
            raise StopAsyncIteration
        if self._failure is not None:
            self._fail_now()
        if not self._steps:  # a script without a last (finished) update ends here all the same
            self.finished = True
            self.close()
            raise StopAsyncIteration
        step = self._steps.popleft()
        if isinstance(step, Hold):
            await self._woken.wait()  # the caller's task is cancelled meanwhile, or closes or fails us from elsewhere
            if self._failure is not None and not self.closed.is_set():
                self._fail_now()
            raise StopAsyncIteration
        if isinstance(step, EngineError):
            self._failure = step
            self._fail_now()
        if self.params.logprobs:
            for delta in step.sequences:
                delta.logprobs = [LOGPROB] * len(delta.token_ids)
        if step.finished:
            self.finished = True
            self.close()
        return step

    def close(self, outcome: str = "cancelled") -> None:
        """Let go of the request (idempotent); before its end, that cancels it (``outcome``: why, as
        ovserve.service.engine.generation.Generation.close takes it)."""
        if not self.closed.is_set():
            self.cancelled = not self.finished
            self.closed.set()
            self._woken.set()

    def fail(self, error: EngineError) -> None:
        """End the request with ``error`` at its next read, as the engine's end_requests does (a HOLD too)."""
        if not self.finished and not self.closed.is_set():
            self._failure = error
            self._woken.set()

    def _fail_now(self) -> NoReturn:
        assert self._failure is not None
        self.finished = True
        self.close()
        raise self._failure


class FakeEngine:
    """A scripted stand-in for ovserve.service.engine.Engine (see the module docstring)."""

    def __init__(self, name: str = "fake", *, max_model_len: int = 4096) -> None:
        self.name = name
        self.max_model_len = max_model_len
        self.vocab_size = 0x110000  # every code point is a token
        self.defaults = SamplingParams()
        self.chat_template = ChatTemplate(BUNDLED_TEMPLATE, "chat_template.jinja")
        self.template_engine = "scripted"  # neither minja nor jinja2: render_chat writes ChatML itself
        self.template_engine_reason = "tests/fakes.py renders ChatML as the bundled template lays it out"
        self.message_form = MessageForm()  # the bundled template's: null content as "", arguments as objects
        self.has_draft_model = False
        self.namespaces = False  # whether it acts as a prefix cache kept in namespaces (keeps_apart)
        self.adapters: dict[str, LoraAdapter] = {}  # LoRA adapters: none on a scripted engine
        self.grammar_refusal: str | None = None  # what check_constraint answers
        self.infill: InfillTokens | None = None  # fill-in-the-middle tokens: none unless a test sets them
        self.scripts: deque[Script] = deque()
        self.generations: list[FakeGeneration] = []
        self.started = self.stopped = False
        self.pid: int | None = None  # no process of its own
        self.restarts = 0  # it never goes down
        self.load_failure: str | None = None
        self.listeners: list[Callable[[bool], None]] = []  # given to watch; never called (it never goes down)

    def script(self, *scripts: Script | list[Step]) -> None:
        """Queue what the next submits do, in order (a list of steps is a Script that plays them)."""
        self.scripts.extend(s if isinstance(s, Script) else Script(s) for s in scripts)

    @property
    def in_flight(self) -> int:
        """Requests submitted and not let go of yet."""
        return sum(not generation.closed.is_set() for generation in self.generations)

    @property
    def up(self) -> bool:
        """Taking requests: until closed."""
        return not self.stopped

    def submit(
        self,
        prompt_ids: list[int],
        params: SamplingParams,
        *,
        skip_special_tokens: bool = True,
        images: PromptImages | None = None,
        scoring: Scoring | None = None,
        adapter: str = "",
        tenant: str = "",
        cache_salt: str = "",
    ) -> FakeGeneration:
        """Play the next script (an empty reply if none is queued); raises its ``refuse`` error if it has one.
        (``scoring``, ``tenant`` and ``cache_salt`` are taken and ignored: the real engine's, tested end to end.)"""
        if self.stopped:
            raise EngineUnavailable(f"engine for {self.name!r} is not running")
        script = self.scripts.popleft() if self.scripts else Script([*text("")])
        if script.refuse is not None:
            raise script.refuse
        generation = FakeGeneration(list(prompt_ids), params, script.steps, skip_special_tokens=skip_special_tokens)
        self.generations.append(generation)
        return generation

    def encode(self, text: str, *, add_special_tokens: bool = True) -> list[int]:
        """One token per character (its code point)."""
        return _tokens(text)

    def min_tokens(self, characters: int) -> int:
        """One token per character."""
        return characters

    def decode(self, token_ids: list[int], *, skip_special_tokens: bool = True) -> str:
        """The characters of ``token_ids``."""
        return "".join(chr(token) for token in token_ids)

    def token_texts(self, token_ids: list[int]) -> list[str]:
        """Each token's character."""
        return [chr(token) for token in token_ids]

    def render_chat(
        self,
        history: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        context: dict[str, Any],
        *,
        add_generation_prompt: bool = True,
    ) -> str:
        """ChatML as the bundled template lays it out (tools as JSON lines; thinking off unless enable_thinking)."""
        lines = [f"<|im_start|>{m['role']}\n{m.get('content') or ''}{_calls(m)}<|im_end|>\n" for m in history]
        prompt = "".join(lines)
        if tools:
            prompt = "<|im_start|>system\n<tools>\n" + "\n".join(map(repr, tools)) + "\n</tools><|im_end|>\n" + prompt
        if not add_generation_prompt:
            return prompt
        prompt += "<|im_start|>assistant\n"
        return prompt if context.get("enable_thinking") else prompt + "<think>\n\n</think>\n\n"

    def keeps_apart(self, tenant: str, cache_salt: str) -> bool:
        """As the real engine's: with ``namespaces`` set, a tenant or a cache_salt gets a namespace of its own."""
        return self.namespaces and bool(tenant or cache_salt)

    async def check_constraint(self, constraint: OutputConstraint) -> str | None:
        """``grammar_refusal`` (None: every constraint compiles)."""
        return self.grammar_refusal

    async def stats(self) -> EngineStats:
        """Running requests as the engine would report them."""
        running = self.in_flight
        return EngineStats(running=running, engine_requests=running, unfinished=bool(running), cache_usage=0.0)

    async def load(self) -> Load:
        """Running requests, none waiting, an empty KV cache."""
        return Load(self.in_flight, 0, KvCacheLoad(0.0, 0, 0))

    def watch(self, listener: Callable[[bool], None]) -> None:
        """Recorded; a scripted engine never goes down or comes back."""
        self.listeners.append(listener)

    def end_requests(self, reason: str) -> None:
        """End every open request with EngineUnavailable(``reason``) at its next read, a held one too."""
        for generation in self.generations:
            generation.fail(EngineUnavailable(reason))

    async def set_adapters(self, adapters: tuple[LoraAdapter, ...]) -> None:
        """Serve these adapters from now on (a scripted engine runs every request the same way)."""
        self.adapters = {adapter.name: adapter for adapter in adapters}

    def start(self) -> None:
        """Nothing to start; recorded."""
        self.started = True

    def close(self) -> None:
        """Cancel every request still going; later submits are refused as by a stopped engine."""
        self.stopped = True
        for generation in self.generations:
            generation.close()


if TYPE_CHECKING:

    def _conforms(engine: FakeEngine) -> GenerationEngine:
        """Checked by mypy, never run: the fake is a GenerationEngine (a member missing or a signature that
        differs fails CI's type check)."""
        return engine


def _calls(message: dict[str, Any]) -> str:
    calls = message.get("tool_calls") or []
    return "".join(f"\n<tool_call>\n{call['function']!r}\n</tool_call>" for call in calls)


def fake_model(engine: FakeEngine, *, assisted: bool = False) -> ServedModel:
    """A served model over ``engine``; ``assisted``: as with a draft model (n > 1 becomes n requests)."""
    engine.has_draft_model = assisted
    spec = ModelSpec(engine.name, Path("/nonexistent") / engine.name)
    limits = ModelLimits(engine.name, engine.max_model_len, has_draft_model=assisted, vocab_size=engine.vocab_size)
    output_format = OutputFormat.choose(None, None, engine.chat_template.default)
    return ServedModel(spec, engine, limits, engine.defaults, engine.vocab_size, output_format=output_format)


@contextlib.asynccontextmanager
async def scripted_server(*models: ServedModel) -> AsyncIterator[grpc.aio.Channel]:
    """ovserve's own gRPC server (servicers, interceptors, response store) over ``models``, and a channel to it.

    Runs on the caller's event loop; stopping it closes the engines.
    """
    server = Server(ServeConfig(host="127.0.0.1", port=0, models=[], grace_seconds=0.5))
    await server.start()
    for model in models:
        model.engine.start()
        server.registry.add(model)
    server.registry.mark_ready()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            yield channel
    finally:
        await server.stop()

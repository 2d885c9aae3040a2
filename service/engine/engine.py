"""Engine: a served model's engine process, its tokenizer, and an async generator per request."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import openvino_genai as ov_genai

from service.engine.codec import TokenCodec
from service.engine.core import Submission, wire_config
from service.engine.types import EngineError, EngineStats, Update
from service.engine.worker import WorkerSpec

log = logging.getLogger(__name__)


# The CPU plugin's KV cache: 32-token blocks of u8 keys and values (openvino 2026.4 defaults).
KV_BLOCK_TOKENS = 32
KV_BYTES_PER_VALUE = 1
# Left to itself, the KV cache is 1 GB but at most this many blocks. openvino-genai 2026.4.1
# gets slower with every cached prefix block it keeps: on the bundled tiny-chat (1 GB =
# 65,536 blocks) a steady load fell from ~17,000 to ~2,000 tokens/s after ~30 s, once the
# cache had filled with earlier prompts; with 4,096 blocks it held ~21,000 tokens/s, with
# 8,192 it sagged to 8,000-15,000, and with prefix caching off it never fell. A real model's
# 1 GB is a few thousand blocks anyway (Qwen2.5-0.5B: 5,461; Llama-3.2-1B: 2,048).
AUTO_MAX_KV_BLOCKS = 4096


@dataclass(frozen=True)
class EngineSettings:
    """Scheduler and device settings of one pipeline (see openvino_genai.SchedulerConfig)."""

    device: str = "CPU"
    cache_size_gb: float | None = field(
        default=None,
        metadata={"help": "KV cache per model, GB", "default_text": f"1, at most {AUTO_MAX_KV_BLOCKS:,} blocks"},
    )  # KV cache size; None: 1 GB, at most AUTO_MAX_KV_BLOCKS blocks
    kv_cache_blocks: int | None = field(
        default=None,
        metadata={"help": f"KV cache per model in {KV_BLOCK_TOKENS}-token blocks, instead of a size"},
    )  # the KV cache in blocks of KV_BLOCK_TOKENS tokens, instead of a size
    max_num_seqs: int = field(
        default=256, metadata={"help": "sequences batched per step"}
    )  # sequences batched in one step
    max_num_batched_tokens: int = field(
        default=2048, metadata={"help": "tokens per step"}
    )  # tokens (prompt chunks + decodes) in one step
    dynamic_split_fuse: bool = field(
        default=True,
        metadata={
            "help": "turn off splitting long prompts across steps beside running decodes",
            "flag": "no-dynamic-split-fuse",
        },
    )  # split long prompts across steps beside running decodes
    enable_prefix_caching: bool = field(
        default=True,
        metadata={"help": "turn off reusing the KV blocks of a shared prompt prefix", "flag": "no-prefix-caching"},
    )  # reuse KV blocks of a shared prompt prefix
    # Shortest gap between two hand-overs of output by the engine process, in
    # ms: the steps made meanwhile go out merged (a request's first token and
    # its end never wait). A model slower than one step per interval is never
    # held. 0 hands over every step.
    stream_interval_ms: float = field(
        default=5.0,
        metadata={
            "help": "shortest gap between two hand-overs of streamed output; steps made meanwhile go out as one "
            "message (a first token and an end never wait; a model slower than this per step never waits); "
            "0 sends every step"
        },
    )

    def scheduler(self, model_dir: Path) -> dict[str, object]:
        """SchedulerConfig attributes for the model in ``model_dir`` (the stream interval is the server's)."""
        blocks = self.kv_cache_blocks or kv_blocks(model_dir, self.cache_size_gb)
        cache = {"cache_size": 0, "num_kv_blocks": blocks} if blocks else {"cache_size": 1}
        return {
            **cache,
            "max_num_seqs": self.max_num_seqs,
            "max_num_batched_tokens": self.max_num_batched_tokens,
            "dynamic_split_fuse": self.dynamic_split_fuse,
            "enable_prefix_caching": self.enable_prefix_caching,
        }


def kv_blocks(model_dir: Path, size_gb: float | None) -> int | None:
    """KV blocks that fill ``size_gb`` for this model (None: 1 GB, at most AUTO_MAX_KV_BLOCKS).

    None if config.json does not give the attention shape: the pipeline then
    sizes a 1 GB cache itself.
    """
    try:
        config = json.loads((model_dir / "config.json").read_text())
        layers, heads = int(config["num_hidden_layers"]), int(config["num_attention_heads"])
        kv_heads = int(config.get("num_key_value_heads") or heads)
        head_dim = int(config.get("head_dim") or int(config["hidden_size"]) // heads)
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError):
        return None
    block_bytes = KV_BLOCK_TOKENS * layers * 2 * kv_heads * head_dim * KV_BYTES_PER_VALUE  # keys and values
    if block_bytes <= 0:
        return None
    blocks = max(1, int((size_gb or 1.0) * 2**30 // block_bytes))
    return blocks if size_gb is not None else min(blocks, AUTO_MAX_KV_BLOCKS)


class Engine:
    """One model served by a ContinuousBatchingPipeline in its own process; requests share its batches.

    The tokenizer lives here too (chat templates, prompt encoding, logprob
    tokens); the engine process detokenises the output.
    """

    def __init__(
        self,
        name: str,
        model_dir: Path,
        settings: EngineSettings,
        draft_dir: Path | None = None,
        prompt_lookup: bool = False,
    ) -> None:
        self.name = name
        self.model_dir = model_dir
        self.draft_dir = draft_dir
        started = time.monotonic()
        log.info("loading model %r from %s", name, model_dir)
        if draft_dir is not None:
            log.info("loading draft model for %r from %s", name, draft_dir)
        # Chat templates (and the template's text) come from openvino_genai's
        # Tokenizer; encoding and decoding go through the faster codec.
        self.tokenizer = ov_genai.Tokenizer(str(model_dir), INFERENCE_NUM_THREADS=1, ENABLE_CPU_PINNING=False)
        self._codec = TokenCodec(model_dir)
        self.default_config = _default_config(model_dir, self.tokenizer)
        self.max_model_len = _max_model_len(model_dir)
        spec = WorkerSpec(
            model_dir,
            draft_dir,
            settings.device,
            settings.scheduler(model_dir),
            prompt_lookup,
            flush_interval=settings.stream_interval_ms / 1000,
        )
        self._process, self._connection = _start_worker(spec)
        kind, detail = self._connection.recv()  # blocks until the pipeline is compiled
        if kind != "ready":
            self._process.wait(timeout=10)
            raise EngineError(f"model {name!r} failed to load: {detail}")
        self._mailboxes: dict[int, _Mailbox] = {}
        self._stats: dict[int, asyncio.Future[EngineStats]] = {}
        self._ids = itertools.count()
        self._send_lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reader: threading.Thread | None = None
        self._closed = False
        elapsed = time.monotonic() - started
        log.info("model %r ready in %.1f s (max length %d tokens)", name, elapsed, self.max_model_len)

    @property
    def in_flight(self) -> int:
        """Requests submitted and not let go of yet (their Generation neither finished nor closed)."""
        return len(self._mailboxes)

    @property
    def has_draft_model(self) -> bool:
        """Whether speculative decoding is on for this model."""
        return self.draft_dir is not None

    def start(self) -> None:
        """Start delivering the engine's output to the running event loop."""
        self._loop = asyncio.get_running_loop()
        self._reader = threading.Thread(target=self._read, name=f"engine-reader-{self.name}", daemon=True)
        self._reader.start()

    def close(self) -> None:
        """Cancel every request and end the engine process."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(BrokenPipeError, OSError):
            self._send(("stop",))
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._connection.close()

    def encode(self, text: str, *, add_special_tokens: bool) -> list[int]:
        """Token ids of ``text``."""
        return self._codec.encode(text, add_special_tokens=add_special_tokens)

    def decode(self, token_ids: list[int], *, skip_special_tokens: bool = True) -> str:
        """Text of ``token_ids``."""
        return self._codec.decode_windows([token_ids], skip_special_tokens)[0]

    async def stats(self) -> EngineStats:
        """What the engine process holds now (running requests, KV cache use)."""
        token = next(self._ids)
        future: asyncio.Future[EngineStats] = asyncio.get_running_loop().create_future()
        self._stats[token] = future
        self._send(("stats", token))
        return await future

    def submit(
        self, prompt_ids: list[int], config: ov_genai.GenerationConfig, *, skip_special_tokens: bool = True
    ) -> Generation:
        """Send a request to the engine now; iterate the Generation for its output, and close it when done.

        Submitting before the caller sends anything of its own (a role chunk,
        the Responses API's first events) lets the engine start meanwhile.
        """
        if self._loop is None or self._closed:
            raise EngineError(f"engine for {self.name!r} is not running")
        request_id = next(self._ids)
        mailbox = _Mailbox()
        self._mailboxes[request_id] = mailbox
        try:
            self._send(("submit", Submission(request_id, prompt_ids, wire_config(config), skip_special_tokens)))
        except BaseException:
            del self._mailboxes[request_id]
            raise
        return Generation(self, request_id, mailbox)

    def _release(self, request_id: int, *, cancel: bool) -> None:
        """Forget a request's mailbox; cancel it in the engine if it is still running there."""
        del self._mailboxes[request_id]
        if cancel and not self._closed:
            self._send(("cancel", request_id))

    def _send(self, message: tuple[Any, ...]) -> None:
        with self._send_lock:
            self._connection.send(message)

    def _read(self) -> None:
        """Reader thread: hands the engine's messages to the event loop, all that are waiting in one call.

        One wake-up of the loop per batch rather than per engine step: when the
        loop is busy, the steps it missed arrive together and merge per request.
        """
        assert self._loop is not None
        gone = False
        while not gone:
            batch = []
            try:
                batch.append(self._connection.recv())
                while self._connection.poll(0):
                    batch.append(self._connection.recv())
            except (EOFError, OSError):
                batch.append(("gone",))
                gone = True
            try:
                self._loop.call_soon_threadsafe(self._dispatch_all, batch)
            except RuntimeError:  # the event loop is closed
                return

    def _dispatch_all(self, batch: list[tuple[Any, ...]]) -> None:
        for message in batch:
            self._dispatch(message)

    def _dispatch(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "outcomes":
            for request_id, outcome in message[1]:
                mailbox = self._mailboxes.get(request_id)
                if mailbox is not None:
                    mailbox.put(outcome)
        elif kind == "stats":
            future = self._stats.pop(message[1], None)
            if future is not None and not future.done():
                future.set_result(message[2])
        elif kind == "gone":
            if not self._closed:
                log.error("engine process of %r ended unexpectedly", self.name)
            self._closed = True
            error = EngineError(f"the engine of {self.name!r} stopped")
            for mailbox in self._mailboxes.values():
                mailbox.put(error)
            for future in self._stats.values():
                if not future.done():
                    future.set_exception(error)


class Generation:
    """One submitted request: async-iterate its Updates (the last has finished=True); close() lets go of it.

    An Update holds the steps since the engine process's last hand-over (see
    EngineCore) or, when the reader fell behind, since it last asked (see
    _Mailbox). Closing before the end (the caller was cancelled or went away)
    cancels the request in the engine, which frees its KV cache at the next
    step. Iterating raises EngineError if the engine fails the request.
    """

    def __init__(self, engine: Engine, request_id: int, mailbox: _Mailbox) -> None:
        self._engine, self._request_id, self._mailbox = engine, request_id, mailbox
        self._finished = False  # the engine has let go of the request
        self._closed = False

    def __aiter__(self) -> Generation:
        return self

    async def __anext__(self) -> Update:
        if self._finished:
            raise StopAsyncIteration
        try:
            update = await self._mailbox.get()
        except EngineError:
            self._finished = True
            self.close()
            raise
        if update.finished:
            self._finished = True
            self.close()
        return update

    def close(self) -> None:
        """Let go of the request (idempotent); cancels it in the engine unless it has ended."""
        if not self._closed:
            self._closed = True
            self._engine._release(self._request_id, cancel=not self._finished)


class _Mailbox:
    """One request's output not yet taken: updates merge as they arrive, so a reader takes all of it at once.

    A reader that fell behind thus gets one message per turn of its loop, not
    one per hand-over (vLLM's RequestOutputCollector does the same), and memory
    stays at one Update per request however far behind it is.
    """

    def __init__(self) -> None:
        self._update: Update | None = None
        self._error: EngineError | None = None
        self._ready = asyncio.Event()

    def put(self, item: Update | EngineError) -> None:
        """Hand over output, or the error that ends the request."""
        if isinstance(item, EngineError):
            self._error = item
        elif self._update is None:
            self._update = item
        else:
            self._update.absorb(item)
        self._ready.set()

    async def get(self) -> Update:
        """Everything that arrived since the last call (waits for something); output first, then the error."""
        while self._update is None and self._error is None:
            self._ready.clear()
            await self._ready.wait()
        update, self._update = self._update, None
        if update is not None:
            return update
        assert self._error is not None
        raise self._error


def _start_worker(spec: WorkerSpec) -> tuple[subprocess.Popen[bytes], Connection]:
    """Start the engine process, hand it its spec, return it and our end of the pipe."""
    ours, theirs = socket.socketpair()
    # The engine process must import this very package, wherever it came from.
    package_root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen(
        [sys.executable, "-m", "service.engine", str(theirs.fileno())],
        pass_fds=[theirs.fileno()],
        stdin=subprocess.DEVNULL,
        env=env,
    )
    theirs.close()
    connection = Connection(ours.detach())
    connection.send(spec)
    return process, connection


def _default_config(model_dir: Path, tokenizer: ov_genai.Tokenizer) -> ov_genai.GenerationConfig:
    """The model's generation_config.json, as the pipeline reads it."""
    path = model_dir / "generation_config.json"
    config = ov_genai.GenerationConfig(str(path)) if path.is_file() else ov_genai.GenerationConfig()
    if config.eos_token_id == -1:
        config.set_eos_token_id(tokenizer.get_eos_token_id())
    return config


def _max_model_len(model_dir: Path) -> int:
    """The model's context length, from config.json (max_position_embeddings and kin)."""
    config = json.loads((model_dir / "config.json").read_text())
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        if isinstance(config.get(key), int):
            return int(config[key])
    raise EngineError(f"{model_dir / 'config.json'} does not say the model's maximum length")

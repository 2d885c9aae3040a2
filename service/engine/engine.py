"""Engine: a served model's pipeline, tokenizer and step loop, behind an async generator."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import openvino_genai as ov_genai

from service.engine.step_loop import StepLoop, Submission
from service.engine.types import EngineError, Update

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EngineSettings:
    """Scheduler and device settings of one pipeline (see openvino_genai.SchedulerConfig)."""

    device: str = "CPU"
    cache_size_gb: float = 1.0  # KV cache size
    max_num_seqs: int = 256  # sequences batched in one step
    max_num_batched_tokens: int = 2048  # tokens (prompt chunks + decodes) in one step
    dynamic_split_fuse: bool = True  # split long prompts across steps beside running decodes
    enable_prefix_caching: bool = True  # reuse KV blocks of a shared prompt prefix

    def scheduler_config(self) -> ov_genai.SchedulerConfig:
        """The SchedulerConfig these settings describe."""
        config = ov_genai.SchedulerConfig()
        config.cache_size = max(1, round(self.cache_size_gb))
        config.max_num_seqs = self.max_num_seqs
        config.max_num_batched_tokens = self.max_num_batched_tokens
        config.dynamic_split_fuse = self.dynamic_split_fuse
        config.enable_prefix_caching = self.enable_prefix_caching
        return config


class Engine:
    """One model served by a ContinuousBatchingPipeline; concurrent requests share its batches."""

    def __init__(self, name: str, model_dir: Path, settings: EngineSettings, draft_dir: Path | None = None) -> None:
        self.name = name
        self.model_dir = model_dir
        self.draft_dir = draft_dir
        started = time.monotonic()
        log.info("loading model %r from %s", name, model_dir)
        properties: dict[str, object] = {}
        if draft_dir is not None:
            log.info("loading draft model for %r from %s", name, draft_dir)
            properties["draft_model"] = ov_genai.draft_model(str(draft_dir), settings.device)
        self.tokenizer = ov_genai.Tokenizer(str(model_dir))
        self._pipeline = ov_genai.ContinuousBatchingPipeline(
            str(model_dir), settings.scheduler_config(), settings.device, properties
        )
        self.default_config: ov_genai.GenerationConfig = self._pipeline.get_config()
        self.max_model_len = _max_model_len(model_dir)
        self._step_loop = StepLoop(self._pipeline, self.tokenizer)
        self._queues: dict[int, asyncio.Queue[Update | BaseException]] = {}
        self._ids = itertools.count()
        self._started = False
        log.info(
            "model %r ready in %.1f s (max length %d tokens)", name, time.monotonic() - started, self.max_model_len
        )

    @property
    def has_draft_model(self) -> bool:
        """Whether speculative decoding is on for this model."""
        return self.draft_dir is not None

    def start(self) -> None:
        """Start the step thread on the running event loop."""
        self._step_loop.start(asyncio.get_running_loop(), self._deliver, self.name)
        self._started = True

    def close(self) -> None:
        """Cancel every request and stop the step thread."""
        if self._started:
            self._step_loop.stop()
            self._started = False

    def unfinished_requests(self) -> int:
        """Requests the engine still holds: admitted and running, or cancelled but not yet freed."""
        return self._step_loop.running + int(self._step_loop.has_unfinished_engine_requests())

    def encode(self, text: str, *, add_special_tokens: bool) -> list[int]:
        """Token ids of ``text``."""
        return [int(t) for t in self.tokenizer.encode(text, add_special_tokens=add_special_tokens).input_ids.data[0]]

    def decode(self, token_ids: list[int], *, skip_special_tokens: bool = True) -> str:
        """Text of ``token_ids``."""
        return self.tokenizer.decode(token_ids, skip_special_tokens=skip_special_tokens)

    async def generate(
        self, prompt_ids: list[int], config: ov_genai.GenerationConfig, *, skip_special_tokens: bool = True
    ) -> AsyncIterator[Update]:
        """Yield the request's output, one coalesced Update per engine step, the last with finished=True.

        Closing the generator early (the caller was cancelled or went away)
        cancels the request in the engine, which frees its KV cache at the next
        step. Raises EngineError if the engine fails the request.
        """
        if not self._started:
            raise EngineError(f"engine for {self.name!r} is not running")
        request_id = next(self._ids)
        queue: asyncio.Queue[Update | BaseException] = asyncio.Queue()
        self._queues[request_id] = queue
        finished = False
        try:
            self._step_loop.submit(Submission(request_id, prompt_ids, config, skip_special_tokens))
            while not finished:
                item = await queue.get()
                if isinstance(item, BaseException):
                    finished = True  # the engine has already let go of it
                    raise item
                finished = item.finished
                yield item
        finally:
            del self._queues[request_id]
            if not finished:
                self._step_loop.cancel(request_id)

    def _deliver(self, updates: list[tuple[int, Update | BaseException]]) -> None:
        # Runs on the event loop, once per engine step.
        for request_id, update in updates:
            queue = self._queues.get(request_id)
            if queue is not None:
                queue.put_nowait(update)


def _max_model_len(model_dir: Path) -> int:
    """The model's context length, from config.json (max_position_embeddings and kin)."""
    config = json.loads((model_dir / "config.json").read_text())
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        if isinstance(config.get(key), int):
            return int(config[key])
    raise EngineError(f"{model_dir / 'config.json'} does not say the model's maximum length")

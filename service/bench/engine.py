"""The engine side: the same load on a bare ContinuousBatchingPipeline, no gRPC and no HTTP (the bench builds it
in a process of its own: engine_process.py).

One thread drives ``add_request`` + ``step()`` itself, admitting requests as the
Schedule says, and stamps each request's output when ``read()`` hands it over
after a step. That is the earliest moment any server could send it, so these
figures are the ceiling the service is measured against. The engine does not
detokenise here; the service does (its cost is part of what the ratio shows).
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino_genai as ov_genai

from ovserve.service.bench.kv_cache import KvCachePeak
from ovserve.service.bench.load import BenchRequest, Schedule
from ovserve.service.bench.metrics import RequestResult
from ovserve.service.bench.progress import Progress
from ovserve.service.engine import EngineSettings
from ovserve.service.workers.codec import TokenCodec


class EngineRunner:
    """A ContinuousBatchingPipeline on ``model_dir`` with the service's scheduler settings; runs loads on it."""

    name = "engine"

    def __init__(self, model_dir: Path, settings: EngineSettings, endpoint: str) -> None:
        scheduler = ov_genai.SchedulerConfig()
        for attribute, value in settings.scheduler(model_dir).items():
            setattr(scheduler, attribute, value)
        self.pipeline = ov_genai.ContinuousBatchingPipeline(
            str(model_dir), scheduler, settings.device, settings.for_model(model_dir).engine_properties()
        )
        self.tokenizer = self.pipeline.get_tokenizer()  # the model's chat template
        self.codec = TokenCodec(model_dir)  # what the service encodes with (load.PromptSource says why)
        self._endpoint = endpoint
        self._ids = itertools.count()  # request ids must stay unique for the pipeline's lifetime

    def next_id(self) -> int:
        """A request id the pipeline has not seen."""
        return next(self._ids)

    def observe_kv_cache(self, peak: KvCachePeak, streams: int) -> None:
        """Note the KV cache the pipeline holds now (in use: the share of its blocks in use times the bytes
        allocated), with ``streams`` running."""
        metrics = self.pipeline.get_metrics()
        peak.observe(metrics.cache_usage / 100 * metrics.kv_cache_size_in_bytes, streams)

    def encode(self, request: BenchRequest) -> ov.Tensor:
        """The prompt's token ids as the service would build them (chat template for chat, BOS for completions)."""
        if self._endpoint == "chat":
            text = self.tokenizer.apply_chat_template(request.chat_messages(), add_generation_prompt=True)
            encoded = self.codec.encode(text, add_special_tokens=False)
        else:
            encoded = self.codec.encode(request.prompt, add_special_tokens=True)
        return ov.Tensor(np.array(encoded, dtype=np.int64).reshape(1, -1))

    def run(
        self,
        requests: Sequence[BenchRequest],
        schedule: Schedule,
        progress: Progress | None = None,
        kv_cache: KvCachePeak | None = None,
    ) -> tuple[list[RequestResult], float]:
        """Run the load to the end (blocking); results in request order. With
        ``kv_cache``, the pipeline's KV cache in use is read after every step (``--kv-cache``)."""
        prompts = [self.encode(request) for request in requests]  # outside the timed part, as a server would
        arrivals = schedule.arrivals(len(requests))
        slots = schedule.slots or len(requests)
        waiting = deque(range(len(requests)))
        results: list[RequestResult | None] = [None] * len(requests)
        running: dict[int, tuple[Any, RequestResult]] = {}
        started = time.perf_counter()
        while waiting or running:
            now = time.perf_counter()
            while waiting and len(running) < slots and started + arrivals[waiting[0]] <= now:
                index = waiting.popleft()
                config = ov_genai.GenerationConfig(
                    max_new_tokens=requests[index].output_tokens, ignore_eos=True, do_sample=False
                )
                result = RequestResult(start=now, prompt_tokens=int(prompts[index].get_shape()[1]))
                running[index] = (self.pipeline.add_request(self.next_id(), prompts[index], config), result)
            if not running:  # Poisson gap: nothing to step until the next arrival
                time.sleep(max(0.0, started + arrivals[waiting[0]] - time.perf_counter()))
                continue
            self.pipeline.step()
            now = time.perf_counter()
            if kv_cache is not None:
                self.observe_kv_cache(kv_cache, len(running))
            for index, (handle, result) in list(running.items()):
                status = handle.get_status()
                if handle.can_read():
                    count = sum(len(output.generated_ids) for output in handle.read().values())
                    if count:
                        result.chunk_times.append(now)
                        result.output_tokens += count
                if status != ov_genai.GenerationStatus.RUNNING:
                    result.end = now
                    if status != ov_genai.GenerationStatus.FINISHED:
                        result.error = f"engine status {status}"
                    results[index] = result
                    del running[index]
                    if progress is not None:
                        progress.advance()
        return [result for result in results if result is not None], time.perf_counter() - started

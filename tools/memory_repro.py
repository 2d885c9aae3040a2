"""Does openvino-genai's ContinuousBatchingPipeline alone grow in memory under ovserve's storm pattern?

No ovserve code: the pipeline, the bundled tiny-chat model, batches of 16
requests of 160 tokens, every other one cancelled after a few steps; the
process's RSS printed every 100 requests. Variants tell what the growth follows:

    python tools/memory_repro.py n2-sampled    # 2 sampled choices per request (the test's storm)
    python tools/memory_repro.py n1-sampled
    python tools/memory_repro.py n2-nodrop     # 2 sampled choices, none cancelled
    python tools/memory_repro.py n1-greedy
    python tools/memory_repro.py n2-fixed-seed # 2 sampled choices, the same seed for every request
    python tools/memory_repro.py core-sampled  # ovserve's EngineCore over the same pipeline, in this process
    python tools/memory_repro.py staggered     # the pipeline alone; requests of varied length arrive one by one
    python tools/memory_repro.py staggered-cache-0   # the same with the CPU plugin's shape cache off (or N entries)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import openvino as ov
import openvino_genai as ov_genai

MODEL = Path(__file__).resolve().parents[1] / "service" / "bundled_models" / "tiny-chat"
VARIANTS = {  # name: (choices, sampled, cancel every other request, seed per request)
    "n2-sampled": (2, True, True, True),
    "n1-sampled": (1, True, True, True),
    "n2-nodrop": (2, True, False, True),
    "n1-greedy": (1, False, True, True),
    "n2-fixed-seed": (2, True, True, False),
}


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS:"))


def scheduler_config() -> ov_genai.SchedulerConfig:
    scheduler = ov_genai.SchedulerConfig()
    scheduler.num_kv_blocks = 4096
    scheduler.max_num_seqs = 64
    scheduler.max_num_batched_tokens = 2048
    scheduler.dynamic_split_fuse = True
    scheduler.enable_prefix_caching = True
    return scheduler


def main(variant: str, total: int = 1500, batch: int = 16) -> None:
    if variant == "core-sampled":
        return core(total, batch)
    if variant.startswith("staggered"):
        capacity = int(variant.rpartition("-")[2]) if variant.startswith("staggered-cache-") else None
        return staggered(total, batch, {} if capacity is None else {"CPU_RUNTIME_CACHE_CAPACITY": capacity})
    choices, sampled, cancel, own_seed = VARIANTS[variant]
    pipeline = ov_genai.ContinuousBatchingPipeline(str(MODEL), scheduler_config(), "CPU", {})
    tokenizer = pipeline.get_tokenizer()
    done = 0
    while done < total:
        handles = []
        for i in range(done, done + batch):
            config = ov_genai.GenerationConfig(max_new_tokens=160, ignore_eos=True, num_return_sequences=choices)
            if sampled:
                config.do_sample, config.temperature = True, 0.8
                config.rng_seed = i if own_seed else 7
            prompt = tokenizer.encode(f"Story {i}: tell me about ships and the sea.").input_ids
            handles.append(pipeline.add_request(i, prompt, config))
        steps = 0
        while pipeline.has_non_finished_requests():
            pipeline.step()
            steps += 1
            for handle in handles:
                if handle.can_read():
                    handle.read()
            if cancel and steps == 5:
                for handle in handles[::2]:
                    handle.cancel()
        done += batch
        if done % 96 == 0 or done >= total:
            print(f"{variant} {done} requests: RSS {rss_mb():.0f} MB", flush=True)


def staggered(total: int, in_flight: int, properties: dict[str, object]) -> None:
    """Requests of 10-200 prompt tokens arriving one at a time, ``in_flight`` running: every step a new shape."""
    import random

    rng = random.Random(1)
    pipeline = ov_genai.ContinuousBatchingPipeline(str(MODEL), scheduler_config(), "CPU", properties)
    handles: dict[int, object] = {}
    started = 0
    while started < total or handles:
        while started < total and len(handles) < in_flight:
            config = ov_genai.GenerationConfig(max_new_tokens=rng.randint(20, 160), ignore_eos=True)
            config.do_sample, config.temperature, config.rng_seed = True, 0.8, started
            prompt = [rng.randint(10, 900) for _ in range(rng.randint(10, 200))]
            handles[started] = pipeline.add_request(started, ov.Tensor(np.array([prompt], dtype=np.int64)), config)
            started += 1
            if started % 200 == 0:
                print(f"staggered {started} requests: RSS {rss_mb():.0f} MB", flush=True)
        pipeline.step()
        for request_id, handle in list(handles.items()):
            if handle.can_read():
                handle.read()
            if handle.get_status() != ov_genai.GenerationStatus.RUNNING:
                del handles[request_id]


def core(total: int, batch: int) -> None:
    """The storm through ovserve's EngineCore (admission, stepping, detokenising, cancelling), no IPC."""
    sys.path.insert(0, str(MODEL.parents[2]))
    from ovserve.service.engine.core import EngineCore, Submission
    from ovserve.service.engine.sampling import SamplingParams
    from ovserve.service.workers.codec import TokenCodec

    engine = EngineCore(
        lambda: ov_genai.ContinuousBatchingPipeline(str(MODEL), scheduler_config(), "CPU", {}),
        TokenCodec(MODEL).decode_windows,
    )
    tokenizer = ov_genai.Tokenizer(str(MODEL))
    done = 0
    while done < total:
        for i in range(done, done + batch):
            prompt = list(tokenizer.encode(f"Story {i}: tell me about ships and the sea.").input_ids.data[0])
            params = SamplingParams(max_new_tokens=160, do_sample=True, temperature=0.8, seed=i, ignore_eos=True)
            engine.add(Submission(i, [int(t) for t in prompt], params))
        steps = 0
        while engine.busy:
            engine.step()
            steps += 1
            if steps == 5:
                for i in range(done, done + batch, 2):
                    engine.cancel(i)
        done += batch
        if done % 96 == 0 or done >= total:
            print(f"core-sampled {done} requests: RSS {rss_mb():.0f} MB", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], *(int(arg) for arg in sys.argv[2:]))

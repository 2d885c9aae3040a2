"""Does openvino-genai's ContinuousBatchingPipeline alone grow in memory under ovserve's storm pattern?

No ovserve code: the pipeline, the bundled tiny-chat model, batches of 16
requests of 160 tokens, every other one cancelled after a few steps; the
process's RSS printed every 100 requests. Variants tell what the growth follows:

    python tools/memory_repro.py n2-sampled    # 2 sampled choices per request (the test's storm)
    python tools/memory_repro.py n1-sampled
    python tools/memory_repro.py n2-nodrop     # 2 sampled choices, none cancelled
    python tools/memory_repro.py n1-greedy
    python tools/memory_repro.py n2-fixed-seed # 2 sampled choices, the same seed for every request
"""

from __future__ import annotations

import sys
from pathlib import Path

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


def main(variant: str, total: int = 1500, batch: int = 16) -> None:
    choices, sampled, cancel, own_seed = VARIANTS[variant]
    scheduler = ov_genai.SchedulerConfig()
    scheduler.num_kv_blocks = 4096
    scheduler.max_num_seqs = 64
    scheduler.max_num_batched_tokens = 2048
    scheduler.dynamic_split_fuse = True
    scheduler.enable_prefix_caching = True
    pipeline = ov_genai.ContinuousBatchingPipeline(str(MODEL), scheduler, "CPU", {})
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


if __name__ == "__main__":
    main(sys.argv[1], *(int(arg) for arg in sys.argv[2:]))

"""Probes of openvino-genai ContinuousBatchingPipeline behaviour the ovserve engine relies on.

Checks: read() deltas (greedy, multinomial, beam search); cancel() from another
thread and KV-cache release; add_request from another thread during step();
stop_strings streaming with include_stop_str_in_output=False; get_metrics().

Run: .venv/bin/python benchmarks/engine_facts.py [--model DIR]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

import openvino_genai as ovg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from step_loop import make_pipeline, pick_model, to_tensor

PROMPT = "<|user|>Tell me about the weather in Paris.<|assistant|>"


def cfg(**kw) -> ovg.GenerationConfig:
    c = ovg.GenerationConfig()
    c.max_new_tokens = 24
    c.ignore_eos = True
    c.do_sample = False
    for k, v in kw.items():
        setattr(c, k, v)
    return c


def metrics(pipe) -> str:
    m = pipe.get_metrics()
    return f"requests={m.requests} scheduled={m.scheduled_requests} cache_usage={m.cache_usage:.4f}"


def stream(pipe, rid, c, prompt=PROMPT):
    """Step until done; return the list of per-read {seq: ids} and the final result of generate()."""
    h = pipe.add_request(rid, prompt, c)
    reads = []
    while pipe.has_non_finished_requests():
        pipe.step()
        if h.can_read():
            reads.append({k: list(v.generated_ids) for k, v in h.read().items()})
    return h, reads


def probe_deltas(pipe) -> None:
    print("== read() deltas")
    for name, c in [
        ("greedy", cfg()),
        ("multinomial", cfg(do_sample=True, temperature=0.8, rng_seed=1)),
        ("beam 3/ret 2", cfg(num_beams=3, num_return_sequences=2, num_beam_groups=1)),
    ]:
        h, reads = stream(pipe, 1, c)
        sizes = [{k: len(v) for k, v in r.items()} for r in reads]
        total = {}
        for r in reads:
            for k, v in r.items():
                total[k] = total.get(k, 0) + len(v)
        print(
            f"{name}: {len(reads)} reads, first sizes {sizes[:4]} last {sizes[-1:]}, totals per seq {total}, "
            f"status {h.get_status()}"
        )
    prompt_ids = pipe.get_tokenizer().encode(PROMPT).input_ids.data[0].tolist()
    ref_ids = list(pipe.generate([to_tensor(prompt_ids)], [cfg()])[0].m_generation_ids[0])
    h, reads = stream(pipe, 2, cfg(), to_tensor(prompt_ids))
    ids = [t for r in reads for t in next(iter(r.values()))]
    print("greedy concatenated reads == generate() ids:", ids == ref_ids)


def probe_cancel(pipe) -> None:
    print("== cancel() from another thread")
    handles = [pipe.add_request(10 + i, PROMPT + f" {i}", cfg(max_new_tokens=1500)) for i in range(4)]
    stop = threading.Event()
    steps_after = []

    def loop():
        while not stop.is_set() and pipe.has_non_finished_requests():
            pipe.step()
            for h in handles:
                if h.can_read():
                    h.read()
            if stop_requested.is_set():
                steps_after.append(metrics(pipe))
        stop.set()

    stop_requested = threading.Event()
    t = threading.Thread(target=loop)
    t.start()
    time.sleep(0.3)
    print("before cancel:", metrics(pipe), [str(h.get_status()) for h in handles])
    handles[0].cancel()
    handles[1].stop()
    time.sleep(0.05)
    print("after cancel(h0)/stop(h1):", metrics(pipe), [str(h.get_status()) for h in handles])
    print("h0 can_read", handles[0].can_read(), "h1 can_read", handles[1].can_read())
    if handles[1].can_read():
        out = handles[1].read()
        print("h1 read after stop:", {k: (len(v.generated_ids), v.finish_reason) for k, v in out.items()})
    stop_requested.set()
    for h in handles[2:]:
        h.cancel()
    t.join(5)
    print("thread exited:", not t.is_alive(), "steps after all cancelled:", len(steps_after), steps_after[:2])
    print(
        "after all cancelled:",
        metrics(pipe),
        "has_non_finished:",
        pipe.has_non_finished_requests(),
        [str(h.get_status()) for h in handles],
    )
    pipe.step()
    print("after one more step:", metrics(pipe))
    h, reads = stream(pipe, 99, cfg())
    print("fresh request after cancel:", h.get_status(), sum(len(next(iter(r.values()))) for r in reads), "tokens")


def probe_add_during_step(pipe) -> None:
    print("== add_request from another thread while the step thread runs")
    long_prompt = PROMPT * 8
    for i in range(16):
        pipe.add_request(200 + i, long_prompt + str(i), cfg(max_new_tokens=400))
    step_times, add_times = [], []
    done = threading.Event()
    adding_done = threading.Event()

    def loop():
        while not adding_done.is_set() or pipe.has_non_finished_requests():
            t0 = time.perf_counter()
            pipe.step()
            step_times.append(time.perf_counter() - t0)
        done.set()

    t = threading.Thread(target=loop)
    t.start()
    time.sleep(0.05)
    handles = []
    for i in range(20):
        t0 = time.perf_counter()
        handles.append(pipe.add_request(300 + i, PROMPT + f" {i}", cfg(max_new_tokens=8)))
        add_times.append(time.perf_counter() - t0)
        time.sleep(0.003)
    adding_done.set()
    t.join()
    st = sorted(step_times)
    at = sorted(add_times)
    print(
        f"steps: n={len(st)} p50={st[len(st) // 2] * 1e3:.2f}ms max={st[-1] * 1e3:.2f}ms; "
        f"add_request from other thread: p50={at[len(at) // 2] * 1e3:.2f}ms max={at[-1] * 1e3:.2f}ms "
        "(includes waiting for the GIL held by step())"
    )
    print(
        "added requests finished:",
        [str(h.get_status()) for h in handles][:3],
        all(h.get_status() == ovg.GenerationStatus.FINISHED for h in handles),
    )


def probe_stop_strings(pipe) -> None:
    print("== stop_strings streaming, include_stop_str_in_output=False")
    tok = pipe.get_tokenizer()
    prompt = to_tensor(tok.encode(PROMPT).input_ids.data[0].tolist())
    base = tok.decode(list(pipe.generate([prompt], [cfg(max_new_tokens=40)])[0].m_generation_ids[0]))
    # choose a stop string that spans several tokens in the middle of the greedy output
    stop = base[12:22]
    print("greedy text:", repr(base[:60]), "stop string:", repr(stop))
    for include in (False, True):
        c = cfg(max_new_tokens=40, stop_strings={stop}, include_stop_str_in_output=include)
        c.ignore_eos = False
        h, reads = stream(pipe, 400 + include, c, prompt)
        pieces = [tok.decode(next(iter(r.values()))) for r in reads]
        final = tok.decode(list(pipe.generate([prompt], [c])[0].m_generation_ids[0]))
        print(
            f"include={include}: streamed pieces {pieces} -> joined {''.join(pieces)!r}; generate() {final!r}; "
            f"status {h.get_status()}"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    model = str(pick_model(ap.parse_args().model))
    pipe = make_pipeline(model)
    print("idle metrics:", metrics(pipe))
    probe_deltas(pipe)
    print("after deltas:", metrics(pipe))
    probe_cancel(pipe)
    probe_add_during_step(pipe)
    probe_stop_strings(pipe)
    print("end:", metrics(pipe), "has_non_finished:", pipe.has_non_finished_requests())


if __name__ == "__main__":
    main()

"""EngineSettings: a pipeline's scheduler and device settings, and the KV cache and step sizes they default to.

Read by the CLI and the configuration (its flags are generated from the fields' metadata), the engine, the
bench and every model's process settings; it starts nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from ovserve.service import model_files
from ovserve.service.engine.cpu_features import int8_dot_product
from ovserve.service.engine.precision import OPTIMIZE_FOR, default_precision
from ovserve.service.workers.errors import EngineError
from ovserve.service.workers.served import ProcessSettings

# The CPU plugin's KV cache: 32-token blocks of keys and values, in f16 unless --kv-cache-precision says otherwise.
# ovserve tells every CPU pipeline its precision (EngineSettings.engine_properties): left to itself, openvino-genai
# 2026.4 takes the CPU plugin's, which differs by CPU and model (measured: u8 for the Qwen2.5 shapes but f16 for
# the bundled tiny models on a Xeon with AMX, f16 on an AVX2 EPYC without VNNI), so the cache would hold other
# bytes than it was sized for and answer differently from CPU to CPU.
# f16, not u8: on the AMX Xeon the two decoded at the same speed within the noise (Qwen2.5 0.5B and 1.5B shapes,
# 128- and 4,096-token prompts, 1 and 8 streams: docs/benchmarks/engine-settings.md), and f16 keeps logprobs
# closer to the model's own; u8 holds ~1.7x the tokens in the same memory.
KV_BLOCK_TOKENS = 32
DEFAULT_KV_PRECISION = "f16"
# By KV_CACHE_PRECISION: bytes per cached value; for u8 also the f32 scale and zero point, per token and head for
# values, per channel and block for keys (the plugin quantises keys by channel): measured as 64 blocks of tiny-chat
# (head size 32) in 1.25 MiB, of the Qwen2.5-0.5B shape (head size 64) at 7,296 bytes a token. (bf16 is refused by
# the plugin on an AVX2 CPU; u4, which took more than u8, is left out.)
KV_BYTES = {"u8": 1, "f16": 2, "bf16": 2, "f32": 4}
KV_CACHE_PRECISIONS = tuple(KV_BYTES)  # what --kv-cache-precision takes
QUANTISED_KV = {"u8"}  # precisions that keep a scale and a zero point (f32 each) beside the values
# What --inference-precision takes (INFERENCE_PRECISION_HINT). OpenVINO's CPU default is bf16 where the CPU
# has AVX-512 BF16 or AMX, f32 elsewhere: the same model answers a little differently on the two kinds.
INFERENCE_PRECISIONS = ("f32", "bf16", "f16")
# Left to itself, the KV cache is 1 GB but at most this many blocks. openvino-genai 2026.4.1
# gets slower with every cached prefix block it keeps: on the bundled tiny-chat (1 GB =
# 65,536 blocks) a steady load fell from ~17,000 to ~2,000 tokens/s after ~30 s, once the
# cache had filled with earlier prompts; with 4,096 blocks it held ~21,000 tokens/s, with
# 8,192 it sagged to 8,000-15,000, and with prefix caching off it never fell. A real model's
# 1 GB is a few thousand blocks anyway (Qwen2.5-0.5B: 2,730; Llama-3.2-1B: 1,024).
AUTO_MAX_KV_BLOCKS = 4096
# Tokens per step by default (see EngineSettings.max_num_batched_tokens): on a CPU with an int8 dot-product
# instruction, and on one without, whose prompt tokens cost several times more.
STEP_TOKENS = 512
STEP_TOKENS_SLOW_PREFILL = 128


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
    # Tokens (prompt chunks + decodes) in one step: a step holds every running stream for as long as its prompt
    # chunk takes, so this trades inter-token tail latency against throughput, and the trade depends on how fast
    # the CPU prefills (docs/benchmarks/index.md, "Scheduler defaults"; Qwen2.5-0.5B-shaped int8 model, 2 cores,
    # paired rounds).
    # With VNNI/AMX (an AVX-512 machine): 512 against 2,048 gave first tokens 0.67x as late at 8 and 32 streams
    # for 0.98-1.01x the throughput; 256 cost 0.90x. Without (AVX2 EPYC, ~10 ms a prompt token): 128 against 512
    # cut inter-token p99 / p50 from 23 to 7.4-8.0 at 8 streams and from 10 to 3.1 at 32, for 0.95-0.99x / 1.04x
    # the throughput; 64 reached 4.4-5.3 for 0.92-0.97x (and caps a step at 64 decodes).
    max_num_batched_tokens: int | None = field(
        default=None,
        metadata={
            "help": "tokens per step (prompt chunks and decodes): fewer keeps running streams moving while "
            "prompts are read, more reads prompts faster",
            "default_text": f"{STEP_TOKENS_SLOW_PREFILL} on a CPU without VNNI or AMX (/proc/cpuinfo), else "
            f"{STEP_TOKENS}",
        },
    )
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
    # With API keys, a prompt's cached blocks are reused by the same key only (salting.py): another key could
    # otherwise time its first tokens to learn how someone else's prompt began. A single-tenant deployment may
    # share them (a vision model's pipeline cannot keep keys apart: it caches prefixes only when shared).
    shared_prefix_cache: bool = field(
        default=False,
        metadata={
            "help": "let API keys reuse each other's cached prompt prefixes (for a single tenant; a cache_salt "
            "still keeps its requests apart); a vision model caches prefixes only with this"
        },
    )
    # Set by the server, not a flag: whether API keys name tenants, whose prompts the prefix cache keeps apart.
    tenants: bool = False
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
    # Every hand-over costs the server (and the client) about the same CPU per request whatever it carries
    # (~100 us in grpc.aio's write path and the stream's coroutines; py-spy, tiny-chat, 32 streams), CPU the
    # engine's steps lose on a small machine. A budget on hand-overs per second, summed over a model's requests,
    # stretches the interval as streams multiply (at 1,000: 8 ms at 8 streams, 32 ms at 32), so each message
    # carries more tokens; first tokens and ends still never wait.
    stream_updates_per_s: float = field(
        default=1000.0,
        metadata={
            "help": "most streamed-output hand-overs per second, summed over a model's requests: with many "
            "streams each hand-over carries more tokens (a first token and an end never wait); 0: no budget",
            "metavar": "UPDATES",
        },
    )
    # openvino-genai compiles a request's grammar again inside an engine step for every request that
    # uses it, stalling the model's other streams meanwhile: a grammar slower than this is refused.
    grammar_timeout_s: float = field(
        default=2.0,
        metadata={
            "help": "longest a request's output constraint (JSON schema, regex, grammar) may take to compile, in "
            "seconds; slower ones are refused (400 naming the field)"
        },
    )
    # The engine process reports at least once a second while it works (messages.HEARTBEAT_S).
    stall_timeout_s: float = field(
        default=60.0,
        metadata={
            "help": "seconds an engine process may say nothing while requests wait on it before it is taken for "
            "wedged, killed and replaced (raise it for a step longer than this, e.g. a huge prefill on a slow device)"
        },
    )

    heartbeat_timeout_s: float = field(
        default=10.0,
        metadata={
            "help": "seconds any model's process may send no heartbeat (a thread of its own sends one every 0.5 s) "
            "while idle or stopped before it is taken for stopped or wedged, killed and replaced (an engine step "
            "holds the heartbeat back: while requests wait on a running process, --stall-timeout-s applies)"
        },
    )

    # OpenVINO's CPU plugin keeps compiled kernels per input shape, and continuous batching makes a new
    # shape at almost every step: the cache (5,000 entries by default) fills over thousands of requests,
    # measured +100-200 MB on tiny-chat (tools/memory_repro.py), a bounded cache, not a leak.
    cpu_runtime_cache: int | None = field(
        default=None,
        metadata={
            "help": "entries of OpenVINO's CPU cache of per-shape kernels (CPU_RUNTIME_CACHE_CAPACITY); it fills "
            "as batches take new shapes (+100-200 MB on tiny-chat at the default); lower saves that memory at "
            "some speed (0: off, steps about a fifth slower on tiny-chat)",
            "default_text": "OpenVINO's, 5000",
            "metavar": "ENTRIES",
        },
    )

    # OpenVINO runs a step on one thread per core by default. On a small machine shared with the server, a
    # tiny model's steps are too short to split: measured on 2 cores (tiny-chat, 1 stream), 1 thread spent about
    # half the engine CPU per token (363-397 against 649-702 us) for 0.9-1.0x the throughput.
    inference_threads: int | None = field(
        default=None,
        metadata={
            "help": "OpenVINO inference threads of each engine (INFERENCE_NUM_THREADS); fewer leaves cores to the "
            "server and other engines",
            "default_text": "OpenVINO's, one per core",
            "metavar": "THREADS",
        },
    )

    # Measured on a Qwen2.5-0.5B-shaped int8 model, 2-core AVX2 EPYC without VNNI, and on 0.5B and 1.5B shapes on a
    # Xeon with AMX (docs/benchmarks/engine-settings.md): u8 holds the same tokens in 0.6x the bytes of the default
    # f16 and was as fast within the noise, but moves the sampler's logprobs by more than 2e-3 on tiny-chat against
    # the model's own: not a default.
    kv_cache_precision: str | None = field(
        default=None,
        metadata={
            "help": f"precision of the KV cache (KV_CACHE_PRECISION): {', '.join(KV_CACHE_PRECISIONS)}; lower "
            "holds more tokens in --cache-size-gb and reads less per step, at some accuracy",
            "default_text": f"{DEFAULT_KV_PRECISION} on CPU",
            "metavar": "PRECISION",
        },
    )
    inference_precision: str | None = field(
        default=None,
        metadata={
            "help": f"precision the model computes in (INFERENCE_PRECISION_HINT): {', '.join(INFERENCE_PRECISIONS)}; "
            "f32 gives the same numbers on every CPU up to rounding and, on an AMX CPU, decoded int8 models "
            "faster, bf16 prefilled faster (docs: Measurements, Engine settings)",
            "default_text": "f32 for int8/int4 weights on CPUs with AMX or AVX-512 BF16 under --optimize-for "
            "decode, else OpenVINO's: bf16 on those CPUs, f32 elsewhere",
            "metavar": "PRECISION",
        },
    )
    # What the default precision favours where the best choice depends on the traffic (precision.py measures it).
    optimize_for: str = field(
        default="decode",
        metadata={
            "help": f"what the default precision favours: {', '.join(OPTIMIZE_FOR)}. decode (chat, agents: answers "
            "of dozens of tokens or more) computes int8/int4 models in f32 on CPUs that would use bf16, which "
            "decodes them 1.4-1.8x faster; prefill keeps bf16, which reads prompts about 2x faster (long "
            "documents, short answers)",
            "metavar": "WHAT",
        },
    )
    # Quantising activations to int8 before int8/int4 weight matmuls: the CPU plugin does it in f32 (not in bf16),
    # and it is why f32 decodes compressed models faster (precision.py): off, f32 decoded 0.6-0.9x as fast
    # (benchmarks/precision_defaults.py, Qwen2.5 shapes on a Xeon with AMX). OpenVINO's default (32) stays.
    dynamic_quantization_group_size: int | None = field(
        default=None,
        metadata={
            "help": "activations quantised to int8 in groups of this many values before int8/int4 weight matmuls "
            "(DYNAMIC_QUANTIZATION_GROUP_SIZE); 0 turns it off",
            "default_text": "OpenVINO's, 32 on CPU",
            "metavar": "VALUES",
        },
    )

    def step_tokens(self) -> int:
        """Tokens per step: as given, else the default measured for this kind of CPU."""
        if self.max_num_batched_tokens is not None:
            return self.max_num_batched_tokens
        slow_prefill = self.device.upper() == "CPU" and int8_dot_product() is False
        return STEP_TOKENS_SLOW_PREFILL if slow_prefill else STEP_TOKENS

    def properties(self) -> dict[str, object]:
        """Device properties of every model's pipeline: those given."""
        chosen = {
            "CPU_RUNTIME_CACHE_CAPACITY": self.cpu_runtime_cache,
            "INFERENCE_NUM_THREADS": self.inference_threads,
            "KV_CACHE_PRECISION": self.kv_cache_precision,
            "INFERENCE_PRECISION_HINT": self.inference_precision,
            "DYNAMIC_QUANTIZATION_GROUP_SIZE": self.dynamic_quantization_group_size,
        }
        return {name: value for name, value in chosen.items() if value is not None}

    def engine_properties(self) -> dict[str, object]:
        """Device properties of a generating pipeline: those given, and on a CPU always the KV-cache precision
        its blocks are sized for (see DEFAULT_KV_PRECISION: OpenVINO's own choice varies by CPU)."""
        given = self.properties()
        if self.device.upper() == "CPU":
            given["KV_CACHE_PRECISION"] = self.kv_precision
        return given

    @property
    def kv_precision(self) -> str:
        """The precision the KV cache is sized for (and a CPU pipeline told): as given, else DEFAULT_KV_PRECISION."""
        return self.kv_cache_precision or DEFAULT_KV_PRECISION

    def process(self) -> ProcessSettings:
        """How every model's process is started and watched (the embedding, rerank and speech models' too)."""
        return ProcessSettings(self.device, self.stall_timeout_s, self.heartbeat_timeout_s, self.properties())

    @property
    def isolates_tenants(self) -> bool:
        """Whether API keys' prompts are kept apart in the prefix cache (salting.py): keys, a prefix cache, and no
        --shared-prefix-cache."""
        return self.tenants and self.enable_prefix_caching and not self.shared_prefix_cache

    def for_model(self, model_dir: Path) -> EngineSettings:
        """These settings with the precision chosen for ``model_dir`` where none is given (precision.py)."""
        if self.inference_precision is not None:
            return self
        chosen = default_precision(self.device, model_dir, self.optimize_for)
        return self if chosen is None else dataclasses.replace(self, inference_precision=chosen)

    def scheduler(self, model_dir: Path) -> dict[str, object]:
        """SchedulerConfig attributes for the model in ``model_dir`` (the stream interval is the server's)."""
        blocks = self.kv_cache_blocks or kv_blocks(model_dir, self.cache_size_gb, self.kv_precision)
        cache = {"cache_size": 0, "num_kv_blocks": blocks} if blocks else {"cache_size": 1}
        tokens = self.step_tokens()
        if not self.dynamic_split_fuse:
            # Unsplit, a prompt must fit in one step: openvino-genai fails the step (every request's) on a longer
            # one. As vLLM does without chunked prefill, a step then takes the model's whole context.
            with contextlib.suppress(EngineError):
                tokens = max(tokens, max_model_len(model_dir))
        return {
            **cache,
            "max_num_seqs": self.max_num_seqs,
            "max_num_batched_tokens": tokens,
            "dynamic_split_fuse": self.dynamic_split_fuse,
            "enable_prefix_caching": self.enable_prefix_caching,
        }


def kv_blocks(model_dir: Path, size_gb: float | None, precision: str = DEFAULT_KV_PRECISION) -> int | None:
    """KV blocks that fill ``size_gb`` for this model (None: 1 GB, at most AUTO_MAX_KV_BLOCKS).

    None if config.json does not give the attention shape: the pipeline then
    sizes a 1 GB cache itself.
    """
    try:
        config = model_files.text_config(model_dir)
        layers, heads = int(config["num_hidden_layers"]), int(config["num_attention_heads"])
        kv_heads = int(config.get("num_key_value_heads") or heads)
        head_dim = int(config.get("head_dim") or int(config["hidden_size"]) // heads)
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError):
        return None
    block_bytes = layers * kv_heads * kv_block_bytes(head_dim, precision)
    if block_bytes <= 0:
        return None
    blocks = max(1, int((size_gb or 1.0) * 2**30 // block_bytes))
    return blocks if size_gb is not None else min(blocks, AUTO_MAX_KV_BLOCKS)


def kv_block_bytes(head_dim: int, precision: str) -> int:
    """Bytes one layer's block of KV_BLOCK_TOKENS tokens takes per KV head: its keys and values, and for a
    quantised cache the keys' scale and zero point per channel and the values' per token."""
    values = 2 * KV_BLOCK_TOKENS * head_dim * KV_BYTES[precision]  # keys and values
    if precision not in QUANTISED_KV:
        return values
    return values + 2 * 4 * (head_dim + KV_BLOCK_TOKENS)  # f32 scale and zero point: per key channel, per value token


def max_model_len(model_dir: Path) -> int:
    """The model's context length, from config.json (max_position_embeddings and kin)."""
    config = model_files.text_config(model_dir)
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        if isinstance(config.get(key), int):
            return int(config[key])
    raise EngineError(f"{model_dir / 'config.json'} does not say the model's maximum length")

"""Engine: a served model's engine process (supervised), its tokenizer, and a Generation per request."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openvino_genai as ov_genai

from service import model_files
from service.engine.adapters import LoraAdapter
from service.engine.chat_template import ChatTemplate, TemplateRenderer, find_chat_template
from service.engine.core import Submission
from service.engine.cpu_features import int8_dot_product
from service.engine.generation import Generation, Mailbox, MeterFactory
from service.engine.generation_config import model_defaults
from service.engine.grammar import GrammarChecker
from service.engine.infill import find_infill_tokens
from service.engine.messages import AdaptersSet, Cancel, Outcomes, QueryStats, SetAdapters, StatsReport
from service.engine.sampling import OutputConstraint, SamplingParams
from service.engine.scoring import Scoring
from service.engine.template_probe import MessageForm
from service.engine.types import EngineStats, PromptImages
from service.engine.worker import WorkerSpec
from service.workers.codec import TokenCodec
from service.workers.errors import EngineError, EngineRejected, EngineUnavailable
from service.workers.process import WorkerProcess
from service.workers.served import KvCacheLoad, Load, ProcessSettings
from service.workers.supervisor import Supervised, Supervisor

log = logging.getLogger(__name__)


# The CPU plugin's KV cache: 32-token blocks of keys and values, f16 unless --kv-cache-precision says otherwise
# (what openvino-genai 2026.4 allocates when not told, measured on AVX2 and AVX-512 CPUs, although the CPU
# plugin itself reports u8).
KV_BLOCK_TOKENS = 32
DEFAULT_KV_PRECISION = "f16"
# By KV_CACHE_PRECISION: bytes per cached value, and bytes more per head and token (u8's scale and zero point).
# Measured on tiny-chat (head size 32): 64 blocks take 1.25 MiB in u8, 2 MiB in f16, 4 MiB in f32. (bf16 is
# refused by the plugin on an AVX2 CPU; u4, which took more than u8, is left out.)
KV_BYTES = {"u8": (1, 8), "f16": (2, 0), "bf16": (2, 0), "f32": (4, 0)}
KV_CACHE_PRECISIONS = tuple(KV_BYTES)  # what --kv-cache-precision takes
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
    # the CPU prefills (README, "Scheduler defaults"; Qwen2.5-0.5B-shaped int8 model, 2 cores, paired rounds).
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

    # Measured on a Qwen2.5-0.5B-shaped int8 model, 2-core AVX2 EPYC without VNNI (README, "Engine settings"):
    # u8 holds the same tokens in 0.6x the bytes of the default f16 and was as fast (1.00-1.04x at 1 stream,
    # 0.98-1.09x at 8, two paired runs), but moves the sampler's logprobs by more than 2e-3 on tiny-chat against
    # the model's own: not a default.
    kv_cache_precision: str | None = field(
        default=None,
        metadata={
            "help": f"precision of the KV cache (KV_CACHE_PRECISION): {', '.join(KV_CACHE_PRECISIONS)}; lower "
            "holds more tokens in --cache-size-gb and reads less per step, at some accuracy",
            "default_text": f"openvino-genai's, {DEFAULT_KV_PRECISION} on CPU",
            "metavar": "PRECISION",
        },
    )
    inference_precision: str | None = field(
        default=None,
        metadata={
            "help": f"precision the model computes in (INFERENCE_PRECISION_HINT): {', '.join(INFERENCE_PRECISIONS)}; "
            "f32 gives the same numbers on every CPU up to rounding and, on an AMX CPU, decoded int8 models "
            "faster, bf16 prefilled faster (README, Engine settings)",
            "default_text": "OpenVINO's: bf16 on CPUs with AMX or AVX-512 BF16, else f32",
            "metavar": "PRECISION",
        },
    )
    # Quantising activations to int8 before int8 weight matmuls: turning it off was inconclusive on that CPU
    # (1.00x / 1.15x at 1 / 8 streams in one run, 1.00x / 0.98x with u8 in the next): OpenVINO's default stays.
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
        """Device properties of the pipeline: those given."""
        chosen = {
            "CPU_RUNTIME_CACHE_CAPACITY": self.cpu_runtime_cache,
            "INFERENCE_NUM_THREADS": self.inference_threads,
            "KV_CACHE_PRECISION": self.kv_cache_precision,
            "INFERENCE_PRECISION_HINT": self.inference_precision,
            "DYNAMIC_QUANTIZATION_GROUP_SIZE": self.dynamic_quantization_group_size,
        }
        return {name: value for name, value in chosen.items() if value is not None}

    def process(self) -> ProcessSettings:
        """How every model's process is started and watched (the embedding, rerank and speech models' too)."""
        return ProcessSettings(self.device, self.stall_timeout_s, self.heartbeat_timeout_s, self.properties())

    def scheduler(self, model_dir: Path) -> dict[str, object]:
        """SchedulerConfig attributes for the model in ``model_dir`` (the stream interval is the server's)."""
        blocks = self.kv_cache_blocks or kv_blocks(
            model_dir, self.cache_size_gb, self.kv_cache_precision or DEFAULT_KV_PRECISION
        )
        cache = {"cache_size": 0, "num_kv_blocks": blocks} if blocks else {"cache_size": 1}
        tokens = self.step_tokens()
        if not self.dynamic_split_fuse:
            # Unsplit, a prompt must fit in one step: openvino-genai fails the step (every request's) on a longer
            # one. As vLLM does without chunked prefill, a step then takes the model's whole context.
            with contextlib.suppress(EngineError):
                tokens = max(tokens, _max_model_len(model_dir))
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
    per_value, per_head = KV_BYTES[precision]
    block_bytes = KV_BLOCK_TOKENS * layers * 2 * kv_heads * (head_dim * per_value + per_head)  # keys and values
    if block_bytes <= 0:
        return None
    blocks = max(1, int((size_gb or 1.0) * 2**30 // block_bytes))
    return blocks if size_gb is not None else min(blocks, AUTO_MAX_KV_BLOCKS)


class Engine(Supervised):
    """One model served by a ContinuousBatchingPipeline in its own process; requests share its batches.

    A ``service.workers.Served``: the server sees its process as it sees a pipeline's.

    The tokenizer lives here too (chat templates, prompt encoding, logprob
    tokens); the engine process detokenises the output, keeping the special
    tokens of the ``markup`` that the model's output parsers read (a function
    of the chat template's renderer, by which the parsers are found).

    The engine supervises its process: if it dies, or makes no progress for
    ``stall_timeout_s`` while requests wait on it (it is then killed), the
    requests it held fail with EngineUnavailable, a new process is started
    (again and again, with growing pauses, until one loads), and meanwhile
    ``submit`` raises EngineUnavailable. Listeners given to ``watch`` hear
    when it goes down and comes back.
    """

    def __init__(
        self,
        name: str,
        model_dir: Path,
        settings: EngineSettings,
        draft_dir: Path | None = None,
        prompt_lookup: bool = False,
        chat_template: Path | None = None,
        markup: Callable[[TemplateRenderer], tuple[str, ...]] = lambda renderer: (),
        meter: MeterFactory | None = None,
        adapters: tuple[LoraAdapter, ...] = (),
    ) -> None:
        """Load the tokenizer and start the engine process (blocking until its pipeline is compiled).

        ``meter`` makes each generation's Meter (service.observability.metrics.GenerationMeter); None: unmetered.
        ``adapters``: the LoRA adapters (checked) a request may run with (``submit(adapter=...)``).
        """
        self.name = name
        self._meter = meter
        self.model_dir = model_dir
        self.draft_dir = draft_dir
        self.settings = settings
        started = time.monotonic()
        log.info("loading model %r from %s", name, model_dir)
        if draft_dir is not None:
            log.info("loading draft model for %r from %s", name, draft_dir)
        # Chat templates (and the template's text) come from openvino_genai's
        # Tokenizer; encoding and decoding go through the faster codec.
        self._tokenizer = ov_genai.Tokenizer(str(model_dir), INFERENCE_NUM_THREADS=1, ENABLE_CPU_PINNING=False)
        template = find_chat_template(model_dir, self._tokenizer, chat_template)
        self._template = TemplateRenderer(self._tokenizer, template, model_dir)
        self._codec = TokenCodec(model_dir)
        self.defaults = model_defaults(model_dir, self._tokenizer.get_eos_token_id())
        self.max_model_len = _max_model_len(model_dir)
        self.vocab_size = _vocab_size(model_dir, self._tokenizer)
        # Its fill-in-the-middle tokens, if it has a code family's (a completion's suffix needs them).
        self.infill = find_infill_tokens(
            self._codec.token_id, lambda text, specials: self._codec.encode(text, add_special_tokens=specials)
        )
        self._grammar = GrammarChecker(model_dir, timeout=settings.grammar_timeout_s)
        scheduler = settings.scheduler(model_dir)
        # KV cache capacity in tokens, when it is set in blocks (0: sized in bytes, known only to the pipeline)
        self.kv_cache_tokens = int(scheduler.get("num_kv_blocks", 0)) * KV_BLOCK_TOKENS  # type: ignore[call-overload]
        self._spec = WorkerSpec(
            model_dir,
            draft_dir,
            settings.device,
            scheduler,
            prompt_lookup,
            flush_interval=settings.stream_interval_ms / 1000,
            update_rate=settings.stream_updates_per_s,
            properties=settings.properties(),
            markup=markup(self._template),
            adapters=adapters,
        )
        self.adapters = {adapter.name: adapter for adapter in adapters}
        self._mailboxes: dict[int, Mailbox] = {}
        self._stats: dict[int, asyncio.Future[EngineStats]] = {}
        self._changing: dict[int, asyncio.Future[str | None]] = {}  # adapter changes under way, by token
        self._ids = itertools.count()
        # WorkerProcess looked up at each start, so that tests can hold a restart back.
        self._supervisor = Supervisor(
            f"the engine of {name!r}",
            lambda: WorkerProcess(self._spec, name, "engine"),
            self._dispatch,
            self._lost,
            waiting=lambda: sum(not mailbox.ended for mailbox in self._mailboxes.values()),
            stall_timeout_s=settings.stall_timeout_s,
            heartbeat_timeout_s=settings.heartbeat_timeout_s,
        )
        self.handovers = 0  # Outcomes messages received from the engine process (see --stream-interval-ms)
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

    @property
    def chat_template(self) -> ChatTemplate:
        """The model's chat template(s) and where they were found."""
        return self._template.template

    @property
    def template_engine(self) -> str:
        """What renders the chat template: "minja" (openvino_genai's) or "jinja2" (a template minja cannot parse)."""
        return self._template.engine

    @property
    def template_engine_reason(self) -> str:
        """Why that engine: what the load-time probes of the template found (template_probe.py)."""
        return self._template.engine_reason

    @property
    def message_form(self) -> MessageForm:
        """How the template wants a call turn's null content and arguments (template_probe.MessageForm)."""
        return self._template.message_form

    def render_chat(
        self,
        history: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        context: dict[str, Any],
        *,
        add_generation_prompt: bool = True,
    ) -> str:
        """The conversation rendered by the model's chat template, ready for the assistant's turn (unless not
        ``add_generation_prompt``: then it ends with the last message, as the tokenize endpoint may ask).

        Raises TemplateError (a bounded message) when the template refuses the conversation.
        """
        return self._template.render(history, tools, context, add_generation_prompt=add_generation_prompt)

    async def check_constraint(self, constraint: OutputConstraint) -> str | None:
        """Why this model's engine cannot run ``constraint`` (the grammar compiler's words), or None.

        Compiles it with this model's tokenizer in a process of its own (see grammar.py): the event
        loop and the engine's steps go on meanwhile.
        """
        return await self._grammar.check(constraint)

    def close(self) -> None:
        """Cancel every request and end the engine process."""
        if self._supervisor.closed:
            return
        self._grammar.close()
        self._template.close()
        self._supervisor.close()

    def end_requests(self, reason: str) -> None:
        """End every open request with EngineUnavailable(``reason``): its caller gets a retriable error now.

        For a shutdown past its grace period: the streams still running end
        with a status that says why, instead of a connection cut under them.
        """
        error = EngineUnavailable(reason)
        for mailbox in self._mailboxes.values():
            if not mailbox.ended:
                mailbox.put(error)

    def encode(self, text: str, *, add_special_tokens: bool) -> list[int]:
        """Token ids of ``text``."""
        return self._codec.encode(text, add_special_tokens=add_special_tokens)

    def min_tokens(self, characters: int) -> int:
        """A lower bound on the tokens a text of this many characters encodes to (a length check before the work).

        Characters / the longest token's characters, halved for normalisers that compose characters.
        """
        return characters // (2 * self._codec.max_token_chars)

    def token_texts(self, token_ids: list[int]) -> list[str]:
        """Each token's own text, special tokens kept (for logprobs and tokenize's token strings)."""
        return self._codec.token_texts(token_ids)

    def decode(self, token_ids: list[int], *, skip_special_tokens: bool = True) -> str:
        """Text of ``token_ids``."""
        return self._codec.decode_windows([token_ids], skip_special_tokens)[0]

    async def stats(self) -> EngineStats:
        """What the engine process holds now (running requests, KV cache use)."""
        token = next(self._ids)
        future: asyncio.Future[EngineStats] = asyncio.get_running_loop().create_future()
        self._stats[token] = future
        self._send(QueryStats(token))
        return await future

    async def set_adapters(self, adapters: tuple[LoraAdapter, ...]) -> None:
        """Serve these (checked) LoRA adapters from now on: the engine builds its pipeline again once the requests
        running end (those arriving meanwhile wait); EngineError if it cannot. A restarted engine keeps them."""
        if not self._supervisor.started or not self.up:
            raise self._supervisor.unavailable()
        token = next(self._ids)
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._changing[token] = future
        self._send(SetAdapters(token, adapters))
        if (error := await future) is not None:
            raise EngineError(f"the engine could not take the adapters: {error}")
        self.adapters = {adapter.name: adapter for adapter in adapters}
        self._spec = dataclasses.replace(self._spec, adapters=adapters)

    async def load(self) -> Load:
        """What the engine process runs and holds now (its KV cache too)."""
        stats = await self.stats()
        cache = KvCacheLoad(stats.cache_usage / 100, stats.kv_cache_bytes, self.kv_cache_tokens)
        return Load(stats.engine_requests, stats.waiting, cache)

    def submit(
        self,
        prompt_ids: list[int],
        params: SamplingParams,
        *,
        skip_special_tokens: bool = True,
        images: PromptImages | None = None,
        scoring: Scoring | None = None,
        adapter: str = "",
    ) -> Generation:
        """Send a request to the engine now; iterate the Generation for its output, and close it when done.

        With ``images``, the engine gets their pixels and the prompt as text; ``prompt_ids`` is then the prompt as
        the model sees it (image tokens included), for counts. Submitting before the caller sends anything of its
        own (a role chunk, the Responses API's first events) lets the engine start meanwhile. ``scoring``: the
        logprobs the sampler does not give (alternatives, the prompt's), computed by the model's scoring copy.
        ``adapter``: the LoRA adapter it runs with ("": the base model).
        """
        if adapter and scoring is not None:  # the scoring copy has the base model's weights only
            raise EngineRejected("prompt logprobs and top alternatives are not served for a LoRA adapter's requests")
        if not self._supervisor.started or not self.up:
            raise self._supervisor.unavailable()
        request_id = next(self._ids)
        mailbox = Mailbox()
        self._mailboxes[request_id] = mailbox
        try:
            pixels, text = (images.pixels, images.text) if images else ((), "")
            self._send(Submission(request_id, prompt_ids, params, skip_special_tokens, pixels, text, scoring, adapter))
        except BaseException:
            del self._mailboxes[request_id]
            raise
        meter = self._meter(self.name, len(prompt_ids)) if self._meter is not None else None
        return Generation(mailbox, functools.partial(self._release, request_id), meter)

    def _release(self, request_id: int, cancel: bool) -> None:
        """Forget a request's mailbox; cancel it in the engine if it is still running there."""
        del self._mailboxes[request_id]
        if cancel and self.up:
            with contextlib.suppress(OSError):  # the process just died: nothing left to cancel
                self._send(Cancel(request_id))

    def _send(self, message: object) -> None:
        self._supervisor.send(message)

    def _dispatch(self, message: object) -> None:
        match message:
            case Outcomes(items):
                self.handovers += 1
                for request_id, outcome in items:
                    mailbox = self._mailboxes.get(request_id)
                    if mailbox is not None:
                        mailbox.put(outcome)
            case StatsReport(token, stats):
                future = self._stats.pop(token, None)
                if future is not None and not future.done():
                    future.set_result(stats)
            case AdaptersSet(token, error):
                changing = self._changing.pop(token, None)
                if changing is not None and not changing.done():
                    changing.set_result(error)

    def _lost(self, error: EngineUnavailable) -> None:
        """The engine process ended: every request it held fails with ``error`` (retriable)."""
        for mailbox in self._mailboxes.values():
            if not mailbox.ended:
                mailbox.put(error)
        waiting: list[asyncio.Future[Any]] = [*self._stats.values(), *self._changing.values()]
        for future in waiting:
            if not future.done():
                future.set_exception(error)
        self._stats.clear()
        self._changing.clear()


def _vocab_size(model_dir: Path, tokenizer: ov_genai.Tokenizer) -> int:
    """Token ids the model knows: config.json's vocab_size, else the tokenizer's vocabulary."""
    config = model_files.text_config(model_dir)
    if isinstance(config.get("vocab_size"), int):
        return int(config["vocab_size"])
    return len(tokenizer.get_vocab())


def _max_model_len(model_dir: Path) -> int:
    """The model's context length, from config.json (max_position_embeddings and kin)."""
    config = model_files.text_config(model_dir)
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        if isinstance(config.get(key), int):
            return int(config[key])
    raise EngineError(f"{model_dir / 'config.json'} does not say the model's maximum length")

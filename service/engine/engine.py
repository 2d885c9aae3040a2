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
from pathlib import Path
from typing import Any

import openvino_genai as ov_genai

from ovserve.service import model_files
from ovserve.service.engine import salting
from ovserve.service.engine.adapters import LoraAdapter
from ovserve.service.engine.chat_template import ChatTemplate, TemplateRenderer, find_chat_template
from ovserve.service.engine.core import Submission
from ovserve.service.engine.generation import Generation, Mailbox, MeterFactory
from ovserve.service.engine.generation_config import model_defaults
from ovserve.service.engine.grammar import GrammarChecker
from ovserve.service.engine.infill import find_infill_tokens
from ovserve.service.engine.messages import AdaptersSet, Cancel, Outcomes, QueryStats, SetAdapters, StatsReport
from ovserve.service.engine.sampling import OutputConstraint, SamplingParams
from ovserve.service.engine.scoring import Scoring
from ovserve.service.engine.settings import KV_BLOCK_TOKENS, EngineSettings, max_model_len
from ovserve.service.engine.template_probe import MessageForm
from ovserve.service.engine.types import EngineStats, PromptImages
from ovserve.service.engine.vocabulary import grammar_spellings
from ovserve.service.engine.worker import WorkerSpec
from ovserve.service.workers.codec import TokenCodec
from ovserve.service.workers.errors import EngineError, EngineRejected, EngineUnavailable
from ovserve.service.workers.process import WorkerProcess
from ovserve.service.workers.served import KvCacheLoad, Load
from ovserve.service.workers.supervisor import Supervised, Supervisor

log = logging.getLogger(__name__)


class Engine(Supervised):
    """One model served by a ContinuousBatchingPipeline in its own process; requests share its batches.

    A ``ovserve.service.workers.Served``: the server sees its process as it sees a pipeline's.

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

        ``meter`` makes each generation's Meter (ovserve.service.observability.metrics.GenerationMeter); None:
        unmetered.
        ``adapters``: the LoRA adapters (checked) a request may run with (``submit(adapter=...)``).
        """
        self.name = name
        self._meter = meter
        self.model_dir = model_dir
        self.draft_dir = draft_dir
        chosen = settings.for_model(model_dir)  # the precision measured best where none is given (precision.py)
        if chosen.inference_precision != settings.inference_precision:
            log.info(
                "model %r computes in %s: its int8/int4 weights decode faster so on this CPU (--optimize-for %s; "
                "--inference-precision chooses otherwise)", name, chosen.inference_precision, settings.optimize_for,
            )  # fmt: skip
        settings = self.settings = chosen
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
        if salting.penalised(self.defaults.repetition_penalty) and settings.isolates_tenants:
            # Every request that keeps the model's penalty has its prompt ids read by the sampler's penalty, which
            # no salted id passes (salting.py): on the biased lane each would decode outside the batch. Batched
            # with no prefix reuse is the cheaper way to keep API keys' prompts apart.
            log.warning(
                "model %r: its generation_config.json sets repetition_penalty %s, which keeps prompts' token ids "
                "out of per-key prefix-cache namespaces: with API keys it serves without prefix caching "
                "(--shared-prefix-cache for a single tenant)",
                name, self.defaults.repetition_penalty,
            )  # fmt: skip
            settings = dataclasses.replace(settings, enable_prefix_caching=False)
            self.settings = settings
        self.max_model_len = max_model_len(model_dir)
        self.vocab_size = _vocab_size(model_dir, self._tokenizer)
        # The characters its vocabulary writes with other pieces under a grammar (a byte-fallback SentencePiece's
        # newline): the markup grammars accept those pieces too.
        self.grammar_spellings = grammar_spellings(self._tokenizer)
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
            properties=settings.engine_properties(),
            markup=markup(self._template),
            adapters=adapters,
            # A vision model's pipeline takes text, which cannot be salted: isolated, it caches no prefixes.
            salted=settings.enable_prefix_caching
            and not (settings.shared_prefix_cache and not salting.takes_token_ids(model_dir)),
        )
        # Whether prompts may reach a prefix cache kept in namespaces (the worker also turns it off for a draft
        # model and for adapters): a penalised prompt must not (ovserve.service.api.prefix_isolation).
        self._namespaced = self._spec.salted and draft_dir is None and salting.takes_token_ids(model_dir)
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

    def keeps_apart(self, tenant: str, cache_salt: str) -> bool:
        """Whether a request of ``tenant`` with ``cache_salt`` reaches a prefix cache kept in namespaces in one of
        its own (see GenerationEngine; none while it serves adapters: such a pipeline caches no prefixes)."""
        owner = "" if self.settings.shared_prefix_cache else tenant
        return self._namespaced and not self.adapters and bool(owner or cache_salt)

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
        tenant: str = "",
        cache_salt: str = "",
    ) -> Generation:
        """Send a request to the engine now; iterate the Generation for its output, and close it when done.

        With ``images``, the engine gets their pixels and the prompt as text; ``prompt_ids`` is then the prompt as
        the model sees it (image tokens included), for counts. Submitting before the caller sends anything of its
        own (a role chunk, the Responses API's first events) lets the engine start meanwhile. ``scoring``: the
        logprobs the sampler does not give (alternatives, the prompt's), computed by the model's scoring copy.
        ``adapter``: the LoRA adapter it runs with ("": the base model). ``tenant`` (its API key's) and
        ``cache_salt`` choose the prefix-cache namespace it reads and writes (salting.py).
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
            space = salting.namespace(tenant, cache_salt, adapter, isolated=not self.settings.shared_prefix_cache)
            self._send(
                Submission(request_id, prompt_ids, params, skip_special_tokens, pixels, text, scoring, adapter, space)
            )
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

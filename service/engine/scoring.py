"""Log probabilities from the served model's own logits: each token's, its rank, and the most likely alternatives.

OpenVINO GenAI 2026.4's sampler returns only the chosen token's logprob (``GenerationConfig.logprobs`` > 1 is
taken as 1), and its ``echo`` the prompt tokens' logprobs without alternatives. So a request that asks for more
(alternatives, or its prompt scored) is scored by a second copy of the model: the same IR compiled with the
OpenVINO runtime, stateful (its KV cache lives in the infer request), compiled at the first request that asks
(a request that does not ask costs nothing). Each scored sequence is fed its prompt, then its output tokens as the
pipeline hands them over; the logits of every position give the distribution of the next token.

The distribution is the model's raw one: log-softmax of its logits, before temperature, penalties, top-k/top-p or
grammar masks (what vLLM returns by default, and what GenAI's sampler reports for the chosen token: measured
equal within 1e-3 on tiny-chat, float32). Prompts are fed in chunks of CHUNK_TOKENS, so a position's logits row
(vocabulary-sized) is the largest thing held per chunk, never a whole prompt's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ovserve.service.engine.settings import DEFAULT_KV_PRECISION
from ovserve.service.engine.types import TokenScores

log = logging.getLogger(__name__)

CHUNK_TOKENS = 128  # tokens per forward pass: bounds the logits held at once (128 x vocabulary floats)
MAX_ALTERNATIVES = 20  # OpenAI's top_logprobs limit, and vLLM's default max_logprobs


@dataclass(frozen=True)
class Scoring:
    """What a request asks the scorer for; picklable, it crosses into the engine process in the Submission."""

    top: int = 0  # alternatives per position, 0..MAX_ALTERNATIVES (the chosen token's logprob is always scored)
    prompt: bool = False  # score the prompt's tokens (echo with logprobs, prompt_logprobs)
    output: bool = True  # score the output tokens (alternatives asked); else the sampler's logprobs stand
    generate: bool = True  # False: nothing is generated (max_tokens 0), the answer is the prompt's scores


def scoring_properties(pipeline: dict[str, object]) -> dict[str, object]:
    """The scoring copy's device properties: the pipeline's, with its KV cache in DEFAULT_KV_PRECISION whatever
    the pipeline's (always on a CPU, where EngineSettings.engine_properties names one).

    Its cache lives for one request, and a u8 cache moves logprobs by more than 2e-3 (measured on tiny-chat
    against lm-eval's oracle). Told rather than left to the CPU plugin, whose own choice is u8 for the Qwen2.5
    shapes on a Xeon with AMX (f16 for the bundled tiny models).
    """
    if "KV_CACHE_PRECISION" not in pipeline:
        return dict(pipeline)
    return {**pipeline, "KV_CACHE_PRECISION": DEFAULT_KV_PRECISION}


class ScoringModel:
    """The model's IR compiled once more with the OpenVINO runtime, to read full logits; compiled on first use."""

    def __init__(self, model_dir: Path, device: str, properties: dict[str, object]) -> None:
        self._path = model_dir / "openvino_model.xml"
        self._device = device
        self._properties = properties
        self._compiled: Any = None
        self._inputs: frozenset[str] = frozenset()
        # The scoring lane's thread and the engine loop (the biased lane, biased_lane.py) may both ask first.
        self._compiling = threading.Lock()

    def _compile(self) -> Any:
        with self._compiling:
            return self._compiled_model()

    def _compiled_model(self) -> Any:
        if self._compiled is None:
            import openvino as ov

            if not self._path.is_file():
                raise ScoringUnavailable(f"{self._path.name} is missing: this model's logits cannot be read")
            core = ov.Core()
            model = core.read_model(self._path)
            self._inputs = frozenset(name for port in model.inputs for name in port.get_names())
            if not model.get_sinks() or "input_ids" not in self._inputs:
                # An IR exported without state (past_key_values as inputs) would need its KV cache carried by
                # hand; optimum-intel exports stateful IRs, which are what the pipeline itself serves.
                raise ScoringUnavailable("the model's IR is not stateful (export it with optimum-intel's defaults)")
            log.info("compiling a scoring copy of %s for logprobs requests", self._path.parent.name)
            self._compiled = core.compile_model(model, self._device, self._properties)
        return self._compiled

    def sequence(self) -> ScoredSequence:
        """A new sequence to feed tokens to, from the start (its own KV cache)."""
        return ScoredSequence(self._compile().create_infer_request(), self._inputs)


class ScoringUnavailable(Exception):
    """The model cannot be scored this way (the request that asked is refused with this reason)."""


class ScoredSequence:
    """One token sequence fed to the scoring model, position by position; ``feed`` scores the tokens it is given."""

    def __init__(self, request: Any, inputs: frozenset[str]) -> None:
        self._request = request
        self._inputs = inputs
        self._length = 0  # tokens fed so far
        self._next: np.ndarray | None = None  # logits of the last position fed: the next token's distribution
        self._running = False  # a forward pass started (``start``) and not yet collected (``ready``)
        request.reset_state()

    def fork(self) -> ScoredSequence:
        """A copy at the same position (its own KV cache): n choices share one scored prompt."""
        copy = ScoredSequence(self._request.get_compiled_model().create_infer_request(), self._inputs)
        import openvino as ov

        states = {state.name: state for state in copy._request.query_state()}
        for state in self._request.query_state():
            states[state.name].state = ov.Tensor(np.array(state.state.data, copy=True))
        copy._length, copy._next = self._length, self._next
        return copy

    @property
    def next_logits(self) -> np.ndarray | None:
        """The logits of the next token (float32, vocabulary-sized); None before any token was fed."""
        return self._next

    def extend(self, tokens: Sequence[int]) -> None:
        """Append ``tokens`` without scoring them: only the next token's logits are kept (the biased lane's
        decoding, which needs no score per position and so runs on an IR that keeps the last position alone)."""
        for start in range(0, len(tokens), CHUNK_TOKENS):
            self.start(tokens[start : start + CHUNK_TOKENS])
            self.ready(wait=True)

    def start(self, chunk: Sequence[int]) -> None:
        """Begin appending ``chunk`` (at most CHUNK_TOKENS) and return at once: OpenVINO runs the forward pass in
        its own threads, without the GIL, while the caller goes on (the engine's pipeline steps). ``ready`` says
        when it is done; only then may the sequence be fed, forked or read."""
        assert not self._running, "a forward pass is still running"
        self._request.start_async(self._values(list(chunk)))
        self._length += len(chunk)
        self._running = True

    def ready(self, *, wait: bool = False) -> bool:
        """Whether the last ``start`` has finished (its last position's logits are then ``next_logits``);
        ``wait``: block until it has."""
        if self._running and (wait or self._request.wait_for(0)):
            if wait:
                self._request.wait()
            self._next = np.asarray(self._request.get_output_tensor(0).data[0], dtype=np.float32)[-1].copy()
            self._running = False
        return not self._running

    def feed(self, tokens: Sequence[int], top: int) -> TokenScores:
        """Score ``tokens`` as the next ones of the sequence and append them: each one's logprob and rank given
        those before it, and the ``top`` most likely tokens at its position. The sequence's first token has no
        distribution before it: NaN, rank 0, no alternatives."""
        scores = TokenScores()
        for start in range(0, len(tokens), CHUNK_TOKENS):
            chunk = list(tokens[start : start + CHUNK_TOKENS])
            logits = self._forward(chunk)
            # Row i predicts token i+1 of the chunk; the row before the chunk predicts its first token.
            rows = logits[:-1] if self._next is None else np.concatenate([self._next[np.newaxis], logits[:-1]])
            if self._next is None:
                scores.logprobs.append(float("nan"))
                scores.ranks.append(0)
                scores.top.append(())
            _score_rows(rows, np.asarray(chunk[len(chunk) - len(rows) :]), top, scores)
            self._next = logits[-1].copy()
        return scores

    def _forward(self, chunk: list[int]) -> np.ndarray:
        """The logits (float32) of every position of ``chunk`` fed after the tokens before it."""
        logits = self._infer(chunk)
        if logits.shape[0] != len(chunk):  # an IR that keeps the last position's logits alone cannot score a prompt
            raise ScoringUnavailable(f"the model's IR returns logits for {logits.shape[0]} of {len(chunk)} positions")
        return logits

    def _infer(self, chunk: list[int]) -> np.ndarray:
        """The IR's logits (float32) after feeding ``chunk``: a row per position, or the last position's alone."""
        self._request.infer(self._values(chunk))
        self._length += len(chunk)
        return np.asarray(self._request.get_output_tensor(0).data[0], dtype=np.float32)  # the IR's one output

    def _values(self, chunk: list[int]) -> dict[str, np.ndarray]:
        """The IR's inputs for feeding ``chunk`` after the tokens fed so far."""
        count = len(chunk)
        values: dict[str, np.ndarray] = {
            "input_ids": np.array([chunk], dtype=np.int64),
            "attention_mask": np.ones((1, self._length + count), dtype=np.int64),
        }
        if "position_ids" in self._inputs:
            values["position_ids"] = np.arange(self._length, self._length + count, dtype=np.int64)[np.newaxis]
        if "beam_idx" in self._inputs:
            values["beam_idx"] = np.zeros(1, dtype=np.int32)
        return {name: value for name, value in values.items() if name in self._inputs}


def _score_rows(rows: np.ndarray, chosen: np.ndarray, top: int, into: TokenScores) -> None:
    """Append each row's chosen token's logprob and rank, and its ``top`` alternatives, to ``into``."""
    if not len(rows):
        return
    peak = rows.max(axis=1, keepdims=True)
    # log-sum-exp in float64: a 150,000-word vocabulary sums many small terms
    normaliser = peak[:, 0].astype(np.float64) + np.log(np.exp(rows - peak).sum(axis=1, dtype=np.float64))
    positions = np.arange(len(rows))
    chosen_logits = rows[positions, chosen]
    into.logprobs += (chosen_logits - normaliser).tolist()
    into.ranks += ((rows > chosen_logits[:, np.newaxis]).sum(axis=1) + 1).tolist()
    if top <= 0:
        into.top += [()] * len(rows)
        return
    best = np.argpartition(-rows, top - 1, axis=1)[:, :top]
    for row, ids, total in zip(rows, best, normaliser, strict=True):
        # Most likely first; equal logits by token id, so the order is the same on every run.
        ordered = sorted(ids.tolist(), key=lambda token: (-row[token], token))
        into.top.append(tuple((token, float(row[token] - total)) for token in ordered))

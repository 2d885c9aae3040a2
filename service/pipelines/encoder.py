"""An encoder's IR run directly: token ids in, pooled vectors or relevance scores out, many requests' inputs per
call.

openvino-genai's TextEmbeddingPipeline takes only text: it tokenises every input again (the server already did,
to count the tokens and refuse one too long) and cannot take token-id inputs as they are. Its per-call cost is
mostly that tokenizer (an OpenVINO model of its own): on tiny-embed one text alone cost 3.7 ms of CPU through the
pipeline against 2.1 ms for the model's own inference. So an encoder IR whose inputs are the usual ones (ids,
attention mask, token types, positions) and whose output is the token states runs here, on ids the server made
once, pooled and normalised as the pipeline's ``Config`` would (tests compare the two on every pooling). A
one-label cross-encoder runs here too: TextRerankPipeline broadcasts one query over its documents in a tokenizer that
crashes on short documents (see worker.RerankRunner), so it could only score a document per call; here the pairs of
every waiting request share one. Any other IR stays on its pipeline (``direct_encoder`` says which).

Batches are planned by tokens (text-embeddings-inference's way): inputs sorted by length, each infer call at most
``max_batch_tokens`` padded tokens, so one long input is not padded onto many short ones.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ovserve.service.pipelines.kinds import PipelineKind

# The IR inputs this module knows how to fill (optimum-intel's feature-extraction exports).
KNOWN_INPUTS = frozenset({"input_ids", "attention_mask", "token_type_ids", "position_ids"})
POOLINGS = ("mean", "cls", "last_token")


@functools.cache
def _core() -> object:
    import openvino as ov

    return ov.Core()


def direct_encoder(model_dir: Path, kind: PipelineKind) -> bool:
    """Whether ``model_dir``'s IR can run here: known inputs (ids among them), no state, and one output: token
    states [batch, tokens, width] for an embedding model, one logit per row [batch, 1] for a cross-encoder."""
    try:
        model = _core().read_model(str(model_dir / "openvino_model.xml"))  # type: ignore[attr-defined]
    except Exception:  # unreadable here: the pipeline will say why when it loads
        return False
    names = {name for port in model.inputs for name in port.get_names()}
    if not ("input_ids" in names and all(port.get_names() & KNOWN_INPUTS for port in model.inputs)):
        return False
    if model.get_sinks() or len(model.outputs) != 1:  # a stateful IR keeps a cache between calls
        return False
    shape = model.outputs[0].get_partial_shape()
    if not shape.rank.is_static:
        return False
    if kind is PipelineKind.EMBED:
        return shape.rank.get_length() == 3
    return (
        kind is PipelineKind.RERANK
        and shape.rank.get_length() == 2
        and shape[1].is_static
        and shape[1].get_length() == 1
    )


def plan(lengths: Sequence[int], max_tokens: int) -> list[list[int]]:
    """The infer calls for inputs of ``lengths``: indexes, shortest first, each call's padded size (count x
    longest) at most ``max_tokens`` (an input longer than that alone)."""
    calls: list[list[int]] = []
    for index in sorted(range(len(lengths)), key=lengths.__getitem__):
        if calls and (len(calls[-1]) + 1) * lengths[index] <= max_tokens:
            calls[-1].append(index)
        else:
            calls.append([index])
    return calls


def pool(states: np.ndarray, lengths: np.ndarray, pooling: str) -> np.ndarray:
    """One vector per row of right-padded token ``states`` [batch, tokens, width]: the mean of a row's real
    tokens, its first, or its last."""
    if pooling == "cls":
        return states[:, 0]
    if pooling == "last_token":
        return states[np.arange(len(states)), lengths - 1]
    mask = (np.arange(states.shape[1])[None, :] < lengths[:, None]).astype(states.dtype)
    return (states * mask[..., None]).sum(axis=1) / np.maximum(lengths, 1)[:, None].astype(states.dtype)


def normalized(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to unit length (a zero row stays zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class EncoderModel:
    """An encoder IR compiled for ``device``: token-id rows in, pooled vectors (``embed``) or relevance scores
    (``score``) out, in calls of at most ``max_batch_tokens`` padded tokens."""

    def __init__(
        self,
        model_dir: Path,
        device: str = "CPU",
        properties: dict[str, object] | None = None,
        max_batch_tokens: int = 8192,
    ) -> None:
        model = _core().read_model(str(model_dir / "openvino_model.xml"))  # type: ignore[attr-defined]
        # Each input by the name this module fills it under (the IR may give a port several names).
        self._inputs = {next(iter(port.get_names() & KNOWN_INPUTS)): port.get_any_name() for port in model.inputs}
        compiled = _core().compile_model(model, device, properties or {})  # type: ignore[attr-defined]
        self._request = compiled.create_infer_request()
        self._max_tokens = max_batch_tokens

    def embed(self, rows: Sequence[Sequence[int]], pooling: str, normalize: bool) -> np.ndarray:
        """One float32 vector per row of token ids, in order: its token states pooled (``POOLINGS``), then
        scaled to unit length if ``normalize``."""
        if pooling not in POOLINGS:
            raise ValueError(f"pooling {pooling!r}: one of {', '.join(POOLINGS)}")
        vectors = self._forward(rows, None, lambda states, lengths: pool(states, lengths, pooling))
        return normalized(vectors) if normalize else vectors

    def score(self, rows: Sequence[Sequence[int]], types: Sequence[Sequence[int]]) -> np.ndarray:
        """A cross-encoder's relevance of each (query, document) row, with its token types: the sigmoid of its
        one logit (what TextRerankPipeline reports), in order."""
        logits = self._forward(rows, types, lambda states, lengths: states[:, 0])
        return 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))

    def _forward(
        self,
        rows: Sequence[Sequence[int]],
        types: Sequence[Sequence[int]] | None,
        reduce: Callable[[np.ndarray, np.ndarray], np.ndarray],
    ) -> np.ndarray:
        lengths = [len(row) for row in rows]
        if not rows or min(lengths) < 1:
            raise ValueError("every input needs at least one token")
        out: np.ndarray | None = None
        for call in plan(lengths, self._max_tokens):
            call_types = [types[index] for index in call] if types is not None else None
            reduced = reduce(*self._run([rows[index] for index in call], call_types))
            if out is None:
                out = np.empty((len(rows), *reduced.shape[1:]), dtype=np.float32)
            out[call] = reduced
        assert out is not None
        return out

    def _run(self, rows: list[Sequence[int]], types: list[Sequence[int]] | None) -> tuple[np.ndarray, np.ndarray]:
        """The IR's output for right-padded ``rows``, and their lengths."""
        lengths = np.array([len(row) for row in rows])
        width = int(lengths.max())
        ids, token_types = np.zeros((len(rows), width), dtype=np.int64), np.zeros((len(rows), width), dtype=np.int64)
        for index, row in enumerate(rows):
            ids[index, : len(row)] = row
            if types:
                token_types[index, : len(row)] = types[index]
        feeds = {
            "input_ids": ids,
            "attention_mask": (np.arange(width)[None, :] < lengths[:, None]).astype(np.int64),
            "token_type_ids": token_types,
            "position_ids": np.broadcast_to(np.arange(width, dtype=np.int64), ids.shape).copy(),
        }
        self._request.infer({port: feeds[name] for name, port in self._inputs.items()})
        return np.asarray(self._request.get_output_tensor(0).data, dtype=np.float32), lengths

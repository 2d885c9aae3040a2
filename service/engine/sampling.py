"""The engine's request type: how to sample one request, as plain data.

The API layer builds a ``SamplingParams`` from a request (see
service/api/generation.py); only the engine process turns it into an
``openvino_genai.GenerationConfig`` (service/engine/generation_config.py).
Plain frozen dataclasses pickle as they are, so a request crosses into the
engine process without translation, and ``dataclasses.replace`` derives
variants (one seed per fanned-out choice, say).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace


@dataclass(frozen=True)
class OutputConstraint:
    """A grammar the output must follow, compiled by the engine (XGrammar inside openvino_genai).

    ``kind`` names the form of ``value``: ``grammar`` (EBNF), ``regex``, or
    ``structural_tags_config`` (an XGrammar structural-tag JSON document).
    ``field`` is the request field that asked for it, named in the error if
    the grammar engine refuses it.
    """

    kind: str
    value: str
    field: str


@dataclass(frozen=True)
class SamplingParams:
    """How the engine samples one request; None means the engine's own default.

    The names are GenerationConfig's, except ``seed`` (``rng_seed``) and
    ``constraint`` (``structured_output_config``).
    """

    max_new_tokens: int | None = None
    do_sample: bool | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    repetition_penalty: float | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    no_repeat_ngram_size: int | None = None
    seed: int | None = None
    # Beam search (best_of) and parallel sampling (n).
    num_beams: int | None = None
    num_beam_groups: int | None = None
    num_return_sequences: int | None = None
    length_penalty: float | None = None
    diversity_penalty: float | None = None
    # Where to stop.
    stop_strings: frozenset[str] = frozenset()
    include_stop_str_in_output: bool | None = None
    ignore_eos: bool | None = None
    eos_token_id: int | None = None
    stop_token_ids: frozenset[int] = frozenset()
    min_new_tokens: int | None = None  # EOS and stop_token_ids cannot end the output before this many tokens
    # Log probability of each chosen token (0: none).
    logprobs: int = 0
    # Speculative decoding (a draft model) and prompt lookup.
    num_assistant_tokens: int | None = None
    assistant_confidence_threshold: float | None = None
    max_ngram_size: int | None = None
    constraint: OutputConstraint | None = field(default=None)
    # Logit processors openvino-genai has no hook for, served by the biased lane (service/engine/biased_lane.py):
    # (token id, bias) pairs, and each bad word's token sequences (its last token banned after the ones before it).
    logit_bias: tuple[tuple[int, float], ...] = ()
    bad_words: tuple[tuple[int, ...], ...] = ()
    # Decoded on the biased lane to keep its prompt out of the pipeline's prefix cache: a repetition penalty keeps
    # its ids raw, so the pipeline could not keep it apart from other tenants' (ovserve.service.api.prefix_isolation).
    isolated: bool = False

    @property
    def biased(self) -> bool:
        """Whether the request decodes on the biased lane (a logit bias, bad words, or ``isolated``)."""
        return bool(self.logit_bias or self.bad_words or self.isolated)

    def settings(self) -> dict[str, object]:
        """The fields that are set (not None, not empty), by name."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return {name: value for name, value in values.items() if value is not None and value not in (frozenset(), ())}

    @classmethod
    def field_names(cls) -> frozenset[str]:
        """Every field's name."""
        return frozenset(f.name for f in fields(cls))

    def continued(self, written: int, **changes: object) -> SamplingParams:
        """These parameters, ``changes`` applied, for the rest of an output ``written`` tokens long so far (a
        request resumed, a reasoning budget's second phase): ``min_new_tokens`` less what is written (the engine
        refuses a minimum above the maximum)."""
        least = None if self.min_new_tokens is None else max(self.min_new_tokens - written, 0) or None
        return replace(self, min_new_tokens=least, **changes)  # type: ignore[arg-type]

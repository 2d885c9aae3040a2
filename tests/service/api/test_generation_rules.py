"""build_sampling_params without a server: request fields -> SamplingParams, and the violations it names.

The assertions read the GenerationConfig the engine builds from those parameters
(ovserve.service.engine.generation_config), so they check the whole way to the engine.
"""

from __future__ import annotations

from typing import Any

import openvino_genai as ov_genai
import pytest

from ovserve.clients.v1 import chat_pb2, completion_pb2
from ovserve.service.api.generation import (
    DEFAULT_NUM_ASSISTANT_TOKENS,
    MAX_SEED,
    MAX_STOP_STRINGS,
    RULES,
    Budget,
    build_sampling_params,
)
from ovserve.service.engine import SamplingParams
from ovserve.service.engine.generation_config import config_attribute, generation_config
from ovserve.service.errors import MAX_VIOLATIONS_IN_MESSAGE, InvalidArgument
from ovserve.service.models import ModelLimits
from tests.rpc import parse

ENGINE_DEFAULT = ov_genai.GenerationConfig()  # the binding's own defaults (top_k = SIZE_MAX means all tokens)
PLAIN = ModelLimits("m", 100)
DRAFT = ModelLimits("m", 100, has_draft_model=True)
LOOKUP = ModelLimits("m", 100, prompt_lookup=True)
PROMPT_TOKENS = 10  # so there is room for 90 new tokens in a 100-token model

REQUEST_CLASSES = [
    chat_pb2.CreateChatCompletionRequest,
    chat_pb2.StreamChatCompletionRequest,
    completion_pb2.CreateCompletionRequest,
    completion_pb2.StreamCompletionRequest,
]


def build(
    body: dict[str, Any],
    *,
    defaults: dict[str, Any] | None = None,
    limits: ModelLimits = PLAIN,
    max_tokens: int | None = None,
    prompt_tokens: int = PROMPT_TOKENS,
    streaming: bool = False,
    logprobs: int = 0,
    request_class: type = chat_pb2.CreateChatCompletionRequest,
) -> ov_genai.GenerationConfig:
    """The engine's GenerationConfig for an OpenAI-style body (sampling fields only)."""
    params = build_sampling_params(
        parse(request_class, body),
        defaults=SamplingParams(**(defaults or {})),
        limits=limits,
        budget=Budget("max_tokens", max_tokens, prompt_tokens, "messages"),
        streaming=streaming,
        logprobs=logprobs,
    )
    return generation_config(params)


def refused(body: dict[str, Any], **kwargs: Any) -> InvalidArgument:
    """The InvalidArgument ``build`` raises for ``body``."""
    with pytest.raises(InvalidArgument) as caught:
        build(body, **kwargs)
    return caught.value


def fields(error: InvalidArgument) -> list[str]:
    return [violation.field for violation in error.violations]


# --- the mapping -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("request_class", REQUEST_CLASSES, ids=lambda cls: cls.__name__)
def test_every_request_type_maps_the_same_fields(request_class: type) -> None:
    config = build(
        {"temperature": 0.5, "top_p": 0.75, "top_k": 7, "min_p": 0.25, "seed": 123, "repetition_penalty": 1.5,
         "frequency_penalty": -0.5, "presence_penalty": 0.5, "ignore_eos": True},
        request_class=request_class,
    )  # fmt: skip
    assert config.do_sample is True
    assert config.temperature == pytest.approx(0.5)
    assert config.top_p == pytest.approx(0.75)
    assert config.top_k == 7
    assert config.min_p == pytest.approx(0.25)
    assert config.rng_seed == 123
    assert config.repetition_penalty == pytest.approx(1.5)
    assert config.frequency_penalty == pytest.approx(-0.5)
    assert config.presence_penalty == pytest.approx(0.5)
    assert config.ignore_eos is True


def test_empty_request_is_greedy_with_engine_defaults() -> None:
    config = build({})
    assert config.do_sample is False
    assert config.top_k == ENGINE_DEFAULT.top_k
    assert config.top_p == ENGINE_DEFAULT.top_p == 1.0
    assert config.num_return_sequences == 1
    assert config.num_beams == 1
    assert config.stop_strings == set()
    assert config.include_stop_str_in_output is False
    assert config.logprobs == 0
    assert not config.num_assistant_tokens  # no draft, no prompt lookup
    assert config.max_ngram_size == 0


@pytest.mark.parametrize(("temperature", "do_sample"), [(0.0, False), (1e-6, True), (0.7, True), (2.0, True)])
def test_temperature_decides_sampling(temperature: float, do_sample: bool) -> None:
    config = build({"temperature": temperature})
    assert config.do_sample is do_sample
    assert config.temperature == pytest.approx(temperature)


def test_temperature_zero_overrides_a_sampling_model_default() -> None:
    config = build({"temperature": 0}, defaults={"do_sample": True, "temperature": 0.6})
    assert config.do_sample is False


def test_model_defaults_fill_what_the_request_omits() -> None:
    defaults = {"do_sample": True, "temperature": 0.6, "top_p": 0.9, "top_k": 20, "repetition_penalty": 1.1,
                "max_new_tokens": 30}  # fmt: skip
    config = build({}, defaults=defaults)
    assert config.do_sample is True
    assert config.temperature == pytest.approx(0.6)
    assert config.top_p == pytest.approx(0.9)
    assert config.top_k == 20
    assert config.repetition_penalty == pytest.approx(1.1)
    assert config.max_new_tokens == 30


def test_request_overrides_model_defaults() -> None:
    defaults = {"do_sample": True, "temperature": 0.6, "top_p": 0.9, "top_k": 20}
    config = build({"temperature": 1.3, "top_p": 0.5, "top_k": 3}, defaults=defaults)
    assert config.temperature == pytest.approx(1.3)
    assert config.top_p == pytest.approx(0.5)
    assert config.top_k == 3


def test_top_k_minus_one_means_all_tokens_even_over_a_model_default() -> None:
    assert build({"top_k": -1}).top_k == ENGINE_DEFAULT.top_k
    assert build({"top_k": -1}, defaults={"top_k": 20}).top_k == ENGINE_DEFAULT.top_k
    assert build({}, defaults={"top_k": 20}).top_k == 20


@pytest.mark.parametrize("seed", [0, 1, 2**31, MAX_SEED])
def test_seed_becomes_rng_seed(seed: int) -> None:
    assert build({"seed": seed, "temperature": 1}).rng_seed == seed
    assert build({"seed": seed}, defaults={"do_sample": True, "temperature": 0.7}).rng_seed == seed


@pytest.mark.parametrize(
    ("body", "defaults"),
    [({"temperature": 1.0}, {}), ({}, {"do_sample": True, "temperature": 0.7}), ({"n": 3, "temperature": 0.5}, {})],
    ids=str,
)
def test_unseeded_sampling_draws_a_random_seed(body: dict[str, Any], defaults: dict[str, Any]) -> None:
    """The engine's own default seed is a constant: every unseeded request would draw the same sample."""
    seeds = [build(body, defaults=defaults).rng_seed for _ in range(20)]
    assert all(0 <= seed <= MAX_SEED for seed in seeds)
    assert len(set(seeds)) > 1  # 20 draws from 2**32 seeds: all equal only if the seed is not random


def test_n_with_sampling_is_parallel_sampling() -> None:
    config = build({"n": 3, "temperature": 0.8})
    assert config.num_return_sequences == 3
    assert config.num_beams == 1
    assert config.do_sample is True


def test_n_greedy_choices_are_one_sequence_per_request() -> None:
    """temperature 0 with n > 1: each engine request decodes greedily one sequence (runs.fan_out makes n of them)."""
    config = build({"n": 3, "temperature": 0})
    assert config.do_sample is False and config.num_return_sequences == 1 and config.num_beams == 1


def test_n_with_a_sampling_model_default() -> None:
    config = build({"n": 2}, defaults={"do_sample": True, "temperature": 0.7})
    assert config.num_return_sequences == 2


@pytest.mark.parametrize(("n", "best_of"), [(1, 2), (2, 2), (2, 4), (16, 16)])
def test_best_of_selects_beam_search(n: int, best_of: int) -> None:
    config = build({"n": n, "best_of": best_of}, defaults={"do_sample": True, "temperature": 0.7})
    assert config.num_beams == best_of
    assert config.num_return_sequences == n
    assert config.do_sample is False  # beam search does not sample, whatever the model's default


def test_best_of_one_is_not_beam_search() -> None:
    config = build({"best_of": 1})
    assert config.num_beams == 1
    assert config.num_return_sequences == 1


def test_best_of_with_explicit_zero_temperature_is_fine() -> None:
    assert build({"best_of": 3, "temperature": 0}).num_beams == 3


def test_length_penalty_passes_through() -> None:
    assert build({"best_of": 2, "length_penalty": -1.5}).length_penalty == pytest.approx(-1.5)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"stop": "END"}, {"END"}),
        ({"stop_sequences": ["a", "b", "a"]}, {"a", "b"}),
        ({"stop_sequences": [f"s{i}" for i in range(MAX_STOP_STRINGS)]}, {f"s{i}" for i in range(MAX_STOP_STRINGS)}),
        ({"stop": "\n\n"}, {"\n\n"}),
    ],
)
def test_stop_strings(body: dict[str, Any], expected: set[str]) -> None:
    assert build(body).stop_strings == expected


@pytest.mark.parametrize(
    ("body", "streaming", "included"),
    [
        ({}, False, False),
        ({"include_stop_str_in_output": True}, False, True),
        ({"include_stop_str_in_output": False}, False, False),
        ({}, True, False),  # streaming too: the engine holds back what may start a stop string
        ({"include_stop_str_in_output": True}, True, True),
        ({"include_stop_str_in_output": False}, True, False),
    ],
)
def test_include_stop_str_in_output(body: dict[str, Any], streaming: bool, included: bool) -> None:
    assert build({"stop": "x", **body}, streaming=streaming).include_stop_str_in_output is included


@pytest.mark.parametrize("logprobs", [0, 1])
def test_logprobs_is_passed_on(logprobs: int) -> None:
    assert build({}, logprobs=logprobs).logprobs == logprobs


# --- output length ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("defaults", "max_tokens", "prompt_tokens", "expected"),
    [
        ({}, None, 10, 90),  # unset: all the room the model has left
        ({}, None, 99, 1),
        ({"max_new_tokens": 20}, None, 10, 20),  # the model's default when it fits
        ({"max_new_tokens": 500}, None, 10, 90),  # ...capped to the room left
        ({}, 7, 10, 7),
        ({}, 1, 10, 1),
        ({}, 90, 10, 90),  # exactly fills the model
        ({"max_new_tokens": 20}, 50, 10, 50),  # the request wins over the default
        ({}, 1, 99, 1),
    ],
)
def test_max_new_tokens(defaults: dict[str, Any], max_tokens: int | None, prompt_tokens: int, expected: int) -> None:
    config = build({}, defaults=defaults, max_tokens=max_tokens, prompt_tokens=prompt_tokens)
    assert config.max_new_tokens == expected


@pytest.mark.parametrize(("max_tokens", "prompt_tokens"), [(0, 10), (-1, 10), (-(2**31), 10), (91, 10), (2**31 - 1, 10),
                                                            (2, 99)])  # fmt: skip
def test_max_tokens_out_of_range_names_the_budget_field(max_tokens: int, prompt_tokens: int) -> None:
    request = parse(chat_pb2.CreateChatCompletionRequest, {})
    with pytest.raises(InvalidArgument) as caught:
        build_sampling_params(
            request, defaults=SamplingParams(), limits=PLAIN, streaming=False,
            budget=Budget("max_completion_tokens", max_tokens, prompt_tokens, "messages"),
        )  # fmt: skip
    assert fields(caught.value) == ["max_completion_tokens"]
    assert "max_completion_tokens" in caught.value.message


@pytest.mark.parametrize("prompt_tokens", [100, 101, 10_000])
@pytest.mark.parametrize("max_tokens", [None, 1])
def test_prompt_that_fills_the_model_names_the_prompt_field(prompt_tokens: int, max_tokens: int | None) -> None:
    request = parse(completion_pb2.CreateCompletionRequest, {})
    with pytest.raises(InvalidArgument) as caught:
        build_sampling_params(
            request, defaults=SamplingParams(), limits=PLAIN, streaming=False,
            budget=Budget("max_tokens", max_tokens, prompt_tokens, "prompts[3]"),
        )  # fmt: skip
    assert fields(caught.value) == ["prompts[3]"]
    assert f"{prompt_tokens} tokens" in caught.value.message
    assert "100 tokens" in caught.value.message


# --- speculative decoding --------------------------------------------------------------------------------------


def test_draft_model_gets_default_num_assistant_tokens() -> None:
    config = build({}, limits=DRAFT)
    assert config.num_assistant_tokens == DEFAULT_NUM_ASSISTANT_TOKENS == 5
    assert config.assistant_confidence_threshold == 0.0


def test_draft_model_keeps_the_model_default_num_assistant_tokens() -> None:
    assert build({}, limits=DRAFT, defaults={"num_assistant_tokens": 9}).num_assistant_tokens == 9


@pytest.mark.parametrize("tokens", [1, 3, 64])
def test_num_assistant_tokens_from_the_request(tokens: int) -> None:
    assert build({"num_assistant_tokens": tokens}, limits=DRAFT).num_assistant_tokens == tokens


def test_confidence_threshold_replaces_num_assistant_tokens() -> None:
    config = build({"assistant_confidence_threshold": 0.4}, limits=DRAFT, defaults={"num_assistant_tokens": 9})
    assert config.num_assistant_tokens == 0
    assert config.assistant_confidence_threshold == pytest.approx(0.4)


def test_model_default_threshold_is_kept_without_forcing_tokens() -> None:
    config = build({}, limits=DRAFT, defaults={"assistant_confidence_threshold": 0.3})
    assert not config.num_assistant_tokens
    assert config.assistant_confidence_threshold == pytest.approx(0.3)


def test_no_assistant_settings_without_draft_or_lookup_even_from_model_defaults() -> None:
    config = build({}, defaults={"num_assistant_tokens": 9, "assistant_confidence_threshold": 0.3})
    assert not config.num_assistant_tokens
    assert not config.assistant_confidence_threshold


def test_prompt_lookup_defaults() -> None:
    config = build({}, limits=LOOKUP)
    assert config.max_ngram_size == 3
    assert config.num_assistant_tokens == DEFAULT_NUM_ASSISTANT_TOKENS


def test_prompt_lookup_request_values() -> None:
    config = build({"max_ngram_size": 7, "num_assistant_tokens": 2}, limits=LOOKUP)
    assert config.max_ngram_size == 7
    assert config.num_assistant_tokens == 2


# --- violations ------------------------------------------------------------------------------------------------

# Each rule's values just outside its range (the range itself is in test_rule_edges_inside).
OUTSIDE = {
    "temperature": [-1e-9, 2.000001, -1, 3, "NaN", "Infinity", "-Infinity"],
    "top_p": [0.0, -0.1, 1.000001, "NaN", "Infinity"],
    "top_k": [0, -2, -(2**31)],
    "min_p": [-1e-9, 1.0, 1.5, "NaN"],
    "repetition_penalty": [0.0, -1.0, "NaN", "Infinity"],
    "frequency_penalty": [-2.000001, 2.000001, "NaN", "-Infinity"],
    "presence_penalty": [-2.000001, 2.000001, "NaN", "Infinity"],
    "seed": [-1, MAX_SEED + 1, -(2**63), 2**63 - 1],
    "length_penalty": ["NaN", "Infinity", "-Infinity"],
    "diversity_penalty": [-1e-9, "NaN", "Infinity"],
    "num_assistant_tokens": [0, -1, 65],
    "assistant_confidence_threshold": [0.0, 1.0, -0.5, "NaN"],
    "max_ngram_size": [0, -3, 65],
}
INSIDE = {
    "temperature": [0.0, 2.0, 1e-9],
    "top_p": [1e-9, 1.0],
    "top_k": [-1, 1, 2**31 - 1],
    "min_p": [0.0, 0.999],
    "repetition_penalty": [1e-9, 1e6],
    "frequency_penalty": [-2.0, 2.0],
    "presence_penalty": [-2.0, 2.0],
    "seed": [0, MAX_SEED],
    "length_penalty": [-1e6, 1e6],
    "num_assistant_tokens": [1, 64],
    "assistant_confidence_threshold": [1e-9, 0.999999],
    "max_ngram_size": [1, 64],
}
SPECULATIVE = {"num_assistant_tokens", "assistant_confidence_threshold", "max_ngram_size"}


def test_tables_cover_every_ranged_rule() -> None:
    ranged = {rule.field for rule in RULES if rule.requirement}
    assert set(OUTSIDE) == ranged
    assert set(INSIDE) == ranged - {"diversity_penalty"}  # diversity_penalty: see the beam search tests


def _limits_for(field: str) -> ModelLimits:
    return LOOKUP if field == "max_ngram_size" else DRAFT if field in SPECULATIVE else PLAIN


@pytest.mark.parametrize(
    ("field", "value"), [(field, value) for field, values in OUTSIDE.items() for value in values], ids=str
)
def test_rule_edges_outside(field: str, value: Any) -> None:
    body = {field: value}
    if field == "diversity_penalty":
        body["best_of"] = 2  # otherwise it is refused for not being beam search
    error = refused(body, limits=_limits_for(field))
    assert fields(error) == [field]
    assert error.message.startswith(f"{field}: ")
    assert error.param == field


@pytest.mark.parametrize(
    ("field", "value"), [(field, value) for field, values in INSIDE.items() for value in values], ids=str
)
def test_rule_edges_inside(field: str, value: Any) -> None:
    config = build({field: value}, limits=_limits_for(field))
    target = config_attribute(next(rule.target for rule in RULES if rule.field == field))
    if field == "top_k" and value == -1:
        assert config.top_k == ENGINE_DEFAULT.top_k
    elif isinstance(value, float):
        assert getattr(config, target) == pytest.approx(value, rel=1e-6, abs=1e-9)
    else:
        assert getattr(config, target) == value


@pytest.mark.parametrize(
    ("body", "limits", "expected"),
    [
        ({"stop": "x", "stop_sequences": ["y"]}, PLAIN, ["stop"]),
        ({"stop_sequences": ["", "ok", ""]}, PLAIN, ["stop_sequences[0]", "stop_sequences[2]"]),
        ({"n": 0}, PLAIN, ["n"]),
        ({"n": -5}, PLAIN, ["n"]),
        ({"n": 17, "temperature": 1}, PLAIN, ["n"]),
        ({"best_of": 0}, PLAIN, ["best_of"]),
        ({"best_of": 17}, PLAIN, ["best_of"]),
        ({"n": 3, "best_of": 2}, PLAIN, ["best_of"]),
        ({"best_of": 2, "temperature": 0.5}, PLAIN, ["temperature"]),
        ({"diversity_penalty": 0.5}, PLAIN, ["diversity_penalty"]),
        ({"diversity_penalty": 0.5, "best_of": 1}, PLAIN, ["diversity_penalty"]),
        ({"num_assistant_tokens": 3, "assistant_confidence_threshold": 0.5}, DRAFT, ["assistant_confidence_threshold"]),
        ({"num_assistant_tokens": 3}, PLAIN, ["num_assistant_tokens"]),
        ({"assistant_confidence_threshold": 0.5}, PLAIN, ["assistant_confidence_threshold"]),
        ({"assistant_confidence_threshold": 0.5}, LOOKUP, ["assistant_confidence_threshold"]),
        ({"max_ngram_size": 3}, PLAIN, ["max_ngram_size"]),
        ({"max_ngram_size": 3}, DRAFT, ["max_ngram_size"]),
        # Every violation at once, in one error, in rule order.
        ({"temperature": 5, "top_p": 0, "seed": -1, "stop": "", "n": 0}, PLAIN,
         ["temperature", "top_p", "seed", "stop", "n"]),
        ({"stop": ""}, PLAIN, ["stop"]),
        ({"stop_sequences": [f"s{i}" for i in range(MAX_STOP_STRINGS)] + [""]}, PLAIN,
         ["stop_sequences", f"stop_sequences[{MAX_STOP_STRINGS}]"]),
        # Beam search refuses the sampling penalties; each is named.
        ({"best_of": 2, "repetition_penalty": 1.5, "presence_penalty": -1, "frequency_penalty": 1}, PLAIN,
         ["repetition_penalty", "presence_penalty", "frequency_penalty"]),
        ({"best_of": 2, "temperature": 0.5, "presence_penalty": 1}, PLAIN, ["temperature", "presence_penalty"]),
        # A draft model: no beam search.
        ({"best_of": 2}, DRAFT, ["best_of"]),
        ({"n": 2, "best_of": 2}, DRAFT, ["best_of"]),
        ({"best_of": 2, "diversity_penalty": 1.0}, DRAFT, ["best_of"]),
        ({"top_k": 0, "num_assistant_tokens": 2, "max_ngram_size": 2}, PLAIN,
         ["top_k", "num_assistant_tokens", "max_ngram_size"]),
    ],
    ids=str,
)  # fmt: skip
def test_cross_field_violations(body: dict[str, Any], limits: ModelLimits, expected: list[str]) -> None:
    error = refused(body, limits=limits)
    assert fields(error) == expected
    for field in expected[:MAX_VIOLATIONS_IN_MESSAGE]:  # the message names the first few, the details all
        assert f"{field}: " in error.message
    assert error.param == expected[0]


def test_too_many_stop_strings() -> None:
    error = refused({"stop_sequences": [f"s{i}" for i in range(MAX_STOP_STRINGS + 1)]})
    assert len(error.violations) == 1
    assert "at most 16 stop strings; got 17" in error.violations[0].description


def test_too_many_stop_strings_names_stop_sequences() -> None:
    error = refused({"stop_sequences": [f"s{i}" for i in range(MAX_STOP_STRINGS + 1)]})
    assert fields(error) == ["stop_sequences"]
    assert error.param == "stop_sequences"
    assert error.message == "stop_sequences: at most 16 stop strings; got 17"


def test_empty_stop_names_stop() -> None:
    error = refused({"stop": ""})
    assert fields(error) == ["stop"]
    assert error.message == "stop: a stop string must not be empty"


@pytest.mark.parametrize("index", [0, 5, MAX_STOP_STRINGS - 1])
def test_empty_stop_sequence_names_its_index(index: int) -> None:
    stops = [f"s{i}" for i in range(MAX_STOP_STRINGS)]
    stops[index] = ""
    assert fields(refused({"stop_sequences": stops})) == [f"stop_sequences[{index}]"]


def test_length_violation_joins_the_others() -> None:
    error = refused({"top_p": 2}, max_tokens=0)
    assert fields(error) == ["top_p", "max_tokens"]


@pytest.mark.parametrize(
    ("body", "offender"),
    [
        ({"best_of": 2, "presence_penalty": 1.0}, "presence_penalty"),
        ({"best_of": 2, "frequency_penalty": -1.0}, "frequency_penalty"),
        ({"best_of": 2, "repetition_penalty": 1.5}, "repetition_penalty"),
        ({"n": 2, "best_of": 16, "repetition_penalty": 0.5}, "repetition_penalty"),
    ],
    ids=str,
)
def test_beam_search_penalties_name_the_field(body: dict[str, Any], offender: str) -> None:
    error = refused(body)
    assert fields(error) == [offender]
    assert error.param == offender
    assert error.message.startswith(f"{offender}: not supported with beam search (best_of > 1)")


def test_beam_search_accepts_the_penalties_at_their_off_values() -> None:
    config = build({"best_of": 2, "repetition_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0})
    assert config.num_beams == 2


def test_beam_search_turns_off_model_default_penalties() -> None:
    defaults = {"repetition_penalty": 1.1, "presence_penalty": 0.5, "frequency_penalty": 0.5}
    config = build({"best_of": 2}, defaults=defaults)
    assert config.num_beams == 2
    assert (config.repetition_penalty, config.presence_penalty, config.frequency_penalty) == (1.0, 0.0, 0.0)


@pytest.mark.parametrize(("n", "best_of"), [(1, 2), (2, 4), (16, 16)])
def test_diversity_penalty_is_group_beam_search(n: int, best_of: int) -> None:
    config = build({"n": n, "best_of": best_of, "diversity_penalty": 1.0})
    assert config.num_beams == best_of
    assert config.num_beam_groups == best_of  # one beam per group
    assert config.num_return_sequences == n
    assert config.diversity_penalty == pytest.approx(1.0)
    assert config.do_sample is False


def test_beam_search_without_diversity_penalty_is_one_group() -> None:
    assert build({"best_of": 4}).num_beam_groups == 1


@pytest.mark.parametrize("limits", [DRAFT, LOOKUP], ids=["draft", "prompt-lookup"])
def test_assisted_models_sample_n_by_fan_out_and_name_best_of(limits: ModelLimits) -> None:
    """Speculative and prompt-lookup pipelines both generate one sequence per request, without beam search."""
    assert build({"n": 2, "temperature": 1.0, "seed": 1}, limits=limits).num_return_sequences == 1
    assert [v.field for v in refused({"best_of": 2}, limits=limits).violations] == ["best_of"]
    assert [v.field for v in refused({"n": 2, "best_of": 2}, limits=limits).violations] == ["best_of"]


@pytest.mark.parametrize("n", [2, 3, 16])
@pytest.mark.parametrize("defaults", [{}, {"do_sample": True, "temperature": 0.7}], ids=["request", "model-default"])
def test_n_with_sampling_on_a_model_with_a_draft_is_one_sequence_per_run(n: int, defaults: dict[str, Any]) -> None:
    """A speculative pipeline generates one sequence per request: the API fans out n runs (runs.fan_out)."""
    body: dict[str, Any] = {"n": n, "seed": 42} if defaults else {"n": n, "temperature": 1.0, "seed": 42}
    config = build(body, limits=DRAFT, defaults=defaults)
    assert config.do_sample is True
    assert config.num_return_sequences == 1
    assert config.num_beams == 1
    assert config.rng_seed == 42
    assert config.num_assistant_tokens == DEFAULT_NUM_ASSISTANT_TOKENS


@pytest.mark.parametrize("limits", [PLAIN, DRAFT], ids=["plain", "draft"])
def test_n_at_default_settings_samples_as_openai_does(limits: ModelLimits) -> None:
    """A greedy model (no temperature sent) still gives n different choices: OpenAI's default samples."""
    config = build({"n": 2}, limits=limits)
    assert config.do_sample is True and config.temperature == 1.0  # OpenAI's default temperature
    assert build({"n": 2}, limits=limits).rng_seed != config.rng_seed  # unseeded: a fresh seed each time
    assert build({"n": 2}, defaults={"temperature": 0.7}, limits=limits).temperature == pytest.approx(0.7)
    assert build({"n": 1}, limits=limits).do_sample is False  # one choice: the model's default (greedy here)


def test_n_with_sampling_without_a_draft_is_parallel_sampling_in_one_run() -> None:
    assert build({"n": 4, "temperature": 1.0}, limits=PLAIN).num_return_sequences == 4


@pytest.mark.parametrize(
    ("body", "field"),
    [({"n": 2, "best_of": 2}, "best_of"), ({"best_of": 3}, "best_of"), ({"best_of": 16, "n": 16}, "best_of")],
    ids=str,
)  # fmt: skip
def test_beam_search_on_a_model_with_a_draft_names_the_field(body: dict[str, Any], field: str) -> None:
    error = refused(body, limits=DRAFT)
    assert fields(error) == [field]
    if field == "best_of":
        assert "model 'm' runs speculative decoding, which has no beam search" in error.message


@pytest.mark.parametrize(
    ("stop", "field"), [({"stop": "."}, "stop"), ({"stop_sequences": [".", "!"]}, "stop_sequences")]
)
@pytest.mark.parametrize("request_class", REQUEST_CLASSES, ids=lambda cls: cls.__name__)
def test_beam_search_with_stop_strings_is_refused_naming_the_stop_field(
    stop: dict[str, Any], field: str, request_class: type
) -> None:
    """The engine's beam search fails its whole step (every request in the batch) on a stop string."""
    error = refused({"best_of": 3, **stop}, request_class=request_class)
    assert fields(error) == [field]
    assert "beam search" in error.message
    assert build(stop, request_class=request_class).stop_strings  # without best_of the stop is kept


# --- vLLM's min_tokens and stop_token_ids --------------------------------------------------------------------------


@pytest.mark.parametrize("request_class", REQUEST_CLASSES, ids=lambda cls: cls.__name__)
def test_min_tokens_and_stop_token_ids_reach_the_engine(request_class: type) -> None:
    config = build(
        {"min_tokens": 5, "stop_token_ids": [7, 9]},
        defaults={"stop_token_ids": frozenset({2})},
        request_class=request_class,
        limits=ModelLimits("m", 100, vocab_size=50),
    )
    assert config.min_new_tokens == 5
    assert config.stop_token_ids == {2, 7, 9}  # the model's own stay: the request's come besides them


def test_min_tokens_zero_is_the_default() -> None:
    assert build({"min_tokens": 0}).min_new_tokens == ENGINE_DEFAULT.min_new_tokens


@pytest.mark.parametrize(
    ("body", "max_tokens", "field", "message"),
    [
        ({"min_tokens": -2}, None, "min_tokens", "must be at least 0; got -2"),
        ({"min_tokens": 11}, 10, "min_tokens", "must be at most max_tokens (10); got 11"),
        ({"min_tokens": 91}, None, "min_tokens", "the room the prompt leaves (90 tokens)"),
        ({"stop_token_ids": [3, 50]}, None, "stop_token_ids[1]", "50 is not a token id of 'm' (0 to 49)"),
        ({"stop_token_ids": [-1]}, None, "stop_token_ids[0]", "-1 is not a token id"),
        ({"stop_token_ids": [1] * 65}, None, "stop_token_ids", "at most 64 token ids; got 65"),
    ],
)
def test_min_tokens_and_stop_token_ids_bounds(
    body: dict[str, Any], max_tokens: int | None, field: str, message: str
) -> None:
    error = refused(body, max_tokens=max_tokens, limits=ModelLimits("m", 100, vocab_size=50))
    assert fields(error) == [field] and message in error.violations[0].description


def test_continued_parameters_keep_the_minimum_within_what_is_left() -> None:
    params = SamplingParams(max_new_tokens=40, min_new_tokens=30)
    assert params.continued(10, max_new_tokens=30).min_new_tokens == 20
    assert params.continued(35, max_new_tokens=5).min_new_tokens is None  # met: none left
    assert SamplingParams(max_new_tokens=9).continued(3, max_new_tokens=6).min_new_tokens is None

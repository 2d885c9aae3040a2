"""The biased lane in EngineCore, on the bundled tiny-chat: what the pipeline would write, plus the bias."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import openvino_genai as ov_genai
import pytest

from ovserve.service.engine import EngineSettings, Update
from ovserve.service.engine.biased_lane import MAX_LANE_SEQUENCES
from ovserve.service.engine.core import EngineCore, Submission
from ovserve.service.engine.generation_config import model_defaults
from ovserve.service.engine.sampling import SamplingParams
from ovserve.service.engine.scoring import ScoringModel
from ovserve.service.engine.types import FinishReason
from ovserve.service.workers.codec import TokenCodec

NO_EFFECT = ((0, 0.0),)  # a bias that changes nothing: the request decodes on the lane all the same


@pytest.fixture(scope="module")
def core(tiny_chat_dir: Path) -> EngineCore:
    scheduler = ov_genai.SchedulerConfig()
    for name, value in EngineSettings().scheduler(tiny_chat_dir).items():
        setattr(scheduler, name, value)
    return EngineCore(
        lambda: ov_genai.ContinuousBatchingPipeline(str(tiny_chat_dir), scheduler, "CPU"),
        TokenCodec(tiny_chat_dir).decode_windows,
        lane=ScoringModel(tiny_chat_dir, "CPU", {}).sequence,
    )


@pytest.fixture(scope="module")
def prompt(tiny_chat_dir: Path) -> list[int]:
    tokenizer = ov_genai.Tokenizer(str(tiny_chat_dir))
    return [int(t) for t in tokenizer.encode("Tell me about Paris", add_special_tokens=True).input_ids.data[0]]


@pytest.fixture(scope="module")
def greedy(tiny_chat_dir: Path) -> SamplingParams:
    defaults = model_defaults(tiny_chat_dir, ov_genai.Tokenizer(str(tiny_chat_dir)).get_eos_token_id())
    return dataclasses.replace(defaults, max_new_tokens=40, do_sample=False, ignore_eos=True)


def run(core: EngineCore, submissions: list[Submission]) -> dict[int, dict[int, tuple[list[int], str, FinishReason]]]:
    """Every request's choices to the end: request id -> choice index -> (tokens, text, finish reason)."""
    for submission in submissions:
        assert core.add(submission) == []
    out: dict[int, dict[int, tuple[list[int], str, FinishReason]]] = {}
    while core.busy:
        for request_id, outcome in core.step():
            assert isinstance(outcome, Update), outcome
            for delta in outcome.sequences:
                tokens, text, reason = out.setdefault(request_id, {}).get(delta.index, ([], "", None))
                reason = delta.finish_reason or reason
                out[request_id][delta.index] = (tokens + delta.token_ids, text + delta.text, reason)
    return out


@pytest.mark.parametrize(
    "settings",
    [{}, {"repetition_penalty": 1.3}, {"repetition_penalty": 0.8}, {"presence_penalty": 0.7},
     {"frequency_penalty": 0.4}, {"ignore_eos": False}],
)  # fmt: skip
def test_a_bias_of_nothing_writes_what_the_pipeline_writes(core, prompt, greedy, settings) -> None:
    """The same tokens, text and ends. (The lane's logits come from another compiled copy of the model and differ
    from the pipeline's in the last float bits: a near tie may break the other way. These settings have none.)"""
    params = dataclasses.replace(greedy, **settings)
    out = run(
        core, [Submission(1, prompt, params), Submission(2, prompt, dataclasses.replace(params, logit_bias=NO_EFFECT))]
    )
    assert out[1] == out[2] and out[1][0][0]


def test_stop_strings_end_the_lanes_output_where_they_end_the_pipelines(core, prompt, greedy) -> None:
    ((tokens, text, _),) = run(core, [Submission(1, prompt, greedy)])[1].values()
    stop = text[len(text) // 2 : len(text) // 2 + 3]
    params = dataclasses.replace(greedy, stop_strings=frozenset({stop}))
    out = run(
        core, [Submission(1, prompt, params), Submission(2, prompt, dataclasses.replace(params, logit_bias=NO_EFFECT))]
    )
    assert out[1] == out[2]
    assert out[2][0][2] == FinishReason.STOP and stop not in out[2][0][1] and len(out[2][0][0]) < len(tokens)


def test_bias_bans_and_forces(core, prompt, greedy) -> None:
    ((tokens, _, _),) = run(core, [Submission(1, prompt, greedy)])[1].values()
    first = tokens[0]
    banned = run(core, [Submission(2, prompt, dataclasses.replace(greedy, logit_bias=((first, -100.0),)))])[2][0][0]
    assert first not in banned and len(banned) == len(tokens)
    forced = run(core, [Submission(3, prompt, dataclasses.replace(greedy, logit_bias=((first, 100.0),)))])[3][0][0]
    assert forced == [first] * len(tokens)


def test_n_seeded_choices_are_reproducible_and_differ(core, prompt, greedy) -> None:
    params = dataclasses.replace(
        greedy, do_sample=True, temperature=1.0, seed=42, num_return_sequences=3, logit_bias=NO_EFFECT
    )
    once, again = run(core, [Submission(1, prompt, params)])[1], run(core, [Submission(1, prompt, params)])[1]
    assert once == again and sorted(once) == [0, 1, 2]
    assert len({tuple(tokens) for tokens, _, _ in once.values()}) > 1


def test_logprobs_on_the_lane_are_the_pipelines(core, prompt, greedy) -> None:
    params = dataclasses.replace(greedy, logprobs=1, max_new_tokens=8)
    updates: dict[int, list[float]] = {1: [], 2: []}
    assert core.add(Submission(1, prompt, params)) == []
    assert core.add(Submission(2, prompt, dataclasses.replace(params, logit_bias=NO_EFFECT))) == []
    while core.busy:
        for request_id, outcome in core.step():
            assert isinstance(outcome, Update)
            updates[request_id] += [p for delta in outcome.sequences for p in delta.logprobs]
    assert len(updates[2]) == 8 and updates[1] == pytest.approx(updates[2], abs=1e-3)


def test_a_pipeline_request_does_not_wait_for_a_lane_request_beside_it(core, prompt, greedy) -> None:
    """The lane's forward passes run beside the pipeline's steps: the pipeline request ends after as many steps as
    alone, while a longer lane request is still decoding."""
    params = dataclasses.replace(greedy, max_new_tokens=30)

    def steps_to_end(submissions: list[Submission]) -> tuple[int, int]:
        for submission in submissions:
            assert core.add(submission) == []
        steps, ended, tokens = 0, 0, {1: 0, 2: 0}
        while core.busy:
            steps += 1
            for request_id, outcome in core.step():
                assert isinstance(outcome, Update)
                tokens[request_id] += sum(len(delta.token_ids) for delta in outcome.sequences)
                ended = steps if request_id == 1 and outcome.finished else ended
        assert tokens[1] == 30
        return ended, tokens[2]

    alone, _ = steps_to_end([Submission(1, prompt, params)])
    lane_request = Submission(2, prompt, dataclasses.replace(params, max_new_tokens=300, logit_bias=NO_EFFECT))
    beside, lane_tokens = steps_to_end([lane_request, Submission(1, prompt, params)])
    assert beside <= alone + 2 and lane_tokens == 300


def test_the_lane_holds_at_most_its_sequences_and_queues_the_rest(core, prompt, greedy) -> None:
    n = MAX_LANE_SEQUENCES // 2
    params = dataclasses.replace(
        greedy, do_sample=True, seed=1, num_return_sequences=n, max_new_tokens=6, logit_bias=NO_EFFECT
    )
    for request_id in (1, 2, 3):
        assert core.add(Submission(request_id, prompt, params)) == []
    core.step()
    assert core.stats().waiting == 1  # two requests of n fill the lane; the third waits
    while core.busy:
        core.step()
    assert core.stats().running == 0


def test_a_cancelled_lane_request_lets_go(core, prompt, greedy) -> None:
    params = dataclasses.replace(greedy, max_new_tokens=1000, logit_bias=NO_EFFECT)
    assert core.add(Submission(9, prompt, params)) == []
    for _ in range(3):
        core.step()
    assert core.stats().running == 1
    core.cancel(9)
    assert core.stats().running == 0
    while core.busy:
        assert core.step() == []  # nothing more for it

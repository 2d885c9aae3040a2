"""The scoring lane on tiny-chat's real IR: order, score-only answers, failures, cancels and stop.

The lane runs in the engine process beside EngineCore; here it is driven directly, its sends collected.
"""

from __future__ import annotations

import math
import queue
from pathlib import Path

import pytest

from ovserve.service.engine import scoring_lane
from ovserve.service.engine.core import Submission
from ovserve.service.engine.messages import Alive, Outcomes
from ovserve.service.engine.sampling import SamplingParams
from ovserve.service.engine.scoring import Scoring, ScoringModel, scoring_properties
from ovserve.service.engine.scoring_lane import ScoringLane
from ovserve.service.engine.settings import EngineSettings
from ovserve.service.engine.types import FinishReason, SequenceDelta, Update
from ovserve.service.models import BUNDLED_MODEL, BUNDLED_MODELS_DIR
from ovserve.service.workers.errors import EngineError, EngineRejected
from tests.conftest import REFERENCE_PROPERTIES

PROMPT = [5, 100, 200, 300, 400, 500, 600]
WAIT_S = 60  # a hang guard, not a measurement


def near(values: list[float]) -> object:
    """Scores of the same tokens fed in other chunks: the CPU plugin's u8 KV cache is quantised per chunk, so they
    differ in the last digits (measured up to 6e-5 here; the end-to-end tests hold scoring to 2e-3 + 1e-3 x |v|)."""
    return pytest.approx(values, abs=2e-3, rel=1e-3)


def same_top(got: list[tuple[tuple[int, float], ...]], expected: list[tuple[tuple[int, float], ...]]) -> bool:
    return [[t for t, _ in row] for row in got] == [[t for t, _ in row] for row in expected] and [
        v for row in got for _, v in row
    ] == near([v for row in expected for _, v in row])


class Sent:
    """What the lane sends, awaited one Outcomes at a time (heartbeats skipped)."""

    def __init__(self) -> None:
        self.messages: queue.Queue[object] = queue.Queue()

    def __call__(self, message: object) -> None:
        self.messages.put(message)

    def next(self) -> tuple[int, Update | EngineError]:
        while True:
            message = self.messages.get(timeout=WAIT_S)
            if isinstance(message, Alive):
                continue
            assert isinstance(message, Outcomes) and len(message.items) == 1
            return message.items[0]

    def nothing_more(self) -> bool:
        return all(isinstance(message, Alive) for message in list(self.messages.queue))


def model(directory: Path = BUNDLED_MODELS_DIR / BUNDLED_MODEL) -> ScoringModel:
    return ScoringModel(directory, "CPU", REFERENCE_PROPERTIES)  # f32: chunked scores agree on any CPU


def submission(request_id: int, scoring: Scoring, **params: object) -> Submission:
    return Submission(request_id, PROMPT, SamplingParams(**params), scoring=scoring)  # type: ignore[arg-type]


def test_updates_go_out_in_order_with_the_scores_of_their_tokens() -> None:
    sent, scorer = Sent(), model()
    lane = ScoringLane(scorer, sent)
    try:
        lane.open(submission(1, Scoring(top=3, prompt=True)))
        lane.put((1, Update([SequenceDelta(0, [7, 8], "ab", logprobs=[0.0, 0.0])])))
        lane.put((1, Update([SequenceDelta(0, [9], "c", logprobs=[0.0], finish_reason=FinishReason.STOP)], True)))
        first_id, first = sent.next()
        last_id, last = sent.next()
    finally:
        lane.stop()
    assert first_id == last_id == 1 and isinstance(first, Update) and isinstance(last, Update)
    expected = scorer.sequence().feed([*PROMPT, 7, 8, 9], 3)
    assert first.prompt is not None and len(first.prompt.logprobs) == len(PROMPT)
    assert math.isnan(first.prompt.logprobs[0]) and first.prompt.logprobs[1:] == near(
        expected.logprobs[1 : len(PROMPT)]
    )
    assert first.sequences[0].logprobs == near(expected.logprobs[len(PROMPT) : len(PROMPT) + 2])
    assert last.sequences[0].logprobs == near(expected.logprobs[-1:])
    assert [len(top) for top in first.sequences[0].top_logprobs + last.sequences[0].top_logprobs] == [3, 3, 3]
    assert last.prompt is None and last.finished


def test_score_only_answers_every_choice_without_the_pipeline() -> None:
    sent = Sent()
    lane = ScoringLane(model(), sent)
    try:
        lane.open(submission(2, Scoring(top=1, prompt=True, output=False, generate=False), num_return_sequences=2))
        request_id, update = sent.next()
    finally:
        lane.stop()
    assert request_id == 2 and isinstance(update, Update) and update.finished
    assert [(d.index, d.token_ids, d.finish_reason) for d in update.sequences] == [
        (0, [], FinishReason.LENGTH),
        (1, [], FinishReason.LENGTH),
    ]
    assert update.prompt is not None and [len(top) for top in update.prompt.top] == [0] + [1] * (len(PROMPT) - 1)
    assert lane.active == 0


def test_a_model_that_cannot_be_scored_fails_the_request_and_drops_its_later_output(tmp_path: Path) -> None:
    sent = Sent()
    lane = ScoringLane(model(tmp_path), sent)  # no openvino_model.xml there
    try:
        lane.open(submission(3, Scoring(top=2)))
        request_id, error = sent.next()
        assert request_id == 3 and isinstance(error, EngineRejected) and "openvino_model.xml" in str(error)
        assert lane.claims(3)  # the pipeline's output for it still comes through the lane, to be dropped
        lane.put((3, Update([SequenceDelta(0, [7], "a", logprobs=[0.0])])))
        assert lane.take_failed() == [3]  # to cancel in the pipeline
        assert not lane.claims(3) and lane.active == 0
    finally:
        lane.stop()
    assert sent.nothing_more()


def test_a_cancelled_request_is_forgotten_and_stop_returns_the_ones_held() -> None:
    sent = Sent()
    lane = ScoringLane(model(), sent)
    lane.open(submission(4, Scoring(top=2)))
    lane.open(submission(5, Scoring(top=2)))
    lane.cancel(4)
    assert not lane.claims(4)
    assert lane.stop() == [5]
    assert lane.active == 0


@pytest.mark.parametrize("choices", [1, 3])
def test_choices_fork_from_the_scored_prompt(choices: int) -> None:
    sent, scorer = Sent(), model()
    lane = ScoringLane(scorer, sent)
    outputs = {index: [10 + index, 20 + index] for index in range(choices)}
    try:
        lane.open(submission(6, Scoring(top=2), num_return_sequences=choices))
        deltas = [
            SequenceDelta(i, ids, logprobs=[0.0] * 2, finish_reason=FinishReason.STOP) for i, ids in outputs.items()
        ]
        lane.put((6, Update(deltas, finished=True)))
        _, update = sent.next()
    finally:
        lane.stop()
    assert isinstance(update, Update)
    for delta in update.sequences:
        expected = scorer.sequence().feed([*PROMPT, *outputs[delta.index]], 2)
        assert delta.logprobs == near(expected.logprobs[len(PROMPT) :])
        assert same_top(delta.top_logprobs, expected.top[len(PROMPT) :])


def test_requests_whose_sequences_do_not_fit_wait_for_others_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """At most MAX_SEQUENCES scored sequences (infer requests, each with its KV cache) are held at once: 64 prompts
    x n 16 held 1,024 and GBs before; a request that does not fit is scored once others end."""
    monkeypatch.setattr(scoring_lane, "MAX_SEQUENCES", 4)
    held: list[int] = []
    reserve = ScoringLane._reserve

    def watched(self: ScoringLane, job: object) -> bool:
        fits = reserve(self, job)  # type: ignore[arg-type]
        held.append(self._held)
        return fits

    monkeypatch.setattr(ScoringLane, "_reserve", watched)
    sent = Sent()
    lane = ScoringLane(model(), sent)
    try:
        for request_id in (1, 2, 3):  # each holds its prompt and 3 forks: 4 sequences
            lane.open(submission(request_id, Scoring(top=2), num_return_sequences=3))
        for request_id in (1, 2, 3):
            ends = [SequenceDelta(i, [7 + i], "a", logprobs=[0.0], finish_reason=FinishReason.STOP) for i in range(3)]
            lane.put((request_id, Update(ends, finished=True)))
        answers = dict(sent.next() for _ in range(3))
    finally:
        lane.stop()
    assert sorted(answers) == [1, 2, 3]
    for update in answers.values():
        assert isinstance(update, Update) and update.finished
        assert all(len(delta.top_logprobs) == 1 and len(delta.top_logprobs[0]) == 2 for delta in update.sequences)
    assert max(held) == 4 and lane.active == 0


def test_the_scoring_copy_keeps_an_f16_kv_cache_whatever_the_pipelines() -> None:
    """A u8 pipeline cache is not the scoring copy's; nor is the CPU plugin's own choice (u8 for real models' head
    sizes on a Xeon with AMX): it is told f16. Where no precision is named (another device), none is added."""
    narrow = EngineSettings(kv_cache_precision="u8", inference_precision="f32").engine_properties()
    assert scoring_properties(narrow) == {"KV_CACHE_PRECISION": "f16", "INFERENCE_PRECISION_HINT": "f32"}
    compiled = ScoringModel(BUNDLED_MODELS_DIR / BUNDLED_MODEL, "CPU", scoring_properties(narrow))._compile()
    assert str(compiled.get_property("KV_CACHE_PRECISION")) == "<Type: 'float16'>"
    assert scoring_properties(EngineSettings(device="GPU").engine_properties()) == {}

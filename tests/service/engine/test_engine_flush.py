"""EngineCore hands output over at flushes: first tokens and ends at once, the rest every flush interval."""

from __future__ import annotations

from pathlib import Path

import openvino_genai as ov_genai
import pytest

from ovserve.service.engine import EngineSettings, Update
from ovserve.service.engine.core import EngineCore, Submission
from ovserve.service.engine.sampling import SamplingParams
from ovserve.service.workers.codec import TokenCodec

MAX_TOKENS = 24


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def pipeline_factory(tiny_chat_dir: Path):
    scheduler = ov_genai.SchedulerConfig()
    for name, value in EngineSettings().scheduler(tiny_chat_dir).items():
        setattr(scheduler, name, value)
    return lambda: ov_genai.ContinuousBatchingPipeline(str(tiny_chat_dir), scheduler, "CPU")


def _core(
    pipeline_factory, tiny_chat_dir: Path, interval: float, clock: FakeClock, update_rate: float = 0.0
) -> EngineCore:
    decode = TokenCodec(tiny_chat_dir).decode_windows
    return EngineCore(pipeline_factory, decode, flush_interval=interval, update_rate=update_rate, clock=clock)


def _submit(core: EngineCore, request_id: int, tiny_chat_dir: Path, prompt: str = "Tell me about Paris") -> None:
    tokenizer = ov_genai.Tokenizer(str(tiny_chat_dir))
    ids = [int(t) for t in tokenizer.encode(prompt, add_special_tokens=False).input_ids.data[0]]
    params = SamplingParams(max_new_tokens=MAX_TOKENS, ignore_eos=True, do_sample=False)
    assert core.add(Submission(request_id, ids, params)) == []


def _run(core: EngineCore, clock: FakeClock, tick: float) -> list[list[tuple[int, Update]]]:
    """Step to the end, the clock moving ``tick`` seconds a step; what each step handed over."""
    handed: list[list[tuple[int, Update]]] = []
    while core.busy:
        clock.now += tick
        handed.append([(rid, outcome) for rid, outcome in core.step() if isinstance(outcome, Update)])
    return handed


def _tokens(updates: list[Update]) -> int:
    return sum(len(delta.token_ids) for update in updates for delta in update.sequences)


def test_first_token_and_end_go_at_once_the_rest_waits_for_the_interval(pipeline_factory, tiny_chat_dir) -> None:
    clock = FakeClock()
    core = _core(pipeline_factory, tiny_chat_dir, interval=1.0, clock=clock)
    _submit(core, 1, tiny_chat_dir)
    handed = _run(core, clock, tick=0.0)  # the clock never reaches the interval
    sent = [step for step in handed if step]
    assert len(sent) == 2  # the first token, then everything else with the end
    first, last = sent[0][0][1], sent[1][0][1]
    assert _tokens([first]) == 1 and first.sequences[0].text and not first.finished
    assert last.finished and _tokens([first, last]) == MAX_TOKENS


def test_interval_passing_flushes_and_zero_flushes_every_step(pipeline_factory, tiny_chat_dir) -> None:
    texts = []
    for interval, tick, expected in ((0.010, 0.004, MAX_TOKENS // 3), (0.0, 0.001, MAX_TOKENS)):
        clock = FakeClock()
        core = _core(pipeline_factory, tiny_chat_dir, interval=interval, clock=clock)
        _submit(core, 7, tiny_chat_dir)
        updates = [update for step in _run(core, clock, tick) for _, update in step]
        assert _tokens(updates) == MAX_TOKENS
        # interval 10 ms at 4 ms a step: the first token, then one hand-over every third step (give or take the end)
        assert abs(len(updates) - expected) <= 2, (interval, len(updates))
        texts.append("".join(delta.text for update in updates for delta in update.sequences))
    assert texts[0] == texts[1] and texts[0]  # merging steps changes the messages, never the text


def test_a_request_ending_flushes_the_others_unsent_output(pipeline_factory, tiny_chat_dir) -> None:
    clock = FakeClock()
    core = _core(pipeline_factory, tiny_chat_dir, interval=1.0, clock=clock)
    _submit(core, 1, tiny_chat_dir)
    _submit(core, 2, tiny_chat_dir, "A different, longer prompt about the sea and ships")
    handed = _run(core, clock, tick=0.0)
    per_request: dict[int, list[Update]] = {1: [], 2: []}
    for step in handed:
        for request_id, update in step:
            per_request[request_id].append(update)
    for updates in per_request.values():
        assert _tokens(updates) == MAX_TOKENS and updates[-1].finished
    assert core.stats().running == 0


def test_the_update_budget_stretches_the_interval_as_requests_multiply(pipeline_factory, tiny_chat_dir) -> None:
    """100 hand-overs a second: 10 ms apart for one request, 40 ms for four (4 ms a step, no interval)."""
    counts, texts = [], []
    for requests in (1, 4):
        clock = FakeClock()
        core = _core(pipeline_factory, tiny_chat_dir, interval=0.0, clock=clock, update_rate=100.0)
        for request_id in range(requests):
            _submit(core, request_id, tiny_chat_dir)
        mine = [update for step in _run(core, clock, tick=0.004) for rid, update in step if rid == 0]
        assert _tokens(mine) == MAX_TOKENS and mine[-1].finished
        counts.append(len(mine))
        texts.append("".join(delta.text for update in mine for delta in update.sequences))
    # 24 steps of 4 ms: about 96 / 10 hand-overs alone, 96 / 40 among four (give or take the first and the end)
    assert abs(counts[0] - 10) <= 2 and abs(counts[1] - 4) <= 2, counts
    assert texts[0] == texts[1] and texts[0]

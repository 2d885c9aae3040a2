"""A step that fails costs only what cannot be resumed: the other requests go on, on a rebuilt pipeline.

Real tiny-chat pipeline; the step failures are injected (FailingSteps), as an
unforeseen request would cause them. (The one such request known here,
openvino-genai 2026.4.1's beam search with a stop string cut off the output,
no longer fails: the engine keeps stop strings and cuts them itself, see
service/engine/stops.py; the API still refuses best_of with stop.)
"""

from __future__ import annotations

from pathlib import Path

import openvino_genai as ov_genai
import pytest

from ovserve.service.engine import EngineError, EngineSettings, Update
from ovserve.service.engine.core import EngineCore, Submission
from ovserve.service.engine.sampling import SamplingParams
from ovserve.service.workers.codec import TokenCodec

PROMPTS = ["Tell me about Paris", "Once upon a time", "The weather today", "A story about ships"]
GREEDY = SamplingParams(max_new_tokens=48, ignore_eos=True, do_sample=False)
BEAM = SamplingParams(max_new_tokens=24, num_beams=3, num_return_sequences=1, do_sample=False)


@pytest.fixture(scope="module")
def codec(tiny_chat_dir: Path) -> TokenCodec:
    return TokenCodec(tiny_chat_dir)


@pytest.fixture
def failing_core(tiny_chat_dir: Path, codec: TokenCodec) -> EngineCore:
    """A core on the real pipeline whose steps fail when FailingSteps says so."""
    scheduler = ov_genai.SchedulerConfig()
    for name, value in EngineSettings().scheduler(tiny_chat_dir).items():
        setattr(scheduler, name, value)
    FailingSteps.left = 0
    return EngineCore(
        lambda: FailingSteps(ov_genai.ContinuousBatchingPipeline(str(tiny_chat_dir), scheduler, "CPU")),  # type: ignore[arg-type,return-value]
        codec.decode_windows,
    )


def run(core: EngineCore, submissions: list[Submission], fail_at: int | None = None) -> dict[int, str | EngineError]:
    """Submit, step to the end; each request's whole text, or the error that ended it.

    ``fail_at``: the step (counting from 0) that fails, for a core built on FailingSteps.
    """
    results: dict[int, str | EngineError] = {}
    texts: dict[int, str] = {}
    for submission in submissions:
        assert core.add(submission) == []
    steps = 0
    while core.busy:
        if steps == fail_at:
            FailingSteps.left = 1
        steps += 1
        for request_id, outcome in core.step():
            if isinstance(outcome, EngineError):
                results[request_id] = outcome
                continue
            assert isinstance(outcome, Update)
            texts[request_id] = texts.get(request_id, "") + "".join(delta.text for delta in outcome.sequences)
            if outcome.finished:
                results[request_id] = texts[request_id]
    return results


def test_a_step_failure_fails_only_what_cannot_be_resumed(failing_core: EngineCore, codec: TokenCodec) -> None:
    ids = [codec.encode(prompt, add_special_tokens=True) for prompt in PROMPTS]
    alone = run(failing_core, [Submission(i, prompt, GREEDY) for i, prompt in enumerate(ids)])
    assert all(isinstance(text, str) and text for text in alone.values())

    beams = Submission(99, ids[1], BEAM)
    together = run(failing_core, [*(Submission(10 + i, p, GREEDY) for i, p in enumerate(ids)), beams], fail_at=10)

    assert isinstance(together.pop(99), EngineError)  # beam search cannot be resumed: it fails
    assert together == {10 + i: text for i, text in alone.items()}  # the others, as if nothing happened
    assert failing_core.stats().running == 0


class FailingSteps:
    """A pipeline whose next ``left`` steps fail, as an unforeseen request would make them."""

    left = 0

    def __init__(self, pipeline: ov_genai.ContinuousBatchingPipeline) -> None:
        self._pipeline = pipeline

    def step(self) -> None:
        if FailingSteps.left:
            FailingSteps.left -= 1
            raise RuntimeError("injected step failure")
        self._pipeline.step()

    def __getattr__(self, name: str) -> object:
        return getattr(self._pipeline, name)


def test_a_request_resumed_once_is_failed_when_a_step_fails_again(failing_core: EngineCore, codec: TokenCodec) -> None:
    """A request that may be the culprit gets one more try, not a third (every step would fail forever)."""
    core = failing_core
    ids = codec.encode(PROMPTS[0], add_special_tokens=True)
    alone = run(core, [Submission(1, ids, GREEDY)])[1]

    # One failure, mid-way: resumed from its tokens, and its text is what it would have been.
    assert run(core, [Submission(2, ids, GREEDY)], fail_at=20) == {2: alone}

    assert core.add(Submission(3, ids, GREEDY)) == []
    core.step()
    FailingSteps.left = 2  # two failures in a row: resumed after the first, failed at the second
    outcomes = [outcome for _ in range(2) for _, outcome in core.step()]
    assert [type(outcome) for outcome in outcomes] == [EngineError]
    assert not core.busy or core.stats().running == 0


def test_best_of_with_stop_beside_four_streams_leaves_them_untouched(completions) -> None:
    """End to end: the request is refused up front (naming stop) and the four streams give their text alone."""
    from concurrent.futures import ThreadPoolExecutor

    import grpc

    from ovserve.clients.v1 import completion_pb2
    from tests.rpc import failure, parse

    def stream(prompt: str) -> str:
        body = {"model": "tiny-chat", "prompt": prompt, "max_tokens": 64, "temperature": 0, "ignore_eos": True}
        chunks = completions.StreamCompletion(parse(completion_pb2.StreamCompletionRequest, body), timeout=60)
        return "".join(choice.text for chunk in chunks for choice in chunk.choices)

    def best_of_with_stop() -> grpc.RpcError:
        body = {"model": "tiny-chat", "prompt": PROMPTS[1], "max_tokens": 12, "best_of": 3, "stop_sequences": ["."]}
        try:
            completions.CreateCompletion(parse(completion_pb2.CreateCompletionRequest, body), timeout=60)
        except grpc.RpcError as error:
            return error
        raise AssertionError("best_of with stop was accepted")

    alone = [stream(prompt) for prompt in PROMPTS]
    with ThreadPoolExecutor(len(PROMPTS) + 1) as pool:
        streams = [pool.submit(stream, prompt) for prompt in PROMPTS]
        refused = failure(pool.submit(best_of_with_stop).result())
        together = [future.result() for future in streams]
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT and refused.fields == ["stop_sequences"]
    assert together == alone

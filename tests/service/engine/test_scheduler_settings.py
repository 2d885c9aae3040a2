"""Scheduler settings that reach the pipeline: a prompt longer than a step's tokens, with and without split-fuse."""

from __future__ import annotations

from pathlib import Path

import openvino_genai as ov_genai
import pytest

from ovserve.service.engine import EngineSettings
from ovserve.service.engine.core import EngineCore, Submission
from ovserve.service.engine.sampling import SamplingParams
from ovserve.service.engine.settings import max_model_len
from ovserve.service.engine.types import Update
from ovserve.service.workers.codec import TokenCodec
from ovserve.service.workers.errors import EngineError

STEP_TOKENS = 64


def _generate(settings: EngineSettings, model_dir: Path, prompt_tokens: int) -> list[Update | EngineError]:
    scheduler = ov_genai.SchedulerConfig()
    for name, value in settings.scheduler(model_dir).items():
        setattr(scheduler, name, value)
    codec = TokenCodec(model_dir)
    core = EngineCore(
        lambda: ov_genai.ContinuousBatchingPipeline(str(model_dir), scheduler, "CPU"), codec.decode_windows
    )
    ids = (codec.encode("the sea and the ships " * prompt_tokens, add_special_tokens=False))[:prompt_tokens]
    params = SamplingParams(max_new_tokens=4, ignore_eos=True, do_sample=False)
    outcomes = [outcome for _, outcome in core.add(Submission(1, ids, params))]
    while core.busy:
        outcomes += [outcome for _, outcome in core.step()]
    return outcomes


@pytest.mark.parametrize("split_fuse", [True, False])
def test_a_prompt_longer_than_a_step_is_served(tiny_chat_dir: Path, split_fuse: bool) -> None:
    settings = EngineSettings(max_num_batched_tokens=STEP_TOKENS, dynamic_split_fuse=split_fuse, max_num_seqs=4)
    outcomes = _generate(settings, tiny_chat_dir, prompt_tokens=5 * STEP_TOKENS)
    assert not [outcome for outcome in outcomes if isinstance(outcome, EngineError)], outcomes
    updates = [outcome for outcome in outcomes if isinstance(outcome, Update)]
    assert updates[-1].finished and sum(len(d.token_ids) for u in updates for d in u.sequences) == 4


def test_unsplit_steps_take_the_models_whole_context(tiny_chat_dir: Path) -> None:
    split = EngineSettings(max_num_batched_tokens=STEP_TOKENS).scheduler(tiny_chat_dir)
    unsplit = EngineSettings(max_num_batched_tokens=STEP_TOKENS, dynamic_split_fuse=False).scheduler(tiny_chat_dir)
    assert split["max_num_batched_tokens"] == STEP_TOKENS
    assert unsplit["max_num_batched_tokens"] == max_model_len(tiny_chat_dir) > STEP_TOKENS

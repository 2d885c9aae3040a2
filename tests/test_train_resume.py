"""A tiny-chat training run split across sessions (or machines) ends where an unbroken one does (train.py, prepared.py).

The agent recipe trains for hours on two CPU cores, so it runs across sessions: stopped (``stop``, the CLI's
--stop-after-minutes) with a checkpoint, resumed with ``resume``. Here a one-layer toy model on a random corpus
trains 8 steps unbroken, and 3 + 5 steps resumed from a checkpoint into a freshly initialised model: the weights
and the logged losses must agree within TOLERANCE (on CPU they are in fact equal: the same operations in the same
order on the same state).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import torch

from tools.model_builder import prepared, train

VOCAB, EOS, PAD = 300, 298, 299
TOLERANCE = 1e-6  # the largest absolute difference allowed between any two weights


def _corpus() -> list[tuple[list[int], list[int]]]:
    rng = random.Random(11)
    encoded = []
    for _ in range(64):
        n = rng.randrange(8, 40)
        ids = [rng.randrange(EOS) for _ in range(n)]
        split = rng.randrange(2, n - 2)
        encoded.append((ids, [1] * split + [0] + [2] * (n - split - 1)))
    return encoded


def _config(**changes: Any) -> train.TrainConfig:
    settings: dict[str, Any] = {
        "steps": 8, "seed": 5, "warmup_steps": 2, "tokens_per_batch": 256, "max_len": 64, "threads": 1,
        "induction_steps": 2, "induction_every": 3, **changes,
    }  # fmt: skip
    return train.TrainConfig(**settings)


def _model() -> Any:
    return train.build_model("tiny-chat-draft", VOCAB, EOS, PAD, seed=5)


def _quiet(*_args: Any, **_kwargs: Any) -> None:
    return None


def _largest_difference(a: Any, b: Any) -> float:
    theirs = b.state_dict()
    return max(float((weight - theirs[name]).abs().max()) for name, weight in a.state_dict().items())


def test_a_resumed_run_ends_where_an_unbroken_one_does(tmp_path: Path) -> None:
    encoded = _corpus()
    unbroken = _model()
    whole = train.train_model(unbroken, encoded, PAD, _config(), log=_quiet)

    first = _model()
    part = train.train_model(
        first, encoded, PAD, _config(), log=_quiet, checkpoints=tmp_path, stop=lambda done: done == 3
    )
    assert not part.finished and part.steps == 3
    assert _largest_difference(unbroken, first) > 1e-3  # three steps are not eight: the comparison below can fail

    resumed = _model()  # a new session: fresh weights, everything else from the checkpoint
    rest = train.train_model(resumed, encoded, PAD, _config(), log=_quiet, checkpoints=tmp_path, resume=True)
    assert rest.finished and rest.steps == 8
    assert _largest_difference(unbroken, resumed) <= TOLERANCE
    assert rest.losses == whole.losses and rest.final_loss == whole.final_loss


def test_a_finished_checkpoint_keeps_no_optimiser_and_is_not_trained_again(tmp_path: Path) -> None:
    encoded = _corpus()
    trained = _model()
    train.train_model(trained, encoded, PAD, _config(), log=_quiet, checkpoints=tmp_path)
    state = torch.load(tmp_path / train.CHECKPOINT, weights_only=False)
    assert state["step"] == 8 and "optimizer" not in state

    again = _model()
    result = train.train_model(again, encoded, PAD, _config(), log=_quiet, checkpoints=tmp_path, resume=True)
    assert result.finished and _largest_difference(trained, again) == 0.0


def test_a_run_resumed_under_another_torch_names_both(tmp_path: Path) -> None:
    """The model card names each torch that trained the weights: a run stopped on a device and resumed on CPU had
    two; resuming a finished run (device_train.sh's finish) trains nothing and adds none."""
    encoded = _corpus()
    train.train_model(_model(), encoded, PAD, _config(), log=_quiet, checkpoints=tmp_path, stop=lambda done: done == 3)
    saved = tmp_path / train.CHECKPOINT
    state = torch.load(saved, weights_only=False)
    assert state["torch"] == [torch.__version__]
    state["torch"] = ["2.11.0+cu128"]  # as a device's torch would have written it
    torch.save(state, saved)
    result = train.train_model(_model(), encoded, PAD, _config(), log=_quiet, checkpoints=tmp_path, resume=True)
    assert result.torch_versions == ("2.11.0+cu128", torch.__version__)

    finished = torch.load(saved, weights_only=False)
    finished["torch"] = ["2.11.0+cu128"]
    torch.save(finished, saved)
    again = train.train_model(_model(), encoded, PAD, _config(), log=_quiet, checkpoints=tmp_path, resume=True)
    assert again.finished and again.torch_versions == ("2.11.0+cu128",)


def test_resume_refuses_another_runs_checkpoint(tmp_path: Path) -> None:
    encoded = _corpus()
    train.train_model(_model(), encoded, PAD, _config(), log=_quiet, checkpoints=tmp_path, stop=lambda done: done == 2)
    with pytest.raises(ValueError, match=r"--resume: .* another run's"):
        train.train_model(_model(), encoded, PAD, _config(lr=1e-3), log=_quiet, checkpoints=tmp_path, resume=True)


def test_a_prepared_corpus_reads_back_as_written(tmp_path: Path) -> None:
    # What a device run trains on is the corpus encoded here (tools/model_builder/prepared.py).
    encoded = _corpus()
    meta = {"vocab_size": VOCAB, "eos_id": EOS, "pad_id": PAD}
    prepared.save(tmp_path, encoded, meta)
    assert prepared.load(tmp_path) == (encoded, meta)
    with pytest.raises(ValueError, match="vocab_size"):
        prepared.save(tmp_path, encoded, {**meta, "vocab_size": 1 << 15})

"""The biased lane's sampling math (service/engine/token_sampler.py), on made-up logits."""

from __future__ import annotations

import numpy as np
import pytest

from ovserve.service.engine.sampling import SamplingParams
from ovserve.service.engine.token_sampler import TokenSampler, bad_word_ends

LOGITS = np.array([1.0, 3.0, 2.0, -1.0, 0.5, -2.0], dtype=np.float32)  # greedy: token 1


def sampler(seed: int = 0, prompt: tuple[int, ...] = (), stops: frozenset[int] = frozenset(), **params) -> TokenSampler:
    return TokenSampler(SamplingParams(**params), list(prompt), np.random.default_rng(seed), stops)


def test_bias_is_added_to_the_logits_and_moves_the_greedy_choice() -> None:
    assert sampler().choose(LOGITS) == 1
    biased = sampler(logit_bias=((2, 1.5), (4, -0.5)))
    assert biased.shaped(LOGITS).tolist() == pytest.approx([1.0, 3.0, 3.5, -1.0, 0.0, -2.0])
    assert biased.choose(LOGITS) == 2
    assert sampler(logit_bias=((5, 100.0),)).choose(LOGITS) == 5  # +100 all but forces


def test_a_ban_holds_against_every_penalty_and_every_draw() -> None:
    # -100 is a ban, not a large subtraction: a repetition penalty below 1 multiplies a negative logit by it and
    # would otherwise bring the token back; a negative presence penalty would too (openvino-genai's definitions).
    banned = sampler(
        seed=3, prompt=(1,), logit_bias=((1, -100.0),), repetition_penalty=0.01, presence_penalty=-2.0,
        do_sample=True, temperature=2.0,
    )  # fmt: skip
    banned.accept(1)
    assert banned.shaped(LOGITS)[1] == -np.inf
    draws = {banned.choose(LOGITS) for _ in range(300)}
    assert 1 not in draws and len(draws) > 2
    assert sampler(logit_bias=((1, -100.0),)).choose(LOGITS) == 2  # greedy: the next best


def test_bad_words_ban_a_words_last_token_only_after_the_ones_before_it() -> None:
    words = ((4, 1), (0,))  # a two-token word (4 then 1) and a one-token word (0)
    state = sampler(bad_words=words)
    assert state.shaped(LOGITS)[0] == -np.inf  # a single-token word: banned everywhere
    assert state.choose(LOGITS) == 1  # 4 was not written: 1 is allowed
    state.accept(4)
    assert state.shaped(LOGITS)[1] == -np.inf and state.choose(LOGITS) == 2
    state.accept(2)
    assert state.choose(LOGITS) == 1
    assert bad_word_ends([(7, 8, 9), (5, 9)], [1, 7, 8]) == [9]
    assert bad_word_ends([(7, 8, 9)], [8]) == []


def test_penalties_are_openvino_genais() -> None:
    # repetition: prompt and output tokens, a logit >= 0 divided, a negative one multiplied
    repeated = sampler(prompt=(2, 3), repetition_penalty=2.0)
    repeated.accept(1)
    shaped = repeated.shaped(LOGITS)
    assert shaped[[1, 2, 3]].tolist() == pytest.approx([1.5, 1.0, -2.0])
    assert shaped[[0, 4, 5]].tolist() == pytest.approx([1.0, 0.5, -2.0])
    # presence and frequency: output tokens only, toward 0 (subtracted from >= 0, added to < 0), frequency per time
    counted = sampler(prompt=(0,), presence_penalty=0.5, frequency_penalty=0.25)
    for token in (1, 1, 3):
        counted.accept(token)
    shaped = counted.shaped(LOGITS)
    assert shaped[1] == pytest.approx(3.0 - 0.5 - 2 * 0.25)
    assert shaped[3] == pytest.approx(-1.0 + 0.5 + 0.25)
    assert shaped[0] == pytest.approx(1.0)


def test_stop_tokens_are_banned_until_min_new_tokens() -> None:
    early = sampler(stops=frozenset({1}), min_new_tokens=2)
    assert early.choose(LOGITS) == 2
    early.accept(2)
    early.accept(2)
    assert early.choose(LOGITS) == 1


def test_a_seed_gives_the_same_draws_and_another_seed_others() -> None:
    params = {"do_sample": True, "temperature": 1.5}
    first, again, other = sampler(seed=11, **params), sampler(seed=11, **params), sampler(seed=12, **params)
    drawn = [first.choose(LOGITS) for _ in range(50)]
    assert drawn == [again.choose(LOGITS) for _ in range(50)]
    assert drawn != [other.choose(LOGITS) for _ in range(50)]
    assert len(set(drawn)) > 2  # it did sample


def test_top_k_min_p_and_top_p_narrow_the_draw_as_openvino_genai_orders_them() -> None:
    probabilities = np.exp(LOGITS - LOGITS.max()) / np.exp(LOGITS - LOGITS.max()).sum()  # 1 > 2 > 0 > 4 > 3 > 5
    top_k = sampler(do_sample=True, top_k=2)
    assert sorted(top_k.distribution(LOGITS)[0].tolist()) == [1, 2]
    # top_p: the smallest most-likely set whose probability passes it
    passes = probabilities[1] + 0.01
    assert sorted(sampler(do_sample=True, top_p=float(passes)).distribution(LOGITS)[0].tolist()) == [1, 2]
    assert sampler(do_sample=True, top_p=float(probabilities[1] - 0.01)).distribution(LOGITS)[0].tolist() == [1]
    # min_p: below min_p times the most likely's probability is dropped
    kept = sampler(do_sample=True, min_p=0.3).distribution(LOGITS)[0]
    assert sorted(kept.tolist()) == sorted(int(t) for t in np.flatnonzero(probabilities >= 0.3 * probabilities.max()))
    # temperature sharpens: at a low one the draw is the greedy token
    cold = sampler(seed=5, do_sample=True, temperature=0.01)
    assert {cold.choose(LOGITS) for _ in range(50)} == {1}


def test_top_p_over_a_large_vocabulary_matches_a_full_sort() -> None:
    rng = np.random.default_rng(0)
    logits = (rng.standard_normal(50_000) * 4).astype(np.float32)
    for top_p in (0.1, 0.5, 0.9, 0.99):
        candidates, _ = sampler(do_sample=True, top_p=top_p).distribution(logits)
        probabilities = np.exp(logits.astype(np.float64) - logits.max())
        probabilities /= probabilities.sum()
        order = np.argsort(-probabilities, kind="stable")
        count = int(np.searchsorted(np.cumsum(probabilities[order]), top_p, side="right")) + 1
        assert set(candidates.tolist()) == set(order[:count].tolist())

"""The arithmetic of the per-request logprobs bound (ovserve.service.api.logprobs): what an answer holds, and which
field a
request over MAX_REQUEST_SCORES is refused naming."""

from __future__ import annotations

import pytest

from ovserve.service.api.logprobs import (
    MAX_REQUEST_SCORES,
    LogprobAsk,
    ScoredPrompt,
    count_scores,
    output_cap,
    score_violations,
)

# completions: prompt_logprobs 20 and logprobs 5, each choice carrying its prompt's scores
COMPLETIONS = LogprobAsk(chosen=True, top=5, prompt=20, prompt_logprobs=20, per_choice=True, output_field="logprobs")
CHAT = LogprobAsk(chosen=True, top=20, prompt=20, prompt_logprobs=20)  # prompt_logprobs once, at the top level


def issue_prompts(count: int, n: int, max_output: int) -> list[ScoredPrompt]:
    return [ScoredPrompt(1_000, f"prompts[{i}]", n, max_output) for i in range(count)]


def test_completions_count_every_choices_copy_of_its_prompts_scores() -> None:
    count = count_scores(COMPLETIONS, issue_prompts(16, 16, 16))
    assert count.prompt == 16 * 16 * 1_000 * 21  # prompts x n x tokens x (prompt_logprobs + 1)
    assert count.output == 16 * 16 * 16 * 6  # choices x max_tokens x (logprobs + 1)
    assert count.total == 5_400_576


def test_chat_counts_its_prompt_once() -> None:
    count = count_scores(CHAT, [ScoredPrompt(1_000, "messages", 4, 100)])
    assert (count.prompt, count.output) == (1_000 * 21, 4 * 100 * 21)


@pytest.mark.parametrize(
    ("ask", "expected"),
    [
        (LogprobAsk(), (0, 0)),  # nothing asked: nothing counted
        (LogprobAsk(chosen=True), (0, 3 * 50)),  # the sampler's logprob of each output token
        (LogprobAsk(chosen=True, top=5, prompt=5, echoed=True, per_choice=True), (3 * 10 * 6, 3 * 50 * 6)),
        (  # echo and prompt_logprobs together: both in each choice
            LogprobAsk(chosen=True, top=2, prompt=4, prompt_logprobs=4, echoed=True, per_choice=True),
            (3 * 10 * (5 + 3), 3 * 50 * 3),
        ),
        (LogprobAsk(chosen=True, top=2, prompt=2, echoed=True, generate=False, per_choice=True), (3 * 10 * 3, 0)),
    ],
    ids=["none", "chosen", "echo", "echo-and-prompt_logprobs", "max_tokens-0"],
)
def test_each_shape_of_answer_is_counted(ask: LogprobAsk, expected: tuple[int, int]) -> None:
    count = count_scores(ask, [ScoredPrompt(10, "prompt", 3, 0 if not ask.generate else 50)])
    assert (count.prompt, count.output) == expected


def field_of(ask: LogprobAsk, prompts: list[ScoredPrompt], length_field: str = "max_tokens") -> str | None:
    violations = score_violations(ask, prompts, length_field)
    assert len(violations) <= 1
    return violations[0].field if violations else None


def test_at_the_bound_is_allowed_one_more_is_not() -> None:
    ask = LogprobAsk(prompt=0, prompt_logprobs=0)
    assert field_of(ask, [ScoredPrompt(MAX_REQUEST_SCORES, "prompt", 1, 0)]) is None
    assert field_of(ask, [ScoredPrompt(MAX_REQUEST_SCORES // 2, f"prompts[{i}]", 1, 0) for i in range(2)]) is None
    over = [ScoredPrompt(MAX_REQUEST_SCORES // 2, f"prompts[{i}]", 1, 0) for i in range(2)]
    over.append(ScoredPrompt(1, "prompts[2]", 1, 0))
    assert field_of(ask, over) == "prompt_logprobs"


def test_the_field_named_is_the_one_that_takes_the_request_over() -> None:
    assert field_of(COMPLETIONS, issue_prompts(16, 16, 16)) == "prompt_logprobs"  # the issue's first request
    assert field_of(COMPLETIONS, issue_prompts(4, 16, 16)) == "n"  # one choice each would fit
    # the outputs' scores are the larger part
    assert field_of(COMPLETIONS, [ScoredPrompt(10, "prompt", 1, 2_000) for _ in range(64)]) == "logprobs"
    assert field_of(CHAT, [ScoredPrompt(10, "messages", 1, 13_000)]) == "top_logprobs"
    [violation] = score_violations(CHAT, [ScoredPrompt(10, "messages", 1, 13_000)], "max_completion_tokens")
    assert violation.description.endswith("(max_completion_tokens 12473 fits)")  # (262,144 - 10 x 21) // 21
    chosen = LogprobAsk(chosen=True)  # no alternatives: the output's length takes it over
    assert field_of(chosen, [ScoredPrompt(10, "input", 1, 300_000)], "max_output_tokens") == "max_output_tokens"
    echo = LogprobAsk(chosen=True, top=5, prompt=5, echoed=True, per_choice=True, output_field="logprobs")
    assert field_of(echo, issue_prompts(64, 1, 1)) == "echo"


def test_a_prompt_too_long_alone_is_named_itself() -> None:
    ask = LogprobAsk(prompt=20, prompt_logprobs=20)
    [violation] = score_violations(ask, [ScoredPrompt(5, "prompts[0]", 1, 1), ScoredPrompt(13_000, "prompts[1]", 1, 1)],
                                   "max_tokens")  # fmt: skip
    assert violation.field == "prompts[1]"
    assert "at most 12483 tokens with 20 alternatives" in violation.description


def test_the_message_gives_the_numbers() -> None:
    [violation] = score_violations(COMPLETIONS, issue_prompts(16, 16, 16), "max_tokens")
    assert violation.description == (
        "the answer would hold up to 5,400,576 logprobs (5,376,000 for the tokens of 16 prompt(s), 24,576 for 256 "
        "choice(s) of up to 16 tokens); a request may have at most 262,144"
    )


def test_a_request_without_a_length_is_cut_where_its_scores_reach_the_bound() -> None:
    # chat, 2 choices of top_logprobs 20 beside a 1,000-token prompt scored once: (262,144 - 21,000) // (2 x 21)
    assert output_cap(CHAT, [ScoredPrompt(1_000, "messages", 2, 0)]) == 5_741
    cap = output_cap(COMPLETIONS, issue_prompts(4, 2, 0))  # each choice carries its prompt's scores
    assert cap == (MAX_REQUEST_SCORES - 4 * 2 * 1_000 * 21) // (4 * 2 * 6)
    assert score_violations(COMPLETIONS, issue_prompts(4, 2, cap), "max_tokens") == []  # the cut fits
    assert score_violations(COMPLETIONS, issue_prompts(4, 2, cap + 1), "max_tokens") != []  # one more would not
    assert output_cap(LogprobAsk(prompt=20, prompt_logprobs=20), [ScoredPrompt(10, "prompt", 1, 0)]) is None
    assert output_cap(CHAT, [ScoredPrompt(20_000, "messages", 1, 0)]) == 1  # the prompt alone is refused instead

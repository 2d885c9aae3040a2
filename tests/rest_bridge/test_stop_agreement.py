"""Stop sequences agree, streamed and unary, for 20 seeds on chat and completions (sampled, temperature 1).

The engine cuts the text at the first stop string itself (service/engine/stops.py),
so a stream never shows a stop string the unary reply drops. In half the cases
other requests run at the same time, so batch composition differs between the
two calls.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import openai
import pytest

MODEL = "tiny-chat"
SEEDS = range(1, 21)
STOPS = [".", ",", "!"]
PROMPT = "Once upon a time"
MESSAGES = [{"role": "user", "content": "Tell me a short story."}]


@pytest.fixture
def background_traffic(client: openai.OpenAI) -> Iterator[None]:
    """Greedy streams running meanwhile, until the test ends."""
    done = threading.Event()

    def run() -> None:
        while not done.is_set():
            for _ in client.completions.create(model=MODEL, prompt="The sea", max_tokens=30, stream=True):
                pass

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    yield
    done.set()
    for thread in threads:
        thread.join(timeout=60)


def outcomes(client: openai.OpenAI, api: str, seed: int) -> tuple[tuple[str, str], tuple[str, str]]:
    """(text, finish_reason) unary and streamed for one seed."""
    common = {"model": MODEL, "seed": seed, "temperature": 1.0, "max_tokens": 40, "stop": STOPS}
    if api == "chat":
        unary = client.chat.completions.create(messages=MESSAGES, **common).choices[0]
        chunks = list(client.chat.completions.create(messages=MESSAGES, stream=True, **common))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        return (unary.message.content or "", unary.finish_reason), (text, finish[-1])
    unary_c = client.completions.create(prompt=PROMPT, **common).choices[0]
    chunks_c = list(client.completions.create(prompt=PROMPT, stream=True, **common))
    text = "".join(c.choices[0].text for c in chunks_c if c.choices)
    finish = [c.choices[0].finish_reason for c in chunks_c if c.choices and c.choices[0].finish_reason]
    return (unary_c.text, unary_c.finish_reason), (text, finish[-1])


def check(client: openai.OpenAI, api: str, seeds: range) -> list[str]:
    stopped = []
    for seed in seeds:
        unary, streamed = outcomes(client, api, seed)
        assert streamed == unary, (api, seed)
        assert not any(stop in unary[0] for stop in STOPS), (api, seed, unary)  # cut at, not after, the stop
        if unary[1] == "stop":
            stopped.append(unary[0])
    return stopped


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_stop_sequences_agree_streamed_and_unary_for_20_seeds(client: openai.OpenAI, api: str) -> None:
    stopped = check(client, api, SEEDS[:10])
    assert stopped  # the stops were reached, not only max_tokens


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_stop_sequences_agree_with_other_requests_running(
    client: openai.OpenAI, background_traffic: None, api: str
) -> None:
    check(client, api, SEEDS[10:])

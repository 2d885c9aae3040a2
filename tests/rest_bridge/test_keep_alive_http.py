"""Models loaded on request and a request's keep_alive through the REST bridge and the openai client (issue 45):
a lazy model answers its first request, ``keep_alive: 0`` unloads it once idle, the next request loads it
again, and a keep_alive that is not a duration is a 400 naming it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import openai
import pytest

from ovserve.service.models import ModelSpec
from tests.conftest import TEST_SETTINGS, TINY_CHAT
from tests.rest_bridge.conftest import RunningBridge, http_request, served_with_bridge

WAIT_S = 60


@pytest.fixture(scope="module")
def bridge() -> Iterator[RunningBridge]:
    lazy = ModelSpec("lazy", TINY_CHAT, settings=TEST_SETTINGS, load_on_request=True)
    with served_with_bridge([lazy]) as running:
        yield running


def state(bridge: RunningBridge) -> str:
    return str(http_request(bridge.port, "GET", "/v3/models/lazy").json()["state"])


def ask(bridge: RunningBridge, **extra: object) -> openai.types.chat.ChatCompletion:
    with openai.OpenAI(base_url=bridge.url, api_key="unused", max_retries=0, timeout=WAIT_S) as client:
        return client.chat.completions.create(
            model="lazy", messages=[{"role": "user", "content": "Hi"}], max_tokens=4, extra_body=extra or None
        )


def test_a_lazy_model_loads_on_request_and_keep_alive_zero_unloads_it_once_idle(bridge: RunningBridge) -> None:
    assert state(bridge) == "available"
    assert ask(bridge, keep_alive="10m").usage.completion_tokens > 0  # loaded for it
    assert state(bridge) == "loaded"
    assert ask(bridge, keep_alive=0).usage.completion_tokens > 0
    deadline = time.monotonic() + WAIT_S
    while state(bridge) != "available":  # unloaded within the idle loop's half second
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert ask(bridge).usage.completion_tokens > 0  # and loaded again by the next request


@pytest.mark.parametrize("value", ["soon", True, [1], {"m": 5}])
def test_a_keep_alive_that_is_not_a_duration_is_a_400_naming_it(bridge: RunningBridge, value: object) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        ask(bridge, keep_alive=value)
    assert refused.value.body["param"] == "keep_alive"  # type: ignore[index]
    assert "keep_alive" in refused.value.message

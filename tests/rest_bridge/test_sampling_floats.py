"""Float sampling fields out of range, denormal or huge are 400s naming the field, on all three generation APIs.

The engine keeps sampling floats as 32-bit floats: a double it cannot hold as a
normal number turned ``temperature: 5e-324`` into a 200 carrying a failed
response (the engine refused the 0 it became) and ``1e-40`` into garbage text.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.rest_bridge.conftest import RunningBridge, http_request

BODIES: dict[str, dict[str, Any]] = {
    "/v3/chat/completions": {"model": "tiny-chat", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4},
    "/v3/completions": {"model": "tiny-chat", "prompt": "Once upon a time", "max_tokens": 4},
    "/v3/responses": {"model": "tiny-chat", "input": "hi", "max_output_tokens": 4},
}

DENORMAL, FLOAT32_DENORMAL, HUGE = 5e-324, 1e-40, 1e300
# field -> values it must refuse: denormal (as a double, then as a float32), huge, and negative where that is wrong
BAD_VALUES: dict[str, list[float]] = {
    "temperature": [DENORMAL, FLOAT32_DENORMAL, HUGE, -1e-300, -0.5],
    "top_p": [DENORMAL, FLOAT32_DENORMAL, HUGE, -0.5],
    "min_p": [DENORMAL, FLOAT32_DENORMAL, HUGE, -1e-9],
    "repetition_penalty": [DENORMAL, FLOAT32_DENORMAL, HUGE, -1.0],
    "frequency_penalty": [DENORMAL, FLOAT32_DENORMAL, HUGE, -HUGE, -2.5],
    "presence_penalty": [DENORMAL, -FLOAT32_DENORMAL, HUGE, -HUGE, -2.5],
    "length_penalty": [DENORMAL, FLOAT32_DENORMAL, HUGE, -HUGE],
    "diversity_penalty": [DENORMAL, FLOAT32_DENORMAL, HUGE, -1.0],
    "assistant_confidence_threshold": [DENORMAL, FLOAT32_DENORMAL, HUGE, -0.5],
}


@pytest.mark.parametrize("path", list(BODIES))
@pytest.mark.parametrize("field", list(BAD_VALUES))
def test_a_bad_float_is_a_400_naming_its_field(bridge: RunningBridge, path: str, field: str) -> None:
    for value in BAD_VALUES[field]:
        reply = http_request(bridge.port, "POST", path, {**BODIES[path], field: value})
        assert reply.status == 400, (value, reply.body)
        assert reply.json()["error"]["param"] == field, (value, reply.body)


@pytest.mark.parametrize("path", list(BODIES))
def test_small_normal_values_are_served(bridge: RunningBridge, path: str) -> None:
    for fields in ({"temperature": 1e-30}, {"top_p": 1e-30, "temperature": 1.0}, {"frequency_penalty": 1e-30}):
        reply = http_request(bridge.port, "POST", path, {**BODIES[path], **fields})
        assert reply.status == 200, (fields, reply.body)
        if path == "/v3/responses":
            assert reply.json()["status"] in ("completed", "incomplete"), reply.body

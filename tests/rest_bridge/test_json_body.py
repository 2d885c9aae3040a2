"""Large replies are encoded a slice at a time, to the very bytes one json.dumps call writes."""

from __future__ import annotations

import json

import pytest

from ovserve.clients.v1 import tokenizer_pb2
from ovserve.rest_bridge.json_body import ENCODE_SLICE, encode_json, listed
from tests.pauses import longest_pause_while

PAYLOADS = {
    "long lists of scalars": {"tokens": list(range(3 * ENCODE_SLICE + 7)), "strs": ["é\u2028\"x"] * (ENCODE_SLICE + 1)},
    "nested containers": {"data": [{"embedding": [0.1, 1e300, -0.0], "index": i} for i in range(5)], "e": [],
                          "d": {}, "n": None, "t": True, "pairs": [[1, [2, 3]], (4, 5)]},
    "a lone surrogate (escaped)": {"bad": "\udc80 text", "xs": [1] * (ENCODE_SLICE * 2)},
    "unicode keys": {"ключ": {"ß": ["\U0001f600"] * 3}},
}  # fmt: skip


@pytest.mark.parametrize("name", PAYLOADS)
def test_sliced_encoding_writes_the_same_bytes(name: str) -> None:
    payload = PAYLOADS[name]
    sliced = encode_json(payload, sliced=True)
    assert sliced == encode_json(payload)
    assert json.loads(sliced) == json.loads(json.dumps(payload))


def test_a_repeated_field_is_listed_whole_and_in_order() -> None:
    reply = tokenizer_pb2.TokenizeResponse(tokens=range(3 * ENCODE_SLICE + 1), token_strs=["a", "b"])
    assert listed(reply.tokens) == list(range(3 * ENCODE_SLICE + 1))
    assert listed(reply.token_strs) == ["a", "b"]


def test_sliced_encoding_lets_other_threads_run() -> None:
    """Pauses side by side: one json.dumps call of a tokenize reply of 800,000 tokens, then the sliced encoding."""
    payload = {"tokens": list(range(800_000)), "token_strs": ["Ġword"] * 800_000}
    whole = longest_pause_while(lambda: encode_json(payload))
    sliced = longest_pause_while(lambda: encode_json(payload, sliced=True))
    print(f"\nlongest pause: {whole * 1000:.0f} ms in one call, {sliced * 1000:.1f} ms sliced")
    assert sliced * 4 < whole

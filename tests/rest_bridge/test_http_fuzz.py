"""A standing fuzz suite for the HTTP face: generated bad requests for every route, bounded in count and time.

For each route a valid request is the seed; each generated input breaks it one
way or several: a field set to a value of another type or an extreme (NaN,
infinities written raw, 1e309, huge integers, 1 MiB strings, 20,000-item
arrays, nesting 40 deep, lone surrogates), fields dropped or added, bodies
that are not JSON objects, other content types, other methods, odd query
strings and ids. Output lengths stay tiny, so inputs that are valid finish
fast. Whatever is sent, the bridge must answer below 500, every error in
OpenAI's envelope, a 400 about a body it could parse naming the field
(``param``), and the server must stay healthy.
"""

from __future__ import annotations

import json
import random
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

from tests.conftest import FUZZ_REPORT
from tests.rest_bridge.conftest import RunningBridge, http_request

SEED = 20261124
INPUTS_PER_ROUTE = 500
HI = [{"role": "user", "content": "hi"}]
TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
SEEDS: dict[str, dict[str, Any]] = {  # a valid body per POST route; every key is fuzzed
    "/v3/chat/completions": {"model": "tiny-chat", "messages": HI, "max_tokens": 2, "temperature": 0, "stop": ["."],
                             "tools": [TOOL], "tool_choice": "auto", "stream": False, "n": 1,
                             "response_format": {"type": "text"}, "seed": 1, "top_p": 1.0, "logprobs": False},
    "/v3/completions": {"model": "tiny-chat", "prompt": "Once", "max_tokens": 2, "temperature": 0, "stop": "x",
                        "echo": False, "stream": False, "n": 1, "seed": 1, "suffix": None},
    "/v3/responses": {"model": "tiny-chat", "input": [{"role": "user", "content": "hi"}], "max_output_tokens": 2,
                      "temperature": 0, "instructions": "Be brief.", "store": False, "stream": False,
                      "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
                      "text": {"format": {"type": "text"}}},
    "/v3/tokenize": {"model": "tiny-chat", "prompt": "Once", "add_special_tokens": True, "return_token_strs": True},
    "/v3/detokenize": {"model": "tiny-chat", "tokens": [1, 2, 3]},
    "/v3/chat/completions/chatcmpl-nope": {"metadata": {"team": "x"}},
    "/v3/conversations": {"items": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                                    {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}],
                          "metadata": {"team": "x"}},
    "/v3/conversations/conv_nope/items": {"items": [{"type": "function_call_output", "call_id": "c", "output": "1"}]},
    "/v3/batches": {"input_file_id": "file-nope", "endpoint": "/v1/chat/completions", "completion_window": "24h",
                    "metadata": {"team": "x"}},
}  # fmt: skip
LENGTHS = {"max_tokens", "max_output_tokens"}  # kept tiny whatever is drawn, so valid inputs end fast


def deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": [value]} if levels % 2 else {"a": value}
    return value


SURROGATE_BYTES = "\ud800".encode("utf-8", "surrogatepass").decode("latin-1")  # CESU-style, invalid UTF-8
RAW = object()  # marks a value written as raw JSON text (what json.dumps refuses to write)
VALUES: list[Any] = [
    None, True, 0, -1, 2**31, 2**64, -(2**63) - 1, 0.5, -1e308, "", "x", "a" * (1 << 20), [], [1, "a", None],
    list(range(20_000)), {}, {"unknown": 1}, deep(40), deep(20), [[[[]]]],
    (RAW, "NaN"), (RAW, "Infinity"), (RAW, "-Infinity"), (RAW, "1e309"), (RAW, '"\\ud800"'),
    (RAW, '{"k\\udfff": 1}'), (RAW, '["\\ud83d\\ude00", "\\udc00"]'),
    {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {
        f"p{i}": {"type": "string"} for i in range(3000)}}}},
    {"type": "json_schema", "json_schema": {"name": "x", "schema": {"$ref": "#/nope"}}},
    [{"type": "function", "function": {"name": "f", "parameters": {"type": "nonsense"}}}],
    [{"role": "tool"}], [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
]  # fmt: skip


def encode(value: Any) -> str:
    """JSON text of ``value``, with raw pieces spliced in where RAW marks them."""
    if isinstance(value, tuple) and value and value[0] is RAW:
        return str(value[1])
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        if all(type(v) is int for v in value):  # token ids, thousands of them: no RAW piece in there
            return json.dumps(value)
        return "[" + ", ".join(encode(v) for v in value) + "]"
    return json.dumps(value)


def mutated_body(seed: dict[str, Any], rng: random.Random) -> tuple[bytes, bool]:
    """A broken variant of ``seed`` as bytes, and whether it is still a JSON object (then a 400 names a field)."""
    roll = rng.random()
    if roll < 0.08:
        raw = rng.choice([b"", b"{", b"[1, 2]", b'"text"', b"null", b"\xff\xfe", b'{"model": "tiny-chat",}',
                          b"[" * 50_000, b'{"a": 1} trailing', b"{\"model\": \"tiny-chat\"} {}"])  # fmt: skip
        return raw, False
    body: dict[str, Any] = dict(seed)
    for _ in range(rng.randint(1, 3)):
        action = rng.random()
        key = rng.choice(list(seed))
        if action < 0.7:
            body[key] = rng.choice(VALUES)
        elif action < 0.85:
            body.pop(key, None)
        else:
            body[rng.choice(["frobnicate", "k\u00e9y", "stop_sequences", "__proto__", ""])] = rng.choice(VALUES)
    for key in LENGTHS & body.keys():  # a valid length that is not tiny becomes tiny
        if isinstance(body[key], int) and not isinstance(body[key], bool) and body[key] > 4:
            body[key] = 2
    return encode(body).encode(), True


def get_paths(rng: random.Random) -> str:
    """A GET or DELETE path with an odd id or query."""
    ident = rng.choice(["resp_nope", "", "%ED%A0%80", "a" * 5000, "..%2F..", "resp_" + "9" * 40, "%00"])
    name = rng.choice(["limit", "after", "order", "include", "stream", "starting_after"])
    value = rng.choice(["-1", "0", "101", "abc", "1e9", "asc", "sideways", "true", "x" * 3000, SURROGATE_BYTES])
    query = urllib.parse.urlencode({name: value})
    return rng.choice(
        [
            f"/v3/responses/{ident}?{query}",
            f"/v3/responses/{ident}/input_items?{query}",
            f"/v3/models/{ident}",
            f"/v3/models?{query}",
            f"/v3/chat/completions?{query}",
            f"/v3/chat/completions/{ident}?{query}",
            f"/v3/chat/completions/{ident}/messages?{query}",
            f"/v3/conversations/{ident}?{query}",
            f"/v3/conversations/{ident}/items?{query}",
            f"/v3/conversations/conv_nope/items/{ident}?{query}",
            f"/v3/files?{query}",
            f"/v3/files/{ident}?{query}",
            f"/v3/files/{ident}/content?{query}",
            f"/v3/batches?{query}",
            f"/v3/batches/{ident}?{query}",
        ]
    )


def check_reply(status: int, body: bytes, content_type: str, parsed_object: bool, what: str) -> None:
    assert status < 500, (what, status, body[:500])
    if status < 400:
        return
    assert content_type == "application/json", what
    error = json.loads(body)["error"]
    assert set(error) == {"message", "type", "param", "code"}, (what, error)
    assert isinstance(error["message"], str) and error["message"], (what, error)
    if status == 400 and parsed_object:
        assert error["param"] is not None, (what, error)


def test_http_fuzz(bridge: RunningBridge) -> None:
    rng = random.Random(SEED)
    tried: dict[str, int] = {}
    statuses: dict[int, int] = {}
    started = time.monotonic()

    def send(route: str, method: str, path: str, body: bytes | None, headers: dict[str, str], parsed: bool) -> None:
        reply = http_request(bridge.port, method, path, body, headers)
        what = f"{method} {path[:200]} {(body or b'')[:300]!r}"
        check_reply(reply.status, reply.body, reply.headers.get("Content-Type", ""), parsed, what)
        tried[route] = tried.get(route, 0) + 1
        statuses[reply.status] = statuses.get(reply.status, 0) + 1

    json_type = {"Content-Type": "application/json"}
    for route, seed in SEEDS.items():
        for _ in range(INPUTS_PER_ROUTE):
            body, parsed = mutated_body(seed, rng)
            headers: dict[str, str] = dict(json_type)
            if rng.random() < 0.05:
                headers = {"Content-Type": rng.choice(["text/plain", "application/x-www-form-urlencoded", ""])}
                parsed = False
            send(route, rng.choice(["POST"] * 19 + ["PUT"]), route, body, headers, parsed)
    other: list[tuple[str, Callable[[random.Random], str]]] = [("GET/DELETE ids and queries", get_paths)]
    for route, make in other:
        for _ in range(INPUTS_PER_ROUTE):
            send(route, rng.choice(["GET", "GET", "DELETE"]), make(rng), None, {}, False)
    for _ in range(INPUTS_PER_ROUTE // 4):
        send("cancel", "POST", f"/v3/responses/resp_{rng.randint(0, 10**9)}/cancel", b"{}", json_type, False)
        unknown = rng.choice(["/v3/embeddings", "/", "/v2/x"])
        send("unknown routes", rng.choice(["GET", "POST"]), unknown, None, {}, False)
    health = http_request(bridge.port, "GET", "/health")
    FUZZ_REPORT.append(
        f"HTTP fuzz: {sum(tried.values())} requests over {len(tried)} routes in {time.monotonic() - started:.1f} s; "
        f"per route {tried}; statuses {dict(sorted(statuses.items()))}"
    )
    assert health.status == 200
    assert statuses.get(200, 0) > 0 and statuses.get(400, 0) > 0  # the fuzz reached both sides


def test_the_fuzz_is_deterministic_and_reaches_raw_values() -> None:
    seed = SEEDS["/v3/chat/completions"]
    first = [mutated_body(seed, random.Random(3)) for _ in range(5)]
    assert first == [mutated_body(seed, random.Random(3)) for _ in range(5)]
    bodies = [mutated_body(seed, random.Random(i))[0] for i in range(300)]
    assert any(b"NaN" in body for body in bodies) and any(b"\\ud800" in body for body in bodies)

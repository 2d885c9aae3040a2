"""Issue 45's done-when end to end: a converted checkpoint (tiny-chat's weights as a GGUF file) loaded at run time
from its source, served through the openai client, unloaded and loaded again with grpcurl-style JSON bodies
(``buf curl``), while the bundled tiny-chat streams all along over the REST bridge and loses nothing."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
import pytest

from ovserve.service.models import ModelSpec
from tests.conftest import TEST_SETTINGS, TINY_CHAT
from tests.rest_bridge.conftest import RunningBridge, served_with_bridge
from tests.sources.checkpoints import gguf_file

ROOT = Path(__file__).resolve().parents[2]
BUF = ROOT / "node_modules" / ".bin" / "buf"
WAIT_S = 60  # the bound of every wait: a call's deadline, a stream's turn
USER, ADMIN = "user-key", "admin-key"
CONVERTED = "tiny-gguf"
STREAM_TOKENS = 1500  # each of tiny-chat's streams: long, and checked token by token at the end
# What a stream's content leaves out of its tokens: the special ones (ignore_eos streams on past <|im_end|>).
SPECIAL = {
    token["content"].encode()
    for token in json.loads((TINY_CHAT / "tokenizer.json").read_text())["added_tokens"]
    if token["special"]
}
# No digits: the GGUF tokenizer splits digit runs one by one (checkpoints.gguf_file), the bundled one does not.
PROMPT = "Tell me about Rome."


def _buf_curl(target: str, method: str, body: dict[str, Any], key: str) -> subprocess.CompletedProcess[str]:
    """ModelService/``method`` called as grpcurl would call it: a JSON body, the schema from server reflection."""
    return subprocess.run(
        [str(BUF), "curl", "--protocol", "grpc", "--http2-prior-knowledge", "-H", f"authorization: Bearer {key}",
         "-d", json.dumps(body), f"http://{target}/ovserve.v1.ModelService/{method}"],
        capture_output=True, text=True, timeout=WAIT_S, check=False,
    )  # fmt: skip


def buf_curl(target: str, method: str, body: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The call's messages as JSON (a server stream's one after another); AssertionError with buf's output if the
    call fails."""
    done = _buf_curl(target, method, body, key)
    assert done.returncode == 0, done.stderr
    return _messages(done.stdout)


def buf_curl_refused(target: str, method: str, body: dict[str, Any], key: str) -> str:
    """The error buf curl prints for a call the server refuses."""
    done = _buf_curl(target, method, body, key)
    assert done.returncode != 0, done.stdout
    return done.stderr


def _messages(text: str) -> list[dict[str, Any]]:
    """The JSON objects buf curl printed one after another (a server stream's messages)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while text[at:].strip():
        at += len(text[at:]) - len(text[at:].lstrip())
        message, at = decoder.raw_decode(text, at)
        found.append(message)
    return found


@dataclass
class Streams:
    """tiny-chat streamed over the openai client, one long stream after another until ``stop``; each stream's
    content, its tokens' bytes (logprobs), usage and finish reason are kept for the checks at the end."""

    client: openai.OpenAI
    stop: threading.Event = field(default_factory=threading.Event)
    fresh: threading.Event = field(default_factory=threading.Event)  # set: a stream has begun since it was cleared
    done: list[tuple[str, list[bytes], int, str]] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self.done.append(self._one())
        except BaseException as error:  # seen by the test's checks
            self.errors.append(error)
            self.fresh.set()  # (a test awaiting a stream goes on, and fails on the error)

    def _one(self) -> tuple[str, list[bytes], int, str]:
        content: list[str] = []
        tokens: list[bytes] = []
        completion, finish = 0, ""
        stream = self.client.chat.completions.create(
            model="tiny-chat", messages=[{"role": "user", "content": PROMPT}], max_tokens=STREAM_TOKENS,
            temperature=0, logprobs=True, stream=True, stream_options={"include_usage": True},
            extra_body={"ignore_eos": True},
        )  # fmt: skip
        for chunk in stream:
            if not content:
                self.fresh.set()  # this stream has begun
            for choice in chunk.choices:
                content.append(choice.delta.content or "")
                for token in (choice.logprobs.content or []) if choice.logprobs else []:
                    tokens.append(bytes(token.bytes or []))
                finish = choice.finish_reason or finish
            if chunk.usage:
                completion = chunk.usage.completion_tokens
        return "".join(content), tokens, completion, finish

    def under_way(self) -> None:
        """Until a new stream has begun (one just begun runs on through what the caller does next)."""
        self.fresh.clear()
        assert self.fresh.wait(WAIT_S), "tiny-chat's next stream never began"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[RunningBridge]:
    """tiny-chat, with API keys and an admin key, converting into a model cache of its own."""
    with served_with_bridge(
        [ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)], api_keys=(USER,), admin_keys=(ADMIN,),
        engine_defaults=TEST_SETTINGS, model_cache=tmp_path / "cache",
    ) as running:  # fmt: skip
        yield running


def test_a_converted_model_is_loaded_served_unloaded_and_loaded_again_while_another_model_streams(
    served: RunningBridge, tmp_path: Path
) -> None:
    assert BUF.exists(), "run `npm install` first (the README's test command does)"
    source = gguf_file(tmp_path / "tiny.gguf")
    target = served.server.target
    with openai.OpenAI(base_url=served.url, api_key=USER, max_retries=0, timeout=WAIT_S) as client:

        def answer(model: str) -> str | None:
            reply = client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": PROMPT}], max_tokens=24, temperature=0
            )
            return reply.choices[0].message.content

        reference = answer("tiny-chat")
        streams = Streams(client)
        streaming = threading.Thread(target=streams.run, name="tiny-chat-streams")
        streaming.start()
        try:
            streams.under_way()
            added = buf_curl(target, "LoadModel", {"model": CONVERTED, "source": str(source)}, ADMIN)
            assert [event["state"] for event in added] == ["loading", "loaded"]
            assert (added[-1]["model"]["id"], added[-1]["model"]["sourceKind"]) == (CONVERTED, "gguf")
            assert answer(CONVERTED) == reference  # the same weights, converted: the same greedy answer

            streams.under_way()
            refused = buf_curl_refused(target, "UnloadModel", {"model": CONVERTED}, USER)
            assert "permission_denied" in refused.lower(), refused
            (unloaded,) = buf_curl(target, "UnloadModel", {"model": CONVERTED}, ADMIN)
            assert unloaded["model"]["state"] == "available"
            listed = {model.id: model.model_extra or {} for model in client.models.list()}
            assert (listed[CONVERTED]["state"], listed["tiny-chat"]["state"]) == ("available", "loaded")

            streams.under_way()
            again = buf_curl(target, "LoadModel", {"model": CONVERTED}, ADMIN)  # known now: no source
            assert [event["state"] for event in again] == ["loading", "loaded"]
            assert answer(CONVERTED) == reference

            streams.under_way()  # the REST face's unload, through the openai client's own POST, with the admin key
            by_rest = client.with_options(api_key=ADMIN).post(f"/models/{CONVERTED}/unload", cast_to=object)
            assert by_rest["state"] == "available"  # type: ignore[index]
            assert answer(CONVERTED) == reference  # a user's request loads it again (it loads on request)
            assert {model.id: (model.model_extra or {})["state"] for model in client.models.list()} == {
                "tiny-chat": "loaded",
                CONVERTED: "loaded",
            }
            streams.under_way()
        finally:
            streams.stop.set()
            streaming.join(WAIT_S)
    assert not streaming.is_alive() and not streams.errors, streams.errors
    assert len(streams.done) >= 5  # a stream begun before each step above (five) and run through it
    for content, tokens, completion, finish in streams.done:
        assert (completion, len(tokens), finish) == (STREAM_TOKENS, STREAM_TOKENS, "length")
        # Every token arrived, in order, and nothing else: the content is their bytes but the special ones'.
        assert b"".join(token for token in tokens if token not in SPECIAL) == content.encode()
    print(f"\n{len(streams.done)} tiny-chat streams of {STREAM_TOKENS} tokens ran through the loads and unloads")

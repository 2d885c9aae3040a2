"""Transcription end to end: the bundled tiny-whisper through the openai client, plain HTTP and the gRPC stubs, on
held-out speech (tests/data/speech, a voice it never heard in training)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import grpc
import httpx2 as httpx
import numpy as np
import openai
import pytest
import soundfile

from ovserve.clients.v1 import audio_pb2, audio_pb2_grpc
from tests.conformance import violations
from tests.conftest import ServerThread
from tests.rest_bridge.conftest import RunningBridge

MODEL = "tiny-whisper"
SPEECH = Path(__file__).resolve().parents[1] / "data" / "speech"
EXPECTED: dict[str, str] = json.loads((SPEECH / "expected.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_openai_client_transcribes_held_out_speech(client: openai.OpenAI, name: str) -> None:
    with open(SPEECH / name, "rb") as audio:
        reply = client.audio.transcriptions.create(model=MODEL, file=audio)
    assert reply.text == EXPECTED[name]
    with open(SPEECH / name, "rb") as audio:
        assert client.audio.transcriptions.create(model=MODEL, file=audio, response_format="text") == EXPECTED[name]


def _form(bridge: RunningBridge, name: str, **fields: str) -> httpx.Response:
    parts = {key: (None, value) for key, value in {"model": MODEL, **fields}.items()}
    files = {**parts, "file": (name, (SPEECH / name).read_bytes(), "audio/wav")}
    return httpx.post(f"{bridge.url}/audio/transcriptions", files=files, timeout=60)


def test_json_and_verbose_json_match_openais_schemas(bridge: RunningBridge) -> None:
    name, text = next(iter(EXPECTED.items()))
    plain = _form(bridge, name).json()
    assert plain["text"] == text and not violations("CreateTranscriptionResponseJson", plain)
    verbose = _form(bridge, name, response_format="verbose_json", temperature="0").json()
    assert verbose["text"] == text and verbose["language"] == "en" and 0 < verbose["duration"] < 3
    segment = verbose["segments"][0]
    assert 0 <= segment["start"] < segment["end"] <= verbose["duration"] + 1e-6 and segment["text"].strip() == text
    assert segment["tokens"] and segment["compression_ratio"] > 0
    # OpenVINO GenAI reports no per-segment log-probability or no-speech probability: the only gaps, left out
    # rather than made up.
    found = violations("CreateTranscriptionResponseVerboseJson", verbose)
    assert found and all("avg_logprob" in problem or "no_speech_prob" in problem for problem in found), found


def test_srt_and_vtt_are_timed_cues(bridge: RunningBridge) -> None:
    name, text = next(iter(EXPECTED.items()))
    srt = _form(bridge, name, response_format="srt")
    vtt = _form(bridge, name, response_format="vtt")
    assert srt.headers["content-type"].startswith("application/x-subrip") and srt.text.startswith("1\n00:00:0")
    assert vtt.text.startswith("WEBVTT\n\n00:00:0") and text in srt.text and text in vtt.text


def test_a_stream_is_deltas_then_the_whole_text(client: openai.OpenAI) -> None:
    name, text = next(iter(EXPECTED.items()))
    with open(SPEECH / name, "rb") as audio:
        events = list(client.audio.transcriptions.create(model=MODEL, file=audio, stream=True))
    deltas = [event.delta for event in events if event.type == "transcript.text.delta"]
    assert len(deltas) >= 2 and "".join(deltas) == text  # the pipeline streamed it word by word
    assert events[-1].type == "transcript.text.done" and events[-1].text == text


def test_streamed_events_match_openais_schemas(bridge: RunningBridge) -> None:
    name, text = next(iter(EXPECTED.items()))
    reply = _form(bridge, name, stream="true")
    assert reply.headers["content-type"].startswith("text/event-stream")
    data = [line.removeprefix("data: ") for line in reply.text.split("\n") if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    events = [json.loads(item) for item in data[:-1]]
    schemas = {"transcript.text.delta": "TranscriptTextDeltaEvent", "transcript.text.done": "TranscriptTextDoneEvent"}
    assert [event["type"] for event in events][-1] == "transcript.text.done" and events[-1]["text"] == text
    for event in events:
        assert not violations(schemas[event["type"]], event), event


def test_any_rate_and_channels_are_resampled(bridge: RunningBridge) -> None:
    """A stereo 44.1 kHz FLAC of the same speech transcribes the same (soundfile decodes, soxr resamples)."""
    name, text = next(iter(EXPECTED.items()))
    samples, rate = soundfile.read(SPEECH / name, dtype="float32")
    import soxr

    stereo = np.stack([soxr.resample(samples, rate, 44100)] * 2, axis=1)
    buffer = io.BytesIO()
    soundfile.write(buffer, stereo, 44100, format="FLAC")
    files = {"model": (None, MODEL), "file": ("speech.flac", buffer.getvalue(), "audio/flac")}
    reply = httpx.post(f"{bridge.url}/audio/transcriptions", files=files, timeout=60)
    assert reply.status_code == 200 and reply.json()["text"] == text, reply.text


@pytest.mark.parametrize(
    ("fields", "data", "param"),
    [
        ({}, b"not audio at all", "file"),
        ({}, b"", "file"),
        ({"response_format": "xml"}, None, "response_format"),
        ({"language": "fr"}, None, "language"),
        ({"temperature": "1.5"}, None, "temperature"),
        ({"timestamp_granularities[]": "word"}, None, "timestamp_granularities"),
    ],
)
def test_bad_audio_and_options_are_a_400_naming_the_field(
    bridge: RunningBridge, fields: dict[str, str], data: bytes | None, param: str
) -> None:
    name = next(iter(EXPECTED))
    parts = {key: (None, value) for key, value in {"model": MODEL, **fields}.items()}
    body = (SPEECH / name).read_bytes() if data is None else data
    reply = httpx.post(f"{bridge.url}/audio/transcriptions", files={**parts, "file": ("a.wav", body)}, timeout=60)
    assert reply.status_code == 400 and reply.json()["error"]["param"] == param, reply.text


def test_grpc_unary_and_streamed(server: ServerThread) -> None:
    name, text = next(iter(EXPECTED.items()))
    audio = (SPEECH / name).read_bytes()
    with grpc.insecure_channel(server.target) as channel:
        stub = audio_pb2_grpc.AudioServiceStub(channel)
        reply = stub.CreateTranscription(audio_pb2.CreateTranscriptionRequest(model=MODEL, file=audio), timeout=60)
        events = list(stub.StreamTranscription(audio_pb2.StreamTranscriptionRequest(model=MODEL, file=audio)))
    assert reply.text == text and reply.duration > 0
    assert "".join(e.delta.delta for e in events if e.HasField("delta")) == text and events[-1].done.text == text


def test_decoded_audio_waiting_for_the_model_is_bounded_in_bytes() -> None:
    """Recordings queued for a speech model hold their decoded samples (4 bytes each at 16 kHz): past
    --max-queued-audio-bytes another is refused RESOURCE_EXHAUSTED (retriable), one always fits, and the
    budget comes back as recordings are answered."""
    import dataclasses
    import os
    import signal
    import time

    from ovserve.service.models import BUNDLED_MODELS_DIR, ModelSpec
    from ovserve.service.pipelines import PipelineKind, PipelineSettings
    from tests.conftest import TEST_SETTINGS, start_server

    pausable = dataclasses.replace(TEST_SETTINGS, heartbeat_timeout_s=600.0)  # SIGSTOP below must not end it
    speech = (SPEECH / "held-out-0.wav").read_bytes()
    seconds = soundfile.info(io.BytesIO(speech)).duration
    decoded = int(seconds * 16_000) * 4  # what one recording holds in the queue, within a sample
    budget = decoded + decoded // 2  # one fits, two do not
    running = start_server(
        [ModelSpec("tiny-whisper", BUNDLED_MODELS_DIR / "tiny-whisper", settings=pausable,
                   pipeline=PipelineSettings(max_queued_audio_bytes=budget))]
    )  # fmt: skip
    try:
        pipeline = running.server.registry.pipeline("tiny-whisper", PipelineKind.TRANSCRIBE)
        request = audio_pb2.CreateTranscriptionRequest(model="tiny-whisper", file=speech, filename="a.wav")
        with grpc.insecure_channel(running.target) as channel:
            stub = audio_pb2_grpc.AudioServiceStub(channel)
            assert pipeline.pid is not None
            os.kill(pipeline.pid, signal.SIGSTOP)  # the process holds what it is sent
            try:
                first = stub.CreateTranscription.future(request, timeout=60)
                deadline = time.monotonic() + 60
                while pipeline.queued < 1:
                    assert time.monotonic() < deadline, "the first recording never queued"
                    time.sleep(0.01)
                with pytest.raises(grpc.RpcError) as refused:
                    stub.CreateTranscription(request, timeout=60)
                assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert "--max-queued-audio-bytes" in (refused.value.details() or "")
            finally:
                os.kill(pipeline.pid, signal.SIGCONT)
            assert first.result().text
            assert stub.CreateTranscription(request, timeout=60).text  # the budget is back
    finally:
        running.stop()

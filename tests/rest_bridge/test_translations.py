"""Audio translations end to end: the bundled tiny-whisper with Whisper's translate task, through the openai client,
plain HTTP and the gRPC stubs, against OpenVINO GenAI's WhisperPipeline called directly on the same audio.

tiny-whisper was trained on English digits only: its translation is its transcription (measured on the held-out
speech, noise and silence: the two tasks never differed), so the direct call with task="translate" is the reference,
and the task reaching the pipeline is checked on the job the worker is sent.
"""

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

from ovserve.clients import OvserveClient
from ovserve.clients.v1 import audio_pb2, audio_pb2_grpc
from ovserve.service.pipelines import PipelineKind
from ovserve.service.pipelines.messages import Transcribe
from ovserve.service.pipelines.pipeline import Pipeline
from tests.conformance import violations
from tests.conftest import ServerThread
from tests.rest_bridge.conftest import RunningBridge

MODEL = "tiny-whisper"
MODEL_DIR = Path(__file__).resolve().parents[2] / "service" / "bundled_models" / MODEL
SPEECH = Path(__file__).resolve().parents[1] / "data" / "speech"
NAMES = sorted(json.loads((SPEECH / "expected.json").read_text()))


@pytest.fixture(scope="module")
def direct() -> dict[str, str]:
    """Each held-out recording as WhisperPipeline translates it, called directly (no server)."""
    import openvino_genai as ov_genai

    pipeline = ov_genai.WhisperPipeline(str(MODEL_DIR), "CPU")
    texts = {}
    for name in NAMES:
        samples, rate = soundfile.read(SPEECH / name, dtype="float32")
        assert rate == 16_000
        texts[name] = pipeline.generate(samples.tolist(), task="translate").texts[0].strip()
    return texts


def _form(bridge: RunningBridge, name: str, **fields: str) -> httpx.Response:
    parts = {key: (None, value) for key, value in {"model": MODEL, **fields}.items()}
    files = {**parts, "file": (name, (SPEECH / name).read_bytes(), "audio/wav")}
    return httpx.post(f"{bridge.url}/audio/translations", files=files, timeout=60)


@pytest.mark.parametrize("name", NAMES)
def test_the_openai_client_translates_as_the_pipeline_does(
    client: openai.OpenAI, direct: dict[str, str], name: str
) -> None:
    assert direct[name]  # the reference is not empty: the comparison below can fail
    with open(SPEECH / name, "rb") as audio:
        reply = client.audio.translations.create(model=MODEL, file=audio)
    assert reply.text == direct[name]
    with open(SPEECH / name, "rb") as audio:
        assert client.audio.translations.create(model=MODEL, file=audio, response_format="text") == direct[name]


def test_the_job_asks_whisper_to_translate(server: ServerThread, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker is sent task "translate" for a translation and "transcribe" for a transcription."""
    sent: list[str] = []
    original = Pipeline._answers

    def spy(self: Pipeline, make_job, size=0):  # type: ignore[no-untyped-def]
        def recorded(job_id: int) -> object:
            job = make_job(job_id)
            if isinstance(job, Transcribe):
                sent.append(job.task)
            return job

        return original(self, recorded, size)

    monkeypatch.setattr(Pipeline, "_answers", spy)
    audio = (SPEECH / NAMES[0]).read_bytes()
    with OvserveClient(server.target) as ovserve:
        assert ovserve.translate(MODEL, audio).text and ovserve.transcribe(MODEL, audio).text
    assert sent == ["translate", "transcribe"]


def test_json_and_verbose_json_match_openais_schemas(bridge: RunningBridge, direct: dict[str, str]) -> None:
    name = NAMES[0]
    plain = _form(bridge, name).json()
    assert plain["text"] == direct[name] and not violations("CreateTranslationResponseJson", plain)
    verbose = _form(bridge, name, response_format="verbose_json", temperature="0").json()
    assert verbose["text"] == direct[name] and verbose["language"] == "english" and verbose["task"] == "translate"
    assert 0 < verbose["duration"] < 3 and verbose["segments"][0]["text"].strip() == direct[name]
    # As a transcription's: OpenVINO GenAI reports no per-segment log-probability or no-speech probability.
    found = violations("CreateTranslationResponseVerboseJson", verbose)
    assert all("avg_logprob" in problem or "no_speech_prob" in problem for problem in found), found


def test_srt_and_vtt_are_timed_cues(bridge: RunningBridge, direct: dict[str, str]) -> None:
    name = NAMES[0]
    srt = _form(bridge, name, response_format="srt")
    vtt = _form(bridge, name, response_format="vtt")
    assert srt.headers["content-type"].startswith("application/x-subrip") and srt.text.startswith("1\n00:00:0")
    assert vtt.text.startswith("WEBVTT\n\n00:00:0") and direct[name] in srt.text and direct[name] in vtt.text


@pytest.mark.parametrize(
    ("fields", "data", "param"),
    [
        ({}, b"not audio at all", "file"),
        ({"response_format": "xml"}, None, "response_format"),
        ({"temperature": "1.5"}, None, "temperature"),
        ({"temperature": "warm"}, None, "temperature"),
        ({"prompt": "x" * 4097}, None, "prompt"),
        ({"model": "tiny-chat"}, None, "model"),
        # OpenAI's translation form has no language, timestamp granularities or stream
        ({"language": "en"}, None, "language"),
        ({"stream": "true"}, None, "stream"),
        ({"timestamp_granularities[]": "segment"}, None, "timestamp_granularities[]"),
    ],
)
def test_bad_audio_and_options_are_a_400_naming_the_field(
    bridge: RunningBridge, fields: dict[str, str], data: bytes | None, param: str
) -> None:
    parts = {key: (None, value) for key, value in {"model": MODEL, **fields}.items()}
    body = (SPEECH / NAMES[0]).read_bytes() if data is None else data
    reply = httpx.post(f"{bridge.url}/audio/translations", files={**parts, "file": ("a.wav", body)}, timeout=60)
    assert reply.status_code == 400 and reply.json()["error"]["param"] == param, reply.text


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b'--x\r\nContent-Disposition: form-data; name="model"\r\n\r\ntiny', "multipart/form-data; boundary=x"),
        (b"whatever", "multipart/form-data"),
    ],
    ids=["truncated", "no boundary"],
)
def test_a_malformed_form_is_the_bridges_enveloped_400(bridge: RunningBridge, body: bytes, content_type: str) -> None:
    """Not tornado's bare 400 (issue 52): OpenAI's error envelope, naming ``file``."""
    reply = httpx.post(
        f"{bridge.url}/audio/translations", content=body, headers={"Content-Type": content_type}, timeout=60
    )
    assert reply.status_code == 400 and reply.json()["error"]["param"] == "file", reply.text


def test_a_long_recording_is_refused_as_a_transcription_is(bridge: RunningBridge, server: ServerThread) -> None:
    """The transcription path's bound (--max-audio-seconds) holds for a translation, naming ``file``."""
    limit = server.server.registry.pipeline(MODEL, PipelineKind.TRANSCRIBE).settings.max_audio_seconds
    rate = 1000  # the lowest rate taken: the longest recording in the fewest bytes
    frames = np.zeros(int((limit + 1) * rate), dtype=np.int16)
    buffer = io.BytesIO()
    soundfile.write(buffer, frames, rate, format="WAV", subtype="PCM_16")
    files = {"model": (None, MODEL), "file": ("long.wav", buffer.getvalue(), "audio/wav")}
    reply = httpx.post(f"{bridge.url}/audio/translations", files=files, timeout=120)
    assert reply.status_code == 400 and reply.json()["error"]["param"] == "file", reply.text
    assert f"{limit:,.0f} s" in reply.json()["error"]["message"]


def test_grpc(server: ServerThread, direct: dict[str, str]) -> None:
    name = NAMES[0]
    audio = (SPEECH / name).read_bytes()
    with grpc.insecure_channel(server.target) as channel:
        stub = audio_pb2_grpc.AudioServiceStub(channel)
        reply = stub.CreateTranslation(audio_pb2.CreateTranslationRequest(model=MODEL, file=audio), timeout=60)
        with pytest.raises(grpc.RpcError) as refused:
            stub.CreateTranslation(audio_pb2.CreateTranslationRequest(model=MODEL, file=b"RIFF"), timeout=60)
    assert reply.text == direct[name] and reply.duration > 0 and reply.language == "en"
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT

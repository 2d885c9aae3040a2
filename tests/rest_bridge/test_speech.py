"""Text to speech end to end: the bundled tiny-speech through the openai client (``audio.speech.create``, its
streaming response, ``stream_format="sse"``), plain HTTP and the gRPC stubs, against OpenVINO GenAI's
Text2SpeechPipeline called directly.

tiny-speech's weights are random (its audio is noise shaped by the text): what is held is what the text and the
voice decide (the same request gives the pipeline's own samples, a longer text proportionally more, another text
or voice other audio), the encodings, the stream's events and the refusals.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx2 as httpx
import numpy as np
import openai
import pytest
import soundfile
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ovserve.clients import OvserveClient
from ovserve.clients.v1 import model_pb2, model_pb2_grpc, speech_pb2, speech_pb2_grpc
from ovserve.service.models import ModelSpec
from ovserve.service.observability.metrics import exposition
from ovserve.service.pipelines import PipelineKind, PipelineSettings
from ovserve.service.pipelines.messages import Done, Failed, PipelineSpec
from ovserve.service.pipelines.speech_messages import Speak
from ovserve.service.pipelines.speech_runner import SpeakRunner
from tests.conformance import violations
from tests.rest_bridge.conftest import RunningBridge, served_with_bridge

MODEL = "tiny-speech"
MODEL_DIR = Path(__file__).resolve().parents[2] / "service" / "bundled_models" / MODEL
MAX_CHARS, MAX_SECONDS = 300, 20.0  # this server's bounds: a text of 300 characters would make 96 s
SHORT, LONG = "hello", "hello there, how are you on this fine day?"


@pytest.fixture(scope="module")
def served() -> Iterator[RunningBridge]:
    """tiny-speech on a server of its own, with a bridge in front."""
    settings = PipelineSettings(max_speech_chars=MAX_CHARS, max_speech_seconds=MAX_SECONDS)
    with served_with_bridge([ModelSpec(MODEL, MODEL_DIR, pipeline=settings)]) as running:
        yield running


@pytest.fixture(scope="module")
def client(served: RunningBridge) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=served.url, api_key="any-key", max_retries=0, timeout=120) as opened:
        yield opened


@pytest.fixture(scope="module")
def direct() -> dict[tuple[str, str], np.ndarray]:
    """Text2SpeechPipeline's own samples for (text, voice), called directly ("" : its default voice)."""
    import openvino as ov
    import openvino_genai as ov_genai

    pipeline = ov_genai.Text2SpeechPipeline(str(MODEL_DIR), "CPU")
    said = {}
    for text, voice in [(SHORT, ""), (LONG, ""), (SHORT, "alloy")]:
        speaker = None
        if voice:
            vector = np.fromfile(MODEL_DIR / "voices" / f"{voice}.bin", dtype=np.float32).reshape(1, -1)
            speaker = ov.Tensor(vector)
        said[text, voice] = np.array(pipeline.generate(text, speaker).speeches[0].data).reshape(-1)  # a copy
    return said


def wav_samples(data: bytes) -> np.ndarray:
    samples, rate = soundfile.read(io.BytesIO(data), dtype="float32")
    assert rate == 16_000
    return samples


def test_the_openai_client_gets_the_pipelines_own_audio(
    client: openai.OpenAI, direct: dict[tuple[str, str], np.ndarray]
) -> None:
    """16-bit WAV of the pipeline's samples, for the default voice and a bundled one; a longer text is longer."""
    for text, voice in direct:
        reply = client.audio.speech.create(model=MODEL, input=text, voice=voice or "", response_format="wav")
        samples = wav_samples(reply.content)
        expected = np.clip(direct[text, voice], -1, 1)
        # the server's pipeline process runs with its own CPU properties (threads): equal within their rounding
        assert samples.shape == expected.shape and np.corrcoef(samples, expected)[0, 1] > 0.999
    assert direct[LONG, ""].size > 2 * direct[SHORT, ""].size  # the text decides the length
    assert not np.allclose(direct[SHORT, ""], direct[SHORT, "alloy"])  # and the voice the audio


def test_the_streaming_response_is_the_same_audio_in_pieces(client: openai.OpenAI) -> None:
    whole = client.audio.speech.create(model=MODEL, input=LONG, voice="alloy").content
    with client.audio.speech.with_streaming_response.create(model=MODEL, input=LONG, voice="alloy") as response:
        assert response.headers["content-type"] == "audio/wav"
        pieces = list(response.iter_bytes(chunk_size=None))
    assert b"".join(pieces) == whole and len(whole) > 64 * 1024  # more than one piece's worth


def test_sse_events_are_openais(served: RunningBridge) -> None:
    body = {"model": MODEL, "input": LONG, "voice": "echo", "stream_format": "sse", "response_format": "pcm"}
    reply = httpx.post(f"{served.url}/audio/speech", json=body, timeout=120)
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/event-stream")
    events = [json.loads(line[6:]) for line in reply.text.split("\n") if line.startswith("data: {")]
    schemas = {"speech.audio.delta": "SpeechAudioDeltaEvent", "speech.audio.done": "SpeechAudioDoneEvent"}
    for item in events:
        assert not violations(schemas[item["type"]], item), item
    assert [item["type"] for item in events][-1] == "speech.audio.done" and len(events) >= 3
    pcm = b"".join(base64.b64decode(item["audio"]) for item in events[:-1])
    plain = httpx.post(f"{served.url}/audio/speech", json={**body, "stream_format": "audio"}, timeout=120)
    assert pcm == plain.content and plain.headers["content-type"] == "audio/pcm"
    assert events[-1]["usage"]["input_tokens"] > len(LONG) // 2  # a character-level tokenizer


@pytest.mark.parametrize(("response_format", "subtype"), [("flac", "PCM_16"), ("mp3", None), ("opus", "OPUS")])
def test_other_formats_decode_to_the_same_length(
    client: openai.OpenAI, direct: dict[tuple[str, str], np.ndarray], response_format: str, subtype: str | None
) -> None:
    data = client.audio.speech.create(model=MODEL, input=SHORT, voice="", response_format=response_format).content
    info = soundfile.info(io.BytesIO(data))
    if subtype:
        assert info.subtype == subtype
    # MP3 and Opus pad the ends by an encoder delay of a few milliseconds
    assert abs(info.frames - direct[SHORT, ""].size) <= 0.1 * info.samplerate


def test_speed_resamples(client: openai.OpenAI, direct: dict[tuple[str, str], np.ndarray]) -> None:
    fast = wav_samples(client.audio.speech.create(model=MODEL, input=SHORT, voice="", speed=2.0).content)
    assert abs(fast.size - direct[SHORT, ""].size / 2) <= 2


def test_audio_past_the_bound_is_cut_and_the_pipeline_serves_on(served: RunningBridge) -> None:
    """A text whose audio would pass --max-speech-seconds (and the decoder's positions) is decoded to the bound."""
    with grpc.insecure_channel(served.server.target) as channel:
        stub = speech_pb2_grpc.SpeechServiceStub(channel)
        long = stub.CreateSpeech(speech_pb2.CreateSpeechRequest(model=MODEL, input="x" * MAX_CHARS), timeout=120)
        short = stub.CreateSpeech(speech_pb2.CreateSpeechRequest(model=MODEL, input=SHORT), timeout=120)
    assert long.cut and MAX_SECONDS - 0.1 <= long.seconds <= MAX_SECONDS and not short.cut


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"input": "x" * (MAX_CHARS + 1)}, "input"),
        ({"input": ""}, "input"),
        ({"voice": "nobody"}, "voice"),
        ({"response_format": "aac"}, "response_format"),
        ({"response_format": "xml"}, "response_format"),
        ({"speed": 5}, "speed"),
        ({"speed": 0.1}, "speed"),
        ({"instructions": "whisper it"}, "instructions"),
        ({"stream_format": "video"}, "stream_format"),
        ({"volume": 11}, "volume"),
        ({"model": "nowhere"}, "model"),
    ],
)
def test_bad_fields_are_a_400_naming_them(served: RunningBridge, fields: dict[str, object], param: str) -> None:
    body = {"model": MODEL, "input": SHORT, "voice": "alloy", **fields}
    reply = httpx.post(f"{served.url}/audio/speech", json=body, timeout=60)
    assert reply.status_code in (400, 404) and reply.json()["error"]["param"] == param, reply.text


def test_grpc_unary_and_streamed(served: RunningBridge, direct: dict[tuple[str, str], np.ndarray]) -> None:
    with grpc.insecure_channel(served.server.target) as channel:
        stub = speech_pb2_grpc.SpeechServiceStub(channel)
        request = speech_pb2.CreateSpeechRequest(model=MODEL, input=SHORT, response_format="pcm")
        reply = stub.CreateSpeech(request, timeout=60)
        streamed = list(stub.StreamSpeech(speech_pb2.StreamSpeechRequest(model=MODEL, input=SHORT), timeout=60))
        models = model_pb2_grpc.ModelServiceStub(channel).ListModels(model_pb2.ListModelsRequest(), timeout=60)
    pcm = np.frombuffer(reply.audio, dtype="<i2") / 32767
    assert pcm.size == direct[SHORT, ""].size and np.corrcoef(pcm, direct[SHORT, ""])[0, 1] > 0.999
    assert reply.sample_rate == 16_000 and reply.content_type == "audio/pcm"
    assert reply.seconds == pytest.approx(direct[SHORT, ""].size / 16_000) and not reply.cut
    assert streamed[-1].HasField("done") and streamed[0].delta.content_type == "audio/wav"
    assert wav_samples(b"".join(item.delta.audio for item in streamed[:-1])).size == direct[SHORT, ""].size
    (listed,) = [model for model in models.data if model.id == MODEL]
    assert listed.task == "speak"


def test_metrics_count_the_audio(served: RunningBridge, client: openai.OpenAI) -> None:
    client.audio.speech.create(model=MODEL, input=SHORT, voice="")
    text = exposition().decode()
    assert f'ovserve_speech_audio_seconds_total{{model="{MODEL}"}}' in text
    assert f'ovserve_speech_input_characters_total{{model="{MODEL}"}}' in text


def test_the_typed_client_speaks(served: RunningBridge) -> None:
    with OvserveClient(served.server.target) as client:
        reply = client.speak(MODEL, SHORT, voice="nova", response_format="flac")
        pieces = list(client.stream_speech(MODEL, SHORT, voice="nova", response_format="flac"))
    assert soundfile.info(io.BytesIO(reply.audio)).format == "FLAC" and reply.content_type == "audio/flac"
    assert b"".join(piece.delta.audio for piece in pieces[:-1]) == reply.audio and pieces[-1].HasField("done")


def test_health_reports_the_speech_service(served: RunningBridge) -> None:
    with grpc.insecure_channel(served.server.target) as channel:
        check = health_pb2_grpc.HealthStub(channel).Check
        reply = check(health_pb2.HealthCheckRequest(service="ovserve.v1.SpeechService"), timeout=30)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_a_failed_call_leaves_the_runner_serving() -> None:
    """openvino-genai's Text2SpeechPipeline fails every call after a failed one: the runner loads it again."""
    runner = SpeakRunner(PipelineSpec(PipelineKind.SPEAK, MODEL_DIR, "CPU"))
    sent: list[object] = []
    runner.run([Speak(1, SHORT, speaker=np.zeros(3, dtype=np.float32).tobytes())], sent.append)  # not 512 wide
    runner.run([Speak(2, SHORT, response_format="pcm")], sent.append)
    assert isinstance(sent[0], Failed) and isinstance(sent[1], Done)
    assert len(sent[1].result.audio) == 2 * 35840  # "hello": 7 tokens x 20 frames x 256 samples, 16-bit

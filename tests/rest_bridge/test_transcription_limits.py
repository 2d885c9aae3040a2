"""POST /v3/audio/transcriptions under hostile uploads (cases from an outside fuzz run): a malformed multipart body,
an absurd WAV header, many uploads at once. Each is a 400 naming the field, never a 500; what a header declares is
refused before it is allocated; concurrent decodes are bounded and still all succeed."""

from __future__ import annotations

import json
import struct
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2 as httpx
import numpy as np
import pytest

import ovserve.service.api.transcriptions as transcriptions
from tests.rest_bridge.conftest import RunningBridge

MODEL = "tiny-whisper"
SPEECH = Path(__file__).resolve().parents[1] / "data" / "speech"
EXPECTED: dict[str, str] = json.loads((SPEECH / "expected.json").read_text())
BOUNDARY = uuid.uuid4().hex


def _wav(rate: int, frames: int, channels: int = 1, declared: int | None = None) -> bytes:
    """A RIFF header written by hand (any rate, even ones soundfile will not write) and 8-bit silence; ``declared``:
    the frames its data chunk says it holds (by default, those it holds)."""
    data = b"\x80" * (frames * channels)
    size = len(data) if declared is None else min(declared * channels, 0xFFFFFFFF)
    fmt = struct.pack("<HHIIHH", 1, channels, rate, (rate * channels) & 0xFFFFFFFF, channels, 8)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", size) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def _part(name: str, value: bytes, filename: str | None = None) -> bytes:
    disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename is not None else "")
    return f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + value + b"\r\n"


def _form(*parts: bytes) -> bytes:
    return b"".join(parts) + f"--{BOUNDARY}--\r\n".encode()


def _post(bridge: RunningBridge, body: bytes, content_type: str = f"multipart/form-data; boundary={BOUNDARY}"):
    return httpx.post(
        f"{bridge.url}/audio/transcriptions", content=body, headers={"Content-Type": content_type}, timeout=120
    )


SPEECH_WAV = (SPEECH / next(iter(EXPECTED))).read_bytes()
GOOD = _form(_part("model", MODEL.encode()), _part("file", SPEECH_WAV, "a.wav"))
CASES: dict[str, tuple[bytes, str, str]] = {  # body, Content-Type, the field named
    "no boundary": (GOOD, "multipart/form-data", "file"),
    "another boundary": (GOOD, "multipart/form-data; boundary=not-the-one", "file"),
    "truncated body": (GOOD[: len(GOOD) // 2], f"multipart/form-data; boundary={BOUNDARY}", "file"),
    "too many parts": (
        _form(*[_part("timestamp_granularities[]", b"segment")] * 40, _part("file", SPEECH_WAV, "a.wav")),
        f"multipart/form-data; boundary={BOUNDARY}",
        "file",
    ),
    "a 1 MB filename": (
        _form(_part("model", MODEL.encode()), _part("file", SPEECH_WAV, "a" * 1_000_000 + ".wav")),
        f"multipart/form-data; boundary={BOUNDARY}",
        "file",
    ),
    "a part without a name": (
        _form(b"--" + BOUNDARY.encode() + b"\r\nContent-Disposition: form-data\r\n\r\nx\r\n"),
        f"multipart/form-data; boundary={BOUNDARY}",
        "file",
    ),
    "a 1 MB prompt": (
        _form(_part("model", MODEL.encode()), _part("prompt", b"a" * 1_000_000), _part("file", SPEECH_WAV, "a.wav")),
        f"multipart/form-data; boundary={BOUNDARY}",
        "prompt",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_malformed_form_is_a_400_naming_the_field(bridge: RunningBridge, case: str) -> None:
    body, content_type, param = CASES[case]
    reply = _post(bridge, body, content_type)
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["param"] == param and error["type"] == "invalid_request_error" and len(error["message"]) < 200, error


def test_the_well_formed_form_those_cases_break_is_transcribed(bridge: RunningBridge) -> None:
    reply = _post(bridge, GOOD)
    assert reply.status_code == 200 and reply.json()["text"] == next(iter(EXPECTED.values())), reply.text


@pytest.mark.parametrize(
    ("rate", "frames", "channels", "said"),
    [
        (1, 1795, 1, "sample rate"),  # 1.8 KB declaring 1,795 s: 115 MB at 16 kHz
        (2**31 - 1, 1000, 1, "sample rate"),  # once reached Whisper and failed with a build machine's path
        (999, 1000, 1, "sample rate"),
        (384_001, 1000, 1, "sample rate"),
        (8000, 100, 9, "channel count"),
        (384_000, 1, 1, "no samples"),  # less than one sample at 16 kHz
    ],
)
def test_an_absurd_wav_header_is_a_400_naming_file(
    bridge: RunningBridge, rate: int, frames: int, channels: int, said: str
) -> None:
    reply = _post(bridge, _form(_part("model", MODEL.encode()), _part("file", _wav(rate, frames, channels), "a.wav")))
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["param"] == "file" and said in error["message"] and "/" not in error["message"], error


@pytest.mark.parametrize(
    "declared",
    [
        2**31,  # read as its 1,000 frames present, answered 200 before
        16_000 * 3600,  # an hour at 16 kHz over 1,000 frames: likewise
        2**32 - 2,  # short of the size that says the length is unknown (below)
        1001,  # one frame short: a truncated upload
    ],
)
def test_a_wav_declaring_more_than_it_holds_is_a_400_naming_file(bridge: RunningBridge, declared: int) -> None:
    reply = _post(
        bridge, _form(_part("model", MODEL.encode()), _part("file", _wav(16_000, 1000, declared=declared), "a.wav"))
    )
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["param"] == "file" and f"declares {declared:,} bytes" in error["message"], error


def test_a_wav_whose_length_was_never_written_is_its_frames_present(bridge: RunningBridge) -> None:
    """A writer to a pipe (ffmpeg's, for one) leaves the data size at 2^32 - 1: no claim, read to the end."""
    wav = _wav(16_000, 8_000, declared=2**32 - 1)
    reply = _post(
        bridge,
        _form(_part("model", MODEL.encode()), _part("file", wav, "a.wav"), _part("response_format", b"verbose_json")),
    )
    assert reply.status_code == 200, reply.text
    assert reply.json()["duration"] == pytest.approx(0.5, abs=0.01)


def test_the_sample_rate_bounds_themselves_are_taken(bridge: RunningBridge) -> None:
    for rate in (1_000, 384_000):
        reply = _post(bridge, _form(_part("model", MODEL.encode()), _part("file", _wav(rate, rate // 10), "a.wav")))
        assert reply.status_code == 200, reply.text


def test_concurrent_uploads_all_succeed_with_bounded_decodes(
    bridge: RunningBridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    """8 valid uploads at once: all transcribed, never more than MAX_CONCURRENT_DECODES decoded at a time."""
    running, most = 0, 0
    lock = threading.Lock()
    real = transcriptions.decode_audio

    def counted(*args: Any) -> np.ndarray:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        try:
            return real(*args)
        finally:
            with lock:
                running -= 1

    monkeypatch.setattr(transcriptions, "decode_audio", counted)
    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda _: _post(bridge, GOOD), range(8)))
    assert [reply.status_code for reply in replies] == [200] * 8, [reply.text for reply in replies]
    assert {reply.json()["text"] for reply in replies} == {next(iter(EXPECTED.values()))}
    assert 1 <= most <= transcriptions.MAX_CONCURRENT_DECODES


def _peak_rss_kib() -> int:
    """The test process's (and so the in-process server's) peak resident set since the last reset."""
    status = Path("/proc/self/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])


def test_eight_long_low_rate_wavs_at_once_stay_small(bridge: RunningBridge) -> None:
    """The fuzz run's 1 Hz WAVs, 8 at once, once took 8 x 115 MB: now the peak grows by less than one of them."""
    resampled_kib = 1795 * 16_000 * 4 // 1024  # what one of them would take at 16 kHz
    body = _form(_part("model", MODEL.encode()), _part("file", _wav(1, 1795), "a.wav"))
    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset the peak to the current resident set
    except OSError:
        pytest.skip("the peak resident set cannot be reset here")
    before = _peak_rss_kib()
    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda _: _post(bridge, body), range(8)))
    assert [reply.status_code for reply in replies] == [400] * 8
    assert _peak_rss_kib() - before < resampled_kib, (before, _peak_rss_kib())


def test_a_pipeline_failure_is_told_without_its_own_message(
    bridge: RunningBridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the Whisper pipeline raises can quote paths of the machine OpenVINO was built on: it is logged, not sent."""
    from ovserve.service.engine import EngineError
    from ovserve.service.pipelines import Pipeline

    async def failing(self: Pipeline, samples: np.ndarray, **options: object) -> Any:
        raise EngineError("RuntimeError: Exception from /home/jenkins/agent/workspace/src/whisper.cpp:42")
        yield  # an async generator, as Pipeline.transcribe is

    monkeypatch.setattr(Pipeline, "transcribe", failing)
    reply = _post(bridge, GOOD)
    assert reply.status_code == 500 and "/" not in reply.json()["error"]["message"], reply.text

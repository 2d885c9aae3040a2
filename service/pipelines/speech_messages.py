"""What the server and a text-to-speech pipeline process say to each other (beside messages.py's Started, Done,
Failed).

server -> pipeline: ``Speak`` jobs; pipeline -> server: per job a Done whose result is ``Spoken``, or a Failed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Speak:
    """Say ``text`` in the voice of ``speaker`` (a float32 x-vector; empty: the pipeline's default voice), encoded as
    ``response_format``."""

    job_id: int
    text: str
    speaker: bytes = b""
    response_format: str = "wav"  # a key of speech_runner.FORMATS
    speed: float = 1.0  # 0.25 to 4: the audio played that much faster (resampled)
    max_seconds: float = 60.0  # the audio is cut at this length


@dataclass(frozen=True)
class Spoken:
    """A job's result: the encoded audio and what it holds."""

    audio: bytes
    sample_rate: int
    seconds: float
    cut: bool = False  # the audio was longer than the job's max_seconds and was cut there

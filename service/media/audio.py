"""Uploaded audio -> Whisper's input: 16 kHz mono float32 samples, with soundfile (libsndfile) and soxr.

The header is read first: a file longer than allowed is refused before its samples are decoded. Callers run it
off the event loop (decoding and resampling a long recording takes a while).
"""

from __future__ import annotations

import io

import numpy as np
import soundfile
import soxr

from service.media.sources import MediaError

SAMPLE_RATE = 16_000  # Hz: what Whisper's feature extractor takes
# The containers libsndfile reads that OpenAI's transcription API also takes (its mp4/m4a/webm need ffmpeg).
FORMATS = ("WAV", "FLAC", "OGG", "MP3")


def decode_audio(field: str, data: bytes, max_seconds: float) -> np.ndarray:
    """The recording as 16 kHz mono float32 samples in [-1, 1]; MediaError naming ``field`` otherwise."""
    if not data:
        raise MediaError(field, "an empty file")
    try:
        with soundfile.SoundFile(io.BytesIO(data)) as sound:
            if sound.format not in FORMATS:
                raise MediaError(field, f"{sound.format} audio is not taken: send {', '.join(FORMATS)}")
            seconds = sound.frames / sound.samplerate if sound.samplerate else 0.0
            if seconds > max_seconds:
                raise MediaError(field, f"the recording is {seconds:.0f} s long: at most {max_seconds:.0f} s")
            samples = sound.read(dtype="float32", always_2d=True)
            rate = sound.samplerate
    except MediaError:
        raise
    except (soundfile.LibsndfileError, RuntimeError, TypeError, ValueError) as error:
        raise MediaError(field, f"not audio in a supported format ({', '.join(FORMATS)}): {error}") from error
    mono = samples.mean(axis=1) if samples.shape[1] > 1 else samples[:, 0]
    if not len(mono):
        raise MediaError(field, "the recording holds no samples")
    if rate != SAMPLE_RATE:
        mono = soxr.resample(mono, rate, SAMPLE_RATE)
    return np.clip(mono, -1.0, 1.0).astype(np.float32)

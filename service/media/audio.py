"""Uploaded audio -> Whisper's input: 16 kHz mono float32 samples, with soundfile (libsndfile) and soxr.

The header is checked first (LIMITS), so what a few bytes declare cannot make the server allocate: a WAV at 1 Hz
lasting 30 minutes is 1.8 KB, yet 115 MB once resampled to 16 kHz. The samples are then decoded, mixed down and
resampled block by block into one preallocated array, so a decode holds that array and one block whatever the
source's rate and channels. Callers run it off the event loop (decoding a long recording takes a while) and bound how
many run at once (service/api/transcriptions.py). libsndfile's and soxr's own messages are logged, never sent: they
name objects and paths of this machine.
"""

from __future__ import annotations

import io
import itertools
import logging
import math

import numpy as np
import soundfile
import soxr

from ovserve.service.media.sources import MediaError

log = logging.getLogger(__name__)

SAMPLE_RATE = 16_000  # Hz: what Whisper's feature extractor takes
# The containers libsndfile reads that OpenAI's transcription API also takes (its mp4/m4a/webm need ffmpeg).
FORMATS = ("WAV", "FLAC", "OGG", "MP3")
UNREADABLE = f"not audio in a supported format ({', '.join(FORMATS)})"
BLOCK_FRAMES = 64 * 1024  # frames decoded at a time: at most 2 MiB of float32 (8 channels)
FLOAT32 = 4  # bytes

#: What a header may declare, checked in this order before a sample is decoded: (what, lowest, highest, unit); the
#: length's highest is the configured max_seconds. Rates: below 1 kHz (telephony is 8 kHz) a few bytes declare hours;
#: no converter records above 384 kHz. The decoded size (frames x channels as float32) bounds the decoding work: a
#: 30-minute 48 kHz stereo recording. The size at 16 kHz bounds the one large allocation: 30 minutes of mono.
LIMITS: tuple[tuple[str, float, float | None, str], ...] = (
    ("sample rate", 1_000, 384_000, " Hz"),
    ("channel count", 1, 8, ""),
    ("length", 0, None, " s"),
    ("decoded size", FLOAT32, 1800 * 48_000 * 2 * FLOAT32, " bytes"),
    ("size at 16 kHz", FLOAT32, 1800 * SAMPLE_RATE * FLOAT32, " bytes"),
)


def _check_header(field: str, rate: int, channels: int, frames: int, max_seconds: float) -> None:
    """MediaError naming ``field`` for the first declared quantity outside LIMITS."""
    declared = {
        "sample rate": rate,
        "channel count": channels,
        "length": frames / max(rate, 1),
        "decoded size": frames * channels * FLOAT32,
        "size at 16 kHz": math.ceil(frames * SAMPLE_RATE / max(rate, 1)) * FLOAT32,
    }
    for what, lowest, highest, unit in LIMITS:
        highest = max_seconds if highest is None else highest
        if not lowest <= declared[what] <= highest:
            value = declared[what]
            raise MediaError(field, f"its {what} is {value:,.0f}{unit}; taken: {lowest:,.0f} to {highest:,.0f}{unit}")


# The data chunk's size left by a writer to a pipe (ffmpeg's, for one): it cannot seek back to write the length.
UNKNOWN_WAV_LENGTH = 2**32 - 1


def _check_wav_data(field: str, data: bytes) -> None:
    """MediaError naming ``field`` when a WAV's data chunk declares more bytes than the file holds.

    libsndfile reads such a file as the frames present, so a header declaring 2^31 frames over 1,000 was answered
    as a short recording; a length the file contradicts (a truncated upload, a forged header) is refused instead,
    without reading it. Except UNKNOWN_WAV_LENGTH, which claims nothing: the file is its frames present.
    """
    offset = 12  # after "RIFF", its size and "WAVE"; the chunks follow, each a 4-byte id and size, padded to even
    while offset + 8 <= len(data):
        chunk, size = data[offset : offset + 4], int.from_bytes(data[offset + 4 : offset + 8], "little")
        if chunk == b"data":
            present = len(data) - offset - 8
            if size > present and size != UNKNOWN_WAV_LENGTH:
                raise MediaError(
                    field, f"its header declares {size:,} bytes of samples; the file holds {present:,} (truncated?)"
                )
            return
        offset += 8 + size + size % 2


def _decoded(sound: soundfile.SoundFile) -> np.ndarray:
    """The whole recording, block by block: mixed to mono, resampled to 16 kHz, written into one array."""
    # soxr may give a few samples more than the ratio says when flushed; what does not fit is dropped.
    out = np.empty(math.ceil(sound.frames * SAMPLE_RATE / sound.samplerate) + 64, dtype=np.float32)
    resampler = soxr.ResampleStream(sound.samplerate, SAMPLE_RATE, 1, dtype="float32")
    filled = 0
    blocks = sound.blocks(BLOCK_FRAMES, dtype="float32", always_2d=True)
    # Lazily, one block at a time, then an empty last one that flushes the resampler.
    for block, last in itertools.chain(((b, False) for b in blocks), [(np.zeros((0, 1), np.float32), True)]):
        mono = np.ascontiguousarray(block.mean(axis=1, dtype=np.float32))
        chunk = mono if sound.samplerate == SAMPLE_RATE else resampler.resample_chunk(mono, last=last)
        taken = min(len(chunk), len(out) - filled)
        out[filled : filled + taken] = chunk[:taken]
        filled += taken
    return np.clip(out[:filled], -1.0, 1.0, out=out[:filled])


def decode_audio(field: str, data: bytes, max_seconds: float) -> np.ndarray:
    """The recording as 16 kHz mono float32 samples in [-1, 1]; MediaError naming ``field`` otherwise."""
    if not data:
        raise MediaError(field, "an empty file")
    try:
        with soundfile.SoundFile(io.BytesIO(data)) as sound:
            if sound.format not in FORMATS:
                raise MediaError(field, f"{sound.format} audio is not taken: send {', '.join(FORMATS)}")
            if sound.format == "WAV":
                _check_wav_data(field, data)
            _check_header(field, sound.samplerate, sound.channels, sound.frames, max_seconds)
            samples = _decoded(sound)
    except MediaError:
        raise
    except (soundfile.LibsndfileError, RuntimeError, TypeError, ValueError) as error:
        log.info("an upload could not be decoded: %s: %s", type(error).__name__, error)
        raise MediaError(field, UNREADABLE) from error
    if not len(samples):
        raise MediaError(field, "the recording holds no samples")
    return samples

"""The text-to-speech pipeline process's runner: OpenVINO GenAI's Text2SpeechPipeline (SpeechT5 and its HiFi-GAN
vocoder), one job per call.

The audio is resampled for ``speed`` (soxr) and encoded here, off the server's event loop: WAV, FLAC, MP3 and Opus
by soundfile (libsndfile; MP3 and Opus where the libsndfile it bundles writes them), raw PCM by numpy.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from ovserve.service import model_files
from ovserve.service.pipelines.messages import PipelineSpec
from ovserve.service.pipelines.one_job import OneJobRunner
from ovserve.service.pipelines.speech_messages import Speak, Spoken

# response_format -> (soundfile's format, subtype); None: raw 16-bit little-endian PCM (OpenAI's pcm, no header).
FORMATS: dict[str, tuple[str, str] | None] = {
    "wav": ("WAV", "PCM_16"),
    "flac": ("FLAC", "PCM_16"),
    "mp3": ("MP3", "MPEG_LAYER_III"),
    "opus": ("OGG", "OPUS"),
    "pcm": None,
}
HOP_SAMPLES = 256  # audio samples per spectrogram frame (SpeechT5's HiFi-GAN: 16 ms at 16 kHz)


def available_formats() -> tuple[str, ...]:
    """The response formats this machine's libsndfile can write (pcm and wav always)."""
    import soundfile

    found = []
    for name, spec in FORMATS.items():
        if spec is None or spec[1] in soundfile.available_subtypes(spec[0]):
            found.append(name)
    return tuple(found)


def encode(samples: np.ndarray, rate: int, response_format: str) -> bytes:
    """Mono float32 ``samples`` at ``rate`` in ``response_format`` (16-bit where the format has a sample size)."""
    clipped = np.clip(samples, -1.0, 1.0)
    spec = FORMATS[response_format]
    if spec is None:
        return (clipped * 32767).astype("<i2").tobytes()
    import soundfile

    buffer = io.BytesIO()
    soundfile.write(buffer, clipped, rate, format=spec[0], subtype=spec[1])
    return buffer.getvalue()


def resampled(samples: np.ndarray, rate: int, speed: float) -> np.ndarray:
    """``samples`` played ``speed`` times as fast (shorter and higher for speed > 1: SpeechT5 has no rate control)."""
    if speed == 1.0:
        return samples
    import soxr

    return np.asarray(soxr.resample(samples, rate * speed, rate), dtype=np.float32)


class SpeakRunner(OneJobRunner):
    """Text2SpeechPipeline: one text per call.

    SpeechT5 decodes until its stop head says so, or for ``maxlenratio`` x the text's tokens / ``reduction_factor``
    steps of ``reduction_factor`` spectrogram frames (HOP_SAMPLES of audio each). Each job's ratio is lowered so that
    the steps stay within the decoder's positions (openvino-genai 2026.4 fails past them, and every call after that
    fails too) and the audio within the job's seconds. After a failed call the pipeline is loaded again, as such a
    failure leaves it unusable.
    """

    def __init__(self, spec: PipelineSpec) -> None:
        import openvino_genai as ov_genai

        self._spec = spec
        self._pipeline = self._load()
        self._tokenizer = ov_genai.Tokenizer(str(spec.model_dir))
        config = model_files.config(spec.model_dir)
        self._positions = int(config.get("max_speech_positions") or 1876)
        self._reduction = int(config.get("reduction_factor") or 2)
        self._default_ratio = float(self._pipeline.get_generation_config().maxlenratio)
        self._rate = int(self._pipeline.generate("a").output_sample_rate)

    def _load(self) -> Any:
        import openvino_genai as ov_genai

        spec = self._spec
        return ov_genai.Text2SpeechPipeline(str(spec.model_dir), spec.device, **spec.properties)

    def answer(self, job: Speak, send: Any) -> Spoken:
        return self._speak(job)

    def recover(self) -> None:
        self._pipeline = self._load()

    def _ratio(self, job: Speak) -> tuple[float, bool]:
        """The job's maxlenratio, and whether its seconds lowered it (the audio may be cut short)."""
        tokens = max(1, int(self._tokenizer.encode(job.text).input_ids.get_shape()[-1]))
        by_seconds = int(job.max_seconds * job.speed * self._rate / HOP_SAMPLES / self._reduction)
        steps = min(self._positions - 1, by_seconds)
        ratio = min(self._default_ratio, steps * self._reduction / tokens)
        return ratio, steps == by_seconds and ratio < self._default_ratio

    def _speak(self, job: Speak) -> Spoken:
        import openvino as ov

        speaker = None
        if job.speaker:
            speaker = ov.Tensor(np.frombuffer(job.speaker, dtype=np.float32).reshape(1, -1).copy())
        ratio, bounded = self._ratio(job)
        result = self._pipeline.generate(job.text, speaker, maxlenratio=ratio)
        rate = int(result.output_sample_rate)
        samples = resampled(np.asarray(result.speeches[0].data, dtype=np.float32).reshape(-1), rate, job.speed)
        limit = int(job.max_seconds * rate)
        cut = bounded or samples.size > limit
        samples = samples[:limit]
        return Spoken(encode(samples, rate, job.response_format), rate, samples.size / rate, cut)

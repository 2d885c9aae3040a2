"""Build ``tiny-speech``: a SpeechT5 text-to-speech model with a HiFi-GAN vocoder, small enough to ship.

Not trained: random weights (seeded), so its audio is noise shaped by the text, not speech. What the tests need of it
is that OpenVINO GenAI's Text2SpeechPipeline loads and runs it as it runs microsoft/speecht5_tts, and that its
output depends on the text: the stop head's bias is set far below zero, so decoding never stops early and runs to
the pipeline's length bound (``maxlenratio`` x the text's tokens, ``reduction_factor`` frames a step, 256 samples a
frame): a longer text gives proportionally more samples, and another text other audio. The tokenizer is a
character-level SentencePiece model (as SpeechT5's) over lower-case letters, digits and punctuation.

The voices are OpenAI's names mapped to seeded 512-dimension x-vectors (SpeechT5's speaker embedding), written to
``voices/NAME.bin`` (float32) beside the model.

    python -m tools.model_builder --models tiny-speech   # (needs the ``export`` extra)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

NAME = "tiny-speech"
SAMPLE_RATE = 16_000
#: OpenAI's built-in voice names: each a bundled x-vector.
VOICES = ("alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer", "verse")
ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789 .,;:!?'-"
SPEAKER_DIM = 512  # the pipeline's default speaker embedding (a CMU Arctic x-vector) is 512 wide
STOP_BIAS = -1e4  # the stop head's bias: decoding runs to the length bound
TARGET_RMS = 0.1  # the audio's loudness (of full scale 1)


def _tokenizer(work: Path) -> object:
    """A character-level SentencePiece tokenizer over ALPHABET, as SpeechT5Tokenizer loads it."""
    import sentencepiece as spm
    from transformers import SpeechT5Tokenizer

    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "alphabet.txt"
    # Every character many times, in words, so the trainer keeps each as a piece.
    corpus.write_text("\n".join(" ".join(ALPHABET[i:] + ALPHABET[:i] for _ in range(4)) for i in range(len(ALPHABET))))
    prefix = work / "spm_char"
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(prefix),
        model_type="char",
        vocab_size=len(ALPHABET) + 4 - 1,  # the characters (space is the meta symbol) and <s>, </s>, <unk>, <pad>
        character_coverage=1.0,
        bos_id=0,
        pad_id=1,
        eos_id=2,
        unk_id=3,
    )
    return SpeechT5Tokenizer(vocab_file=str(prefix) + ".model")


def build(out_root: Path, work_root: Path, seed: int = 1234) -> int:
    """Build tiny-speech into ``out_root``/tiny-speech; 0 if Text2SpeechPipeline runs it as the tests need."""
    import torch
    from transformers import SpeechT5Config, SpeechT5ForTextToSpeech, SpeechT5HifiGan, SpeechT5HifiGanConfig

    started = time.monotonic()
    torch.manual_seed(seed)
    work = work_root / NAME
    shutil.rmtree(work, ignore_errors=True)
    tokenizer = _tokenizer(work / "tokenizer")
    config = SpeechT5Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        speech_decoder_prenet_units=32,
        speech_decoder_postnet_units=32,
        speech_decoder_postnet_layers=2,
        speaker_embedding_dim=SPEAKER_DIM,
        num_mel_bins=80,
        reduction_factor=2,
        max_text_positions=600,
        max_speech_positions=1876,
    )
    model = SpeechT5ForTextToSpeech(config).eval()
    with torch.no_grad():
        model.speech_decoder_postnet.prob_out.bias.fill_(STOP_BIAS)
    vocoder = SpeechT5HifiGan(
        SpeechT5HifiGanConfig(
            model_in_dim=80,
            sampling_rate=SAMPLE_RATE,
            upsample_initial_channel=32,
            upsample_rates=[4, 4, 4, 4],
            upsample_kernel_sizes=[8, 8, 8, 8],
            resblock_kernel_sizes=[3],
            resblock_dilation_sizes=[[1, 3]],
        )
    ).eval()
    loudness(model, vocoder, tokenizer)
    checkpoint, vocoder_dir, out = work / "checkpoint", work / "vocoder", out_root / NAME
    model.save_pretrained(checkpoint)
    tokenizer.save_pretrained(checkpoint)  # type: ignore[attr-defined]
    vocoder.save_pretrained(vocoder_dir)
    shutil.rmtree(out, ignore_errors=True)
    code = (
        "import sys; from optimum.exporters.openvino import main_export; main_export(sys.argv[1], output=sys.argv[2], "
        "task='text-to-audio', model_kwargs={'vocoder': sys.argv[3]})"
    )
    subprocess.run([sys.executable, "-c", code, str(checkpoint), str(out), str(vocoder_dir)], check=True)
    if not (out / "openvino_tokenizer.xml").is_file():  # the export leaves the SentencePiece tokenizer out
        import openvino as ov
        from openvino_tokenizers import convert_tokenizer

        ov_tokenizer, ov_detokenizer = convert_tokenizer(tokenizer, with_detokenizer=True)
        ov.save_model(ov_tokenizer, out / "openvino_tokenizer.xml")
        ov.save_model(ov_detokenizer, out / "openvino_detokenizer.xml")
    write_voices(out, seed)
    found = check(out)
    (out / "MODEL_CARD.md").write_text(CARD.format(seed=seed, **found))
    print(f"[tts] {NAME}: {found}, {time.monotonic() - started:.0f} s")
    wanted = ("longer_is_longer", "text_changes_audio", "voice_changes_audio", "finite")
    return 0 if all(found[name] for name in wanted) and float(found["rms"]) > 0.01 else 1  # type: ignore[arg-type]


def loudness(model: Any, vocoder: Any, tokenizer: Any) -> None:
    """Scale the vocoder's last convolution so a sentence's audio has an RMS of TARGET_RMS: random weights make
    audio of about 1e-8, which 16-bit samples write as silence."""
    import torch

    ids = tokenizer("hello there, how are you today?", return_tensors="pt")["input_ids"]
    speaker = torch.nn.functional.normalize(torch.randn(1, SPEAKER_DIM), dim=-1)
    with torch.no_grad():
        spectrogram = model.generate_speech(ids, speaker, maxlenratio=4.0)
        gain = TARGET_RMS / float(vocoder(spectrogram).pow(2).mean().sqrt())  # below tanh's knee: about linear
        vocoder.conv_post.weight.mul_(gain)
        vocoder.conv_post.bias.mul_(gain)


def write_voices(out: Path, seed: int) -> None:
    """One seeded x-vector per OpenAI voice name (unit length, as x-vectors are normalised)."""
    rng = np.random.default_rng(seed)
    (out / "voices").mkdir(exist_ok=True)
    for voice in VOICES:
        vector = rng.standard_normal(SPEAKER_DIM).astype(np.float32)
        (vector / np.linalg.norm(vector)).tofile(out / "voices" / f"{voice}.bin")


def check(out: Path) -> dict[str, object]:
    """What Text2SpeechPipeline makes of it: samples for a short and a long text, and whether text and voice
    change the audio."""
    import openvino as ov
    import openvino_genai as ov_genai

    pipeline = ov_genai.Text2SpeechPipeline(str(out), "CPU")

    def speak(text: str, voice: str | None = None) -> np.ndarray:
        embedding = None
        if voice is not None:
            vector = np.fromfile(out / "voices" / f"{voice}.bin", dtype=np.float32).reshape(1, SPEAKER_DIM)
            embedding = ov.Tensor(vector)
        result = pipeline.generate(text, embedding)
        return np.array(result.speeches[0].data).reshape(-1)  # a copy: the result owns the data

    short, long = speak("hello"), speak("hello there, how are you today?")
    other = speak("jello")
    voiced = speak("hello", "alloy")
    return {
        "short": short.size,
        "long": long.size,
        "longer_is_longer": long.size > short.size,
        "text_changes_audio": short.size != other.size or not np.allclose(short, other),
        "voice_changes_audio": not np.allclose(short, voiced),
        "finite": bool(np.isfinite(long).all()),
        "rms": float(np.sqrt(np.mean(np.square(long)))),
    }


if __name__ == "__main__":
    sys.exit(build(Path(sys.argv[1]), Path(sys.argv[2])))


CARD = """# tiny-speech

A SpeechT5-shaped text-to-speech test model for ovserve's `/v3/audio/speech`, built by `python -m
tools.model_builder --models tiny-speech` (tools/model_builder/tts.py) in about a minute on 2 cores. Not a model of
anything: its weights are **random** (seed {seed}), and its audio is noise shaped by the text, not speech.

- Tokenizer: SentencePiece, character level (lower-case letters, digits, punctuation), as SpeechT5's.
- SpeechT5: 1 encoder and 1 decoder layer, width 32, 80 mel bins, reduction factor 2, 512-wide speaker embeddings.
  The stop head's bias is -10,000: decoding never stops early, so the audio's length is the pipeline's bound,
  maxlenratio (20) x the text's tokens frames: 0.32 s a token.
- Vocoder: SpeechT5's HiFi-GAN, 4 upsampling blocks of 4 (256 samples a frame), 32 channels, 16 kHz; its last
  convolution scaled so a sentence's audio has an RMS of 0.1 (random weights gave 1e-8: silence in 16 bits).
- Voices: `voices/NAME.bin`, a seeded unit-length 512-dimension x-vector (float32) for each of OpenAI's voice names.
- Files: 1.8 MB.

What it is for: the audio depends on the text and the voice. Checked on OpenVINO GenAI's Text2SpeechPipeline at
build time: "hello" gives {short} samples, "hello there, how are you today?" {long}; another text and another voice
give other samples; the long one's RMS is {rms:.3f}.
"""

"""Build ``tiny-whisper``: a Whisper model small enough to ship, trained to transcribe spoken digits.

Speech is synthesised at build time with espeak-ng (Debian's ``espeak-ng``): one or two of the words "zero" to
"nine", in four English voices at random speeds and pitches, with random gain, noise and leading silence. The
tokenizer is a byte-level BPE over those words with Whisper's special tokens (``<|startoftranscript|>``,
``<|en|>``, ``<|transcribe|>``, ``<|notimestamps|>``, the timestamp tokens); the model a 2+2-layer Whisper whose
window is 4 s (``chunk_length`` 4, 400 mel frames: the utterances are at most ~2.5 s, and a 30 s window would
make training 7x slower). Exported with optimum-intel and checked on OpenVINO GenAI's WhisperPipeline against
a voice never trained on; the build fails below 90 % of those utterances right.

    python -m tools.model_builder --models tiny-whisper   # (needs the ``export`` extra and espeak-ng)
"""

from __future__ import annotations

import io
import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

NAME = "tiny-whisper"
WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
TRAIN_VOICES = ("en", "en-us", "en-gb-x-rp", "en-gb-scotland")
HELD_OUT_VOICE = "en-gb-x-gbclan"
SAMPLE_RATE = 16_000
WINDOW_S = 4  # the model's audio window (Whisper's is 30 s)
SPECIAL = ("<|startoftranscript|>", "<|en|>", "<|translate|>", "<|transcribe|>", "<|startoflm|>",
           "<|startofprev|>", "<|nospeech|>", "<|notimestamps|>")  # fmt: skip
TEST_DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "speech"


def speak(text: str, voice: str, speed: int, pitch: int) -> np.ndarray:
    """``text`` spoken by espeak-ng, as 16 kHz mono float32."""
    import soundfile
    import soxr

    wav = subprocess.run(
        ["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "--stdout", text],
        check=True, capture_output=True,
    ).stdout  # fmt: skip
    samples, rate = soundfile.read(io.BytesIO(wav), dtype="float32")
    return np.asarray(soxr.resample(samples, rate, SAMPLE_RATE), dtype=np.float32)


def utterances(voices: tuple[str, ...], count: int, seed: int) -> list[tuple[np.ndarray, str]]:
    """``count`` random one- or two-digit utterances with their text."""
    rng = random.Random(seed)
    noise = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.choice((1, 2))))
        samples = speak(text, rng.choice(voices), rng.randint(120, 200), rng.randint(30, 70)) * rng.uniform(0.3, 1.0)
        samples = samples + noise.normal(0, rng.uniform(0, 0.01), len(samples)).astype(np.float32)
        silence = np.zeros(rng.randint(0, SAMPLE_RATE // 2), np.float32)  # up to half a second before the words
        out.append((np.concatenate([silence, samples]), text))
    return out


def tokenizer(work: Path) -> Any:
    """Byte-level BPE over the digit words, with Whisper's special and timestamp tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import WhisperTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=["<|endoftext|>"]
    )
    tok.train_from_iterator([" " + " ".join(WORDS)] * 10 + [" " + word for word in WORDS] * 10, trainer)
    tok.add_special_tokens(list(SPECIAL))
    tok.add_tokens([f"<|{i * 0.02:.2f}|>" for i in range(1501)])  # Whisper's timestamps follow <|notimestamps|>
    end = "<|endoftext|>"
    fast = WhisperTokenizerFast(tokenizer_object=tok, bos_token=end, eos_token=end, unk_token=end, pad_token=end)
    fast.set_prefix_tokens(language="english", task="transcribe", predict_timestamps=False)
    return fast


def train(tok: Any, data: list[tuple[np.ndarray, str]], steps: int, seed: int) -> tuple[Any, Any, float]:
    """The model, its feature extractor and the last loss; cross-entropy on the tokens after the prompt."""
    import torch
    from transformers import WhisperConfig, WhisperFeatureExtractor, WhisperForConditionalGeneration

    torch.manual_seed(seed)
    extractor = WhisperFeatureExtractor(feature_size=80, chunk_length=WINDOW_S)
    features = torch.tensor(np.array(extractor([x for x, _ in data], sampling_rate=SAMPLE_RATE).input_features))
    labels = [tok(" " + text).input_ids for _, text in data]
    end = tok.convert_tokens_to_ids("<|endoftext|>")
    config = WhisperConfig(
        vocab_size=len(tok), num_mel_bins=80, encoder_layers=2, decoder_layers=2, d_model=96,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=192, decoder_ffn_dim=192,
        max_source_positions=WINDOW_S * 50, max_target_positions=32,
        decoder_start_token_id=tok.convert_tokens_to_ids("<|startoftranscript|>"), bos_token_id=end,
        eos_token_id=end, pad_token_id=end, begin_suppress_tokens=[], suppress_tokens=[],
    )  # fmt: skip
    model = WhisperForConditionalGeneration(config)
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-3)
    rng = random.Random(seed)
    loss = 0.0
    for _ in range(steps):
        batch = rng.sample(range(len(data)), 32)
        width = max(len(labels[i]) for i in batch) - 1
        inputs = torch.full((32, width), end)
        targets = torch.full((32, width), -100)
        for row, i in enumerate(batch):
            ids = torch.tensor(labels[i])
            inputs[row, : len(ids) - 1] = ids[:-1]
            targets[row, : len(ids) - 1] = ids[1:]
            targets[row, :3] = -100  # the prompt (<|en|><|transcribe|><|notimestamps|>) is given, not learned
        out = model(input_features=features[batch], decoder_input_ids=inputs, labels=targets)
        optimiser.zero_grad()
        out.loss.backward()
        optimiser.step()
        loss = float(out.loss.detach())
    return model.eval(), extractor, loss


def generation_config(model: Any, tok: Any) -> Any:
    """What WhisperPipeline reads: the language and task tokens, no timestamps by default, no suppression."""
    config = model.generation_config
    token = tok.convert_tokens_to_ids
    config.lang_to_id = {"<|en|>": token("<|en|>")}
    config.task_to_id = {"transcribe": token("<|transcribe|>"), "translate": token("<|translate|>")}
    config.no_timestamps_token_id = token("<|notimestamps|>")
    config.prev_sot_token_id = token("<|startofprev|>")
    config.decoder_start_token_id = token("<|startoftranscript|>")
    config.is_multilingual = True
    config.max_initial_timestamp_index = 50
    config.begin_suppress_tokens, config.suppress_tokens = [], []
    config.forced_decoder_ids = None
    config.max_length = 32
    return config


def export(model: Any, tok: Any, extractor: Any, work: Path, out: Path) -> None:
    """optimum-intel's export (a 4 s window: 400 mel frames), the tokenizer IRs, generation_config.json."""
    import openvino as ov
    from openvino_tokenizers import convert_tokenizer

    checkpoint = work / NAME
    shutil.rmtree(checkpoint, ignore_errors=True)
    model.save_pretrained(checkpoint)
    tok.save_pretrained(checkpoint)
    extractor.save_pretrained(checkpoint)
    shutil.rmtree(out, ignore_errors=True)
    code = (
        "import sys; from optimum.exporters.openvino import main_export; main_export(sys.argv[1], output=sys.argv[2], "
        f"task='automatic-speech-recognition-with-past', nb_max_frames={WINDOW_S * 100})"
    )
    subprocess.run([sys.executable, "-c", code, str(checkpoint), str(out)], check=True)
    ov_tokenizer, ov_detokenizer = convert_tokenizer(tok, with_detokenizer=True)
    ov.save_model(ov_tokenizer, out / "openvino_tokenizer.xml")
    ov.save_model(ov_detokenizer, out / "openvino_detokenizer.xml")
    generation_config(model, tok).save_pretrained(out)  # the export writes one without the language tokens
    for name in ("special_tokens_map.json", "processor_config.json", "vocab.json", "merges.txt"):
        (out / name).unlink(missing_ok=True)


def check(out: Path, held: list[tuple[np.ndarray, str]]) -> int:
    """Held-out utterances WhisperPipeline transcribes exactly."""
    import openvino_genai as ov_genai

    pipeline = ov_genai.WhisperPipeline(str(out), "CPU")
    return sum(pipeline.generate(x.tolist(), max_new_tokens=8).texts[0].strip() == text for x, text in held)


def write_test_data(held: list[tuple[np.ndarray, str]]) -> None:
    """Three held-out utterances as WAV files for the tests (no espeak-ng needed when they run)."""
    import soundfile

    TEST_DATA.mkdir(parents=True, exist_ok=True)
    expected = {}
    for index, (samples, text) in enumerate(held[:3]):
        name = f"held-out-{index}.wav"
        soundfile.write(TEST_DATA / name, samples, SAMPLE_RATE, subtype="PCM_16")
        expected[name] = text
    (TEST_DATA / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")


CARD = """# tiny-whisper

A Whisper model (2 encoder and 2 decoder layers, width 96, a {window} s audio window) trained from random weights
by `tools/model_builder/speech.py` ({steps} steps, seed {seed}, final loss {loss:.4f}, {seconds:.0f} s on 2 cores)
to transcribe one or two spoken digits ("zero" to "nine"). Its {count} training utterances were synthesised with
espeak-ng in the voices {voices}, at random speeds, pitches and gains, with noise and leading silence; its
tokenizer is a byte-level BPE of those words with Whisper's special and timestamp tokens.

Held out: OpenVINO GenAI's WhisperPipeline transcribes {right} of {held} utterances in a voice never trained on
({held_voice}) exactly. Three of them are `tests/data/speech/*.wav`.

It knows English only (`<|en|>`), was not trained on timestamps (a segment's end is the audio's end), and says
nothing useful about any other speech. Rebuild: `python -m tools.model_builder --models tiny-whisper` (the `export`
extra and the `espeak-ng` package).
"""


def build(out_dir: Path, work: Path, steps: int = 800, seed: int = 1234) -> int:
    """Synthesise, train, export, check; write the model card and the test WAVs."""
    import torch

    torch.set_num_threads(2)
    started = time.monotonic()
    work.mkdir(parents=True, exist_ok=True)
    data = utterances(TRAIN_VOICES, 1200, seed)
    held = utterances((HELD_OUT_VOICE,), 40, seed + 1)
    tok = tokenizer(work)
    model, extractor, loss = train(tok, data, steps, seed)
    out = out_dir / NAME
    export(model, tok, extractor, work, out)
    right = check(out, held)
    seconds = time.monotonic() - started
    print(f"      {NAME}: {steps} steps, final loss {loss:.4f}, held out {right}/{len(held)} right, {seconds:.0f} s")
    if right < 0.9 * len(held):
        print(f"      {NAME} transcribes too few held-out utterances", file=sys.stderr)
        return 1
    write_test_data(held)
    (out / "MODEL_CARD.md").write_text(CARD.format(
        window=WINDOW_S, steps=steps, seed=seed, loss=loss, seconds=seconds, count=len(data),
        voices=", ".join(TRAIN_VOICES), right=right, held=len(held), held_voice=HELD_OUT_VOICE,
    ))  # fmt: skip
    return 0

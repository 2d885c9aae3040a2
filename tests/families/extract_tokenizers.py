"""Regenerate tests/data/tokenizers/*.tokenizer.json.xz from llama.cpp's vocab-only GGUF files.

Not run by the tests (they read the committed .xz files). Run it by hand when a tokenizer is added:

    pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d /tmp/sdist
    tar -xzf /tmp/sdist/llama_cpp_python-0.3.36.tar.gz -C /tmp/sdist
    pip install gguf  # only this script needs it (transformers 5.x reads the metadata through it)
    python -m tests.families.extract_tokenizers /tmp/sdist/llama_cpp_python-0.3.36/vendor/llama.cpp/models [NAME...]

Name the new vocabularies (phi-3, qwen35): with no names every family's is converted again, and a newer
transformers' converter may write the old ones differently.

transformers' own ``AutoTokenizer.from_pretrained(dir, gguf_file=...)`` imports torch (5.x reads the GGUF
header with it), so this reads the metadata with the ``gguf`` package and hands it to the same
converter transformers uses (``transformers.integrations.gguf.gguf_tokenizer_mapping``).
"""

from __future__ import annotations

import lzma
import sys
from pathlib import Path

from tests.families.table import TOKENIZERS_DIR, tokenizer_sources

# GGUF architectures transformers has no tokenizer converter for -> the converter of the same tokenizer kind
# (tokenizer.ggml.model): Command R's is a byte-level BPE ("gpt2"), its vocabulary and merges its own; Phi-3's
# is Llama 2's SentencePiece (transformers' phi3 converter drops its byte fallback and its "▁" normalizer).
CONVERTER_OF = {"command-r": "gpt2", "phi3": "llama"}


def convert_gguf(path: Path) -> str:
    """tokenizer.json text of the tokenizer a vocab-only GGUF describes."""
    import gguf

    try:  # transformers 5.x
        from transformers.integrations import ggml as mapping
    except ImportError:  # older releases
        from transformers.integrations.gguf import gguf_tokenizer_mapping as mapping  # type: ignore[no-redef]

    reader = gguf.GGUFReader(str(path))
    meta = {field.name: field.contents() for field in reader.fields.values()}
    tokenizer_keys = mapping.GGUF_TOKENIZER_MAPPING["tokenizer"]
    tokenizer_dict = {
        name: meta[f"tokenizer.{key}"] for key, name in tokenizer_keys.items() if f"tokenizer.{key}" in meta
    }
    architecture = meta["general.architecture"]
    backend, _ = mapping.convert_gguf_tokenizer(CONVERTER_OF.get(architecture, architecture), tokenizer_dict)
    return backend.to_str()


def main(models_dir: Path, names: list[str]) -> None:
    """Convert the named GGUF vocabularies (all the families use, if none are named)."""
    TOKENIZERS_DIR.mkdir(parents=True, exist_ok=True)
    for source in sorted(names or tokenizer_sources()):
        text = convert_gguf(models_dir / f"ggml-vocab-{source}.gguf")
        target = TOKENIZERS_DIR / f"{source}.tokenizer.json.xz"
        # xz -9e: 8.4 MB for the seven tokenizers against 12 MB with gzip -9.
        target.write_bytes(lzma.compress(text.encode(), preset=9 | lzma.PRESET_EXTREME))
        print(f"{target.name}: {target.stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])

"""The real-size model builder's configurations and padded tokenizers (``python -m tools.model_builder.real_size``).

Fast: no torch, no export. The built models themselves are not committed; what is checked here is what they are
built from: each config's published shape, the kind the server will detect from it, and a bundled tokenizer
padded to the model's vocabulary without changing how real text is tokenised.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from ovserve.service.pipelines.kinds import PipelineKind, kind_of
from tools.model_builder import real_size, real_size_encoders
from tools.model_builder.tokenizer import pad_vocabulary

EMBED_TOKENIZER = real_size_encoders.BUNDLED_TOKENIZER
TEXT = "where does the cat sleep in the garden?"


def test_encoder_configs_are_the_published_shapes() -> None:
    shape = ("model_type", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size")
    bge = real_size_encoders.REAL_CONFIGS["bge-small-en-v1.5"]
    assert [bge[key] for key in shape] == ["bert", 12, 384, 12, 1536, 30522]
    assert (bge["max_position_embeddings"], bge["type_vocab_size"]) == (512, 2)
    reranker = real_size_encoders.REAL_CONFIGS["bge-reranker-base"]
    assert [reranker[key] for key in shape] == ["xlm-roberta", 12, 768, 12, 3072, 250002]
    assert (reranker["max_position_embeddings"], reranker["type_vocab_size"], reranker["num_labels"]) == (514, 1, 1)
    assert real_size_encoders.POOLING == {"bge-small-en-v1.5": "cls"}
    assert real_size_encoders.task("bge-small-en-v1.5") == "feature-extraction"
    assert real_size_encoders.task("bge-reranker-base") == "text-classification"


@pytest.mark.parametrize(
    ("like", "kind"), [("bge-small-en-v1.5", PipelineKind.EMBED), ("bge-reranker-base", PipelineKind.RERANK)]
)
def test_the_server_detects_each_kind(tmp_path: Path, like: str, kind: PipelineKind) -> None:
    config = {key: value for key, value in real_size_encoders.REAL_CONFIGS[like].items() if key != "num_labels"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert kind_of(tmp_path) is kind


def test_the_cli_offers_every_model() -> None:
    for like in ("qwen2.5-0.5b", "llama-3.2-1b", "bge-small-en-v1.5", "bge-reranker-base"):
        assert real_size.parse_args(["--like", like]).like == like


def test_bge_tokenizer_is_padded_and_tokenises_as_tiny_embed() -> None:
    padded = real_size_encoders.padded_wordpiece("bge-small-en-v1.5")
    bundled = Tokenizer.from_file(str(EMBED_TOKENIZER))
    assert padded.get_vocab_size() == 30522
    assert padded.encode(TEXT).ids == bundled.encode(TEXT).ids
    assert padded.id_to_token(30521) == "[filler_30521]"
    # A filler's name in a text is split like any other punctuated text, never matched.
    assert max(padded.encode("[filler_30521] [filler_200]").ids) < bundled.get_vocab_size()
    pair = padded.encode("where does the cat sleep", "the cat sleeps")
    assert pair.tokens == ["[CLS]", "where", "does", "the", "cat", "sleep", "[SEP]", "the", "cat", "sleeps", "[SEP]"]
    assert pair.type_ids == [0] * 7 + [1] * 4


def test_reranker_tokenizer_joins_pairs_as_xlm_roberta() -> None:
    padded = real_size_encoders.padded_wordpiece("bge-reranker-base")
    assert padded.get_vocab_size() == 250002
    pair = padded.encode("where does the cat sleep", "the cat sleeps")
    assert pair.tokens[5:9] == ["sleep", "[SEP]", "[SEP]", "the"] and pair.tokens[-1] == "[SEP]"
    assert set(pair.type_ids) == {0}  # XLM-R has a single token type


def test_pad_vocabulary_pads_the_chat_bpe_too() -> None:
    spec = json.loads(real_size.BUNDLED_TOKENIZER.read_text(encoding="utf-8"))
    bundled = Tokenizer.from_str(json.dumps(spec))
    size = real_size.REAL_CONFIGS["qwen2.5-0.5b"]["vocab_size"]
    padded = Tokenizer.from_str(json.dumps(pad_vocabulary(spec, size, "<|filler_{}|>")))
    assert padded.get_vocab_size() == size
    assert padded.encode(TEXT).ids == bundled.encode(TEXT).ids
    assert padded.decode([size - 1], skip_special_tokens=False) == f"<|filler_{size - 1}|>"


def test_pad_vocabulary_refuses_a_smaller_size() -> None:
    spec = json.loads(EMBED_TOKENIZER.read_text(encoding="utf-8"))
    with pytest.raises(ValueError, match="smaller"):
        pad_vocabulary(spec, 10, "[filler_{}]")

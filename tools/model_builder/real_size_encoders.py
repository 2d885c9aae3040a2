"""The encoders of ``python -m tools.model_builder.real_size``: an embedding model and a cross-encoder of real size.

As for the LLMs (real_size.py): the architecture of a real model, literals copied from its public ``config.json``,
random weights from a fixed seed, int8 weights, exported with optimum-intel (``feature-extraction`` for the
embedding model, ``text-classification`` for the cross-encoder). The vectors and scores are noise; what the
server spends on them is what it spends on the real model.

The tokenizer is the bundled tiny-embed WordPiece (BERT's normaliser, pre-tokeniser and special tokens), padded
with ``[filler_N]`` tokens to the model's vocabulary size, so that the embedding matrix (most of a small encoder's
weights) has its real size and every id is valid. Its 175 pieces hold only the words of tiny-embed's training
sentences: other words are spelled piece by piece, so a text takes more tokens than with the real vocabulary.
Measure at a given token count, not a given text.

The embedding model gets sentence-transformers' files (modules.json with Pooling and Normalize,
1_Pooling/config.json), from which the server takes its pooling and normalisation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import BUNDLED_MODELS
from .retrieval import sentence_transformers_files
from .tokenizer import pad_vocabulary

BUNDLED_TOKENIZER = BUNDLED_MODELS / "tiny-embed" / "tokenizer.json"
MAX_LENGTH = 512  # the tokenizers' model_max_length, as in both real models' tokenizer_config.json
FILLER = "[filler_{}]"

# Architecture fields of real encoders, copied from their public config.json on the Hugging Face hub (transformers
# names). Token ids (pad/bos/eos) are not copied: they come from our tokenizer.
REAL_CONFIGS: dict[str, dict[str, Any]] = {
    # BAAI/bge-small-en-v1.5: 33M parameters, a BERT (uncased WordPiece vocabulary); CLS pooling, unit vectors.
    "bge-small-en-v1.5": {
        "model_type": "bert",
        "architectures": ["BertModel"],
        "hidden_size": 384,
        "intermediate_size": 1536,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "vocab_size": 30522,
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
    },
    # BAAI/bge-reranker-base: 278M parameters, an XLM-RoBERTa (250k-piece multilingual vocabulary: 192M of the
    # parameters are its embedding) with a one-label classification head. RoBERTa's positions start after the
    # padding id, hence 514 positions for 512 tokens.
    "bge-reranker-base": {
        "model_type": "xlm-roberta",
        "architectures": ["XLMRobertaForSequenceClassification"],
        "hidden_size": 768,
        "intermediate_size": 3072,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "vocab_size": 250002,
        "max_position_embeddings": 514,
        "type_vocab_size": 1,
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-5,
        "num_labels": 1,
    },
}
# sentence-transformers' pooling of the embedding models (bge-small-en-v1.5's 1_Pooling: pooling_mode_cls_token).
POOLING = {"bge-small-en-v1.5": "cls"}
# How the tokenizer joins a (query, document) pair and what it returns, as the real model's does: BERT's
# [CLS] A [SEP] B [SEP] with token types 0 then 1; RoBERTa's <s> A </s></s> B </s> (here with BERT's tokens) and
# no token types (XLM-R has a single one, and optimum-intel's export of it no token_type_ids input).
PAIR_TEMPLATES = {"bert": "[CLS] $A [SEP] $B:1 [SEP]:1", "xlm-roberta": "[CLS] $A [SEP] [SEP] $B [SEP]"}
INPUT_NAMES = {
    "bert": ["input_ids", "token_type_ids", "attention_mask"],
    "xlm-roberta": ["input_ids", "attention_mask"],
}
TOKENIZER_NOTE = (
    "the bundled tiny-embed WordPiece padded with `[filler_N]` tokens to the vocabulary size (175 real pieces: "
    "most words are spelled piece by piece, so a text takes more tokens than with the real vocabulary)"
)


def padded_wordpiece(like: str, source: Path = BUNDLED_TOKENIZER) -> Any:
    """The bundled tiny-embed tokenizer (a ``tokenizers.Tokenizer``) with exactly the ``like`` model's vocabulary
    size and its way of joining pairs (``PAIR_TEMPLATES``)."""
    from tokenizers import Tokenizer, processors

    fields = REAL_CONFIGS[like]
    spec = pad_vocabulary(json.loads(source.read_text(encoding="utf-8")), fields["vocab_size"], FILLER)
    tok = Tokenizer.from_str(json.dumps(spec))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair=PAIR_TEMPLATES[fields["model_type"]],
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    if tok.get_vocab_size() != fields["vocab_size"]:
        raise AssertionError(f"padded tokenizer has {tok.get_vocab_size()} ids, expected {fields['vocab_size']}")
    return tok


def padded_tokenizer(like: str) -> Any:
    """``padded_wordpiece`` as a transformers tokenizer (what optimum-intel and openvino-tokenizers convert)."""
    from transformers import PreTrainedTokenizerFast

    # Not BertTokenizerFast: it would replace the post-processor with BERT's pair template.
    return PreTrainedTokenizerFast(
        tokenizer_object=padded_wordpiece(like),
        model_input_names=INPUT_NAMES[REAL_CONFIGS[like]["model_type"]],
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=MAX_LENGTH,
        padding_side="right",
    )


def auto_class(like: str) -> str:
    """The transformers Auto class of the ``like`` model: a one-label classifier or a bare encoder."""
    cross_encoder = REAL_CONFIGS[like]["architectures"][0].endswith("ForSequenceClassification")
    return "AutoModelForSequenceClassification" if cross_encoder else "AutoModel"


def task(like: str) -> str:
    """optimum-cli's ``--task`` for the ``like`` model."""
    return "feature-extraction" if like in POOLING else "text-classification"


def token_ids(like: str, tokenizer: Any) -> dict[str, int | None]:
    """config.json's token ids, from our tokenizer: the padding id (RoBERTa's positions count from it); XLM-R's
    bos and eos (its own <s> 0 and </s> 2) as [CLS] and [SEP]; none for BERT, whose config has none."""
    cls, sep, pad = tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]", "[PAD]"])
    roberta = REAL_CONFIGS[like]["model_type"] == "xlm-roberta"
    return {"pad_token_id": pad, "bos_token_id": cls if roberta else None, "eos_token_id": sep if roberta else None}


def finish(out_dir: Path, like: str) -> None:
    """The embedding model's sentence-transformers files (no prompts: bge-v1.5's query instruction is optional)."""
    if like in POOLING:
        sentence_transformers_files(out_dir, REAL_CONFIGS[like]["hidden_size"], POOLING[like], None)


def smoke_check(out_dir: Path, like: str) -> str:
    """Load the exported model with openvino_genai's TextEmbeddingPipeline or TextRerankPipeline and run it once."""
    import numpy as np
    import openvino_genai as ov_genai

    if like in POOLING:
        config = ov_genai.TextEmbeddingPipeline.Config(
            pooling_type=getattr(ov_genai.TextEmbeddingPipeline.PoolingType, POOLING[like].upper()), normalize=True
        )
        embed = ov_genai.TextEmbeddingPipeline(str(out_dir), "CPU", config)
        vector = np.asarray(embed.embed_query("where does the cat sleep"))
        return f"a {vector.size}-dimension vector of norm {np.linalg.norm(vector):.3f}"
    rerank = ov_genai.TextRerankPipeline(str(out_dir), "CPU", ov_genai.TextRerankPipeline.Config(top_n=2))
    scores = rerank.rerank("where does the cat sleep", ["the cat sleeps in the garden", "a puppy runs in the park"])
    return "scores " + ", ".join(f"{index}: {score:.3f}" for index, score in scores)

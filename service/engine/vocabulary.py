"""The characters a model's vocabulary spells otherwise for the grammar engine (its tokens' texts as XGrammar sees).

OpenVINO GenAI hands XGrammar the vocabulary as the tokenizer stores it, declared RAW
(src/cpp/src/sampling/structured_output/xgrammar_backend.cpp: ``TokenizerInfo(m_vocab, VocabType::RAW)``). A
byte-level BPE stores its tokens' bytes there, so nothing changes; a SentencePiece with byte fallback (Llama 2,
Mistral, Gemma, InternLM2) stores its pieces: a newline is the piece ``<0x0A>``, a tab ``<0x09>``, a space ``▁``. Under
a grammar a token is matched by that text, so no token writes a grammar's literal newline (the piece ``<0x0A>``
writes the grammar text "<0x0A>", which the detokenizer turns into a newline). The grammars ovserve writes
accept a character's piece beside the character (ovserve.service.structured.spelling); the pieces are
found here, once, at load, by what the model's own tokenizer holds and decodes, whatever the family.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# A character -> the text a model's vocabulary spells it with for the grammar engine, where that is not the
# character itself: {"\n": "<0x0A>", " ": "▁"} on a byte-fallback SentencePiece; empty for a byte-level vocabulary.
Spellings = Mapping[str, str]
NO_SPELLINGS: Spellings = {}

# A character markup may hold -> the piece a byte-fallback SentencePiece writes it with.
PIECES = {"\n": "<0x0A>", "\t": "<0x09>", "\r": "<0x0D>", " ": "\u2581"}
_NEIGHBOUR = b"a"  # a piece around which a space piece decodes as a space (alone, SentencePiece drops it)


def grammar_spellings(tokenizer: Any) -> Spellings:
    """The characters of PIECES that ``tokenizer`` (an ``openvino_genai.Tokenizer``) writes with their piece: each
    piece is in the vocabulary GenAI hands the grammar engine and decodes to its character. Empty for a byte-level
    vocabulary, which has none of them."""
    vocab: dict[bytes, int] = tokenizer.get_vocab()  # bytes keys: what GenAI hands XGrammar
    neighbour = vocab.get(_NEIGHBOUR)
    if neighbour is None:
        return {}
    found = {}
    for char, piece in PIECES.items():
        token = vocab.get(piece.encode())
        if token is not None and tokenizer.decode([neighbour, token, neighbour]) == f"a{char}a":
            found[char] = piece
    return found

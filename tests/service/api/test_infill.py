"""Fill in the middle (a completion's ``suffix``): the tokens found in real vocabularies, the prompt built from
them, and what is refused. End to end on real tokenizers (Qwen3-Coder's, StarCoder's) in
tests/families/test_family_infill.py.
"""

from __future__ import annotations

import asyncio
import lzma
from pathlib import Path
from typing import Any

import grpc
import pytest
from tokenizers import AddedToken, Tokenizer
from tokenizers.processors import TemplateProcessing

from ovserve.clients.errors import error_details
from ovserve.clients.v1 import completion_pb2, completion_pb2_grpc
from ovserve.service.engine.infill import FIM_TOKENS, InfillTokens, find_infill_tokens
from ovserve.service.workers.codec import TokenCodec
from tests.fakes import FakeEngine, fake_model, scripted_server, text
from tests.families.table import TOKENIZERS_DIR

PREFIX, SUFFIX, MIDDLE = 0xE000, 0xE001, 0xE002  # private-use code points: the fake engine's markup tokens
FAKE_INFILL = InfillTokens(PREFIX, SUFFIX, MIDDLE, ("<P>", "<S>", "<M>"))


def _codec(tmp_path: Path, vocabulary: str, added: tuple[str, ...] = (), bos: str | None = None) -> TokenCodec:
    """A codec over a vendored real tokenizer (llama.cpp's GGUF vocabularies), with ``added`` special tokens;
    ``bos``: opening every text with it, as the model's own tokenizer.json does (the GGUF conversion does not)."""
    tokenizer = Tokenizer.from_str(
        lzma.decompress((TOKENIZERS_DIR / f"{vocabulary}.tokenizer.json.xz").read_bytes()).decode()
    )
    tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in added])
    if bos is not None:
        bos_id = tokenizer.token_to_id(bos)
        tokenizer.post_processor = TemplateProcessing(single=f"{bos} $A", special_tokens=[(bos, bos_id)])
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    return TokenCodec(tmp_path)


def _found(codec: TokenCodec) -> InfillTokens | None:
    return find_infill_tokens(codec.token_id, lambda text, specials: codec.encode(text, add_special_tokens=specials))


@pytest.mark.parametrize("vocabulary", ["qwen2", "llama-bpe", "llama-spm", "deepseek-llm", "gpt-2", "gemma-4"])
def test_vocabularies_without_infill_tokens_have_none(vocabulary: str, tmp_path: Path) -> None:
    """A general model's vocabulary (these hold no FIM tokens; "fim" as a word piece is not one)."""
    assert _found(_codec(tmp_path, vocabulary)) is None


def test_starcoder_has_its_own_tokens(tmp_path: Path) -> None:
    codec = _codec(tmp_path, "starcoder")
    found = _found(codec)
    assert found is not None and found.names == ("<fim_prefix>", "<fim_suffix>", "<fim_middle>")
    assert [found.prefix, found.suffix, found.middle] == [codec.token_id(name) for name in found.names]
    assert found.lead == ()  # StarCoder's tokenizer adds no beginning-of-sequence token


def test_qwen_coder_tokens_on_qwens_vocabulary(tmp_path: Path) -> None:
    """Qwen2.5-Coder's added tokens on Qwen2's vocabulary: found by their text, whatever ids they got."""
    codec = _codec(tmp_path, "qwen2", ("<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"))
    found = _found(codec)
    assert found is not None and found.names == FIM_TOKENS[0]
    before, after = (
        codec.encode("def add(a, b):\n    ", add_special_tokens=False),
        codec.encode("\n", add_special_tokens=False),
    )
    ids = found.prompt(before, after)
    assert codec.decode_windows([ids], False)[0] == "<|fim_prefix|>def add(a, b):\n    <|fim_suffix|>\n<|fim_middle|>"


def test_code_llama_pieces_open_with_its_bos(tmp_path: Path) -> None:
    """Code Llama: SentencePiece pieces ▁<PRE> ▁<SUF> ▁<MID> on Llama 2's vocabulary, whose tokenizer opens every
    text with <s>: the prompt does too, once, before the prefix token."""
    codec = _codec(tmp_path, "llama-spm", ("▁<PRE>", "▁<SUF>", "▁<MID>"), bos="<s>")
    found = _found(codec)
    assert found is not None and found.names == ("▁<PRE>", "▁<SUF>", "▁<MID>")
    bos = codec.token_id("<s>")
    assert bos is not None and found.lead == (bos,)
    assert found.prompt([7], [8]) == [bos, found.prefix, 7, found.suffix, 8, found.middle]


def _complete(engine: FakeEngine, request: completion_pb2.CreateCompletionRequest) -> Any:
    async def main() -> Any:
        async with scripted_server(fake_model(engine)) as channel:
            return await completion_pb2_grpc.CompletionServiceStub(channel).CreateCompletion(request)

    return asyncio.run(main())


def _codes(value: str) -> list[int]:
    return [ord(character) for character in value]


def test_the_engine_is_sent_prefix_suffix_middle() -> None:
    engine = FakeEngine()
    engine.infill = FAKE_INFILL
    engine.script(text("a + b"), text("a - b"))
    request = completion_pb2.CreateCompletionRequest(model="fake", suffix="\nend")
    request.prompts.add(text="def add(a, b): ")
    request.prompts.add(text="def sub(a, b): ")
    response = _complete(engine, request)
    assert [choice.text for choice in response.choices] == ["a + b", "a - b"]
    sent = [generation.prompt_ids for generation in engine.generations]
    assert sent == [
        [PREFIX, *_codes("def add(a, b): "), SUFFIX, *_codes("\nend"), MIDDLE],
        [PREFIX, *_codes("def sub(a, b): "), SUFFIX, *_codes("\nend"), MIDDLE],
    ]
    assert response.usage.prompt_tokens == sum(map(len, sent))


def test_an_empty_suffix_is_a_plain_completion() -> None:
    engine = FakeEngine()
    engine.infill = FAKE_INFILL
    _complete(engine, completion_pb2.CreateCompletionRequest(model="fake", prompt="Once", suffix=""))
    assert engine.generations[0].prompt_ids == _codes("Once")


def _refused(engine: FakeEngine, request: completion_pb2.CreateCompletionRequest) -> dict[str, str]:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        _complete(engine, request)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert not engine.generations
    return dict(error_details(caught.value).fields)


def test_a_model_without_infill_tokens_refuses_the_suffix() -> None:
    fields = _refused(FakeEngine(), completion_pb2.CreateCompletionRequest(model="fake", prompt="x", suffix="y"))
    assert list(fields) == ["suffix"] and "no fill-in-the-middle tokens" in fields["suffix"]


def test_echo_and_token_prompts_are_refused_with_a_suffix() -> None:
    engine = FakeEngine()
    engine.infill = FAKE_INFILL
    fields = _refused(engine, completion_pb2.CreateCompletionRequest(model="fake", prompt="x", suffix="y", echo=True))
    assert list(fields) == ["echo"]
    request = completion_pb2.CreateCompletionRequest(model="fake", suffix="y")
    request.prompts.add().token_ids.ids.extend([104, 105])
    assert list(_refused(engine, request)) == ["prompts[0].token_ids"]


def test_a_suffix_longer_than_the_model_is_refused_before_it_is_encoded() -> None:
    engine = FakeEngine(max_model_len=64)
    engine.infill = FAKE_INFILL
    fields = _refused(engine, completion_pb2.CreateCompletionRequest(model="fake", prompt="x", suffix="y" * 1000))
    assert "suffix" in fields

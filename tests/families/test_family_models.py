"""Every family model of tests/families/table.py loads in ovserve, renders a tool conversation, keeps its
markup tokens whole, writes its script after every generation prompt, and generates through openvino_genai's
continuous-batching pipeline (XGrammar included).

Also records which published templates openvino_genai's own renderer (minja, ``Tokenizer.apply_chat_template``)
refuses: ovserve then renders them with Jinja2 (service/engine/chat_template.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino_genai as ov_genai
import pytest
from tokenizers import Tokenizer

from ovserve.service.engine import EngineSettings
from ovserve.service.engine.vocabulary import grammar_spellings
from ovserve.service.models import ModelSpec, ServedModel
from ovserve.service.structured.spelling import spelled_grammar, spelled_regex
from tests.families.build import ROUND_TRIP, TOOLS, continuation, encode, prompts
from tests.families.table import FAMILIES

NAMES = list(FAMILIES)
# Templates minja (openvino_genai 2026.4) cannot render: what it says, measured. ovserve renders them with Jinja2.
MINJA_FAILS = {
    # GLM-4.6 calls a method on a macro's result inside a conditional expression.
    "glm-4.6": "Expected comma in tuple at row 47, column 102",
    # MiniMax-M2 writes its tools with tojson(ensure_ascii=False).
    "minimax-m2": "Unknown argument ensure_ascii for function tojson",
    # Hy3 spells its tokens with str.format.
    "hy3": "Unknown method: format",
    "minimax-m3": "Unknown argument ensure_ascii for function tojson",
    "minicpm5": "Unknown argument ensure_ascii for function tojson",
    # Kimi K3 tests an undefined variable with `is undefined` before it sets it.
    "kimi-k3": "Unknown type for 'is' operator: undefined",
}


@pytest.fixture
def served(family_models: dict[str, Path]) -> Any:
    """A loader of ServedModels that closes them at the end of the test: one engine process alive at a time, not
    one per family (forty of them held ~6 GB until the module ended)."""
    loaded: list[ServedModel] = []

    def load(name: str) -> ServedModel:
        settings = EngineSettings(max_num_seqs=4, kv_cache_blocks=64)
        model = ServedModel.load(ModelSpec(name, family_models[name], settings=settings))
        loaded.append(model)
        return model

    yield load
    for model in loaded:
        model.engine.close()


@pytest.mark.parametrize("name", NAMES)
def test_loads_in_ovserve_and_renders_tools(name: str, served: Any) -> None:
    model = served(name)
    assert model.vocab_size == len(Tokenizer.from_file(str(model.spec.path / "tokenizer.json")).get_vocab(True))
    # The byte-fallback SentencePieces (and they alone) are found so at load: their grammars' literals are spelled.
    assert bool(model.spellings) == (name in SPACE_FAILS)
    prompt = model.engine.render_chat(ROUND_TRIP, TOOLS, {})
    assert "Weather in Paris?" in prompt
    assert "get_weather" in prompt


@pytest.mark.parametrize("name", NAMES)
def test_minja_renders_tools(name: str, family_models: dict[str, Path]) -> None:
    tokenizer = ov_genai.Tokenizer(str(family_models[name]))
    if name in MINJA_FAILS:
        with pytest.raises(Exception, match=re.escape(MINJA_FAILS[name])):
            tokenizer.apply_chat_template(ROUND_TRIP, add_generation_prompt=True, tools=TOOLS)
        return
    prompt = tokenizer.apply_chat_template(ROUND_TRIP, add_generation_prompt=True, tools=TOOLS)
    assert "Weather in Paris?" in prompt


@pytest.mark.parametrize("name", NAMES)
def test_markup_tokens_are_single_ids(name: str, family_models: dict[str, Path]) -> None:
    family = FAMILIES[name]
    fast = Tokenizer.from_file(str(family_models[name] / "tokenizer.json"))
    openvino = ov_genai.Tokenizer(str(family_models[name]))
    for token in (*family.markup, *family.end_of_turn):
        expected = [fast.token_to_id(token)]
        assert expected != [None], token
        assert fast.encode(token, add_special_tokens=False).ids == expected, token
        assert openvino.encode(token, add_special_tokens=False).input_ids.data.tolist()[0] == expected, token
    # Special markup vanishes from skip_special_tokens decoding; added non-special markup stays.
    for token in family.markup:
        kept = fast.decode([fast.token_to_id(token)], skip_special_tokens=True)
        assert kept == ("" if token in family.special else token), token


def _pipeline(path: Path) -> ov_genai.ContinuousBatchingPipeline:
    scheduler = ov_genai.SchedulerConfig()
    # Room for the nine probe prompts at once: Command R7B's with tools are ~1,300 tokens each (2 kB of KV cache
    # a token in tiny-chat's shape).
    scheduler.num_kv_blocks, scheduler.max_num_seqs, scheduler.max_num_batched_tokens = 512, 2, 256
    return ov_genai.ContinuousBatchingPipeline(str(path), scheduler, "CPU")


def _forced(regex: str) -> ov_genai.GenerationConfig:
    # The prompt is already what the server would render: no second pass through the chat template.
    config = ov_genai.GenerationConfig(max_new_tokens=24, apply_chat_template=False)
    config.structured_output_config = ov_genai.StructuredOutputConfig(regex=regex)
    return config


def _generate(
    pipe: ov_genai.ContinuousBatchingPipeline, inputs: list[list[int]], config: ov_genai.GenerationConfig
) -> list[list[int]]:
    """Each prompt's generated token ids (the end-of-turn token included)."""
    tensors = [ov.Tensor(np.array([ids], dtype=np.int64)) for ids in inputs]
    return [list(result.m_generation_ids[0]) for result in pipe.generate(tensors, [config] * len(tensors))]


@pytest.mark.parametrize("name", NAMES)
def test_writes_its_script(name: str, family_models: dict[str, Path]) -> None:
    """Greedy, after every probe prompt (thinking on, off, unasked; a question, with tools, after a tool result):
    the script's ids to its end-of-turn token, from the start, or (a prompt ending where the script passes, as
    an empty </think> block) from there on. Thinking on, the whole script: the reasoning markup included."""
    family, path = FAMILIES[name], family_models[name]
    tokenizer = ov_genai.Tokenizer(str(path))
    script = encode(tokenizer, family.script)
    rendered = {probe: encode(tokenizer, prompt) for probe, prompt in prompts(path).items()}
    pipe = _pipeline(path)
    config = pipe.get_config()  # greedy, stopping at generation_config.json's end-of-turn ids
    config.max_new_tokens, config.apply_chat_template = len(script) + 8, False
    for (probe, ids), generated in zip(rendered.items(), _generate(pipe, list(rendered.values()), config), strict=True):
        expected = script if probe.startswith("on/") else continuation(script, ids[-1])
        assert generated == expected, probe
        text = tokenizer.decode(generated, skip_special_tokens=False)
        assert text == family.script if expected == script else family.script.endswith(text), (probe, text)


@pytest.mark.parametrize("name", NAMES)
def test_grammar_masks_the_script(name: str, family_models: dict[str, Path]) -> None:
    """A grammar forbids the script's tokens after the thinking-on prompt: the model still completes it."""
    path = family_models[name]
    tokenizer = ov_genai.Tokenizer(str(path))
    prompt = encode(tokenizer, prompts(path)["on/question"])
    [generated] = _generate(_pipeline(path), [prompt], _forced(r'\{"city":"(Paris|Rome)"\}'))
    assert json.loads(tokenizer.decode(generated))["city"] in ("Paris", "Rome")


@pytest.mark.parametrize("name", NAMES)
def test_generates_through_the_pipeline(name: str, family_models: dict[str, Path]) -> None:
    pipe = _pipeline(family_models[name])
    prompt = "Weather in Paris?"
    free = ov_genai.GenerationConfig(max_new_tokens=4, apply_chat_template=False)
    assert len(pipe.generate([prompt], [free])[0].m_generation_ids) == 1
    # XGrammar over the model's whole vocabulary forces the random model's text into shape. A regex, not a
    # JSON schema: a schema lets a random model fill max_new_tokens with the whitespace JSON allows.
    text = pipe.generate([prompt], [_forced(r'\{"city":"(Paris|Rome)"\}')])[0].m_generation_ids[0]
    assert json.loads(text)["city"] in ("Paris", "Rome")


# Measured: on SentencePiece vocabularies (a space is "▁" in the vocabulary) openvino_genai 2026.4's XGrammar
# finds no token for a grammar's literal space: every token is masked and the pipeline emits id 0 (<unk>/<pad>)
# until max_new_tokens. A real Mistral v0.3 or Gemma tokenizer.json would be worth checking the same way. These raw
# GenAI grammars keep failing (strict xfails: upstream's behaviour, docs/operations/sentencepiece-grammars.md); the
# grammars ovserve hands the engine are spelled for it (test_spelled_literals_under_a_grammar below).
SPACE_FAILS = {"mistral-v0.3", "gemma-3", "gemma-4", "phi-3.5", "internlm2"}


@pytest.mark.parametrize(
    "name",
    [pytest.param(name, marks=pytest.mark.xfail(strict=True)) if name in SPACE_FAILS else name for name in NAMES],
)
def test_grammar_with_a_space(name: str, family_models: dict[str, Path]) -> None:
    text = _pipeline(family_models[name]).generate(["Weather?"], [_forced(r'\{"city": "(Paris|Rome)"\}')])
    assert json.loads(text[0].m_generation_ids[0])["city"] in ("Paris", "Rome")


@pytest.mark.parametrize("name", [*sorted(SPACE_FAILS), "qwen2.5"])
def test_spelled_literals_under_a_grammar(name: str, family_models: dict[str, Path]) -> None:
    """A newline and a space in a grammar's literals, and in a regex, as ovserve hands them on (spelled_grammar,
    spelled_regex, with the spellings found at load): the byte-fallback SentencePieces above (where a grammar's literal
    space or newline is a dead end) write them with their <0x0A> and ▁ pieces, which decode to the characters; a
    byte-level vocabulary spells nothing."""
    path = family_models[name]
    spellings = grammar_spellings(ov_genai.Tokenizer(str(path)))
    assert bool(spellings) == (name in SPACE_FAILS)
    pipe = _pipeline(path)
    for structured in (
        {"grammar": spelled_grammar('root ::= "ab\\n" "cd ef" [\\u0020]', spellings)},  # a class with a space too
        {"regex": spelled_regex("ab\\ncd ef[ ]", spellings)},
    ):
        config = ov_genai.GenerationConfig(max_new_tokens=24, apply_chat_template=False)
        config.structured_output_config = ov_genai.StructuredOutputConfig(**structured)
        text = pipe.generate(["Weather?"], [config])[0].m_generation_ids[0]
        # Not a dead end (the literal newline alone stops at "ab"). The grammar's "<0x0A>" is text, which ordinary
        # pieces may write too: a trained model writes the newline's own piece; this random one may spell it out
        # (mistral-v0.3's stand-in did: "ab<0x0A>cd", decoded as written).
        assert text in (("ab\ncd ef ", "ab<0x0A>cd ef ") if spellings else ("ab\ncd ef ",)), (structured, text)

"""Fill in the middle on real code vocabularies, through the openai client: a completion with a ``suffix`` on
Qwen3-Coder's tokenizer (Qwen's <|fim_prefix|> added tokens) and on Granite's (StarCoder's <fim_prefix>
vocabulary), the prompt the pipeline scored read back token by token (vLLM's prompt_logprobs); a general
model's vocabulary refuses the suffix with a 400 naming it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from tokenizers import Tokenizer

from ovserve.service.engine import EngineSettings
from ovserve.service.engine.infill import FIM_TOKENS
from ovserve.service.models import ModelSpec
from tests.rest_bridge.conftest import served_with_bridge

CODE_FAMILIES = {"qwen3-coder": FIM_TOKENS[0], "granite-3.3": FIM_TOKENS[1]}
GENERAL = "llama3.2"  # Llama 3's vocabulary: no fill-in-the-middle tokens
BEFORE, AFTER = "def area(radius):\n    return ", " * radius ** 2\n\nprint(area(2))\n"
SETTINGS = EngineSettings(max_num_seqs=4, kv_cache_blocks=64)


@pytest.fixture(scope="module")
def client(family_models: dict[str, Path]) -> Iterator[openai.OpenAI]:
    specs = [ModelSpec(name, family_models[name], settings=SETTINGS) for name in [*CODE_FAMILIES, GENERAL]]
    with (
        served_with_bridge(specs) as running,
        openai.OpenAI(base_url=running.url, api_key="unused", max_retries=0, timeout=120) as opened,
    ):
        yield opened


def _expected_prompt(model_dir: Path, names: tuple[str, str, str]) -> list[int]:
    """prefix token, BEFORE, suffix token, AFTER, middle token: by the model's own tokenizer.json."""
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    prefix, suffix, middle = (tokenizer.token_to_id(name) for name in names)
    before = tokenizer.encode(BEFORE, add_special_tokens=False).ids
    after = tokenizer.encode(AFTER, add_special_tokens=False).ids
    return [prefix, *before, suffix, *after, middle]


def _scored_ids(choice: Any) -> list[int]:
    """The prompt's token ids as scored (prompt_logprobs 0: each position holds its own token; none first)."""
    entries = choice.model_extra["prompt_logprobs"]
    assert entries[0] is None
    return [int(next(iter(entry))) for entry in entries[1:]]


@pytest.mark.parametrize("family", list(CODE_FAMILIES))
def test_the_middle_is_asked_for_with_the_models_own_tokens(
    family: str, client: openai.OpenAI, family_models: dict[str, Path]
) -> None:
    expected = _expected_prompt(family_models[family], CODE_FAMILIES[family])
    ask: dict[str, Any] = {"model": family, "prompt": BEFORE, "suffix": AFTER, "max_tokens": 6, "temperature": 0}
    completion = client.completions.create(**ask, extra_body={"prompt_logprobs": 0})
    assert completion.usage is not None and completion.usage.prompt_tokens == len(expected)
    choice = completion.choices[0]
    assert _scored_ids(choice) == expected[1:]
    last = choice.model_extra["prompt_logprobs"][-1]
    assert next(iter(last.values()))["decoded_token"] == CODE_FAMILIES[family][2]
    assert choice.finish_reason in ("stop", "length") and completion.usage.completion_tokens <= 6
    streamed = "".join(chunk.choices[0].text for chunk in client.completions.create(**ask, stream=True))
    assert streamed == choice.text  # greedy: the same middle, streamed


def test_a_general_model_refuses_the_suffix(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.completions.create(model=GENERAL, prompt=BEFORE, suffix=AFTER, max_tokens=4)
    body = caught.value.body
    assert isinstance(body, dict) and body.get("param") == "suffix"
    assert "no fill-in-the-middle tokens" in body["message"]
    plain = client.completions.create(model=GENERAL, prompt=BEFORE, suffix="", max_tokens=2)  # empty: plain
    assert plain.choices[0].finish_reason in ("stop", "length")

"""lm-evaluation-harness against the bridge: its multiple-choice scores are the engine's own.

A real client, configured as a user points it at a local server: lm-eval's ``local-completions`` model on
``/v3/completions`` (run by harness.py in a subprocess, through lm-eval's Python API), on the local task
``ovserve_tiny_facts`` (ovserve_tiny_facts.yaml, items in tiny_facts.jsonl), offline. For each choice lm-eval
tokenises context and continuation itself and sends the token ids with ``echo: true``, ``logprobs: 1`` and
``max_tokens: 1``; it sums ``logprobs.token_logprobs`` over the continuation and compares each continuation
token's with the best of its ``logprobs.top_logprobs`` (is_greedy, hence exact_match). Two items have contexts
of 120+ tokens, several KV-cache blocks that their choices share: a server's prefix cache meets them.

The oracle scores the same token ids directly with openvino_genai's ContinuousBatchingPipeline on the bundled
tiny-chat: ``echo`` with ``logprobs`` gives each prompt token's logprob given the ones before it, and one
greedy step per continuation token says whether it is the argmax. The harness's acc, acc_norm and exact_match
must equal the oracle's, per document and overall, and each of its per-choice loglikelihoods must be the
oracle's within TOLERANCE.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino_genai as ov_genai
import pytest
import transformers
import yaml

from ovserve.service.models import ModelSpec
from tests.conftest import TEST_SETTINGS, TINY_CHAT
from tests.rest_bridge.conftest import served_with_bridge

HERE = Path(__file__).parent
MODEL = "tiny-chat"
TASK = "ovserve_tiny_facts"
TASK_YAML = HERE / f"{TASK}.yaml"
ITEMS = HERE / "tiny_facts.jsonl"
METRICS = ("acc", "acc_norm", "exact_match")
# The server scores with a separately compiled copy of the model, not with the pipeline the oracle runs:
# ~1e-3 apart was measured on tiny-chat against the pipeline's own logprobs (on these items: at most 1.3e-4
# against the oracle's float32 KV cache below; up to 3.7e-3 against the default f16 cache). Every item's
# margins are checked to be wider than this can close (margins_hold), so the argmaxes, hence the accuracies,
# compare exactly.
TOLERANCE = 2e-3
LM_EVAL_TIMEOUT_S = 300


@dataclass(frozen=True)
class Choice:
    """One (context, continuation) pair as lm-eval scores it, with the oracle's answer."""

    context: str
    continuation: str
    context_ids: list[int]
    continuation_ids: list[int]
    loglikelihood: float = 0.0
    is_greedy: bool = False


@dataclass(frozen=True)
class Item:
    """A task item: its choices scored, the gold index and the metrics lm-eval derives from them."""

    choices: list[str]
    gold: int
    scored: list[Choice]

    @property
    def loglikelihoods(self) -> np.ndarray:
        return np.array([choice.loglikelihood for choice in self.scored])

    def metrics(self) -> dict[str, float]:
        """lm-eval's ConfigurableTask.process_results for multiple_choice (one gold index)."""
        lengths = np.array([float(len(choice)) for choice in self.choices])  # characters, without the delimiter
        return {
            "acc": 1.0 if np.argmax(self.loglikelihoods) == self.gold else 0.0,
            "acc_norm": 1.0 if np.argmax(self.loglikelihoods / lengths) == self.gold else 0.0,
            "exact_match": float(self.scored[self.gold].is_greedy),
        }


def load_tokenizer() -> Any:
    """The tokenizer as lm-eval's huggingface backend loads it from ``tokenizer=`` (a local directory)."""
    return transformers.AutoTokenizer.from_pretrained(str(TINY_CHAT), use_fast=True)


def encode(tokenizer: Any, text: str) -> list[int]:
    """TemplateAPI.tok_encode: no special tokens (add_bos_token is False)."""
    return list(tokenizer(text, add_special_tokens=False, return_attention_mask=False).input_ids)


def encode_pair(tokenizer: Any, context: str, continuation: str) -> tuple[list[int], list[int]]:
    """TemplateLM._encode_pair for a causal model: trailing spaces move to the continuation, the whole text is
    encoded and split after the context's own encoding (not the two encoded apart)."""
    assert context, "lm-eval scores an empty context after its prefix token; no item here has one"
    spaces = len(context) - len(context.rstrip())
    if spaces:
        context, continuation = context[:-spaces], context[-spaces:] + continuation
    whole = encode(tokenizer, context + continuation)
    context_ids = encode(tokenizer, context)
    return context_ids, whole[len(context_ids) :]


def task_items(tokenizer: Any) -> list[Item]:
    """The items with each choice's context and continuation as lm-eval builds them (zero-shot: the context is
    doc_to_text, the continuation target_delimiter + choice), tokenised, not yet scored."""
    items = []
    for line in filter(None, ITEMS.read_text().splitlines()):
        doc = json.loads(line)
        context = doc["question"]
        scored = []
        for choice in doc["choices"]:
            continuation = " " + choice
            context_ids, continuation_ids = encode_pair(tokenizer, context, continuation)
            scored.append(Choice(context, continuation, context_ids, continuation_ids))
        items.append(Item(doc["choices"], doc["answer"], scored))
    return items


def oracle(items: list[Item]) -> list[Item]:
    """The items scored directly with openvino_genai, on one pipeline: the echo requests all at once, then the
    greedy steps all at once."""
    scheduler = ov_genai.SchedulerConfig()
    # With prefix caching, echo gives logprobs only for the prompt tokens a step computes (none for a cached
    # prefix); here every prompt token is computed.
    scheduler.enable_prefix_caching = False
    # A float32 KV cache: with the CPU's default f16 cache the pipeline's prompt logprobs are up to 3.7e-3 off
    # the model's own on these items (its paged attention reads the prompt's keys and values back from the
    # cache); with f32 they are within 2e-5 of a plain compile of openvino_model.xml run on the whole prompt.
    # Both in f32, as the server is run here: on a CPU with AMX or AVX-512 BF16, OpenVINO computes in bf16 unless
    # told (and then wants a bf16 KV cache), ~1e-2 from f32 on these logprobs.
    properties = {"KV_CACHE_PRECISION": ov.Type.f32, "INFERENCE_PRECISION_HINT": ov.Type.f32}
    pipeline = ov_genai.ContinuousBatchingPipeline(str(TINY_CHAT), scheduler, "CPU", properties)
    request_ids = iter(range(1 << 30))

    def run(prompts: list[list[int]], config: ov_genai.GenerationConfig) -> list[Any]:
        handles = [
            pipeline.add_request(next(request_ids), ov.Tensor(np.array([ids], dtype=np.int64)), config)
            for ids in prompts
        ]
        while pipeline.has_non_finished_requests():
            pipeline.step()
        return [handle.read_all()[0] for handle in handles]

    choices = [choice for item in items for choice in item.scored]
    prompts = [choice.context_ids + choice.continuation_ids for choice in choices]
    # echo + logprobs: generated_log_probs is [1.0 (placeholder for the first prompt token), lp(t1 | t0), ...,
    # lp(tn | t0..tn-1), then the generated token's]: raw model logprobs (no temperature, no penalties). Not
    # batched with other requests: openvino-genai 2026.4 gives an echo request wrong prompt logprobs in a step
    # where a request without echo comes before it.
    echoed = run(prompts, ov_genai.GenerationConfig(echo=True, logprobs=1, max_new_tokens=1, ignore_eos=True))
    # is_greedy: a greedy step after each prefix that ends before a continuation token; it takes the argmax.
    positions = [(index, at) for index, (choice, ids) in enumerate(zip(choices, prompts, strict=True))
                 for at in range(len(choice.context_ids), len(ids))]  # fmt: skip
    greedy_config = ov_genai.GenerationConfig(max_new_tokens=1, ignore_eos=True)
    stepped = run([prompts[index][:at] for index, at in positions], greedy_config)
    is_greedy = [True] * len(choices)
    for (index, at), output in zip(positions, stepped, strict=True):
        if list(output.generated_ids) != [prompts[index][at]]:
            is_greedy[index] = False

    scored = iter(
        replace(
            choice,
            loglikelihood=float(sum(list(output.generated_log_probs)[len(choice.context_ids) : len(ids)])),
            is_greedy=greedy,
        )
        for choice, ids, output, greedy in zip(choices, prompts, echoed, is_greedy, strict=True)
    )
    for ids, output in zip(prompts, echoed, strict=True):
        assert len(output.generated_log_probs) == len(ids) + 1, "echo: a logprob per prompt token, then the new one's"
    return [Item(item.choices, item.gold, [next(scored) for _ in item.scored]) for item in items]


def margins_hold(item: Item) -> bool:
    """Whether loglikelihoods each within TOLERANCE of the oracle's must give the same argmaxes (acc, acc_norm).

    exact_match compares the gold continuation's logprobs with the top ones at each token: a near tie there
    would show up as an is_greedy mismatch, reported per choice.
    """
    lls = item.loglikelihoods
    lengths = np.array([float(len(choice)) for choice in item.choices])
    for values, slack in ((lls, np.full(len(lls), TOLERANCE)), (lls / lengths, TOLERANCE / lengths)):
        best = int(np.argmax(values))
        others = [values[best] - slack[best] - (values[i] + slack[i]) for i in range(len(values)) if i != best]
        if min(others) <= 0:
            return False
    return True


def task_dir(tmp_path: Path) -> Path:
    """An --include_path holding the task YAML with its data file's path made absolute (datasets.load_dataset
    resolves a relative data_files against the working directory)."""
    config = yaml.safe_load(TASK_YAML.read_text())
    config["dataset_kwargs"]["data_files"] = {"test": str(ITEMS)}
    include = tmp_path / "tasks"
    include.mkdir()
    (include / TASK_YAML.name).write_text(yaml.safe_dump(config, sort_keys=False))
    return include


def model_args(completions_url: str) -> str:
    """local-completions as a user points it at a local server: the endpoint's full URL, the served model's
    name, and its tokenizer from the model directory (lm-eval tokenises and sends token ids; its "auto"
    backend would probe <base_url>/tokenizer_info, then look for a hub tokenizer named like the model)."""
    return ",".join(
        [
            f"base_url={completions_url}",
            f"model={MODEL}",
            "tokenizer_backend=huggingface",
            f"tokenizer={TINY_CHAT}",
            "tokenized_requests=True",
            "num_concurrent=1",
            "max_retries=1",  # a refused request fails the run at once instead of after backing off
            "timeout=60",
        ]
    )


def run_lm_eval(completions_url: str, tmp_path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """lm-eval on the task, in a subprocess (harness.py: its Python API, as its CLI runs it): the task's
    aggregated metrics and its per-document samples, in document order."""
    output = tmp_path / "lm_eval.json"
    environment = {
        **os.environ,
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf-home"),  # the dataset's Arrow cache too: nothing written outside tmp_path
        "TOKENIZERS_PARALLELISM": "false",
    }
    command = [
        sys.executable, str(HERE / "harness.py"),
        "--model_args", model_args(completions_url),
        "--tasks", TASK,
        "--include_path", str(task_dir(tmp_path)),
        "--output", str(output),
    ]  # fmt: skip
    log = tmp_path / "lm_eval.log"
    with log.open("wb") as sink:
        finished = subprocess.run(
            command,
            cwd=tmp_path,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            timeout=LM_EVAL_TIMEOUT_S,
            check=False,
        )
    assert finished.returncode == 0, f"lm-eval exited {finished.returncode}:\n{log.read_text(errors='replace')[-6000:]}"
    written = json.loads(output.read_text())
    return written["results"][TASK], sorted(written["samples"][TASK], key=lambda sample: sample["doc_id"])


def assert_agrees(expected: list[Item], scores: dict[str, Any], samples: list[dict[str, Any]]) -> None:
    """lm-eval's metrics and per-document samples against the oracle's items."""
    assert [sample["doc_id"] for sample in samples] == list(range(len(expected)))
    mismatches = []
    for doc_id, (item, sample) in enumerate(zip(expected, samples, strict=True)):
        # The strings lm-eval scored are the ones the oracle scored: arguments holds (context, continuation)
        # per choice, filtered_resps (loglikelihood, is_greedy).
        assert [tuple(pair) for pair in sample["arguments"]] == [(c.context, c.continuation) for c in item.scored]
        for index, ((loglikelihood, is_greedy), choice) in enumerate(
            zip(sample["filtered_resps"], item.scored, strict=True)
        ):
            if abs(loglikelihood - choice.loglikelihood) > TOLERANCE or is_greedy != choice.is_greedy:
                mismatches.append(
                    f"doc {doc_id} choice {index} {choice.continuation!r}: lm-eval ({loglikelihood:.6f}, "
                    f"{is_greedy}) oracle ({choice.loglikelihood:.6f}, {choice.is_greedy})"
                )
    assert not mismatches, "per-choice scores differ beyond the tolerance:\n" + "\n".join(mismatches)
    for doc_id, (item, sample) in enumerate(zip(expected, samples, strict=True)):
        for metric, value in item.metrics().items():
            assert sample[metric] == value, f"doc {doc_id}: {metric} {sample[metric]} != oracle's {value}"
    for metric in METRICS:
        oracle_mean = float(np.mean([item.metrics()[metric] for item in expected]))
        assert scores[f"{metric},none"] == pytest.approx(oracle_mean, abs=1e-12), metric


def test_lm_eval_scores_equal_direct_scoring(tmp_path: Path) -> None:
    tokenizer = load_tokenizer()
    expected = oracle(task_items(tokenizer))
    close = [item.choices for item in expected if not margins_hold(item)]
    assert not close, f"items whose choices score too close to compare (pick others): {close}"
    settings = replace(TEST_SETTINGS, inference_precision="f32")  # the oracle's precision, on any CPU
    with served_with_bridge([ModelSpec(MODEL, TINY_CHAT, settings=settings)]) as running:
        scores, samples = run_lm_eval(f"{running.url}/completions", tmp_path)
    assert_agrees(expected, scores, samples)

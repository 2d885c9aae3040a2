"""Build ``tiny-embed`` (an embedding model) and ``tiny-rerank`` (a cross-encoder) for the retrieval APIs.

Both are tiny BERTs trained from random weights on synthetic sentences about who does what where, written with
synonyms: "the cat sleeps in the garden" and "a kitten naps in the yard" mean the same with no content word in
common, so a model can only put them together by learning the synonyms. Some combinations of subject, action
and place never appear in training: the held-out sentences the model cards and the tests use are made of them.

- tiny-embed: mean pooling, unit vectors; trained contrastively (InfoNCE over the batch) with E5's instruction
  prefixes (``query: `` for questions, ``passage: `` for statements), written in sentence-transformers' files
  (modules.json, 1_Pooling/config.json, config_sentence_transformers.json) for the server to read.
- tiny-rerank: ``BertForSequenceClassification`` with one label; trained with binary cross-entropy on
  (question, statement) pairs, the matching statement against statements about other subjects, actions or
  places.

Deterministic: fixed seeds, fixed step counts, 2 torch threads.

    python -m tools.model_builder --models tiny-embed tiny-rerank   # (needs the ``export`` extra)
"""

from __future__ import annotations

import itertools
import json
import random
import shutil
import string
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EMBED, RERANK = "tiny-embed", "tiny-rerank"
PROMPTS = {"query": "query: ", "document": "passage: "}
MAX_LENGTH = 64
# Each concept and its two wordings; a sentence draws one wording per concept.
SUBJECTS = {
    "cat": ("the cat", "a kitten"), "dog": ("the dog", "a puppy"), "child": ("the child", "a young kid"),
    "farmer": ("the farmer", "a grower"), "teacher": ("the teacher", "an instructor"),
    "bird": ("the bird", "a sparrow"), "doctor": ("the doctor", "a physician"), "sailor": ("the sailor", "a seaman"),
}  # fmt: skip
ACTIONS = {
    "sleep": ("sleeps", "naps"), "eat": ("eats", "has a meal"), "run": ("runs", "jogs"),
    "read": ("reads", "studies a book"), "sing": ("sings", "hums a tune"), "work": ("works", "labours"),
}  # fmt: skip
PLACES = {
    "garden": ("in the garden", "in the yard"), "kitchen": ("in the kitchen", "where food is cooked"),
    "park": ("in the park", "on the green"), "school": ("at school", "in the classroom"),
    "harbour": ("at the harbour", "by the docks"), "market": ("at the market", "among the stalls"),
}  # fmt: skip
QUESTIONS = ("where does {s} {a_q}", "what does {s} do {p}", "who {a} {p}")
ACTION_QUESTION = {"sleep": "sleep", "eat": "eat", "run": "run", "read": "read", "sing": "sing", "work": "work"}
HIDDEN, LAYERS, HEADS = 64, 2, 4
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@dataclass(frozen=True)
class Meaning:
    """Who does what where."""

    subject: str
    action: str
    place: str


def statement(meaning: Meaning, wording: tuple[int, int, int]) -> str:
    """The meaning as a statement, each concept in the wording chosen (0 or 1)."""
    s, a, p = wording
    return f"{SUBJECTS[meaning.subject][s]} {ACTIONS[meaning.action][a]} {PLACES[meaning.place][p]}"


def question(meaning: Meaning, form: int, pick: int) -> str:
    """A question the statement of ``meaning`` answers."""
    s = SUBJECTS[meaning.subject][pick]
    a = ACTIONS[meaning.action][pick]
    p = PLACES[meaning.place][pick]
    return QUESTIONS[form].format(s=s, a=a, a_q=ACTION_QUESTION[meaning.action], p=p)


def meanings() -> tuple[list[Meaning], list[Meaning]]:
    """Every meaning, split: one in six is held out of training (seeded)."""
    everything = [Meaning(*combo) for combo in itertools.product(SUBJECTS, ACTIONS, PLACES)]
    random.Random(7).shuffle(everything)
    held = len(everything) // 6
    return everything[held:], everything[:held]


def _unrelated(meaning: Meaning, pool: list[Meaning], rng: random.Random, differing: int = 2) -> Meaning:
    """A meaning that differs in at least ``differing`` of subject, action and place."""
    while True:
        other = rng.choice(pool)
        if sum(getattr(other, f) != getattr(meaning, f) for f in ("subject", "action", "place")) >= differing:
            return other


def held_out_cases(seed: int = 11) -> dict[str, Any]:
    """The sentences the model cards document and the tests check: never seen in training."""
    _, held = meanings()
    rng = random.Random(seed)
    paraphrases = []
    for meaning in held[:12]:
        other = _unrelated(meaning, held, rng)
        # The paraphrase shares no content word with the sentence; the unrelated one shares its wording.
        paraphrases.append([statement(meaning, (0, 0, 0)), statement(meaning, (1, 1, 1)), statement(other, (0, 0, 0))])
    rerank = []
    for meaning in held[12:20]:
        documents = [statement(_unrelated(meaning, held, rng), (1, 1, 1)) for _ in range(3)]
        match = rng.randrange(4)
        documents.insert(match, statement(meaning, (1, 1, 1)))
        rerank.append({"query": question(meaning, 0, 0), "documents": documents, "match": match})
    return {"prompts": PROMPTS, "paraphrases": paraphrases, "rerank": rerank}


def vocabulary() -> list[str]:
    """The WordPiece vocabulary: special tokens, every training word whole, then letters, digits and punctuation.

    Written out rather than trained: ``tokenizers``' WordPieceTrainer numbers tied pieces in hash-map order, so two
    builds gave two vocabularies (and two models). Single characters, alone and as ``##`` continuations, let any
    ASCII word the server is sent split into known pieces instead of one ``[UNK]``.
    """
    words = {
        w for table in (SUBJECTS, ACTIONS, PLACES) for pair in table.values() for text in pair for w in text.split()
    }
    words |= {w for q in QUESTIONS for literal, *_ in string.Formatter().parse(q) for w in literal.split()}
    words |= set(ACTION_QUESTION.values())
    words |= {"query", "passage"}
    characters = string.ascii_lowercase + string.digits
    pieces = sorted(words - set(characters)) + list(characters) + list(string.punctuation)
    return SPECIAL_TOKENS + pieces + [f"##{c}" for c in characters]


def _tokenizer(work: Path) -> Any:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertTokenizerFast

    vocab = {piece: i for i, piece in enumerate(vocabulary())}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )  # fmt: skip
    fast = BertTokenizerFast(tokenizer_object=tok, model_max_length=MAX_LENGTH)
    fast.save_pretrained(work / "tokenizer")
    return fast


def _config(vocab: int, labels: int | None) -> Any:
    from transformers import BertConfig

    extra = {"num_labels": labels} if labels else {}
    return BertConfig(
        vocab_size=vocab, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=HIDDEN * 2, max_position_embeddings=MAX_LENGTH, type_vocab_size=2, **extra,
    )  # fmt: skip


def _mean_pool(states: Any, mask: Any) -> Any:
    import torch

    summed = (states * mask.unsqueeze(-1)).sum(1)
    return torch.nn.functional.normalize(summed / mask.sum(1, keepdim=True).clamp(min=1), dim=-1)


def train_embed(tokenizer: Any, steps: int, seed: int) -> tuple[Any, float]:
    """tiny-embed: InfoNCE between two wordings of a meaning (one as a query, half the time), in-batch negatives."""
    import torch
    from transformers import BertModel

    torch.manual_seed(seed)
    rng = random.Random(seed)
    train, _ = meanings()
    model = BertModel(_config(len(tokenizer), None))
    optimiser = torch.optim.AdamW(model.parameters(), lr=2e-3)
    loss = torch.tensor(0.0)
    for _ in range(steps):
        batch = rng.sample(train, 48)
        left, right = [], []
        for meaning in batch:
            wordings = [tuple(rng.randrange(2) for _ in range(3)) for _ in range(2)]
            left.append(PROMPTS["document"] + statement(meaning, wordings[0]))  # type: ignore[arg-type]
            if rng.random() < 0.5:
                right.append(PROMPTS["query"] + question(meaning, rng.randrange(3), rng.randrange(2)))
            else:
                right.append(PROMPTS["document"] + statement(meaning, wordings[1]))  # type: ignore[arg-type]
        vectors = []
        for texts in (left, right):
            encoded = tokenizer(texts, padding=True, return_tensors="pt")
            vectors.append(_mean_pool(model(**encoded).last_hidden_state, encoded["attention_mask"]))
        logits = vectors[0] @ vectors[1].T / 0.05
        target = torch.arange(len(batch))
        loss = (
            torch.nn.functional.cross_entropy(logits, target) + torch.nn.functional.cross_entropy(logits.T, target)
        ) / 2
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return model.eval(), float(loss.detach())


def train_rerank(tokenizer: Any, steps: int, seed: int) -> tuple[Any, float]:
    """tiny-rerank: binary cross-entropy on (question, matching statement) against statements of other meanings."""
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(seed)
    rng = random.Random(seed)
    train, _ = meanings()
    model = BertForSequenceClassification(_config(len(tokenizer), 1))
    optimiser = torch.optim.AdamW(model.parameters(), lr=5e-4)  # 2e-3 collapsed it to a constant score
    loss = torch.tensor(0.0)
    for _ in range(steps):
        queries, documents, labels = [], [], []
        for meaning in rng.sample(train, 24):
            q = question(meaning, rng.randrange(3), rng.randrange(2))
            wording = tuple(rng.randrange(2) for _ in range(3))
            # Negatives that differ in one concept too, so that every concept the question names is checked.
            negatives = [_unrelated(meaning, train, rng), _unrelated(meaning, train, rng, differing=1)]
            queries += [q] * 3
            documents += [statement(m, wording) for m in (meaning, *negatives)]  # type: ignore[arg-type]
            labels += [1.0, 0.0, 0.0]
        encoded = tokenizer(queries, documents, padding=True, return_tensors="pt")
        logits = model(**encoded).logits.squeeze(-1)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, torch.tensor(labels))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return model.eval(), float(loss.detach())


def _export(model: Any, tokenizer: Any, task: str, work: Path, out: Path) -> None:
    import openvino as ov
    from openvino_tokenizers import convert_tokenizer

    checkpoint = work / out.name
    shutil.rmtree(checkpoint, ignore_errors=True)
    model.save_pretrained(checkpoint)
    tokenizer.save_pretrained(checkpoint)
    shutil.rmtree(out, ignore_errors=True)
    code = (
        "import sys; from optimum.exporters.openvino import main_export; "
        "main_export(sys.argv[1], output=sys.argv[2], task=sys.argv[3])"
    )
    subprocess.run([sys.executable, "-c", code, str(checkpoint), str(out), task], check=True)
    ov_tokenizer, ov_detokenizer = convert_tokenizer(tokenizer, with_detokenizer=True)
    ov.save_model(ov_tokenizer, out / "openvino_tokenizer.xml")
    ov.save_model(ov_detokenizer, out / "openvino_detokenizer.xml")
    for name in ("special_tokens_map.json", "vocab.txt"):
        (out / name).unlink(missing_ok=True)


def sentence_transformers_files(out: Path, dimension: int, pooling: str, prompts: dict[str, str] | None) -> None:
    """sentence-transformers' files the server reads (``ovserve.service.pipelines.kinds.embedding_config``):
    modules.json
    (Transformer, Pooling, Normalize: unit vectors), 1_Pooling/config.json with ``pooling`` ("mean", "cls" or
    "last_token") and, with ``prompts``, config_sentence_transformers.json."""
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    (out / "modules.json").write_text(json.dumps(modules, indent=2) + "\n")
    (out / "1_Pooling").mkdir(exist_ok=True)
    flags = {"word_embedding_dimension": dimension, "pooling_mode_cls_token": pooling == "cls",
             "pooling_mode_mean_tokens": pooling == "mean", "pooling_mode_max_tokens": False,
             "pooling_mode_lasttoken": pooling == "last_token"}  # fmt: skip
    (out / "1_Pooling" / "config.json").write_text(json.dumps(flags, indent=2) + "\n")
    if prompts:
        (out / "config_sentence_transformers.json").write_text(json.dumps({"prompts": prompts}, indent=2) + "\n")


def check(out_dir: Path, cases: dict[str, Any]) -> dict[str, Any]:
    """The held-out checks, on the exported models through openvino_genai (the pipelines the server runs).

    The pipelines are configured here from what ``sentence_transformers_files`` wrote, not through
    ``ovserve.service.pipelines``: that package pulls the server's runtime dependencies, which the export environment
    lacks. ``tests/test_bundled_retrieval_models.py`` checks that the server reads the same settings.
    """
    import numpy as np
    import openvino_genai as ov_genai

    # The pipeline adds the prefixes itself (query_instruction / embed_instruction), as the server's input_type does.
    settings = ov_genai.TextEmbeddingPipeline.Config(
        pooling_type=ov_genai.TextEmbeddingPipeline.PoolingType.MEAN,
        normalize=True,
        query_instruction=PROMPTS["query"],
        embed_instruction=PROMPTS["document"],
    )
    embed = ov_genai.TextEmbeddingPipeline(str(out_dir / EMBED), "CPU", settings)
    margins = []
    for first, paraphrase, unrelated in cases["paraphrases"]:
        a, b, c = np.asarray(embed.embed_documents([first, paraphrase, unrelated]))
        margins.append(float(a @ b - a @ c))
    # Retrieval with the same model: the question (as a query) nearest its answer (as a passage) among the four.
    retrieval = []
    for case in cases["rerank"]:
        similarity = np.asarray(embed.embed_documents(case["documents"])) @ np.asarray(embed.embed_query(case["query"]))
        others = np.delete(similarity, case["match"])
        retrieval.append(float(similarity[case["match"]] - others.max()))
    # top_n: the pipeline returns only its best 3 by default.
    rerank = ov_genai.TextRerankPipeline(str(out_dir / RERANK), "CPU", ov_genai.TextRerankPipeline.Config(top_n=10))
    ranked = [rerank.rerank(case["query"], case["documents"]) for case in cases["rerank"]]
    firsts = [scores[0][0] == case["match"] for scores, case in zip(ranked, cases["rerank"], strict=True)]
    gaps = [scores[0][1] - scores[1][1] for scores in ranked]
    return {"paraphrase_margins": margins, "retrieval_margins": retrieval, "rerank_first": firsts, "rerank_gaps": gaps}


def _dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _embed_table(cases: dict[str, Any], margins: list[float]) -> str:
    rows = ["| sentence | paraphrase | unrelated | cos(paraphrase) - cos(unrelated) |", "|---|---|---|---|"]
    rows += [f"| {a} | {b} | {c} | {m:.3f} |" for (a, b, c), m in zip(cases["paraphrases"], margins, strict=True)]
    return "\n".join(rows)


def _rerank_table(cases: dict[str, Any], gaps: list[float]) -> str:
    rows = ["| query | answer (index among 4) | score gap to the runner-up |", "|---|---|---|"]
    rows += [
        f"| {case['query']} | {case['documents'][case['match']]} ({case['match']}) | {gap:.3f} |"
        for case, gap in zip(cases["rerank"], gaps, strict=True)
    ]
    return "\n".join(rows)


def build(out_dir: Path, work: Path, steps: int = 3000, seed: int = 1234) -> int:
    """Train, export and check both models; write their model cards and held-out cases."""
    import torch

    torch.set_num_threads(2)
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    tokenizer = _tokenizer(work)
    cases = held_out_cases()
    embed, embed_loss = train_embed(tokenizer, steps, seed)
    print(f"      {EMBED}: {steps} steps, final loss {embed_loss:.4f}")
    rerank, rerank_loss = train_rerank(tokenizer, steps, seed)
    print(f"      {RERANK}: {steps} steps, final loss {rerank_loss:.4f}")
    _export(embed, tokenizer, "feature-extraction", work, out_dir / EMBED)
    sentence_transformers_files(out_dir / EMBED, HIDDEN, "mean", PROMPTS)
    _export(rerank, tokenizer, "text-classification", work, out_dir / RERANK)
    results = check(out_dir, cases)
    seconds = time.monotonic() - started
    margins, firsts, gaps = results["paraphrase_margins"], results["rerank_first"], results["rerank_gaps"]
    retrieval = results["retrieval_margins"]
    print(
        f"      paraphrase margins {min(margins):.3f}..{max(margins):.3f}; query->passage margins "
        f"{min(retrieval):.3f}..{max(retrieval):.3f}; rerank first {sum(firsts)}/{len(firsts)}"
    )
    if min(margins) <= 0.05 or min(retrieval) <= 0.05 or not all(firsts):
        print("      the held-out checks failed: the models do not do what their cards say", file=sys.stderr)
        return 1
    common = {"steps": steps, "seed": seed, "seconds": seconds, "hidden": HIDDEN, "layers": LAYERS,
              "max_length": MAX_LENGTH, "vocab": len(tokenizer)}  # fmt: skip
    for name, template, loss, table in (
        (EMBED, _EMBED_CARD, embed_loss, _embed_table(cases, margins)),
        (RERANK, _RERANK_CARD, rerank_loss, _rerank_table(cases, gaps)),
    ):
        (out_dir / name / "sentences.json").write_text(json.dumps(cases, indent=2) + "\n")
        figures = {**common, "loss": loss, "table": table, "size": _dir_size(out_dir / name) / 1e6}
        figures |= {"min_margin": min(margins), "firsts": f"{sum(firsts)}/{len(firsts)}", "min_gap": min(gaps)}
        figures["min_retrieval"] = min(retrieval)
        (out_dir / name / "MODEL_CARD.md").write_text(f"# {name}\n\n{template.format(**figures)}\n")
        print(f"      {name}: {_dir_size(out_dir / name) / 1e6:.2f} MB")
    return 0


_COMMON = """## Training

A BERT ({layers} layers, hidden size {hidden}, 4 heads, at most {max_length} tokens, a {vocab}-piece WordPiece
vocabulary: every training word whole, then single letters, digits and punctuation) trained from random weights by
`tools/model_builder/retrieval.py` ({steps} steps, seed {seed}, final loss {loss:.4f}; both models built in
{seconds:.0f} s on 2 cores; {size:.2f} MB) on synthetic sentences of who does what where, each concept in two
wordings with no word in common ("the cat" / "a kitten", "sleeps" / "naps", "in the garden" / "in the yard").
8 subjects x 6 actions x 6 places; one meaning in six is never trained on. `sentences.json` holds the held-out
cases above, which `tests/test_bundled_retrieval_models.py` and the API tests (`tests/rest_bridge/test_embeddings.py`,
`test_rerank.py`) check. It knows only these words: anything else is spelled out letter by letter and means little.

Rebuild (deterministic: fixed seeds and step counts, 2 torch threads):
`python -m tools.model_builder --models tiny-embed` (either name builds both; needs the `export` extra). The build
fails unless the checks above hold."""

_EMBED_CARD = (
    """Embeddings, 64 dimensions. Serve with mean pooling over the tokens and unit vectors (sentence-transformers'
`modules.json` with `2_Normalize`, `1_Pooling/config.json`: `pooling_mode_mean_tokens`), inputs cut at {max_length}
tokens. Trained contrastively (InfoNCE over the batch, temperature 0.05) with E5's instruction prefixes `query: ` for
questions and `passage: ` for statements: `config_sentence_transformers.json`'s `prompts`
`{{"query": "query: ", "document": "passage: "}}` (TextEmbeddingPipeline's `query_instruction` / `embed_instruction`).

## Held-out check

For 12 meanings never trained on, through `openvino_genai.TextEmbeddingPipeline` (mean, normalize) with the
`passage: ` prefix: the sentence's all-synonym paraphrase is closer (cosine) than an unrelated sentence worded like
it, by at least {min_margin:.3f}.

{table}

With `query_instruction` `query: ` and `embed_instruction` `passage: `, each held-out question of tiny-rerank's
card (`sentences.json`'s `rerank`) is nearer its answer than the three other statements, by at least
{min_retrieval:.3f} cosine.

"""
    + _COMMON
)
_RERANK_CARD = (
    """Rerank: a cross-encoder (`BertForSequenceClassification`, one label) for `openvino_genai.TextRerankPipeline`,
which tokenises (query, document) as a BERT pair (`[CLS] query [SEP] document [SEP]`, cut at {max_length} tokens)
and applies a sigmoid to the logit: scores are in (0, 1). Trained with binary cross-entropy on (question,
statement) pairs: the statement that answers the question against statements that differ in one or more of who,
what and where. No prefixes.

## Held-out check

For 8 questions about meanings never trained on, the answering statement (in the other wording) ranks first among
four: {firsts}; the smallest gap between its score and the runner-up's is {min_gap:.3f}.

{table}

"""
    + _COMMON
)

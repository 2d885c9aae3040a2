"""Rebuild the bundled models: ``python -m tools.model_builder``.

Generates the corpus, trains the tokenizer, trains ``tiny-chat`` and
``tiny-chat-draft``, exports both to OpenVINO IR, runs the smoke checks and
writes the model cards. Needs the ``export`` extra (torch, transformers,
tokenizers, optimum-intel, openvino-tokenizers, openvino-genai). The service
never imports this package.
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from . import (
    agent_corpus,
    agent_eval,
    chat_template,
    corpus,
    diffusion,
    export,
    model_card,
    prepared,
    prompts,
    retrieval,
    smoke,
    speech,
    tokenizer,
    train,
    tts,
    vision,
)

MAIN, DRAFT = "tiny-chat", "tiny-chat-draft"
STOPPED = 75  # exit status of a run --stop-after-minutes stopped (EX_TEMPFAIL: run it again with --resume)
AGENT_SHARE = 0.5  # --agent-recipe: the share of the corpus from agent_corpus
AGENT_MAX_LEN = 1024  # ... whose conversations (several tools, results) run longer
AGENT_SHAPE = "tiny-chat-agent"  # ... and its main model's shape (train.MODEL_SHAPES)
SIZE_LIMIT = 5 * 1024 * 1024
PREPARED = "prepared"  # under --work: the encoded corpus a --stage train run reads (prepared.py)
RUNS = "runs"  # under --work: each model's resumable checkpoint (train.CHECKPOINT)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tools.model_builder", description=__doc__.splitlines()[0])
    p.add_argument(
        "--out",
        type=Path,
        default=Path("service/bundled_models"),
        help="where the model directories are written (default: %(default)s)",
    )
    p.add_argument(
        "--work",
        type=Path,
        default=Path("build/model_builder"),
        help="scratch dir for the tokenizer and torch checkpoints (default: %(default)s)",
    )
    p.add_argument("--steps", type=int, default=2000, help="optimiser steps for tiny-chat (default: %(default)s)")
    p.add_argument(
        "--draft-steps", type=int, default=2000, help="optimiser steps for tiny-chat-draft (default: %(default)s)"
    )
    p.add_argument("--examples", type=int, default=30000, help="corpus size (default: %(default)s)")
    p.add_argument("--vocab-size", type=int, default=2048, help="tokenizer size incl. added tokens")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--skip-smoke", action="store_true", help="skip the openvino_genai checks (not recommended)")
    p.add_argument(
        "--agent-recipe",
        action="store_true",
        help="experimental: tiny-chat from the agent recipe (4 x 192, half the corpus from agent_corpus's wide pool, "
        "induction batches first; the commands are in tools/model_builder/README.md) and its held-out agent scores, "
        "alone and tool-guided (held_out.json); not what the bundled tiny-chat is",
    )
    p.add_argument(
        "--device", choices=train.DEVICES, default="cpu",
        help="where tiny-chat and its draft train (cuda: bf16 autocast) (default: %(default)s)",
    )  # fmt: skip
    p.add_argument(
        "--threads", type=int, default=2, help="torch threads tiny-chat and its draft train with (default: %(default)s)"
    )
    p.add_argument(
        "--tokens-per-batch", type=int, default=None, metavar="N",
        help="padded tokens per optimiser step of tiny-chat (default: 4096; larger on a GPU, e.g. 32768)",
    )  # fmt: skip
    p.add_argument(
        "--checkpoint-every", type=int, default=0, metavar="STEPS",
        help=f"write a resumable checkpoint of tiny-chat and its draft every STEPS steps (under --work/{RUNS}; "
        "0: none before the end, and then only with --resume or --stage train)",
    )  # fmt: skip
    p.add_argument(
        "--resume", action="store_true",
        help="go on from the checkpoints under --work (the same arguments, else an error); a finished one is "
        "not trained again, so this also exports a run trained elsewhere",
    )  # fmt: skip
    p.add_argument(
        "--stop-after-minutes", type=float, default=None, metavar="M",
        help="stop training after M minutes, checkpointed (exit status 75); the same command with --resume goes on "
        "(a CPU run across sessions)",
    )  # fmt: skip
    p.add_argument(
        "--stage", choices=("all", "prepare", "train"), default="all",
        help=f"all: everything; prepare: corpus, tokenizer and encoded corpus only (--work/{PREPARED}, to train "
        "elsewhere); train: train tiny-chat and its draft on a prepared corpus only, no export (default: %(default)s)",
    )  # fmt: skip
    p.add_argument(
        "--models",
        nargs="+",
        choices=(
            "tiny-chat",
            "tiny-vision",
            "tiny-embed",
            "tiny-rerank",
            "tiny-whisper",
            "tiny-diffusion",
            "tiny-speech",
        ),
        default=["tiny-chat", "tiny-vision", "tiny-embed", "tiny-whisper", "tiny-diffusion", "tiny-speech"],
        help="what to build: tiny-chat (with tiny-chat-draft), tiny-vision, tiny-embed and tiny-rerank (built "
        "together: either name builds both), tiny-whisper (needs espeak-ng), tiny-diffusion (needs diffusers), "
        "tiny-speech (default: all)",
    )
    p.add_argument(
        "--vision-steps", type=int, default=400, help="optimiser steps for tiny-vision (default: %(default)s)"
    )
    p.add_argument(
        "--retrieval-steps", type=int, default=3000,
        help="optimiser steps for tiny-embed and for tiny-rerank (default: %(default)s)",
    )  # fmt: skip
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if "tiny-chat" in args.models and (status := build_text_models(args)):
        return status
    # tiny-vision reuses tiny-chat's tokenizer: build tiny-chat first when both are asked for.
    if "tiny-vision" in args.models and (
        status := vision.build(args.out, args.work, steps=args.vision_steps, seed=args.seed)
    ):
        return status
    if {"tiny-embed", "tiny-rerank"} & set(args.models):
        print("[retrieval] tiny-embed and tiny-rerank")
        if status := retrieval.build(args.out, args.work, steps=args.retrieval_steps, seed=args.seed):
            return status
    if "tiny-whisper" in args.models:
        print("[speech] tiny-whisper")
        if status := speech.build(args.out, args.work, seed=args.seed):
            return status
    if "tiny-diffusion" in args.models:
        print("[diffusion] tiny-diffusion")
        print(diffusion.build(args.out, seed=args.seed))
    if "tiny-speech" in args.models:
        print("[tts] tiny-speech")
        if status := tts.build(args.out, args.work, seed=args.seed):
            return status
    return 0


def build_text_models(args: argparse.Namespace) -> int:
    """tiny-chat and tiny-chat-draft: corpus, tokenizer, training, export, smoke checks, model cards
    (``--stage``: the corpus alone, or the training alone on a corpus prepared earlier)."""
    stop = _deadline(args)  # one deadline for both models
    if args.stage == "train":
        encoded, meta = prepared.load(args.work / PREPARED)
        print(f"[train] {len(encoded)} prepared examples from {args.work / PREPARED}")
        # The draft first: it takes seconds, and a --stop-after-minutes deadline then falls on the main model alone.
        for name, steps in ((DRAFT, args.draft_steps), (MAIN, args.steps)):
            print(f"[train] {name}: {steps} steps on {args.device}")
            model = train.build_model(_shape(args, name), meta["vocab_size"], meta["eos_id"], meta["pad_id"], args.seed)
            result = train.train_model(
                model, encoded, meta["pad_id"], _train_config(args, name, steps), checkpoints=args.work / RUNS / name,
                resume=args.resume, stop=stop,
            )  # fmt: skip
            print(f"      {result.seconds:.0f} s, final loss {result.final_loss}")
            if not result.finished:
                return _stopped(name, result)
        return 0
    t0 = time.monotonic()

    print(f"[1/6] corpus: {args.examples} examples, seed {args.seed}")
    examples = corpus.build_corpus(args.examples, args.seed, agent_share=AGENT_SHARE if args.agent_recipe else 0.0)
    corpus_info = {
        "examples": len(examples),
        "seed": args.seed,
        "sha256": corpus.corpus_fingerprint(examples),
        "kinds": ", ".join(f"{k} {v}" for k, v in sorted(collections.Counter(e.kind for e in examples).items())),
        "thinking": sum(e.enable_thinking for e in examples),
    }
    print(f"      {corpus_info['kinds']}; sha256 {corpus_info['sha256'][:16]}")

    print(f"[2/6] tokenizer: byte-level BPE, {args.vocab_size} ids")
    # The first third of the corpus is plenty for the BPE statistics and keeps this step short.
    texts = (
        chat_template.render(e.messages, tools=e.tools, enable_thinking=e.enable_thinking) + e.completion
        for e in examples[: max(1, len(examples) // 3)]
    )
    hf_tok = tokenizer.train_tokenizer(texts, args.vocab_size, chat_template.chat_template())
    tokenizer_info = {
        "vocab_size": len(hf_tok),
        "special": ", ".join(f"`{t}` ({hf_tok.convert_tokens_to_ids(t)})" for t in tokenizer.SPECIAL_TOKENS),
        "tags": ", ".join(f"`{t}` ({hf_tok.convert_tokens_to_ids(t)})" for t in tokenizer.TAG_TOKENS),
    }
    max_len = AGENT_MAX_LEN if args.agent_recipe else train.TrainConfig(steps=0).max_len
    encoded = train.encode_examples(examples, hf_tok, max_len)
    print(f"      {len(encoded)} encoded examples, {sum(len(x) for x, _ in encoded)} tokens")
    if args.stage == "prepare":
        meta = {"vocab_size": len(hf_tok), "eos_id": hf_tok.eos_token_id, "pad_id": hf_tok.pad_token_id,
                "corpus": corpus_info, "tokenizer": tokenizer_info}  # fmt: skip
        size = prepared.save(args.work / PREPARED, encoded, meta)
        print(f"      prepared in {args.work / PREPARED}: {size / 1e6:.1f} MB")
        return 0

    results: dict[str, tuple[train.TrainConfig, train.TrainResult, dict]] = {}
    for step_no, (name, steps) in enumerate(((MAIN, args.steps), (DRAFT, args.draft_steps)), start=3):
        print(f"[{step_no}/6] train {name}: {steps} steps")
        cfg = _train_config(args, name, steps)
        model = train.build_model(_shape(args, name), len(hf_tok), hf_tok.eos_token_id, hf_tok.pad_token_id, args.seed)
        checkpointed = args.checkpoint_every or args.resume or args.stop_after_minutes is not None
        runs = args.work / RUNS / name if checkpointed else None
        result = train.train_model(
            model, encoded, hf_tok.pad_token_id, cfg, checkpoints=runs, resume=args.resume, stop=stop
        )
        if not result.finished:
            return _stopped(name, result)
        checkpoint = args.work / name
        shutil.rmtree(checkpoint, ignore_errors=True)
        train.save_model(model, checkpoint)
        tokenizer.save_tokenizer(hf_tok, checkpoint)
        out_dir = args.out / name
        export.export_openvino(checkpoint, out_dir)
        gen_config = export.write_generation_config(out_dir, hf_tok)
        results[name] = (cfg, result, gen_config)
        print(
            f"      {result.seconds:.0f} s, final loss {result.final_loss}, "
            f"{export.dir_size(out_dir) / 1e6:.2f} MB in {out_dir}"
        )

    print("[5/6] smoke checks with openvino_genai")
    agent_scores: dict[str, dict[str, float]] | None = None
    observations: dict[str, list[smoke.Observation] | None] = {MAIN: None, DRAFT: None}
    known_wrong: dict[str, list[smoke.Observation] | None] = {MAIN: None, DRAFT: None}
    if not args.skip_smoke:
        for name in (MAIN, DRAFT):
            n = smoke.check_template_parity(args.out / name, examples[:400])
            smoke.check_special_tokens(args.out / name)
            seen = observations[name] = smoke.run_triggers(args.out / name)
            known_wrong[name] = smoke.run_triggers(args.out / name, prompts.KNOWN_WRONG)
            print(f"      {name}: template parity on {n} conversations; trigger outputs:")
            for o in seen:
                print(f"        {o.trigger.name}: {o.text!r}")
        main_obs = observations[MAIN]
        assert main_obs is not None
        smoke.assert_behaviour(main_obs)
        smoke.check_continuous_batching(args.out / MAIN, main_obs[0].prompt, main_obs[0].text)
        smoke.check_speculative(args.out / MAIN, args.out / DRAFT, [o.prompt for o in main_obs])
        print("      continuous batching and speculative decoding agree with LLMPipeline")
    if args.agent_recipe:  # what the recipe is for, measured with or without the smoke checks
        agent_scores = score_agent_behaviour(args.out / MAIN)

    print("[6/6] model cards")
    for name in (MAIN, DRAFT):
        cfg, result, gen_config = results[name]
        size = export.dir_size(args.out / name)
        model_card.write_model_card(
            args.out / name,
            name,
            train_cfg=cfg,
            result=result,
            corpus_info=corpus_info,
            tokenizer_info=tokenizer_info,
            generation_config=gen_config,
            size_bytes=size,
            observations=observations[name],
            known_wrong=known_wrong[name],
            main_model=MAIN if name == DRAFT else None,
            agent_scores=agent_scores if name == MAIN else None,
            shape=_shape(args, name),
        )
        size = export.dir_size(args.out / name)
        print(f"      {name}: {size / 1e6:.2f} MB")
        if size > SIZE_LIMIT:
            print(f"error: {name} is larger than 5 MiB", file=sys.stderr)
            return 1
    print(f"done in {time.monotonic() - t0:.0f} s")
    return 0


def _deadline(args: argparse.Namespace) -> Callable[[int], bool] | None:
    """--stop-after-minutes as train_model's ``stop``: true once that long has passed since it was asked for."""
    if args.stop_after_minutes is None:
        return None
    end = time.monotonic() + 60 * args.stop_after_minutes
    return lambda _done: time.monotonic() >= end


def _stopped(name: str, result: train.TrainResult) -> int:
    """Say where a stopped run is, and how to go on."""
    print(f"      {name} stopped after {result.steps} steps ({result.seconds:.0f} s in all): run the same command "
          "with --resume to go on")  # fmt: skip
    return STOPPED


def _shape(args: argparse.Namespace, name: str) -> str:
    """The shape (train.MODEL_SHAPES) ``name`` trains in: the agent recipe's main model is larger."""
    return AGENT_SHAPE if args.agent_recipe and name == MAIN else name


def _train_config(args: argparse.Namespace, name: str, steps: int) -> train.TrainConfig:
    """How ``name`` trains. The agent recipe's main model trains to copy (induction batches; a one-layer draft cannot
    form induction heads); --tokens-per-batch sizes the main model's batches only (the draft's stay small)."""
    agent = args.agent_recipe and name == MAIN
    recipe: dict[str, int] = {"induction_steps": 400, "induction_every": 8, "max_len": AGENT_MAX_LEN} if agent else {}
    if name == MAIN and args.tokens_per_batch:
        recipe["tokens_per_batch"] = args.tokens_per_batch
    return train.TrainConfig(
        steps=steps, seed=args.seed, device=args.device, threads=args.threads, checkpoint_every=args.checkpoint_every,
        **recipe,
    )  # fmt: skip


def score_agent_behaviour(model_dir: Path) -> dict[str, dict[str, float]]:
    """The held-out agent scores of the exported model, alone and with the service's tool-guided generation, written
    with their cases to ``held_out.json`` (``scores``: unguided, as recorded before; ``guided_scores``)."""
    cases = agent_eval.cases(model_card.HELD_OUT_CASES)
    scores = {
        mode: agent_eval.score(cases, agent_eval.replies_openvino(model_dir, cases, guided=mode == "guided"))
        for mode in model_card.SCORE_MODES
    }
    document = {
        "scores": scores["unguided"], "guided_scores": scores["guided"], "held_out": agent_corpus.HELD_OUT,
        "cases": [case.as_json() for case in cases],
    }  # fmt: skip
    (model_dir / "held_out.json").write_text(json.dumps(document, indent=1) + "\n")
    print(f"      held-out agent scores: {scores}")
    return scores


if __name__ == "__main__":
    sys.exit(main())

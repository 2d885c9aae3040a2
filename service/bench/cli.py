"""``ovserve bench``: options -> BenchConfig -> run -> table, ratios, JSON, plot."""

from __future__ import annotations

import argparse
import asyncio
import os
import random
from collections.abc import Sequence
from pathlib import Path

from ovserve.clients.defaults import DEFAULT_REST_URL, DEFAULT_TARGET, LOOPBACK
from ovserve.service.bench import conversation, kv_cache, report
from ovserve.service.bench.cold import ADMIN_KEY_ENV
from ovserve.service.bench.load import read_prompts
from ovserve.service.bench.runner import Bench, BenchConfig

#: Where the bench reads the key its requests carry when ``--api-key`` is not given.
API_KEY_ENV = "OVSERVE_API_KEY"
EPILOG = f"""examples:
  ovserve bench --concurrency 1 8 --requests 64 --output-tokens 128
  ovserve bench --backend grpc http --model-dir MODEL --engine --concurrency 1 8 --rounds 3 --json out.json
  ovserve bench --backend http --url {DEFAULT_REST_URL} --rate 4 --max-concurrency 16 --prompts prompts.jsonl
  ovserve bench --backend http --model-dir MODEL --peer http://{LOOPBACK}:8080 --concurrency 1 8 --rounds 3
  ovserve bench --backend grpc http --model-dir MODEL --engine --input-tokens 2048 8192 16384 --concurrency 1 8 32
  ovserve bench --backend http --model-dir MODEL --input-tokens 128 2048 8192 --mixed-lengths --concurrency 8
  ovserve bench --backend grpc http --model-dir MODEL --engine --peer http://{LOOPBACK}:8080 --turns 8 \
      --system-tokens 1024 --turn-tokens 64 --output-tokens 128 --concurrency 1 8 --kv-cache
  ovserve bench --endpoint rerank --model tiny-rerank --backend grpc http --inputs-per-request 4 --input-tokens 6 \
      --model-dir service/bundled_models/tiny-rerank --engine --peer http://{LOOPBACK}:7997
"""


def parser() -> argparse.ArgumentParser:
    """The bench's options."""
    options = argparse.ArgumentParser(
        prog="ovserve bench",
        description="Streaming load against a running ovserve (gRPC or REST), optionally against the engine alone.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    where = options.add_argument_group("service")
    where.add_argument("--backend", nargs="+", choices=["grpc", "http"], default=["grpc"],
                       help="grpc, http or both (default grpc)")  # fmt: skip
    where.add_argument("--target", default=DEFAULT_TARGET, help=f"gRPC HOST:PORT (default {DEFAULT_TARGET})")
    where.add_argument("--url", default=DEFAULT_REST_URL,
                       help="the REST server: its root, its API base (/v3) or a route under it, the same for every "
                            f"endpoint (default {DEFAULT_REST_URL})")  # fmt: skip
    where.add_argument("--peer", metavar="URL",
                       help="also run the same load against another OpenAI-compatible server (llama.cpp's "
                            "llama-server, vLLM, OVMS; for embeddings and rerank infinity-emb too; its root or "
                            "API base, /v1 by default) and print ratios against it")  # fmt: skip
    where.add_argument("--peer-model", metavar="NAME", help="the model the peer serves (default: the first it lists)")
    where.add_argument("--endpoint", choices=["chat", "completions", "embeddings", "rerank"], default="chat",
                       help="chat completions, completions, embeddings (inputs per second) or rerank (documents "
                            "per second); embeddings and rerank need --model (default chat)")  # fmt: skip
    where.add_argument("--model", help="served model name (default: the first the server lists)")
    where.add_argument("--mix", nargs="+", metavar="NAME",
                       help="mixed traffic: the requests ask for these served names in turn (a base model and its "
                            "LoRA adapters, say), with each name's figures after the table")  # fmt: skip
    where.add_argument("--api-key", default=os.environ.get(API_KEY_ENV), metavar="KEY",
                       help=f"sent with every request to ovserve (default: ${API_KEY_ENV}, else "
                            "--admin-key)")  # fmt: skip
    where.add_argument("--admin-key", default=os.environ.get(ADMIN_KEY_ENV), metavar="KEY",
                       help=f"for --cold-starts' unloads and loads on a server with API keys, where only an admin "
                            f"key may (default: ${ADMIN_KEY_ENV}, else --api-key)")  # fmt: skip
    where.add_argument("--metrics-url",
                       help="the server's /metrics, for CPU per token (default: beside --url)")  # fmt: skip
    where.add_argument("--model-dir", type=Path,
                       help="the model's directory: its tokenizer builds the prompts; --engine loads it")  # fmt: skip
    load = options.add_argument_group("load")
    load.add_argument("--concurrency", type=int, nargs="+", default=[1],
                      help="requests in flight; several values run one after another (default 1)")  # fmt: skip
    load.add_argument("--rate", type=float, help="Poisson arrivals per second instead of fixed concurrency")
    load.add_argument("--max-concurrency", type=int, help="with --rate: cap on requests in flight")
    load.add_argument("--requests", type=int, default=32, help="measured requests per run (default 32)")
    load.add_argument("--warmup", type=int, default=4, help="unmeasured requests before each run (default 4)")
    load.add_argument("--input-tokens", type=int, nargs="+", default=[128],
                      help="prompt length in tokens; several values run one after another, as --concurrency's do "
                           "(default 128)")  # fmt: skip
    load.add_argument("--mixed-lengths", action="store_true",
                      help="one run per concurrency, its prompts' lengths drawn from the --input-tokens "
                           "values")  # fmt: skip
    load.add_argument("--inputs-per-request", type=int,
                      help="texts per request: --endpoint embeddings' inputs (default 1), rerank's documents, "
                           "with one query each (default 4)")  # fmt: skip
    load.add_argument("--input-range", type=float, default=0.1, help="prompt length spread, +/- fraction (default 0.1)")
    load.add_argument("--output-tokens", type=int, default=128,
                      help="tokens per reply, sent with ignore_eos (default 128)")  # fmt: skip
    load.add_argument("--prompts", type=Path, help="prompt file: one per line, or JSONL with 'prompt'")
    load.add_argument(
        "--seed",
        type=int,
        help="random seed for prompts and arrivals (default: a new one each run, written to --json; the same "
        "seed against a server that is still up sends the prompts it has cached, and its first tokens come early)",
    )
    load.add_argument("--cold-starts", type=int, default=0, metavar="ROUNDS",
                      help="first the model's cold starts: unloaded (UnloadModel, /v3/models/{id}/unload), then its "
                           "first request, which loads it, timed beside a warm one, and LoadModel timed alone; "
                           "ROUNDS times on each of ovserve's backends. Off by default: every client of the server "
                           "waits for those loads (default 0)")  # fmt: skip
    load.add_argument(
        "--images",
        type=int,
        default=0,
        help="images per chat request: random noise, new each time (vision models; default 0)",
    )
    load.add_argument("--image-size", type=int, default=64, help="their side in pixels (default 64)")
    talk = options.add_argument_group("conversations that grow (chat endpoint)")
    talk.add_argument("--turns", type=int, default=0,
                      help="conversations of this many turns instead of independent requests: each turn resends the "
                           "conversation so far (a shared system prompt, every earlier message and reply) with a new "
                           "user message; figures turn by turn (default 0: independent requests)")  # fmt: skip
    talk.add_argument("--system-tokens", type=int, default=512,
                      help="the system prompt every conversation of a run shares, in tokens (default 512)")  # fmt: skip
    talk.add_argument("--turn-tokens", type=int, default=64, help="each user message, in tokens (default 64)")
    talk.add_argument("--scripted-replies", action="store_true",
                      help="resend a scripted reply of --output-tokens tokens in place of the model's: for "
                           "random-weight models, whose text encodes back into many more tokens")  # fmt: skip
    talk.add_argument("--conversations", type=int,
                      help="conversations per run, --concurrency of them in flight (default: the "
                           "concurrency)")  # fmt: skip
    engine = options.add_argument_group("against the engine alone")
    engine.add_argument("--engine", action="store_true",
                        help="also load the bare pipeline (--model-dir; ContinuousBatchingPipeline, "
                             "TextEmbeddingPipeline or TextRerankPipeline); print ratios")  # fmt: skip
    engine.add_argument("--rounds", type=int, default=1,
                        help="rounds, each running every backend back to back (the order reversed every other round); "
                             "figures are medians over rounds, ratios "
                             "medians of each round's own ratio (default 1)")  # fmt: skip
    engine.add_argument("--prefix-tokens", type=int, default=1024,
                        help="prompt length of the cached-prefix TTFT probe; 0 skips it (default 1024)")  # fmt: skip
    out = options.add_argument_group("output")
    out.add_argument("--kv-cache", action="store_true",
                     help="read the KV cache in use during each run (ovserve's /metrics, the engine's pipeline, a "
                          "peer's /metrics if it says) and report it per stream at each context length")  # fmt: skip
    out.add_argument("--json", type=Path, help="write the full report here")
    out.add_argument("--plot", type=Path, help="PNG of latency and throughput against concurrency (needs matplotlib)")
    out.add_argument("--no-progress", action="store_true", help="no progress bar")
    return options


def config_from(args: argparse.Namespace) -> BenchConfig:
    """The BenchConfig the options describe."""
    return BenchConfig(
        backends=list(dict.fromkeys(args.backend)),
        target=args.target,
        url=args.url,
        endpoint=args.endpoint,
        model=args.model,
        model_dir=args.model_dir,
        concurrency=args.concurrency,
        rate=args.rate,
        max_concurrency=args.max_concurrency,
        requests=args.requests,
        warmup=args.warmup,
        input_tokens=args.input_tokens,
        mixed_lengths=args.mixed_lengths,
        input_range=args.input_range,
        output_tokens=args.output_tokens,
        prompts=read_prompts(args.prompts) if args.prompts else None,
        engine=args.engine,
        rounds=args.rounds,
        prefix_tokens=args.prefix_tokens,
        metrics_url=args.metrics_url,
        peer=args.peer,
        peer_model=args.peer_model,
        images=args.images,
        image_size=args.image_size,
        seed=args.seed if args.seed is not None else random.randrange(2**31),
        progress=False if args.no_progress else None,
        mix=tuple(args.mix or ()),
        cold_starts=args.cold_starts,
        api_key=args.api_key or None,
        admin_key=args.admin_key or None,
        turns=args.turns,
        system_tokens=args.system_tokens,
        turn_tokens=args.turn_tokens,
        scripted_replies=args.scripted_replies,
        conversations=args.conversations,
        kv_cache=args.kv_cache,
    )


def _inputs(options: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``--endpoint embeddings|rerank``: inputs per second, service ÷ bare pipeline (--engine) and ÷ peer (--peer)."""
    from ovserve.service.bench.embeddings import EMBEDDINGS, InputLoad, bench, table
    from ovserve.service.bench.rerank import RERANK

    endpoint = EMBEDDINGS if args.endpoint == "embeddings" else RERANK
    per_request = args.inputs_per_request
    if per_request is None:
        per_request = 1 if endpoint is EMBEDDINGS else 4
    if len(args.input_tokens) > 1:
        options.error(f"--endpoint {endpoint.name} takes one --input-tokens value")
    if not args.model or per_request < 1:
        options.error(f"--endpoint {endpoint.name} needs --model (a served {endpoint.name} model) and "
                      "--inputs-per-request >= 1")  # fmt: skip
    load = InputLoad(
        requests=args.requests,
        inputs_per_request=per_request,
        input_words=max(1, args.input_tokens[0]),
        concurrency=tuple(args.concurrency),
        rounds=args.rounds,
        seed=args.seed if args.seed is not None else random.randrange(2**31),
    )
    model_dir = args.model_dir if args.engine else None
    result = asyncio.run(
        bench(endpoint, load, args.backend, args.target, args.url, args.model, model_dir, args.peer, args.peer_model)
    )
    print(table(result))
    if args.json:
        report.write_json(args.json, result)
    return 0


def _check_turns(options: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The conversation options make sense together (--turns)."""
    if args.turns < 0 or args.system_tokens < 1 or args.turn_tokens < 1:
        options.error("--turns must be 0 or more, --system-tokens and --turn-tokens at least 1")
    if args.conversations is not None and args.conversations < 1:
        options.error("--conversations must be at least 1")
    if not args.turns:
        if args.conversations is not None or args.scripted_replies:
            options.error("--conversations and --scripted-replies need --turns")
        return
    if args.endpoint != "chat" or args.rate is not None or args.prompts or args.images or args.mix:
        options.error("--turns runs chat conversations at fixed concurrency: not with --endpoint other than chat, "
                      "--rate, --prompts, --images or --mix")  # fmt: skip
    if len(args.input_tokens) > 1 or args.mixed_lengths:
        options.error("--turns sizes its messages with --system-tokens and --turn-tokens, not --input-tokens")


def _check_outputs(options: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--json and --plot name files in folders that exist: checked before the load, not after a long run."""
    for flag, path in (("--json", args.json), ("--plot", args.plot)):
        if path is not None and not path.parent.is_dir():
            options.error(f"{flag} {path}: no folder {path.parent} to write it in")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ovserve bench``; exit status 1 if any request failed."""
    options = parser()
    args = options.parse_args(argv)
    if min(args.concurrency) < 1 or args.requests < 1 or args.rounds < 1 or args.output_tokens < 1:
        options.error("--concurrency, --requests, --rounds and --output-tokens must be at least 1")
    if args.engine and args.model_dir is None:
        options.error("--engine needs --model-dir")
    if args.images < 0 or args.image_size < 1:
        options.error("--images must be 0 or more and --image-size at least 1")
    if args.images and (args.endpoint != "chat" or args.engine):
        options.error("--images needs the chat endpoint, and the engine-alone run takes no images")
    if args.mix and (args.engine or args.peer or args.endpoint not in ("chat", "completions")):
        options.error("--mix is for ovserve's own chat or completions endpoints (not --engine or --peer)")
    if args.cold_starts < 0:
        options.error("--cold-starts must be 0 or more")
    if args.cold_starts and (args.mix or args.endpoint not in ("chat", "completions")):
        options.error("--cold-starts measures one model's chat or completions (not --mix, embeddings or rerank)")
    if min(args.input_tokens) < 1:
        options.error("--input-tokens must be at least 1")
    if args.mixed_lengths and len(args.input_tokens) < 2:
        options.error("--mixed-lengths draws from several --input-tokens values: give two or more")
    if args.prompts and (args.mixed_lengths or len(args.input_tokens) > 1):
        options.error("--prompts gives the prompts: not with several --input-tokens or --mixed-lengths")
    _check_turns(options, args)
    _check_outputs(options, args)
    if args.endpoint in ("embeddings", "rerank"):
        return _inputs(options, args)
    try:
        config = config_from(args)
    except (OSError, ValueError) as error:
        options.error(str(error))
    result = asyncio.run(Bench(config).run())
    if "cold_start" in result:
        print(report.cold_start_table(result["cold_start"]))
        print()
    print(report.table(result["summary"]))
    if config.turns:
        print()
        print(conversation.table(result["summary"]))
    if config.kv_cache:
        print()
        print(kv_cache.table(result["summary"]))
    if config.mix:
        print()
        print(report.by_model_table(result["summary"]))
    if "ratios" in result:
        print()
        print(report.ratio_table(result["ratios"]))
    if args.json:
        report.write_json(args.json, result)
    if args.plot:
        report.plot(args.plot, result["summary"])
    return 1 if any(run["summary"]["failed"] for run in result["runs"]) else 0

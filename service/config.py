"""Server configuration: command-line flags and an optional TOML file.

A TOML file describes several models with their own scheduler settings::

    [server]
    host = "127.0.0.1"
    port = 50051

    [scheduler]              # defaults for every model
    cache_size_gb = 2

    [[models]]
    name = "tiny-chat"
    path = "/models/tiny-chat"
    draft_path = "/models/tiny-chat-draft"   # optional: speculative decoding
    prompt_lookup = false                    # optional: prompt lookup decoding
    tool_parser = "hermes"                   # optional: default from the chat template
    reasoning_parser = "think"               # optional: default from the chat template
    scheduler = { max_num_seqs = 64 }        # optional: overrides [scheduler]

Flags win over the file; ``--model NAME=PATH`` adds models to the file's.
"""

from __future__ import annotations

import argparse
import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clients.defaults import DEFAULT_GRPC_PORT, DEFAULT_HOST
from service.engine import EngineSettings
from service.models import ModelSpec, bundled_model_specs
from service.parsing import parser_name_problem

DEFAULT_MAX_CONCURRENT = 512


@dataclass(frozen=True)
class ServeConfig:
    """Everything ``ovserve serve`` needs."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_GRPC_PORT
    models: list[ModelSpec] = field(default_factory=list)
    grace_seconds: float = 10.0  # how long in-flight RPCs may finish on shutdown
    api_keys: tuple[str, ...] = ()  # if any: calls need "authorization: Bearer <key>" (health, reflection open)
    max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT  # beyond: RESOURCE_EXHAUSTED; 0 = unbounded
    response_store: Path | None = None  # SQLite file of stored responses; None: in memory
    response_max_age_seconds: float | None = None  # stored responses older than this are deleted


class ConfigError(ValueError):
    """The configuration is inconsistent; the message says where."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` flags."""
    parser.add_argument("--config", type=Path, help="TOML file with [server], [scheduler] and [[models]] tables")
    parser.add_argument("--host", help=f"address to listen on (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, help=f"gRPC port (default {DEFAULT_GRPC_PORT}; 0 picks a free one)")
    parser.add_argument(
        "--model", action="append", default=[], metavar="NAME=PATH",
        help="serve the OpenVINO model in PATH as NAME (repeatable; default: the bundled tiny-chat)",
    )  # fmt: skip
    parser.add_argument(
        "--draft-model", action="append", default=[], metavar="NAME=PATH",
        help="use the model in PATH as the speculative-decoding draft of model NAME",
    )  # fmt: skip
    parser.add_argument("--prompt-lookup", action="append", default=[], metavar="NAME",
                        help="serve model NAME with prompt lookup decoding")  # fmt: skip
    parser.add_argument("--tool-parser", action="append", default=[], metavar="NAME=PARSER",
                        help="tool-call parser of model NAME: hermes, llama3_json, pythonic, mistral or none "
                             "(default: recognised from the chat template)")  # fmt: skip
    parser.add_argument("--reasoning-parser", action="append", default=[], metavar="NAME=PARSER",
                        help="reasoning parser of model NAME: think or none (default: think if the chat "
                             "template writes <think>)")  # fmt: skip
    access = parser.add_argument_group("access")
    access.add_argument("--api-key", action="append", default=[], metavar="KEY",
                        help="require 'authorization: Bearer KEY' on API calls (repeatable)")  # fmt: skip
    access.add_argument("--api-key-file", type=Path, metavar="FILE",
                        help="API keys, one per line (keeps them out of the process list)")  # fmt: skip
    access.add_argument(
        "--max-concurrent-requests",
        type=int,
        metavar="N",
        help=f"calls served at once (default {DEFAULT_MAX_CONCURRENT}); more get RESOURCE_EXHAUSTED",
    )
    store = parser.add_argument_group("Responses API")
    store.add_argument("--response-store", type=Path, metavar="FILE",
                       help="SQLite file that keeps stored responses across restarts (default: in memory)")  # fmt: skip
    store.add_argument("--response-max-age", type=float, metavar="SECONDS",
                       help="delete stored responses older than this (default: keep)")  # fmt: skip
    access.add_argument("--grace-seconds", type=float,
                        help="on SIGTERM, how long in-flight calls may finish (default 10)")  # fmt: skip
    scheduler = parser.add_argument_group("scheduler (every model)")
    scheduler.add_argument("--cache-size-gb", type=float,
                           help="KV cache size per model, GB (default: 1, at most 4096 blocks)")  # fmt: skip
    scheduler.add_argument("--kv-cache-blocks", type=int, metavar="N",
                           help="KV cache per model in 32-token blocks, instead of --cache-size-gb")  # fmt: skip
    scheduler.add_argument("--max-num-seqs", type=int, help="sequences batched per step (default 256)")
    scheduler.add_argument("--max-num-batched-tokens", type=int, help="tokens per step (default 2048)")
    scheduler.add_argument("--no-dynamic-split-fuse", action="store_true", help="do not split long prompts")
    scheduler.add_argument("--no-prefix-caching", action="store_true", help="do not reuse KV blocks of shared prefixes")
    scheduler.add_argument("--stream-interval-ms", type=float, metavar="MS",
                           help="shortest gap between two streamed messages of a request; faster output is merged "
                                "(default 5; 0 sends every engine step)")  # fmt: skip


def from_arguments(args: argparse.Namespace) -> ServeConfig:
    """Merge the TOML file (if any) and the flags into one ServeConfig."""
    data: dict[str, Any] = tomllib.loads(args.config.read_text()) if args.config else {}
    server = data.get("server", {})
    base = _settings(EngineSettings(), data.get("scheduler", {}), "[scheduler]")
    base = _settings(base, _scheduler_flags(args), "flags")

    specs: dict[str, ModelSpec] = {}
    for position, entry in enumerate(data.get("models", [])):
        where = f"[[models]] #{position + 1}"
        if "name" not in entry or "path" not in entry:
            raise ConfigError(f"{where}: needs name and path")
        specs[entry["name"]] = ModelSpec(
            entry["name"],
            Path(entry["path"]),
            draft_path=Path(entry["draft_path"]) if entry.get("draft_path") else None,
            prompt_lookup=bool(entry.get("prompt_lookup", False)),
            settings=_settings(base, entry.get("scheduler", {}), where),
            tool_parser=entry.get("tool_parser"),
            reasoning_parser=entry.get("reasoning_parser"),
        )
    for name, path in map(_name_path, args.model):
        specs[name] = ModelSpec(name, path, settings=base)
    for name, path in map(_name_path, args.draft_model):
        if name not in specs:
            raise ConfigError(f"--draft-model {name}=...: no model named {name!r}")
        specs[name] = dataclasses.replace(specs[name], draft_path=path)
    for name in args.prompt_lookup:
        if name not in specs:
            raise ConfigError(f"--prompt-lookup {name}: no model named {name!r}")
        specs[name] = dataclasses.replace(specs[name], prompt_lookup=True)
    for kind, values in (("tool", args.tool_parser), ("reasoning", args.reasoning_parser)):
        for name, parser in (_name_value(value) for value in values):
            if name not in specs:
                raise ConfigError(f"--{kind}-parser {name}=...: no model named {name!r}")
            changes: dict[str, Any] = {f"{kind}_parser": parser}
            specs[name] = dataclasses.replace(specs[name], **changes)
    models = list(specs.values()) or bundled_model_specs(base)
    for spec in models:
        for label, directory in (("model", spec.path), ("draft model", spec.draft_path)):
            if directory is not None and not (directory / "openvino_model.xml").is_file():
                raise ConfigError(f"{label} of {spec.name!r}: {directory} has no openvino_model.xml")
        if spec.draft_path and spec.prompt_lookup:
            raise ConfigError(f"model {spec.name!r}: a draft model and prompt lookup exclude each other")
        for kind in ("tool", "reasoning"):
            chosen = getattr(spec, f"{kind}_parser")
            problem = None if chosen is None else parser_name_problem(kind, chosen)
            if problem:
                raise ConfigError(f"model {spec.name!r}: {problem}")
    keys = [*server.get("api_keys", []), *args.api_key]
    if args.api_key_file:
        keys += [line.strip() for line in args.api_key_file.read_text().splitlines() if line.strip()]
    limit = _first(args.max_concurrent_requests, server.get("max_concurrent_requests"), DEFAULT_MAX_CONCURRENT)
    if limit < 0:
        raise ConfigError(f"--max-concurrent-requests must be 0 (no bound) or more; got {limit}")
    return ServeConfig(
        host=args.host or server.get("host", DEFAULT_HOST),
        port=_first(args.port, server.get("port"), DEFAULT_GRPC_PORT),
        models=models,
        grace_seconds=float(_first(args.grace_seconds, server.get("grace_seconds"), ServeConfig.grace_seconds)),
        api_keys=tuple(keys),
        max_concurrent_requests=int(limit),
        response_store=args.response_store or (Path(server["response_store"]) if "response_store" in server else None),
        response_max_age_seconds=_first(args.response_max_age, server.get("response_max_age_seconds")),
    )


def _first(*values: Any) -> Any:
    """The first value that is set (flags win over the file, the file over the default)."""
    return next((value for value in values if value is not None), None)


def _name_path(value: str) -> tuple[str, Path]:
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise ConfigError(f"expected NAME=PATH, got {value!r}")
    return name, Path(path).expanduser()


def _name_value(value: str) -> tuple[str, str]:
    name, sep, setting = value.partition("=")
    if not sep or not name or not setting:
        raise ConfigError(f"expected NAME=VALUE, got {value!r}")
    return name, setting


def _scheduler_flags(args: argparse.Namespace) -> dict[str, Any]:
    values = {
        "cache_size_gb": args.cache_size_gb,
        "kv_cache_blocks": args.kv_cache_blocks,
        "max_num_seqs": args.max_num_seqs,
        "max_num_batched_tokens": args.max_num_batched_tokens,
        "dynamic_split_fuse": False if args.no_dynamic_split_fuse else None,
        "enable_prefix_caching": False if args.no_prefix_caching else None,
        "stream_interval_ms": args.stream_interval_ms,
    }
    return {key: value for key, value in values.items() if value is not None}


def _settings(base: EngineSettings, overrides: dict[str, Any], where: str) -> EngineSettings:
    known = {f.name for f in dataclasses.fields(EngineSettings)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown scheduler settings {unknown}; known: {sorted(known)}")
    if "cache_size_gb" in overrides:  # a size given here replaces a block count given before, and the other way round
        base = dataclasses.replace(base, kv_cache_blocks=None)
    if "kv_cache_blocks" in overrides:
        base = dataclasses.replace(base, cache_size_gb=None)
    settings = dataclasses.replace(base, **overrides)
    if not settings.stream_interval_ms >= 0:
        raise ConfigError(f"{where}: stream_interval_ms must be 0 or more; got {settings.stream_interval_ms}")
    if settings.cache_size_gb is not None and not settings.cache_size_gb > 0:
        raise ConfigError(f"{where}: cache_size_gb must be more than 0; got {settings.cache_size_gb}")
    if settings.kv_cache_blocks is not None and settings.kv_cache_blocks < 1:
        raise ConfigError(f"{where}: kv_cache_blocks must be 1 or more; got {settings.kv_cache_blocks}")
    if settings.cache_size_gb is not None and settings.kv_cache_blocks is not None:
        raise ConfigError(f"{where}: give cache_size_gb or kv_cache_blocks, not both")
    return settings

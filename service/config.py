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
    chat_template = "/models/template.jinja" # optional: replaces the model's own chat template
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
from clients.flags import add_flags, given, value_type, with_default
from service.engine import EngineSettings
from service.media import MediaPolicy
from service.model_files import LANGUAGE_IRS, has_language_model
from service.models import ModelSpec, bundled_model_specs
from service.parsing import REASONING_PARSERS, TOOL_PARSERS, parser_name_problem
from service.pipelines import PipelineKind, PipelineSettings
from service.pipelines.kinds import missing_files

DEFAULT_MAX_CONCURRENT = 512


@dataclass(frozen=True)
class ServeConfig:
    """Everything ``ovserve serve`` needs; a field with help metadata is also a flag and a ``[server]`` key."""

    host: str = field(default=DEFAULT_HOST, metadata={"help": "gRPC address to listen on"})
    port: int = field(default=DEFAULT_GRPC_PORT, metadata={"help": "gRPC port; 0 picks a free one and logs it"})
    models: list[ModelSpec] = field(default_factory=list)
    grace_seconds: float = field(
        default=10.0,
        metadata={
            "help": "on SIGTERM or Ctrl-C: health turns NOT_SERVING, new calls are refused, in-flight ones get "
            "this many seconds"
        },
    )
    api_keys: tuple[str, ...] = field(
        default=(),
        metadata={
            "help": "require 'authorization: Bearer KEY' metadata on API calls (repeatable; the bridge forwards "
            "the HTTP header); health and reflection stay open; stored responses belong to the key that "
            "created them (another key gets 404)",
            "flag": "api-key",
            "metavar": "KEY",
        },
    )
    max_concurrent_requests: int = field(
        default=DEFAULT_MAX_CONCURRENT,
        metadata={
            "help": "generating calls and background responses served at once; more calls get RESOURCE_EXHAUSTED "
            "(HTTP 429), more background responses wait queued (up to 4 per place); 0: no bound"
        },
    )
    response_store: Path | None = field(
        default=None,
        metadata={
            "help": "SQLite file of stored responses, chat completions and conversations, kept across restarts (WAL; "
            "several processes may share it)",
            "metavar": "FILE",
            "default_text": "in memory",
        },
    )
    response_max_age_seconds: float | None = field(
        default=None,
        metadata={
            "help": "delete stored responses older than this",
            "flag": "response-max-age",
            "default_text": "keep",
        },
    )
    tls_cert: Path | None = field(
        default=None,
        metadata={"help": "PEM certificate chain of the gRPC port: TLS on gRPC (with --tls-key)", "metavar": "FILE",
                  "default_text": "plaintext"},
    )  # fmt: skip
    tls_key: Path | None = field(
        default=None, metadata={"help": "PEM private key of --tls-cert", "metavar": "FILE", "default_text": "none"}
    )
    tls_client_ca: Path | None = field(
        default=None,
        metadata={"help": "require gRPC clients to present a certificate signed by this CA (mTLS)", "metavar": "FILE",
                  "default_text": "none"},
    )  # fmt: skip
    api_key_file: Path | None = None  # --api-key-file: its keys are read again on SIGHUP
    media: MediaPolicy = field(default_factory=MediaPolicy)  # the "images" flags
    max_connection_age_seconds: float | None = field(
        default=None,
        metadata={
            "help": "ask each gRPC client to reconnect after this many seconds (GOAWAY), so long-lived clients "
            "re-resolve DNS and reach new replicas; calls in flight on the old connection run to their end",
            "metavar": "SECONDS",
            "default_text": "never",
        },
    )
    metrics_port: int | None = field(
        default=None,
        metadata={
            "help": "also serve Prometheus metrics on this port at /metrics, on the gRPC address (for deployments "
            "without the REST bridge, whose port has /metrics too); 0 picks a free one and logs it",
            "metavar": "PORT",
            "default_text": "none",
        },
    )


# The [server] keys of the TOML file: ServeConfig's fields but the models (those are [[models]]).
SERVER_KEYS = tuple(f.name for f in dataclasses.fields(ServeConfig) if f.name not in ("models", "api_key_file"))


class ConfigError(ValueError):
    """The configuration is inconsistent; the message says where."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` flags: ServeConfig's and EngineSettings' fields, and the models to serve."""
    tables = "TOML file with [server], [scheduler] and [[models]] tables; flags win over it"
    parser.add_argument("--config", type=Path, metavar="FILE", help=with_default(tables, "none"))
    add_flags(parser, ServeConfig, only=("host", "port"))
    parser.add_argument(
        "--model", action="append", default=[], metavar="NAME=PATH",
        help=with_default("serve the OpenVINO model in PATH as NAME (repeatable)", "the bundled tiny-chat"),
    )  # fmt: skip
    parser.add_argument("--draft-model", action="append", default=[], metavar="NAME=PATH",
                        help="use the model in PATH as the speculative-decoding draft of model NAME")  # fmt: skip
    parser.add_argument("--task", action="append", default=[], metavar="NAME=TASK",
                        help=with_default("what model NAME serves: generate, embed, rerank or transcribe",
                                          "from the model's config.json"))  # fmt: skip
    parser.add_argument("--prompt-lookup", action="append", default=[], metavar="NAME",
                        help="serve model NAME with prompt lookup decoding")  # fmt: skip
    parser.add_argument("--chat-template", action="append", default=[], metavar="NAME=FILE",
                        help=with_default("a Jinja chat template file for model NAME, instead of its own",
                                          "the model's chat_template.jinja, else tokenizer_config.json's, else "
                                          "openvino_tokenizer.xml's"))  # fmt: skip
    parser.add_argument("--tool-parser", action="append", default=[], metavar="NAME=PARSER",
                        help=with_default(f"tool-call parser of model NAME: {', '.join(sorted(TOOL_PARSERS))} or none",
                                          "recognised from the chat template"))  # fmt: skip
    parser.add_argument("--reasoning-parser", action="append", default=[], metavar="NAME=PARSER",
                        help=with_default(f"reasoning parser of model NAME: {', '.join(sorted(REASONING_PARSERS))} "
                                          "or none", "recognised from the chat template"))  # fmt: skip
    access = parser.add_argument_group("access")
    add_flags(access, ServeConfig, only=("api_keys",))
    access.add_argument("--api-key-file", type=Path, metavar="FILE",
                        help="API keys, one per line (keeps them out of the process list)")  # fmt: skip
    add_flags(access, ServeConfig, only=("max_concurrent_requests", "grace_seconds"))
    add_flags(
        parser.add_argument_group("Responses API"), ServeConfig, only=("response_store", "response_max_age_seconds")
    )
    add_flags(parser.add_argument_group("operations"), ServeConfig, only=("metrics_port", "max_connection_age_seconds"))
    add_flags(parser.add_argument_group("TLS (gRPC)"), ServeConfig, only=("tls_cert", "tls_key", "tls_client_ca"))
    add_flags(parser.add_argument_group("images (vision models) and files"), MediaPolicy)
    add_flags(parser.add_argument_group("scheduler (every model)"), EngineSettings)
    add_flags(parser.add_argument_group("embedding, rerank and speech models"), PipelineSettings)


def _task(value: str, where: str) -> PipelineKind:
    try:
        return PipelineKind(value)
    except ValueError:
        raise ConfigError(
            f"{where}: {value!r} is not one of {', '.join(kind.value for kind in PipelineKind)}"
        ) from None


def from_arguments(args: argparse.Namespace) -> ServeConfig:
    """Merge the TOML file (if any) and the flags into one ServeConfig."""
    data: dict[str, Any] = tomllib.loads(args.config.read_text()) if args.config else {}
    server = data.get("server", {})
    base = _settings(EngineSettings(), data.get("scheduler", {}), "[scheduler]")
    base = _settings(base, given(args, EngineSettings), "flags")

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
            chat_template=Path(entry["chat_template"]).expanduser() if entry.get("chat_template") else None,
            kind=_task(entry["task"], f"{where} task") if entry.get("task") else None,
        )
    for name, path in map(_name_path, args.model):
        specs[name] = ModelSpec(name, path, settings=base)
    for name, path in map(_name_path, args.draft_model):
        if name not in specs:
            raise ConfigError(f"--draft-model {name}=...: no model named {name!r}")
        specs[name] = dataclasses.replace(specs[name], draft_path=path)
    for name, task in (_name_value(value) for value in args.task):
        if name not in specs:
            raise ConfigError(f"--task {name}=...: no model named {name!r}")
        specs[name] = dataclasses.replace(specs[name], kind=_task(task, f"--task {name}"))
    for name in args.prompt_lookup:
        if name not in specs:
            raise ConfigError(f"--prompt-lookup {name}: no model named {name!r}")
        specs[name] = dataclasses.replace(specs[name], prompt_lookup=True)
    for name, path in map(_name_path, args.chat_template):
        if name not in specs:
            raise ConfigError(f"--chat-template {name}=...: no model named {name!r}")
        specs[name] = dataclasses.replace(specs[name], chat_template=path)
    for kind, values in (("tool", args.tool_parser), ("reasoning", args.reasoning_parser)):
        for name, parser in (_name_value(value) for value in values):
            if name not in specs:
                raise ConfigError(f"--{kind}-parser {name}=...: no model named {name!r}")
            changes: dict[str, Any] = {f"{kind}_parser": parser}
            specs[name] = dataclasses.replace(specs[name], **changes)
    pipelines = PipelineSettings(**given(args, PipelineSettings))
    chosen = list(specs.values()) or bundled_model_specs(base)
    models = [dataclasses.replace(spec, pipeline=pipelines) for spec in chosen]
    for spec in models:
        if spec.task is not PipelineKind.GENERATE:
            if spec.draft_path or spec.prompt_lookup:
                raise ConfigError(
                    f"model {spec.name!r} serves {spec.task.api}: it takes no draft model or prompt lookup"
                )
            missing = missing_files(spec.path, spec.task)
            if missing:
                raise ConfigError(f"model {spec.name!r} ({spec.task.value}): {spec.path} has no {missing}")
            continue
        for label, directory in (("model", spec.path), ("draft model", spec.draft_path)):
            if directory is not None and not has_language_model(directory):
                raise ConfigError(f"{label} of {spec.name!r}: {directory} has no {' or '.join(LANGUAGE_IRS)}")
        if spec.draft_path and spec.prompt_lookup:
            raise ConfigError(f"model {spec.name!r}: a draft model and prompt lookup exclude each other")
        if spec.chat_template is not None and not spec.chat_template.is_file():
            raise ConfigError(f"chat template of {spec.name!r}: {spec.chat_template} is not a file")
        for kind in ("tool", "reasoning"):
            chosen = getattr(spec, f"{kind}_parser")
            problem = None if chosen is None else parser_name_problem(kind, chosen)
            if problem:
                raise ConfigError(f"model {spec.name!r}: {problem}")
    # [server] values, then the flags over them; API keys add up from the file, the flags and the key file.
    values = {
        name: value_type(ServeConfig, name)(server[name])
        for name in SERVER_KEYS
        if name in server and name != "api_keys"
    }
    values.update(given(args, ServeConfig))
    keys = [*server.get("api_keys", []), *(args.api_keys or [])]
    if args.api_key_file:
        keys += key_file_keys(args.api_key_file)
        values["api_key_file"] = args.api_key_file
    values["api_keys"] = tuple(keys)
    limit = values.get("max_concurrent_requests", DEFAULT_MAX_CONCURRENT)
    if limit < 0:
        raise ConfigError(f"--max-concurrent-requests must be 0 (no bound) or more; got {limit}")
    values["media"] = MediaPolicy(**given(args, MediaPolicy))
    if problems := values["media"].problems():
        raise ConfigError("; ".join(problems))
    age = values.get("max_connection_age_seconds")
    if age is not None and not age > 0:
        raise ConfigError(f"--max-connection-age-seconds must be more than 0; got {age}")
    return ServeConfig(models=models, **values)


def key_file_keys(path: Path) -> list[str]:
    """The API keys of a key file: one per line, blank lines ignored."""
    return [line.strip() for line in path.read_text().splitlines() if line.strip()]


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
    if settings.cpu_runtime_cache is not None and settings.cpu_runtime_cache < 0:
        raise ConfigError(f"{where}: cpu_runtime_cache must be 0 or more; got {settings.cpu_runtime_cache}")
    if not settings.stream_updates_per_s >= 0:
        raise ConfigError(f"{where}: stream_updates_per_s must be 0 or more; got {settings.stream_updates_per_s}")
    if settings.inference_threads is not None and settings.inference_threads < 1:
        raise ConfigError(f"{where}: inference_threads must be 1 or more; got {settings.inference_threads}")
    if settings.cache_size_gb is not None and settings.kv_cache_blocks is not None:
        raise ConfigError(f"{where}: give cache_size_gb or kv_cache_blocks, not both")
    return settings

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
    tool_guided_generation = true            # optional (default true): calls under tool_choice auto are guided
    tool_parser = "hermes"                   # optional: default from the chat template
    reasoning_parser = "think"               # optional: default from the chat template
    chat_template = "/models/template.jinja" # optional: replaces the model's own chat template
    scheduler = { max_num_seqs = 64 }        # optional: overrides [scheduler]

    [[models]]                               # no path: changes a model of the list, e.g. a bundled one
    name = "tiny-chat"
    tool_guided_generation = false

Flags win over the file; ``--model NAME=SOURCE`` adds models to the file's. The models of the file and of
``--model``, else the bundled ones (service/models.py), are one list: every per-model flag, path-less entry and
``--lora`` names a model of it. A model's ``path`` (a SOURCE) may also be a Hugging Face directory or repository
id, or a .gguf file: see service/sources.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ovserve.clients.defaults import DEFAULT_GRPC_PORT, DEFAULT_HOST
from ovserve.clients.flags import add_flags, given, value_type, with_default
from ovserve.service.engine import EngineSettings
from ovserve.service.engine.adapters import AdapterError, read_adapter
from ovserve.service.engine.cpu_features import crash_free_precision
from ovserve.service.engine.precision import OPTIMIZE_FOR
from ovserve.service.engine.settings import INFERENCE_PRECISIONS, KV_CACHE_PRECISIONS
from ovserve.service.mcp.policy import McpPolicy
from ovserve.service.media import MediaPolicy
from ovserve.service.model_files import LANGUAGE_IRS, has_language_model, vision
from ovserve.service.models import ModelSpec, bundled_model_specs
from ovserve.service.parsing import parser_name_problem
from ovserve.service.pipelines import PipelineKind, PipelineSettings
from ovserve.service.pipelines.kinds import missing_files
from ovserve.service.residency import ResidencySettings
from ovserve.service.sources import SourceError, default_cache_dir, resolve
from ovserve.service.store.batches import BatchSettings
from ovserve.service.store.files import FileLimits
from ovserve.service.store.key_file import ADMIN, KeyFileError, KeyPolicy, read_key_file

DEFAULT_MAX_CONCURRENT = 512

log = logging.getLogger(__name__)


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
    max_queued_requests: int = field(
        default=0,
        metadata={
            "help": "generating calls that may wait for a place of --max-concurrent-requests, the lowest priority "
            "first (a request's `priority`, aged one level a second waited); more get RESOURCE_EXHAUSTED (HTTP "
            "429); 0: none waits"
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
    #: --admin-key-file's keys: only they may load, unload and reload models (LoadModel, UnloadModel,
    #: ReloadConfig) once any key is configured; each is also an API key.
    admin_keys: tuple[str, ...] = ()
    #: What a model loaded at run time starts from ([scheduler] and the engine flags; the pipeline flags).
    engine_defaults: EngineSettings = field(default_factory=EngineSettings)
    pipelines: PipelineSettings = field(default_factory=PipelineSettings)
    media: MediaPolicy = field(default_factory=MediaPolicy)  # the "images" flags
    mcp: McpPolicy = field(default_factory=McpPolicy)  # the "MCP tools" flags
    allow_runtime_lora: Path | None = field(
        default=None,
        metadata={
            "help": "let API calls load and unload LoRA adapters (vLLM's /v1/load_lora_adapter; ModelService."
            "LoadLoraAdapter) from PEFT directories under DIR; with API keys, those calls need one",
            "metavar": "DIR",
            "default_text": "off",
        },
    )
    files: FileLimits = field(default_factory=FileLimits)  # the "Files API" flags
    residency: ResidencySettings = field(default_factory=ResidencySettings)  # the "models at run time" flags
    batches: BatchSettings = field(default_factory=BatchSettings)  # the "Batch API" flags
    max_connection_age_seconds: float | None = field(
        default=None,
        metadata={
            "help": "ask each gRPC client to reconnect after this many seconds (GOAWAY), so long-lived clients "
            "re-resolve DNS and reach new replicas; calls in flight on the old connection run to their end",
            "metavar": "SECONDS",
            "default_text": "never",
        },
    )
    model_cache: Path = field(
        default_factory=default_cache_dir,
        metadata={
            "help": "where models converted from a Hugging Face checkpoint or a GGUF file are kept, one directory "
            "per source and options, reused on the next start",
            "metavar": "DIR",
            "default_text": "$XDG_CACHE_HOME/ovserve/models",
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
SERVER_KEYS = tuple(
    f.name
    for f in dataclasses.fields(ServeConfig)
    if f.name not in ("models", "api_key_file", "admin_keys", "engine_defaults", "pipelines", "residency")
)


class ConfigError(ValueError):
    """The configuration is inconsistent; the message says where."""


def _task(value: str, where: str) -> PipelineKind:
    try:
        return PipelineKind(value)
    except ValueError:
        raise ConfigError(
            f"{where}: {value!r} is not one of {', '.join(kind.value for kind in PipelineKind)}"
        ) from None


def _seconds(value: Any, where: str) -> float:
    """A per-model duration in seconds: a finite number, 0 or more."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: expected a number of seconds, got {value!r}") from None
    if not 0 <= seconds < math.inf or isinstance(value, bool):
        raise ConfigError(f"{where}: expected a finite number of seconds, 0 or more, got {value!r}")
    return seconds


# ModelSpec's per-model settings (its fields with help metadata): flags of their own and [[models]] keys.
MODEL_SETTINGS = tuple(setting for setting in dataclasses.fields(ModelSpec) if "help" in setting.metadata)


# A per-model setting's type -> how a flag's or the TOML file's value becomes it (others are taken as they are).
def _switch(value: Any, where: str) -> bool:
    """A switch's value: a flag's True or False, TOML's true or false (a string such as "false" is refused, where
    bool() would have read it as true)."""
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: must be true or false; got {value!r}")
    return value


MODEL_VALUES: dict[type, Callable[[Any, str], Any]] = {
    Path: lambda value, where: Path(value).expanduser(),
    PipelineKind: _task,
    bool: lambda value, where: _switch(value, where),
    float: _seconds,
}


def _flag(setting: dataclasses.Field[Any]) -> str:
    return str(setting.metadata.get("flag", setting.name.replace("_", "-")))


def _dest(setting: dataclasses.Field[Any]) -> str:
    return _flag(setting).replace("-", "_")


def _toml_key(setting: dataclasses.Field[Any]) -> str:
    return str(setting.metadata.get("toml", setting.name))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` flags: ServeConfig's and EngineSettings' fields, and the models to serve."""
    tables = "TOML file with [server], [scheduler] and [[models]] tables; flags win over it"
    parser.add_argument("--config", type=Path, metavar="FILE", help=with_default(tables, "none"))
    add_flags(parser, ServeConfig, only=("host", "port"))
    for setting in MODEL_SETTINGS:
        shown = setting.metadata.get("default_text")
        text = setting.metadata["help"] if shown is None else with_default(setting.metadata["help"], shown)
        parser.add_argument(f"--{_flag(setting)}", action="append", default=[], metavar=setting.metadata["metavar"],
                            help=text)  # fmt: skip
    access = parser.add_argument_group("access")
    add_flags(access, ServeConfig, only=("api_keys",))
    access.add_argument("--api-key-file", type=Path, metavar="FILE",
                        help="API keys, one per line (keeps them out of the process list); settings may follow a "
                             "key: rpm=N tpm=N concurrent=N models=A,B scope=user|admin (per-key limits and scopes, "
                             "read again on SIGHUP)")  # fmt: skip
    access.add_argument("--admin-key-file", type=Path, metavar="FILE",
                        help="admin keys, one per line: with keys on, only they may load, unload and reload models "
                             "(POST /v3/models/{id}/load and /unload, /v3/config/reload; a user key gets "
                             "403)")  # fmt: skip
    add_flags(access, ServeConfig, only=("max_concurrent_requests", "max_queued_requests", "grace_seconds"))
    add_flags(
        parser.add_argument_group("Responses API"), ServeConfig, only=("response_store", "response_max_age_seconds")
    )
    add_flags(parser, ServeConfig, only=("model_cache",))
    add_flags(parser.add_argument_group("operations"), ServeConfig, only=("metrics_port", "max_connection_age_seconds"))
    add_flags(parser.add_argument_group("TLS (gRPC)"), ServeConfig, only=("tls_cert", "tls_key", "tls_client_ca"))
    add_flags(parser.add_argument_group("images (vision models) and files"), MediaPolicy)
    add_flags(parser.add_argument_group("Files API (uploads, in the response store)"), FileLimits)
    add_flags(parser.add_argument_group("MCP tools (Responses API)"), McpPolicy)
    add_flags(parser.add_argument_group("Batch API"), BatchSettings)
    add_flags(parser.add_argument_group("models at run time (loads on request, idle unloads, a budget)"),
              ResidencySettings)  # fmt: skip
    lora = parser.add_argument_group("LoRA adapters")
    add_flags(lora, ServeConfig, only=("allow_runtime_lora",))
    lora.add_argument("--lora", action="append", default=[], metavar="NAME=BASE:PATH",
                      help="serve the LoRA adapter at PATH (a PEFT directory: adapter_config.json and "
                      "adapter_model.safetensors) on model BASE as model NAME (repeatable): a request naming NAME "
                      "runs on BASE with the adapter")  # fmt: skip
    add_flags(parser.add_argument_group("scheduler (every model)"), EngineSettings)
    add_flags(parser.add_argument_group("embedding, rerank and speech models"), PipelineSettings)


def from_arguments(args: argparse.Namespace) -> ServeConfig:
    """Merge the TOML file (if any) and the flags into one ServeConfig."""
    data: dict[str, Any] = tomllib.loads(args.config.read_text()) if args.config else {}
    server = data.get("server", {})
    base = _settings(EngineSettings(), data.get("scheduler", {}), "[scheduler]")
    base = _settings(base, given(args, EngineSettings), "flags")

    # One list of models: the file's and --model's, else the bundled ones; every per-model setting (a path-less
    # [[models]] entry, a per-model flag, --lora) then changes a model of that list, whichever it is.
    entries = _toml_entries(data.get("models", []))
    specs = _flag_models(args, _toml_models(entries, base), base) or {
        spec.name: spec for spec in bundled_model_specs(base)
    }
    specs = _with_lora(getattr(args, "lora", None) or [], _flag_settings(args, _toml_changes(entries, specs, base)))
    pipelines = PipelineSettings(**given(args, PipelineSettings))
    if problems := pipelines.problems():
        raise ConfigError("; ".join(problems))
    cache = Path(getattr(args, "model_cache", None) or server.get("model_cache") or default_cache_dir()).expanduser()
    models = [dataclasses.replace(_resolved(_crash_free(spec), cache), pipeline=pipelines) for spec in specs.values()]
    for spec in models:
        _check_model(spec)
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
    # Admin keys: --admin-key-file's, and the key file's keys of scope=admin.
    admins = key_file_keys(args.admin_key_file) if getattr(args, "admin_key_file", None) else []
    if args.api_key_file:
        admins += [key for key, policy in key_file_policies(args.api_key_file).items() if policy.scope == ADMIN]
    if admins:
        values["admin_keys"] = tuple(admins)
    limit = values.get("max_concurrent_requests", DEFAULT_MAX_CONCURRENT)
    if limit < 0:
        raise ConfigError(f"--max-concurrent-requests must be 0 (no bound) or more; got {limit}")
    if values.get("max_queued_requests", 0) < 0:
        raise ConfigError(f"--max-queued-requests must be 0 (none waits) or more; got {values['max_queued_requests']}")
    values["media"] = MediaPolicy(**given(args, MediaPolicy))
    values["files"] = FileLimits(**given(args, FileLimits))
    values["batches"] = BatchSettings(**given(args, BatchSettings))
    if problems := values["files"].problems() + values["batches"].problems():
        raise ConfigError("; ".join(problems))
    if problems := values["media"].problems():
        raise ConfigError("; ".join(problems))
    values["mcp"] = McpPolicy(**given(args, McpPolicy))
    if problems := values["mcp"].problems():
        raise ConfigError("; ".join(problems))
    values["residency"] = residency = ResidencySettings(**given(args, ResidencySettings))
    if problems := residency.problems():
        raise ConfigError("; ".join(problems))
    at_start = [spec.name for spec in models if not spec.load_on_request]
    if residency.max_loaded_models is not None and len(at_start) > residency.max_loaded_models:
        raise ConfigError(
            f"--max-loaded-models {residency.max_loaded_models}: {len(at_start)} models load at start "
            f"({', '.join(at_start)}); declare the others --load-on-request"
        )
    if residency.models_dir is not None:
        models += offered_models(residency.models_dir, {spec.name for spec in models}, base, pipelines)
    age = values.get("max_connection_age_seconds")
    if age is not None and not age > 0:
        raise ConfigError(f"--max-connection-age-seconds must be more than 0; got {age}")
    return ServeConfig(models=models, engine_defaults=base, pipelines=pipelines, **values)


def runtime_model(name: str, source: str, settings: dict[str, Any], config: ServeConfig) -> ModelSpec:
    """A model loaded at run time (ModelService.LoadModel of a name not declared at start): ``source`` as
    ``--model NAME=SOURCE`` takes it, with ``settings``, the per-model keys of a ``[[models]]`` entry, over the
    server's engine settings; resolved (converted into the model cache when needed: blocking, run it off the loop)
    and checked as a model declared at start is. ConfigError or SourceError naming what is wrong."""
    keys = {_toml_key(setting) for setting in MODEL_SETTINGS[1:]}  # the path is ``source``
    if unknown := sorted(set(settings) - keys):
        raise ConfigError(f"unknown settings {unknown}; known: {sorted(keys)}")
    if not source:
        raise ConfigError("source: required for a model not declared at start (what --model NAME=SOURCE takes)")
    entry = {**settings, "name": name, _toml_key(MODEL_SETTINGS[0]): source}
    spec = _toml_models([(f"model {name!r}", entry)], config.engine_defaults)[name]
    spec = dataclasses.replace(_resolved(_crash_free(spec), config.model_cache), pipeline=config.pipelines)
    _check_model(spec)
    return spec


def offered_models(
    directory: Path, taken: set[str], base: EngineSettings, pipelines: PipelineSettings
) -> list[ModelSpec]:
    """The models ``--models-dir`` offers: each OpenVINO or Hugging Face model directory (by its name) and .gguf file
    (by its name without the suffix) in ``directory``, loaded on request; unresolved (``prepared`` converts them
    when first loaded). A name the configuration already serves stays the configuration's."""
    offered = []
    for entry in sorted(directory.iterdir()):
        name = entry.name.removesuffix(".gguf") if entry.is_file() else entry.name
        model_dir = entry.is_dir() and (has_language_model(entry) or (entry / "config.json").is_file())
        if entry.name.startswith(".") or not (model_dir or (entry.suffix == ".gguf" and entry.is_file())):
            continue
        if name in taken:
            log.warning("--models-dir: %s is not offered: a model of the configuration is named %r", entry, name)
            continue
        offered.append(ModelSpec(name, entry, settings=base, pipeline=pipelines, load_on_request=True))
    return offered


def prepared(spec: ModelSpec, cache: Path) -> ModelSpec:
    """``spec`` ready to load: a model offered unresolved (``--models-dir``) is resolved now (converted into
    ``cache`` when needed: blocking) and checked as one declared at start is; ConfigError or SourceError naming it."""
    path = Path(spec.path)
    if spec.provenance is not None or (path.is_dir() and any(path.glob("openvino_*.xml"))):  # OpenVINO already
        return spec
    resolved = _resolved(_crash_free(spec), cache)
    _check_model(resolved)
    return resolved


def _check_model(spec: ModelSpec) -> None:
    """ConfigError unless ``spec`` can be served as configured: its files, its task's, its settings together."""
    if spec.task is not PipelineKind.GENERATE:
        if spec.draft_path or spec.prompt_lookup:
            raise ConfigError(f"model {spec.name!r} serves {spec.task.api}: it takes no draft model or prompt lookup")
        missing = missing_files(spec.path, spec.task)
        if missing:
            raise ConfigError(f"model {spec.name!r} ({spec.task.value}): {spec.path} has no {missing}")
        return
    for label, directory in (("model", spec.path), ("draft model", spec.draft_path)):
        if directory is not None and not has_language_model(directory):
            raise ConfigError(f"{label} of {spec.name!r}: {directory} has no {' or '.join(LANGUAGE_IRS)}")
    if spec.draft_path and spec.prompt_lookup:
        raise ConfigError(f"model {spec.name!r}: a draft model and prompt lookup exclude each other")
    if spec.lora and (spec.draft_path or spec.prompt_lookup or vision(spec.path) is not None):
        raise ConfigError(
            f"model {spec.name!r}: LoRA adapters are served on a text model without a draft model or prompt lookup"
        )
    for adapter, source in spec.lora.items():
        try:
            read_adapter(adapter, source, spec.path)
        except AdapterError as error:
            raise ConfigError(str(error)) from None
    if spec.chat_template is not None and not spec.chat_template.is_file():
        raise ConfigError(f"chat template of {spec.name!r}: {spec.chat_template} is not a file")
    for kind in ("tool", "reasoning"):
        chosen = getattr(spec, f"{kind}_parser")
        problem = None if chosen is None else parser_name_problem(kind, chosen)
        if problem:
            raise ConfigError(f"model {spec.name!r}: {problem}")


def _crash_free(spec: ModelSpec) -> ModelSpec:
    """``spec`` with a precision its process can compile in (see cpu_features.crash_free_precision): f32 where
    OpenVINO's bf16 on one thread would kill it on this CPU; ConfigError where bf16 was asked for."""
    settings = spec.settings
    try:
        precision = crash_free_precision(settings.device, settings.inference_precision, settings.inference_threads)
    except ValueError as error:
        raise ConfigError(f"model {spec.name!r}: {error}") from None
    if precision == settings.inference_precision:
        return spec
    log.warning(
        "model %r computes in %s: OpenVINO's default, bf16, on one inference thread crashes OpenVINO 2026.4 on "
        "this CPU with AMX (SIGFPE while compiling); --inference-precision or 2 or more --inference-threads "
        "choose otherwise",
        spec.name,
        precision,
    )
    return dataclasses.replace(spec, settings=dataclasses.replace(settings, inference_precision=precision))


def _resolved(spec: ModelSpec, cache: Path) -> ModelSpec:
    """``spec`` with its sources made OpenVINO directories (converted into ``cache`` when needed); SourceError
    naming the model when one cannot be served."""
    try:
        path, provenance = resolve(str(spec.path), cache_dir=cache, weight_format=spec.weight_format, task=spec.kind)
    except SourceError as error:
        raise SourceError(f"model {spec.name!r}: {error}") from None
    try:
        draft = spec.draft_path and resolve(str(spec.draft_path), cache_dir=cache)[0]
    except SourceError as error:
        raise SourceError(f"draft model of {spec.name!r}: {error}") from None
    return dataclasses.replace(spec, path=path, draft_path=draft or None, provenance=provenance)


def _toml_entries(entries: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The TOML file's ``[[models]]`` entries, each with where it is ("[[models]] #N"); each needs a name."""
    located = [(f"[[models]] #{position + 1}", entry) for position, entry in enumerate(entries)]
    for where, entry in located:
        if not isinstance(entry.get("name"), str) or not entry["name"]:
            raise ConfigError(f"{where}: needs name and path")
    return located


def _entry_values(entry: dict[str, Any], where: str) -> dict[str, Any]:
    """An entry's per-model settings (ModelSpec's fields with help metadata) as the fields' types."""
    return {
        setting.name: _model_value(setting, entry[_toml_key(setting)], f"{where} {_toml_key(setting)}")
        for setting in MODEL_SETTINGS
        if entry.get(_toml_key(setting)) not in (None, "")  # a key left empty keeps the default, as one left out
    }


def _entry_lora(entry: dict[str, Any], where: str) -> dict[str, Path]:
    """An entry's ``lora`` table: adapter name -> its directory."""
    lora = entry.get("lora", {})
    if not isinstance(lora, dict) or not all(isinstance(path, str) for path in lora.values()):
        raise ConfigError(f"{where} lora: a table of adapter name = path")
    return {str(name): Path(path).expanduser() for name, path in lora.items()}


def _toml_models(entries: list[tuple[str, dict[str, Any]]], base: EngineSettings) -> dict[str, ModelSpec]:
    """The models the TOML file's ``[[models]]`` entries with a path add, by name."""
    specs: dict[str, ModelSpec] = {}
    for where, entry in entries:
        if not entry.get("path"):
            continue  # a change to a model of the list (see _toml_changes)
        settings = _settings(base, entry.get("scheduler", {}), where)
        specs[entry["name"]] = ModelSpec(
            entry["name"], settings=settings, lora=_entry_lora(entry, where), **_entry_values(entry, where)
        )
    return specs


def _toml_changes(
    entries: list[tuple[str, dict[str, Any]]], specs: dict[str, ModelSpec], base: EngineSettings
) -> dict[str, ModelSpec]:
    """``specs`` with the TOML file's path-less ``[[models]]`` entries applied: each changes the settings of a
    model of the list (a bundled one when the file and the flags add none), as the per-model flags do."""
    specs = dict(specs)
    for where, entry in entries:
        if entry.get("path"):
            continue
        name = entry["name"]
        if name not in specs:
            raise ConfigError(
                f"{where}: needs name and path (an entry without a path changes a served model, and no model is "
                f"named {name!r}; served: {', '.join(specs)})"
            )
        spec = specs[name]
        change: dict[str, Any] = _entry_values(entry, where)
        if "scheduler" in entry:
            change["settings"] = _settings(base, entry["scheduler"], where)
        if "lora" in entry:
            change["lora"] = {**spec.lora, **_entry_lora(entry, where)}
        specs[name] = dataclasses.replace(spec, **change)
    return specs


def _with_lora(flags: list[str], specs: dict[str, ModelSpec]) -> dict[str, ModelSpec]:
    """``specs`` with each ``--lora NAME=BASE:PATH`` added to its base model; an adapter's name is unique among
    the models and adapters."""
    specs = dict(specs)
    for value in flags:
        name, _, rest = value.partition("=")
        base, _, path = rest.partition(":")
        if not (name and base and path):
            raise ConfigError(f"--lora {value}: give NAME=BASE:PATH (the adapter's name, its base model, its path)")
        if base not in specs:
            raise ConfigError(f"--lora {value}: no model named {base!r}; served: {', '.join(specs)}")
        specs[base] = dataclasses.replace(specs[base], lora={**specs[base].lora, name: Path(path).expanduser()})
    names = list(specs) + [adapter for spec in specs.values() for adapter in spec.lora]
    if taken := sorted({name for name in names if names.count(name) > 1}):
        raise ConfigError(f"LoRA adapter {taken[0]!r}: the name of another model or adapter")
    return specs


def _flag_models(args: argparse.Namespace, specs: dict[str, ModelSpec], base: EngineSettings) -> dict[str, ModelSpec]:
    """``specs`` with each ``--model NAME=SOURCE`` added (or replacing the model of that name)."""
    specs = dict(specs)
    adding = MODEL_SETTINGS[0]  # the path's flag first (ModelSpec's field order)
    for value in getattr(args, _dest(adding)):
        name, path = _name_value(adding, value)
        specs[name] = ModelSpec(name, _model_value(adding, path, f"--{_flag(adding)} {name}"), settings=base)
    return specs


def _flag_settings(args: argparse.Namespace, specs: dict[str, ModelSpec]) -> dict[str, ModelSpec]:
    """``specs`` with the other per-model flags applied: each sets one setting of a model of the list."""
    specs = dict(specs)
    for setting in MODEL_SETTINGS[1:]:
        flag = f"--{_flag(setting)}"
        for value in getattr(args, _dest(setting)):
            name, given_value = _name_value(setting, value)
            if name not in specs:
                shown = name if _is_switch(setting) else f"{name}=..."
                raise ConfigError(f"{flag} {shown}: no model named {name!r}; served: {', '.join(specs)}")
            change = {setting.name: _model_value(setting, given_value, f"{flag} {name}")}
            specs[name] = dataclasses.replace(specs[name], **change)
    return specs


def key_file_keys(path: Path) -> list[str]:
    """The API keys of a key file: one per line (its first word; settings may follow: key_file), blank and comment
    lines ignored."""
    return list(key_file_policies(path))


def key_file_policies(path: Path) -> dict[str, KeyPolicy]:
    """Each key of a key file with what it may do (ConfigError naming the line for one not understood)."""
    try:
        return read_key_file(path)
    except KeyFileError as error:
        raise ConfigError(str(error)) from None


def _is_switch(setting: dataclasses.Field[Any]) -> bool:
    """Whether a per-model setting is a switch: its flag names the model alone (``--prompt-lookup NAME``)."""
    return value_type(ModelSpec, setting.name) is bool


def _name_value(setting: dataclasses.Field[Any], value: str) -> tuple[str, Any]:
    """A per-model flag's ``NAME=VALUE`` as (name, value): a switch's flag turns its setting away from the default
    (``--prompt-lookup NAME`` on, ``--no-tool-guided-generation NAME`` off)."""
    if _is_switch(setting):
        return value, not setting.default
    name, sep, given_value = value.partition("=")
    if not sep or not name or not given_value:
        raise ConfigError(f"expected {setting.metadata['metavar']}, got {value!r}")
    return name, given_value


def _model_value(setting: dataclasses.Field[Any], value: Any, where: str) -> Any:
    """A per-model setting's value from a flag or the TOML file, as its field's type (ConfigError naming ``where``)."""
    convert = MODEL_VALUES.get(value_type(ModelSpec, setting.name))
    return value if convert is None else convert(value, where)


def _scheduler_value(name: str, value: Any, where: str) -> Any:
    """A ``[scheduler]`` value as its setting's type: TOML's integers and floats for a float setting, integers
    for an int one, booleans for a switch, strings for text (ConfigError naming ``where`` and the key otherwise;
    a string or a boolean where a number belongs would only fail in the engine, far from its cause)."""
    kind = value_type(EngineSettings, name)
    if kind is int and isinstance(value, float) and value.is_integer():
        value = int(value)  # (JSON settings of a load at run time hold every number as a float)
    takes: tuple[type, ...] = {float: (int, float), int: (int,), bool: (bool,), str: (str,)}.get(kind, (kind,))
    if value is None or (isinstance(value, bool) and kind is not bool) or not isinstance(value, takes):
        raise ConfigError(f"{where}: {name} must be {_KIND_WORDS.get(kind, kind.__name__)}; got {value!r}")
    return float(value) if kind is float and isinstance(value, (int, float)) else value


# [scheduler] settings that take one of a few words (unset: the default).
_SETTING_CHOICES = {
    "kv_cache_precision": KV_CACHE_PRECISIONS,
    "inference_precision": INFERENCE_PRECISIONS,
    "optimize_for": OPTIMIZE_FOR,
}
# How a [scheduler] setting's type is named in a refusal.
_KIND_WORDS = {float: "a number", int: "an integer", bool: "true or false", str: "a string"}


def _settings(base: EngineSettings, overrides: dict[str, Any], where: str) -> EngineSettings:
    known = {f.name for f in dataclasses.fields(EngineSettings)} - {"tenants"}  # (the server sets that one)
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown scheduler settings {unknown}; known: {sorted(known)}")
    overrides = {name: _scheduler_value(name, value, where) for name, value in overrides.items()}
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
    for name, choices in _SETTING_CHOICES.items():
        value = getattr(settings, name)
        if value is not None and value not in choices:
            raise ConfigError(f"{where}: {name} must be one of {', '.join(choices)}; got {value!r}")
    group_size = settings.dynamic_quantization_group_size
    if group_size is not None and group_size < 0:
        raise ConfigError(f"{where}: dynamic_quantization_group_size must be 0 or more; got {group_size}")
    if settings.cache_size_gb is not None and settings.kv_cache_blocks is not None:
        raise ConfigError(f"{where}: give cache_size_gb or kv_cache_blocks, not both")
    return settings

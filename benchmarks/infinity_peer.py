"""ovserve against infinity-emb on the same embedding or rerank model: set it up, serve the model, bench both.

infinity-emb (PyPI ``infinity-emb``) serves Hugging Face checkpoints through PyTorch (sentence-transformers); it
cannot read an OpenVINO IR (its ``optimum`` engine loads ONNX files only, through onnxruntime). The bundled
tiny-embed and tiny-rerank, and ``python -m tools.model_builder.real_size``'s bge-small-en-v1.5 and bge-reranker-base,
are
IR only, so their checkpoint is written from the IR: every weight of these encoders is a constant of the IR, named
by the PyTorch parameter it came from (``self.<parameter>`` for matrices and embeddings, int8 ones decompressed as
the IR does: (uint8 - zero point) x scale in float16), or by the node it feeds (``__module.<module>/aten::linear/Add``
or ``aten::layer_norm/Multiply_1`` and ``/Add``: biases and layer-norm scales). The checkpoint holds the IR's
numbers beside its config.json and tokenizer.json (and an embedding model's sentence-transformers files). It is
kept only if sentence-transformers, in infinity's venv, loads every weight (none missing or left over but an
embedding model's pooler, which its pooling never reads: zeros) and gives the IR's outputs through the bare
pipeline (embeddings, rerank scores of the bench's own words) within CHECK_TOLERANCE.

    python benchmarks/infinity_peer.py setup
        make build/infinity-venv (its own venv: infinity pins numpy < 2 and transformers <= 5.0, which the
        project's .venv must not get) with infinity-emb[server,torch]==INFINITY and torch==TORCH (pip's log in
        build/infinity-venv-install.log); skipped when it is there

    python benchmarks/infinity_peer.py checkpoint MODEL
        write MODEL's checkpoint (tiny-embed, tiny-rerank or an IR's directory) from its IR into
        build/infinity-peer/checkpoints/NAME and check it (seconds); skipped when it is there

    python benchmarks/infinity_peer.py bench tiny-embed -- \\
        --endpoint embeddings --model tiny-embed --backend grpc http --concurrency 1 8 32 \\
        --model-dir service/bundled_models/tiny-embed --engine
        setup and checkpoint as needed, start infinity on 127.0.0.1 (a free port, routes under /v1, the model
        served under its directory's name), wait until it lists the model, run ``ovserve bench ARGS --peer URL
        --peer-model NAME``, then stop infinity. The ovserve to compare is started separately (``ovserve serve``
        serves the bundled models by default).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino_genai as ov_genai

INFINITY = "0.0.78"
TORCH = "2.13.0"  # the export extra's torch
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's service package (the bench's URL helpers)
VENV = ROOT / "build" / "infinity-venv"
WORK = ROOT / "build" / "infinity-peer"
CHECKPOINTS = WORK / "checkpoints"
BUNDLED = ROOT / "service" / "bundled_models"
MODEL_HELP = "tiny-embed, tiny-rerank, or an encoder IR's directory (build/real-size/bge-small-en-v1.5)"
CHECK_TOLERANCE = 1e-4  # largest difference allowed between the IR's and the checkpoint's outputs
# What the checkpoint takes from the model's directory (an embedding model's sentence-transformers files: its
# pooling, unit vectors).
CHECKPOINT_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "modules.json",
                    "config_sentence_transformers.json", "1_Pooling/config.json")  # fmt: skip
# Run by infinity's python on (directory, inputs): writes weights.npz as model.safetensors, loads the checkpoint
# as infinity does (sentence-transformers), prints the weights it missed or did not use and its outputs.
CHECK = """
import json, sys
import numpy as np
from safetensors.numpy import save_file
directory, inputs = sys.argv[1], json.loads(sys.argv[2])
save_file(dict(np.load(f"{directory}/weights.npz")), f"{directory}/model.safetensors", metadata={"format": "pt"})
if isinstance(inputs[0], str):
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(directory, device="cpu")
    info = model[0].auto_model.from_pretrained(directory, output_loading_info=True)[1]
    outputs = model.encode(inputs, convert_to_numpy=True).tolist()
else:
    from sentence_transformers import CrossEncoder
    model = CrossEncoder(directory, device="cpu")
    info = model.model.from_pretrained(directory, output_loading_info=True)[1]
    outputs = model.predict([tuple(pair) for pair in inputs]).tolist()
print(json.dumps({"missing": info["missing_keys"], "unexpected": info["unexpected_keys"], "outputs": outputs}))
"""
# infinity offline and silent: no hub, no usage statistics sent.
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "INFINITY_ANONYMOUS_USAGE_STATS": "0",
    "DO_NOT_TRACK": "1",
}


def setup() -> Path:
    """build/infinity-venv with infinity-emb installed; its ``infinity_emb`` command."""
    command = VENV / "bin" / "infinity_emb"
    if command.is_file():
        return command
    subprocess.run(["python3.11", "-m", "venv", str(VENV)], check=True)
    log = ROOT / "build" / "infinity-venv-install.log"
    with log.open("wb") as out:
        installed = subprocess.run(
            [str(VENV / "bin" / "pip"), "install", f"infinity-emb[server,torch]=={INFINITY}", f"torch=={TORCH}"],
            stdout=out, stderr=subprocess.STDOUT, check=False,
        )  # fmt: skip
    if installed.returncode:
        raise SystemExit(f"pip install into {VENV} failed: see {log}")
    return command


def model_dir(model: str) -> Path:
    """A bundled model's name, or an encoder IR's directory (``python -m tools.model_builder.real_size``'s bge-*)."""
    return BUNDLED / model if (BUNDLED / model).is_dir() else Path(model).resolve()


def is_cross_encoder(directory: Path) -> bool:
    """Whether the model ranks (a ``*ForSequenceClassification``) rather than embeds."""
    architectures = json.loads((directory / "config.json").read_text()).get("architectures") or []
    return any("ForSequenceClassification" in name for name in architectures)


def checkpoint(model: str) -> Path:
    """``model`` as a Hugging Face checkpoint with its IR's weights, checked (see the docstring)."""
    source = model_dir(model)
    target = CHECKPOINTS / source.name
    if (target / "model.safetensors").is_file():
        return target
    setup()
    partial = target.with_name(f"{source.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    (partial / "1_Pooling").mkdir(parents=True)
    for file in CHECKPOINT_FILES:
        if (source / file).is_file():
            shutil.copy(source / file, partial / file)
    tokenizer = json.loads((partial / "tokenizer_config.json").read_text())
    if tokenizer.get("tokenizer_class") == "TokenizersBackend":  # transformers 5's name, unknown to infinity's 4.x:
        tokenizer["tokenizer_class"] = "PreTrainedTokenizerFast"  # the same tokenizer.json, loaded alone
        (partial / "tokenizer_config.json").write_text(json.dumps(tokenizer, indent=2) + "\n")
    weights = ir_weights(source / "openvino_model.xml")
    hidden = json.loads((source / "config.json").read_text())["hidden_size"]
    if not is_cross_encoder(source) and "pooler.dense.weight" not in weights:
        # A feature-extraction IR has no pooler, which mean and CLS pooling never read: zeros, not random numbers.
        weights |= {
            "pooler.dense.weight": np.zeros((hidden, hidden), np.float32),
            "pooler.dense.bias": np.zeros(hidden, np.float32),
        }
    np.savez(partial / "weights.npz", **weights)
    inputs, ours = ir_outputs(source)
    checked = subprocess.run(
        [str(VENV / "bin" / "python"), "-c", CHECK, str(partial), json.dumps(inputs)],
        capture_output=True, text=True, env={**os.environ, **OFFLINE}, check=False,
    )  # fmt: skip
    if checked.returncode:
        raise SystemExit(f"sentence-transformers could not load {partial}:\n{checked.stderr[-2000:]}")
    loaded = json.loads(checked.stdout.splitlines()[-1])
    buffers = ("position_ids", "token_type_ids")  # computed, not learnt
    leftover = [key for key in loaded["missing"] + loaded["unexpected"] if not key.endswith(buffers)]
    difference = float(np.abs(ours - np.asarray(loaded["outputs"])).max())
    print(f"{source.name}: {len(weights)} tensors from the IR; largest output difference, IR (openvino_genai) vs "
          f"checkpoint (sentence-transformers): {difference:.2e}", flush=True)  # fmt: skip
    if leftover or difference > CHECK_TOLERANCE:
        raise SystemExit(f"{partial} is not {source}: weights not loaded {leftover}, outputs {difference:.2e}")
    (partial / "weights.npz").unlink()
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target


def ir_outputs(source: Path) -> tuple[list[Any], np.ndarray]:
    """Check inputs (texts, or (query, document) pairs, of the bench's words) and the IR's outputs for them, through
    the bare pipeline as ovserve configures it."""
    from ovserve.service.bench.embeddings import InputLoad
    from ovserve.service.pipelines.kinds import embedding_config
    from ovserve.service.pipelines.worker import text_embedding_pipeline

    batches = InputLoad(requests=8, inputs_per_request=3, input_words=8).batches(random.Random(0), queries=True)
    if not is_cross_encoder(source):
        texts = [text for batch in batches for text in [batch.query, *batch.texts]]
        return texts, np.asarray(text_embedding_pipeline(source, embedding_config(source)).embed_documents(texts))
    pairs = [[batch.query, text] for batch in batches for text in batch.texts]
    pipeline = ov_genai.TextRerankPipeline(str(source), "CPU", ov_genai.TextRerankPipeline.Config(top_n=1))
    return pairs, np.asarray([pipeline.rerank(query, [document])[0][1] for query, document in pairs])


def ir_weights(ir: Path) -> dict[str, np.ndarray]:
    """The PyTorch state dict an optimum-exported encoder IR was made from (see the docstring for the names).

    The export leaves out what changes nothing, a zero bias or a layer norm's unit scale and zero shift (the
    real-size models' random weights have them all): a linear or layer-norm module without them gets them back.
    """
    weights: dict[str, np.ndarray] = {}
    identities: dict[str, np.ndarray] = {}
    for op in ov.Core().read_model(ir).get_ordered_ops():
        module, _, operation = op.get_friendly_name().removeprefix("__module.").partition("/")
        channels = op.get_output_partial_shape(0)
        if operation.startswith("aten::linear/") and op.get_type_name() == "MatMul":  # named after a folded Add too
            identities[f"{module}.bias"] = np.zeros(channels[-1].get_length(), np.float32)
        elif operation.startswith("aten::layer_norm/") and op.get_type_name() == "MVN":
            identities[f"{module}.weight"] = np.ones(channels[-1].get_length(), np.float32)
            identities[f"{module}.bias"] = np.zeros(channels[-1].get_length(), np.float32)
        for port in op.inputs():
            found = _constant(port.get_source_output().get_node())
            if found is None:
                continue
            name, value = found
            if name.startswith("self.") and "/" not in name:
                weights[name.removeprefix("self.")] = value
            elif (operation, op.get_type_name()) in _VECTORS:  # over the op's channels (a constant one: one number)
                key = f"{module}.{_VECTORS[operation, op.get_type_name()]}"
                weights[key] = np.broadcast_to(value.reshape(-1), (channels[-1].get_length(),)).copy()
    return identities | weights


# The ops a bias or a layer norm's scale feeds, by name and type, and which of the module's parameters it is.
_VECTORS = {
    ("aten::linear/Add", "Add"): "bias",
    ("aten::layer_norm/Add", "Add"): "bias",
    ("aten::layer_norm/Multiply_1", "Multiply"): "weight",
}
_DECOMPRESSION = {"Convert", "Subtract", "Multiply"}  # nncf's int8 weights: (uint8 - zero point) * scale, in f16


def _constant(node: Any) -> tuple[str, np.ndarray] | None:
    """A constant's name and value in float32: a Constant, or a compressed weight's decompression of constants
    (named by its quantised Constant); None for anything computed from the inputs."""
    if node.get_type_name() == "Constant":
        return node.get_friendly_name(), node.get_data().astype(np.float32)
    if node.get_type_name() not in _DECOMPRESSION:
        return None
    parts = [_constant(port.get_source_output().get_node()) for port in node.inputs()]
    if any(part is None for part in parts):
        return None
    values = [part[1] for part in parts if part is not None]
    dtype = np.float16 if node.get_output_element_type(0) == ov.Type.f16 else np.float32
    if node.get_type_name() == "Convert":
        value = values[0].astype(dtype)
    elif node.get_type_name() == "Subtract":
        value = values[0].astype(dtype) - values[1].astype(dtype)
    else:
        value = values[0].astype(dtype) * values[1].astype(dtype)
    names = [part[0] for part in parts if part is not None]
    return names[0], value.astype(np.float32)  # the first input's: the weight, not its zero point or scale


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(process: subprocess.Popen[bytes], url: str, timeout: float = 300) -> None:
    """Until infinity lists its model, asked as the bench will ask (it answers once the model is loaded and warm)."""
    from ovserve.service.bench.urls import ApiBase, UnreachableServer, first_model

    deadline = time.monotonic() + timeout
    while process.poll() is None:
        try:
            asyncio.run(first_model(ApiBase.parse(url, default_prefix="/v1")))
            return
        except UnreachableServer as error:
            if time.monotonic() > deadline:
                raise SystemExit(f"infinity not ready after {timeout} s: {error}") from None
        time.sleep(0.5)
    raise SystemExit(f"infinity exited with {process.returncode}: see {WORK / 'infinity.log'}")


def server_command(command: Path, model_dir: Path, name: str, port: int, batch: int) -> list[str]:
    """infinity serving ``model_dir`` as ``name``, comparable to ovserve: PyTorch on the CPU in float32, at most
    ``batch`` inputs per forward pass (ovserve's --max-batch-inputs), no result cache."""
    return [
        str(command), "v2", "--model-id", str(model_dir), "--served-model-name", name,
        "--host", "127.0.0.1", "--port", str(port), "--url-prefix", "/v1",
        "--engine", "torch", "--device", "cpu", "--dtype", "float32", "--batch-size", str(batch),
        "--no-vector-disk-cache", "--log-level", "warning",
    ]  # fmt: skip


@contextlib.contextmanager
def serving(model: str, batch: int) -> Iterator[tuple[str, str]]:
    """infinity serving ``model``'s checkpoint (set up and made first if need be) until the block ends; its URL and
    the name it serves the model under (the model directory's)."""
    command = setup()
    checkpoint_dir = checkpoint(model)
    name = checkpoint_dir.name
    version = subprocess.run([str(VENV / "bin" / "pip"), "show", "infinity-emb"], capture_output=True, text=True)
    print(next((line for line in version.stdout.splitlines() if line.startswith("Version")), "infinity-emb ?"))
    port = _free_port()
    arguments = server_command(command, checkpoint_dir, name, port, batch)
    print("+", " ".join(arguments), flush=True)
    WORK.mkdir(parents=True, exist_ok=True)
    with (
        (WORK / "infinity.log").open("wb") as log,
        subprocess.Popen(
            arguments, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **OFFLINE}
        ) as process,
    ):
        try:
            wait_ready(process, f"http://127.0.0.1:{port}")
            yield f"http://127.0.0.1:{port}", name
        finally:
            process.terminate()  # uvicorn stops on SIGTERM; Popen's exit waits for it
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(30)
            process.kill()


def bench(model: str, batch: int, bench_args: list[str]) -> int:
    """``ovserve bench BENCH_ARGS --peer URL --peer-model NAME`` against infinity serving ``model``."""
    with serving(model, batch) as (url, name):
        run = [sys.executable, "-m", "ovserve.service.cli", "bench", *bench_args, "--peer", url, "--peer-model", name]
        print("+", " ".join(run), flush=True)
        return subprocess.run(run, cwd=ROOT, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    """The subcommands: setup, checkpoint, bench."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("setup", help="make build/infinity-venv with infinity-emb")
    made = commands.add_parser("checkpoint", help="MODEL as a checked Hugging Face checkpoint")
    made.add_argument("model", help=MODEL_HELP)
    run = commands.add_parser("bench", help="serve MODEL with infinity and run ovserve bench ... --peer against it")
    run.add_argument("model", help=MODEL_HELP)
    run.add_argument("--batch-size", type=int, default=32, help="infinity's batch (default 32, as ovserve's)")
    run.add_argument("bench_args", nargs=argparse.REMAINDER, help="-- then ovserve bench's arguments")
    args = parser.parse_args(argv)
    if args.command == "setup":
        print(setup())
    elif args.command == "checkpoint":
        print(checkpoint(args.model))
    else:
        return bench(args.model, args.batch_size, [arg for arg in args.bench_args if arg != "--"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

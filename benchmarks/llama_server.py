"""ovserve against llama.cpp's ``llama-server`` on the same weights: build it, make the GGUF, bench both.

llama-server is built from the llama.cpp sources vendored in the llama-cpp-python sdist (the one
registry that ships them), so nothing but PyPI is needed:

    nice -n 10 python benchmarks/llama_server.py build
        download llama-cpp-python==LLAMA_CPP_PYTHON's sdist into build/llama.cpp/sdist, unpack it, and
        build only the ``llama-server`` target of vendor/llama.cpp (CMake Release, native CPU flags, no
        network: no curl, no OpenSSL, no prebuilt web UI) into build/llama.cpp/cmake/bin (skipped when
        the binary is already there)

    python benchmarks/llama_server.py gguf build/real-size/.qwen2.5-0.5b.checkpoint build/llama.cpp/qwen.gguf
        convert a Hugging Face checkpoint with the sdist's own convert_hf_to_gguf.py and gguf-py (Q8_0 by
        default); ``python -m tools.model_builder.real_size --like qwen2.5-0.5b --keep-checkpoint`` keeps one

    python benchmarks/llama_server.py bench build/llama.cpp/qwen.gguf --slots 8 -- \\
        --backend grpc http --concurrency 1 8 --rounds 3 --requests 32 --output-tokens 64
        start llama-server on 127.0.0.1 (a free port) serving the GGUF, wait for /health, run
        ``ovserve bench ARGS --peer URL`` against it (the ovserve to compare, serving the same GGUF, is
        started separately: ``ovserve serve --model qwen=build/llama.cpp/qwen.gguf``), then stop it

    python benchmarks/llama_server.py bench build/llama.cpp/qwen.gguf --slots 8 --prompt-cache -- \
        --backend grpc http --turns 8 --system-tokens 1024 --turn-tokens 64 --concurrency 1 8 --kv-cache
        the same with llama-server's prompt cache on, as users run it, for conversations that grow

Same weights, same precision: ovserve serves the GGUF file itself (OpenVINO GenAI's GGUF reader turns
its Q8_0 matrices into int8 weights with the same per-32 scales), so both servers run one file.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
from pathlib import Path
from typing import Any

LLAMA_CPP_PYTHON = "0.3.36"  # the pinned sdist; its CHANGELOG names the llama.cpp commit it vendors
ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "llama.cpp"
SDIST_DIR = WORK / "sdist"
SOURCES = WORK / "src" / f"llama_cpp_python-{LLAMA_CPP_PYTHON}"
LLAMA_CPP = SOURCES / "vendor" / "llama.cpp"
CMAKE_DIR = WORK / "cmake"
SERVER = CMAKE_DIR / "bin" / "llama-server"


def llama_cpp_commit() -> str:
    """The llama.cpp commit the sdist vendors, from its CHANGELOG (the sdist has no git metadata)."""
    text = (SOURCES / "CHANGELOG.md").read_text(encoding="utf-8")
    section = text.split(f"## [{LLAMA_CPP_PYTHON}]", 1)[-1]
    found = re.search(r"ggml-org/llama\.cpp@([0-9a-f]{7,40})", section)
    return found.group(1) if found else "unknown"


def sources() -> Path:
    """The unpacked sdist's vendor/llama.cpp, downloaded with pip and unpacked on first use."""
    if not LLAMA_CPP.is_dir():
        archive = SDIST_DIR / f"llama_cpp_python-{LLAMA_CPP_PYTHON}.tar.gz"
        if not archive.is_file():
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                 f"llama-cpp-python=={LLAMA_CPP_PYTHON}", "-d", str(SDIST_DIR)],
                check=True,
            )  # fmt: skip
        with tarfile.open(archive) as tar:
            tar.extractall(SOURCES.parent, filter="data")
    print(f"llama.cpp {llama_cpp_commit()} (vendored by llama-cpp-python {LLAMA_CPP_PYTHON})", flush=True)
    return LLAMA_CPP


def _has_amx() -> bool:
    """Whether this CPU reports AMX (Linux's /proc/cpuinfo flags)."""
    try:
        return "amx_tile" in Path("/proc/cpuinfo").read_text(encoding="utf-8").split()
    except OSError:
        return False


def build() -> Path:
    """Build the llama-server target (Release, native CPU flags) unless it is built; its path."""
    source = sources()
    if SERVER.is_file():
        print(f"{SERVER} is built; delete it to rebuild")
        return SERVER
    started = time.monotonic()
    configure = [
        "cmake", "-S", str(source), "-B", str(CMAKE_DIR), "-DCMAKE_BUILD_TYPE=Release",
        "-DGGML_NATIVE=ON",  # -march=native: this machine's AVX2 / AVX-512 / AMX, as OpenVINO uses them
        "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",  # no downloads (LLAMA_CURL is gone from newer sources)
        "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_BUILD_UI=OFF",  # no web UI: it would be fetched or npm-built
        "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
        # The build dir is inside ovserve's git checkout: without these, llama.cpp would report ovserve's commit.
        f"-DLLAMA_BUILD_COMMIT={llama_cpp_commit()}", "-DLLAMA_BUILD_NUMBER=0",
    ]  # fmt: skip
    if _has_amx():
        # llama.cpp's AMX q8_0 kernel dies of SIGILL (`tilezero`) on the VMs measured here, where OpenVINO's AMX
        # runs: build native minus AMX (its AVX-512 VNNI kernels remain), as DESIGN.md records.
        no_amx = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
        configure += [f"-DCMAKE_C_FLAGS={no_amx}", f"-DCMAKE_CXX_FLAGS={no_amx}"]
    if shutil.which("ninja"):
        configure += ["-G", "Ninja"]
    subprocess.run(configure, check=True)
    jobs = str(os.cpu_count() or 1)
    subprocess.run(["cmake", "--build", str(CMAKE_DIR), "--target", "llama-server", "-j", jobs], check=True)
    print(f"built {SERVER} in {time.monotonic() - started:.0f} s")
    return SERVER


def make_gguf(checkpoint: Path, out: Path, outtype: str, pre: str) -> None:
    """Convert a Hugging Face checkpoint with the sdist's convert_hf_to_gguf.py (in this process).

    A tokenizer whose pre-tokenizer llama.cpp does not know (the real-size models' padded tiny-chat one:
    spaces, letters, digits and punctuation each split apart) makes the converter stop; it is then written
    as ``pre`` instead. With "qwen2" every id of text made of words and single spaces comes out the same,
    because none of the tokenizer's merges joins a space to anything else.
    """
    source = sources()
    sys.path[:0] = [str(source), str(source / "gguf-py")]  # the sources' own gguf-py, as the converter wants
    import convert_hf_to_gguf  # type: ignore[import-not-found]
    from conversion.base import TextModel  # type: ignore[import-not-found]

    known = TextModel.get_vocab_base_pre

    def vocab_pre(self: object, tokenizer: object) -> str:
        try:
            return str(known(self, tokenizer))
        except NotImplementedError:
            print(f"pre-tokenizer not recognised by llama.cpp: written as {pre!r}", flush=True)
            return pre

    sentencepiece = TextModel._create_vocab_sentencepiece

    def sentencepiece_vocab(self: Any) -> Any:
        # The converter imports sentencepiece before it looks for tokenizer.model: without the file (a BPE
        # tokenizer.json, as here) raise what it raises then, so the module is not needed.
        if not (Path(self.dir_model) / "tokenizer.model").is_file():
            raise FileNotFoundError(f"File not found: {Path(self.dir_model) / 'tokenizer.model'}")
        return sentencepiece(self)

    TextModel.get_vocab_base_pre = vocab_pre
    TextModel._create_vocab_sentencepiece = sentencepiece_vocab
    sys.argv = ["convert_hf_to_gguf.py", str(checkpoint), "--outtype", outtype, "--outfile", str(out)]
    convert_hf_to_gguf.main()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# Without --prompt-cache: every prompt computed afresh (the bench's independent prompts are all new anyway).
NO_PROMPT_CACHE = ["--no-cache-prompt", "--cache-reuse", "0", "--cache-ram", "0"]


def server_command(
    gguf: Path, port: int, slots: int, context: int, threads: int, prompt_cache: bool = False
) -> list[str]:
    """llama-server with settings comparable to ovserve's: ``slots`` requests decoded together, every
    prompt computed afresh unless ``prompt_cache`` (then its defaults, as users run it: a slot keeps its last
    prompt's cache, which the next turn of a conversation resending it reuses); /metrics on."""
    return [
        str(SERVER), "--model", str(gguf), "--host", "127.0.0.1", "--port", str(port),
        "--parallel", str(slots), "--ctx-size", str(context),  # the context is split among the slots
        "--threads", str(threads), "--threads-batch", str(threads),
        *([] if prompt_cache else NO_PROMPT_CACHE),
        "--metrics",  # its request gauges, for ovserve bench --kv-cache (older builds said their KV cache there)
        "--jinja",  # the GGUF's own chat template, as ovserve uses it
        # Thinking off, as ovserve renders the template by default (its empty <think></think> block): without
        # it llama-server's prompts are 4 tokens shorter than ovserve's for the same message.
        "--reasoning", "off",
        "--no-webui",
    ]  # fmt: skip


def wait_healthy(process: subprocess.Popen[bytes], url: str, timeout: float = 300) -> None:
    """Until GET /health answers 200 (the model is loaded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"llama-server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"llama-server not healthy after {timeout} s")


def bench(
    gguf: Path, slots: int, tokens_per_slot: int, threads: int, bench_args: list[str], prompt_cache: bool = False
) -> int:
    """Start llama-server on ``gguf``, run ``ovserve bench BENCH_ARGS --peer URL``, stop the server."""
    if not SERVER.is_file():
        raise SystemExit(f"{SERVER} is not built: run `{Path(__file__).name} build` first")
    print(f"llama.cpp {llama_cpp_commit()} (vendored by llama-cpp-python {LLAMA_CPP_PYTHON})", flush=True)
    subprocess.run([str(SERVER), "--version"], check=False)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = server_command(gguf, port, slots, slots * tokens_per_slot, threads, prompt_cache)
    print("+", " ".join(command), flush=True)
    log_path = WORK / "llama-server.log"
    print(f"llama-server's log (with its own per-request timings), appended: {log_path}", flush=True)
    log = log_path.open("ab")
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_healthy(process, url)
        run = [sys.executable, "-m", "ovserve.service.cli", "bench", *bench_args, "--peer", url]
        print("+", " ".join(run), flush=True)
        return subprocess.run(run, cwd=ROOT, check=False).returncode
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def main(argv: list[str] | None = None) -> int:
    """The subcommands: build, gguf, bench."""
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    sub = options.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="download the sdist and build llama-server")
    convert = sub.add_parser("gguf", help="convert a Hugging Face checkpoint to a GGUF file")
    convert.add_argument("checkpoint", type=Path, help="a Hugging Face model directory")
    convert.add_argument("out", type=Path, help="the .gguf file to write")
    convert.add_argument("--outtype", default="q8_0", help="convert_hf_to_gguf.py's --outtype (default q8_0)")
    convert.add_argument("--pre", default="qwen2",
                         help="pre-tokenizer to write when llama.cpp does not recognise the tokenizer's "
                              "(default qwen2)")  # fmt: skip
    run = sub.add_parser("bench", help="serve a GGUF with llama-server and run `ovserve bench --peer` at it")
    run.add_argument("gguf", type=Path, help="the model (the file ovserve serves too)")
    run.add_argument("--slots", type=int, default=8, help="llama-server --parallel: the bench's highest concurrency")
    run.add_argument("--tokens-per-slot", type=int, default=2048,
                     help="context per slot: prompt + output with room to spare (default 2048)")  # fmt: skip
    run.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="llama-server --threads (all CPUs)")
    run.add_argument("--prompt-cache", action="store_true",
                     help="keep llama-server's prompt cache on, as users run it (for ovserve bench --turns: "
                          "conversations resend their prefix); off by default")  # fmt: skip
    run.epilog = "after --: the arguments of ovserve bench (--peer is added)"
    # Everything after "--" is ovserve bench's: split it off before argparse sees it.
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    argv, bench_args = argv[:split], argv[split + 1 :]
    args = options.parse_args(argv)
    if args.command == "build":
        build()
    elif args.command == "gguf":
        make_gguf(args.checkpoint.resolve(), args.out.resolve(), args.outtype, args.pre)
    else:
        return bench(args.gguf.resolve(), args.slots, args.tokens_per_slot, args.threads, bench_args, args.prompt_cache)
    return 0


if __name__ == "__main__":
    sys.exit(main())

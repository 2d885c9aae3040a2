"""LoRA adapters on the real tiny-chat pipeline: each adapter served as a model of its own on the base model's
engine, answers as it does alone when the base model and other adapters share the burst, the base model answers
as a server without adapters does, PEFT's alpha is applied, and bad adapters are refused before anything loads.

The adapters are random PEFT-layout LoRA matrices (large enough to change greedy answers) written per test.
"""

from __future__ import annotations

import concurrent.futures
import json
import struct
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest
from safetensors.numpy import save_file

from ovserve.clients import OvserveClient
from ovserve.service.bench.cli import main as bench_main
from ovserve.service.config import ConfigError
from ovserve.service.engine.adapters import AdapterError, read_adapter
from ovserve.service.models import ModelSpec
from ovserve.service.server.composition import serve_parser
from tests.conftest import TEST_SETTINGS, TINY_CHAT, ServerThread, start_server
from tests.service.engine.test_engine_flush import FakeClock

HIDDEN, INTERMEDIATE, LAYERS = 128, 384, 2  # tiny-chat's shape (its config.json)
CAPITALS = TINY_CHAT.parent / "tiny-chat-capitals"
MESSAGES = [{"role": "user", "content": "Tell me a story."}]


def write_adapter(
    directory: Path,
    seed: int,
    *,
    rank: int = 4,
    alpha: float | None = None,
    scale_b: float = 1.0,
    shapes: dict[str, tuple[int, int]] | None = None,
    config: dict[str, object] | None = None,
) -> Path:
    """A PEFT adapter directory of random LoRA matrices on q_proj, v_proj and down_proj of every layer."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    layers = shapes or {"self_attn.q_proj": (HIDDEN, HIDDEN), "self_attn.v_proj": (HIDDEN, HIDDEN),
                        "mlp.down_proj": (INTERMEDIATE, HIDDEN)}  # fmt: skip
    tensors = {}
    for layer in range(LAYERS):
        for module, (features_in, features_out) in layers.items():
            prefix = f"base_model.model.model.layers.{layer}.{module}"
            tensors[f"{prefix}.lora_A.weight"] = (rng.standard_normal((rank, features_in)) * 0.5).astype(np.float32)
            b = rng.standard_normal((features_out, rank)) * 0.5 * scale_b
            tensors[f"{prefix}.lora_B.weight"] = b.astype(np.float32)
    save_file(tensors, str(directory / "adapter_model.safetensors"))
    settings = {"r": rank, "lora_alpha": rank if alpha is None else alpha, "peft_type": "LORA", **(config or {})}
    (directory / "adapter_config.json").write_text(json.dumps(settings))
    return directory


@pytest.fixture(scope="module")
def adapters(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("lora")
    return {
        "lora-a": write_adapter(root / "a", 1),
        "lora-b": write_adapter(root / "b", 2),
        "lora-c": write_adapter(root / "c", 3),
        # lora-a's matrices with B doubled and alpha halved: PEFT's scaling (alpha / r) makes it lora-a
        "lora-a-rescaled": write_adapter(root / "a2", 1, alpha=2, scale_b=2.0),
        # alpha near zero: the base model
        "lora-off": write_adapter(root / "off", 4, alpha=1e-9),
        # the bundled adapter trained to answer in capitals (tools/model_builder/capitals_lora.py)
        "tiny-chat-capitals": CAPITALS,
    }


@pytest.fixture(scope="module")
def lora_server(adapters: dict[str, Path]) -> Iterator[ServerThread]:
    running = start_server([ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS, lora=adapters)])
    yield running
    running.stop()


def answer(client: OvserveClient, model: str) -> str:
    reply = client.chat(model, MESSAGES, max_tokens=12, temperature=0)
    return str(reply.choices[0].message.content)


def test_adapters_are_models_on_their_base(lora_server: ServerThread, adapters: dict[str, Path]) -> None:
    with OvserveClient(lora_server.target) as client:
        listed = {model.id: model for model in client.list_models()}
        assert list(listed) == ["tiny-chat", *adapters]
        assert listed["tiny-chat"].parent == "" and listed["lora-a"].parent == "tiny-chat"
        assert listed["lora-b"].root == str(adapters["lora-b"] / "adapter_model.safetensors")
        assert client.get_model("lora-c").parent == "tiny-chat"
        reply = client.chat("lora-a", MESSAGES, max_tokens=4, temperature=0)
        assert reply.model == "lora-a"


def test_base_and_adapters_in_one_burst_each_answer_as_alone(lora_server: ServerThread, server: ServerThread) -> None:
    models = ["tiny-chat", "lora-a", "lora-b", "lora-c"]
    with OvserveClient(lora_server.target) as client, OvserveClient(server.target) as plain:
        alone = {model: answer(client, model) for model in models}
        assert len(set(alone.values())) == 4  # each adapter changes the greedy answer
        assert alone["tiny-chat"] == answer(plain, "tiny-chat")  # the base model as a server without adapters
        burst = models * 4
        with concurrent.futures.ThreadPoolExecutor(len(burst)) as pool:
            answers = list(pool.map(lambda model: answer(client, model), burst))
        assert answers == [alone[model] for model in burst]
        assert answer(client, "lora-a-rescaled") == alone["lora-a"]  # alpha / r applied, the file's matrices kept
        assert answer(client, "lora-off") == alone["tiny-chat"]


def upper_share(text: str) -> float:
    letters = [c for c in text if c.isalpha()]
    return sum(c.isupper() for c in letters) / max(1, len(letters))


@pytest.mark.parametrize("question", ["Tell me a story.", "What is the capital of France?", "Hello! How are you?"])
def test_the_bundled_adapter_answers_in_capitals_as_trained(lora_server: ServerThread, question: str) -> None:
    with OvserveClient(lora_server.target) as client:
        messages = [{"role": "user", "content": question}]
        base, shouted = (
            str(client.chat(model, messages, max_tokens=24, temperature=0).choices[0].message.content)
            for model in ("tiny-chat", "tiny-chat-capitals")
        )
    assert upper_share(shouted) >= 0.95 and len(shouted) > 8, shouted
    assert upper_share(base) <= 0.3, base


def test_prompt_logprobs_are_refused_for_an_adapter(lora_server: ServerThread) -> None:
    with OvserveClient(lora_server.target) as client, pytest.raises(grpc.RpcError) as refused:
        client.complete("lora-a", "Once upon", max_tokens=2, echo=True, logprobs=1)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "LoRA" in (refused.value.details() or "")
    with OvserveClient(lora_server.target) as client:  # the engine goes on
        assert answer(client, "lora-a")


def _broken(directory: Path, how: str) -> Path:
    """An adapter broken one way."""
    if how == "another base model":
        return write_adapter(directory, 5, shapes={"self_attn.q_proj": (64, 64)})
    if how == "DoRA":
        return write_adapter(directory, 5, config={"use_dora": True})
    if how == "rank past the bound":
        return write_adapter(directory, 5, rank=300)
    path = write_adapter(directory, 5)
    weights = path / "adapter_model.safetensors"
    if how == "missing file":
        weights.unlink()
    elif how == "no adapter_config.json":
        (path / "adapter_config.json").unlink()
    elif how == "truncated":
        weights.write_bytes(weights.read_bytes()[:-100])
    elif how == "not safetensors":
        weights.write_bytes(b"PK\x03\x04 a zip, say")
    elif how == "huge header":
        weights.write_bytes(struct.pack("<Q", 2**40) + b"{}")
    elif how == "r a string":
        (path / "adapter_config.json").write_text('{"r": "abc"}')
    elif how == "NaN weights":
        write_adapter(path, 5, scale_b=float("nan"))
    elif how in ("A without B", "a layer past the model", "an unknown tensor"):
        tensors = {"A without B": {"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": (4, HIDDEN)},
                   "a layer past the model": {
                       "base_model.model.model.layers.9.self_attn.q_proj.lora_A.weight": (4, HIDDEN),
                       "base_model.model.model.layers.9.self_attn.q_proj.lora_B.weight": (HIDDEN, 4)},
                   "an unknown tensor": {"base_model.model.model.layers.0.self_attn.q_proj.magnitude": (HIDDEN,)},
                   }[how]  # fmt: skip
        save_file({name: np.zeros(shape, dtype=np.float32) for name, shape in tensors.items()}, str(weights))
    return path


BROKEN = {
    "another base model": "an adapter of another base model",
    "DoRA": "DoRA",
    "rank past the bound": "rank 300",
    "missing file": "no adapter_model.safetensors",
    "no adapter_config.json": "no adapter_config.json",
    "truncated": "truncated",
    "not safetensors": "not a readable safetensors file",
    "huge header": "not a readable safetensors file",
    "r a string": "r is 'abc'; an integer",
    "NaN weights": "NaN or infinite weights",
    "A without B": "lora_A only",
    "a layer past the model": "not a linear layer of the base model",
    "an unknown tensor": "not a LoRA matrix",
}


@pytest.mark.parametrize("how", list(BROKEN))
def test_a_bad_adapter_is_refused_naming_it(tmp_path: Path, how: str) -> None:
    path = _broken(tmp_path / "bad", how)
    with pytest.raises(AdapterError, match=BROKEN[how]) as refused:
        read_adapter("bad", path, TINY_CHAT)
    assert "'bad'" in str(refused.value)
    args = serve_parser().parse_args(["--model", f"tiny-chat={TINY_CHAT}", "--lora", f"bad=tiny-chat:{path}"])
    from ovserve.service import config

    with pytest.raises(ConfigError, match=BROKEN[how]):  # `ovserve serve` refuses it before loading anything
        config.from_arguments(args)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--lora", "x=nobody:/tmp/a"], "no model named 'nobody'"),
        (["--lora", "x=tiny-chat"], "NAME=BASE:PATH"),
        (["--lora", "tiny-chat=tiny-chat:/tmp/a"], "the name of another model or adapter"),
    ],
)
def test_lora_flags_name_what_is_wrong(flags: list[str], message: str) -> None:
    from ovserve.service import config

    args = serve_parser().parse_args(["--model", f"tiny-chat={TINY_CHAT}", *flags])
    with pytest.raises(ConfigError, match=message):
        config.from_arguments(args)


def test_adapters_take_turns_and_batch_within_one(tmp_path: Path) -> None:
    """EngineCore on a real pipeline: requests of one adapter run together; another adapter's wait while they run,
    and once the oldest of them has waited ADAPTER_TURN_SECONDS the running adapter's new requests queue behind."""
    import openvino_genai as ov_genai

    from ovserve.service.engine import EngineSettings
    from ovserve.service.engine.core import ADAPTER_TURN_SECONDS, EngineCore, Submission
    from ovserve.service.engine.sampling import SamplingParams
    from ovserve.service.workers.codec import TokenCodec

    lora = read_adapter("lora-a", write_adapter(tmp_path / "a", 1), TINY_CHAT)
    adapters = {"lora-a": (ov_genai.Adapter(str(lora.path)), lora.alpha)}
    scheduler = ov_genai.SchedulerConfig()
    for name, value in EngineSettings().scheduler(TINY_CHAT).items():
        setattr(scheduler, name, value)
    scheduler.enable_prefix_caching = False
    mode = ov_genai.AdapterConfig.Mode.MODE_DYNAMIC
    properties = {"adapters": ov_genai.AdapterConfig(list(adapters.values()), mode)}
    clock = FakeClock()
    core = EngineCore(
        lambda: ov_genai.ContinuousBatchingPipeline(str(TINY_CHAT), scheduler, "CPU", properties),
        TokenCodec(TINY_CHAT).decode_windows,
        adapters=adapters,
        clock=clock,
    )
    params = SamplingParams(max_new_tokens=16, ignore_eos=True, do_sample=False)

    def submit(request_id: int, adapter: str) -> None:
        assert core.add(Submission(request_id, [1, 2, 3, 4], params, adapter=adapter)) == []

    def running() -> set[int]:
        return set(core._running)  # (what the pipeline runs now)

    submit(1, "lora-a")
    submit(2, "lora-a")
    assert running() == {1, 2}  # one adapter: batched together
    submit(3, "")
    assert running() == {1, 2}  # the base model waits for lora-a's requests
    submit(4, "lora-a")
    assert running() == {1, 2, 4}  # lora-a's turn goes on while the base request is young
    clock.now += ADAPTER_TURN_SECONDS
    submit(5, "lora-a")
    assert 5 not in running()  # the base request waited its turn: lora-a admits no more
    order: list[set[int]] = []  # what ran, step by step
    while core.busy or core._waiting:
        core.step()
        if running() and (not order or order[-1] != running()):
            order.append(running())
    assert order[0] <= {1, 2, 4} and {3} in order and {5} in order
    assert order.index({3}) < order.index({5})  # the base request's turn, then lora-a's again
    assert all(not (group & {1, 2, 4}) for group in order[order.index({3}) :])


def test_the_toml_names_adapters_per_model(tmp_path: Path) -> None:
    from ovserve.service import config

    adapter = write_adapter(tmp_path / "a", 1)
    toml = tmp_path / "serve.toml"
    toml.write_text(f'[[models]]\nname = "tiny-chat"\npath = "{TINY_CHAT}"\nlora = {{ shouty = "{adapter}" }}\n')
    served = config.from_arguments(serve_parser().parse_args(["--config", str(toml)]))
    assert [(spec.name, spec.lora) for spec in served.models] == [("tiny-chat", {"shouty": adapter})]
    toml.write_text(f'[[models]]\nname = "tiny-chat"\npath = "{TINY_CHAT}"\nlora = ["a"]\n')
    with pytest.raises(ConfigError, match="lora: a table"):
        config.from_arguments(serve_parser().parse_args(["--config", str(toml)]))


def test_adapters_load_and_unload_at_run_time(tmp_path: Path, lora_server: ServerThread) -> None:
    """vLLM's /v1/load_lora_adapter and /v1/unload_lora_adapter through the bridge, from under the allowed
    directory only; a loaded adapter answers as the same adapter served from the start, the base model stays."""
    from tests.rest_bridge.conftest import http_request, served_with_bridge

    allowed = tmp_path / "adapters"
    write_adapter(allowed / "late", 1)  # lora-a's matrices
    _broken(allowed / "bad", "another base model")
    write_adapter(tmp_path / "outside", 1)
    with OvserveClient(lora_server.target) as client:
        expected = answer(client, "lora-a")
    spec = ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)
    with (
        served_with_bridge([spec], allow_runtime_lora=allowed) as running,
        OvserveClient(running.server.target) as client,
    ):
        base = answer(client, "tiny-chat")

        def post(path: str, body: dict[str, object]) -> tuple[int, str]:
            reply = http_request(running.port, "POST", path, body)
            return reply.status, reply.body.decode()

        assert post("/v1/load_lora_adapter", {"lora_name": "late", "lora_path": "late"}) == (
            200, "Success: LoRA adapter 'late' added successfully.")  # fmt: skip
        listed = http_request(running.port, "GET", "/v1/models").json()["data"]
        assert [(m["id"], m["parent"]) for m in listed] == [("tiny-chat", None), ("late", "tiny-chat")]
        assert answer(client, "late") == expected and answer(client, "tiny-chat") == base
        status, body = post("/v1/load_lora_adapter", {"lora_name": "late", "lora_path": "late"})
        assert status == 409 and "load_inplace" in body
        assert post("/v1/load_lora_adapter", {"lora_name": "late", "lora_path": "late", "load_inplace": True})[0] == 200
        for body, param in [({"lora_name": "x", "lora_path": "bad"}, "lora_path"),
                            ({"lora_name": "x", "lora_path": str(tmp_path / "outside")}, "lora_path"),
                            ({"lora_name": "x", "lora_path": "../outside"}, "lora_path"),
                            ({"lora_name": "tiny-chat", "lora_path": "late"}, "lora_name"),
                            ({"lora_name": "x", "lora_path": "late", "base_model_name": "late"}, "base_model_name"),
                            ({"lora_path": "late"}, "lora_name")]:  # fmt: skip
            reply = http_request(running.port, "POST", "/v1/load_lora_adapter", body)
            assert reply.status in (400, 409) and reply.json()["error"]["param"] == param, (body, reply.body)
        assert [m.id for m in client.list_models()] == ["tiny-chat", "late"]  # nothing changed
        assert post("/v1/unload_lora_adapter", {"lora_name": "late"}) == (
            200, "Success: LoRA adapter 'late' removed successfully.")  # fmt: skip
        assert http_request(running.port, "POST", "/v1/chat/completions", {
            "model": "late", "messages": MESSAGES}).status == 404  # fmt: skip
        assert post("/v1/unload_lora_adapter", {"lora_name": "late"})[0] == 404
        assert answer(client, "tiny-chat") == base


def test_run_time_loading_is_off_by_default(lora_server: ServerThread) -> None:
    from ovserve.clients.v1 import model_pb2, model_pb2_grpc

    with grpc.insecure_channel(lora_server.target) as channel, pytest.raises(grpc.RpcError) as refused:
        model_pb2_grpc.ModelServiceStub(channel).LoadLoraAdapter(
            model_pb2.LoadLoraAdapterRequest(lora_name="x", lora_path="/tmp")
        )
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "--allow-runtime-lora" in (refused.value.details() or "")


def test_the_bench_mixes_adapters_and_reports_each(
    lora_server: ServerThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ovserve bench --mix``: the requests ask for the names in turn, and each name's figures are its own."""
    report = tmp_path / "report.json"
    names = ["tiny-chat", "lora-a", "lora-b"]
    args = ["--target", lora_server.target, "--mix", *names, "--requests", "6", "--warmup", "0", "--concurrency", "3",
            "--output-tokens", "8", "--input-tokens", "16", "--no-progress", "--json", str(report)]  # fmt: skip
    assert bench_main(args) == 0
    [run] = json.loads(report.read_text())["summary"]
    assert list(run["by_model"]) == names
    for figures in run["by_model"].values():
        assert figures["completed"] == 2 and figures["failed"] == 0
    assert sum(figures["output_tokens"] for figures in run["by_model"].values()) == run["summary"]["output_tokens"]
    printed = capsys.readouterr().out
    assert all(f"c=3 {name}" in printed for name in names)

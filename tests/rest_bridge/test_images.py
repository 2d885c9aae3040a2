"""Images out end to end: the bundled tiny-diffusion through the openai client (``images.generate``, ``images.edit``,
streamed partial images), plain HTTP and the gRPC stubs, against OpenVINO GenAI's pipelines called directly.

tiny-diffusion's weights are random: what is held is what a prompt and a seed decide (the same request gives the
same pixels as Text2ImagePipeline does, another prompt other pixels), the size, the encoding, the stream's events
and the refusals.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx2 as httpx
import numpy as np
import openai
import pytest
from PIL import Image

from ovserve.clients import OvserveClient
from ovserve.clients.v1 import image_pb2, image_pb2_grpc, model_pb2, model_pb2_grpc
from ovserve.service.models import ModelSpec
from ovserve.service.observability.metrics import exposition
from tests.rest_bridge.conftest import RunningBridge, served_with_bridge

MODEL = "tiny-diffusion"
MODEL_DIR = Path(__file__).resolve().parents[2] / "service" / "bundled_models" / MODEL
STEPS = 4
SEEDED = {"num_inference_steps": STEPS, "rng_seed": 7}


@pytest.fixture(scope="module")
def served() -> Iterator[RunningBridge]:
    """tiny-diffusion on a server of its own, with a bridge in front."""
    with served_with_bridge([ModelSpec(MODEL, MODEL_DIR)]) as running:
        yield running


@pytest.fixture(scope="module")
def client(served: RunningBridge) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=served.url, api_key="any-key", max_retries=0, timeout=120) as opened:
        yield opened


def pixels(b64: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(b64))).convert("RGB"))


def png(array: np.ndarray, mode: str = "RGB") -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(array, mode).save(buffer, format="PNG")
    return buffer.getvalue()


def test_a_prompt_and_seed_give_the_pipelines_own_image(client: openai.OpenAI) -> None:
    import openvino_genai as ov_genai

    made = client.images.generate(model=MODEL, prompt="a red square", size="64x48", extra_body=SEEDED)
    direct = ov_genai.Text2ImagePipeline(str(MODEL_DIR), "CPU").generate(
        "a red square", width=64, height=48, num_inference_steps=STEPS, rng_seed=7
    )
    assert made.data is not None and len(made.data) == 1
    assert made.size == "64x48" and made.output_format == "png" and made.background == "opaque"
    assert np.array_equal(pixels(made.data[0].b64_json or ""), np.asarray(direct.data)[0])
    assert made.usage is not None
    assert made.usage.input_tokens == len("aredsquare") + 2  # a token a letter, with the start and end tokens


def test_another_prompt_gives_another_image_and_n_gives_n(client: openai.OpenAI) -> None:
    red = client.images.generate(model=MODEL, prompt="a red square", extra_body=SEEDED)
    blue = client.images.generate(model=MODEL, prompt="a blue circle", n=2, extra_body=SEEDED)
    assert red.data is not None and blue.data is not None and len(blue.data) == 2
    assert red.size == "64x64"  # the model's own size: sample_size 16 x the VAE's scale 4
    first, second = (pixels(image.b64_json or "") for image in blue.data)
    assert np.abs(pixels(red.data[0].b64_json or "").astype(int) - first.astype(int)).mean() > 1
    assert not np.array_equal(first, second)  # one seed, two images: the pipeline draws each its own noise


@pytest.mark.parametrize(("output_format", "pillow"), [("jpeg", "JPEG"), ("webp", "WEBP"), ("png", "PNG")])
def test_output_formats(client: openai.OpenAI, output_format: str, pillow: str) -> None:
    made = client.images.generate(
        model=MODEL,
        prompt="x",
        output_format=output_format,  # type: ignore[arg-type]
        output_compression=50,
        extra_body=SEEDED,
    )
    assert made.data is not None
    assert Image.open(io.BytesIO(base64.b64decode(made.data[0].b64_json or ""))).format == pillow


def test_streamed_partial_images_then_the_same_image(client: openai.OpenAI) -> None:
    unary = client.images.generate(model=MODEL, prompt="a red square", extra_body=SEEDED)
    events = list(
        client.images.generate(model=MODEL, prompt="a red square", stream=True, partial_images=2, extra_body=SEEDED)
    )
    assert [event.type for event in events] == [
        "image_generation.partial_image", "image_generation.partial_image", "image_generation.completed",
    ]  # fmt: skip
    assert [event.partial_image_index for event in events[:2]] == [0, 1]  # type: ignore[union-attr]
    assert unary.data is not None
    assert events[-1].b64_json == unary.data[0].b64_json
    assert events[0].b64_json != events[-1].b64_json  # a partial image is the latent of an earlier step


def test_an_edit_redraws_the_image_and_a_mask_confines_it(client: openai.OpenAI) -> None:
    source = png(np.full((48, 64, 3), 200, dtype=np.uint8))
    edited = client.images.edit(model=MODEL, image=("in.png", source), prompt="a boat", extra_body=SEEDED)
    assert edited.data is not None and edited.size == "64x48"  # the image's own size
    alpha = np.full((48, 64, 4), 255, dtype=np.uint8)
    alpha[:, :32, 3] = 0  # the left half transparent: edited there
    masked = client.images.edit(
        model=MODEL, image=("in.png", source), mask=("mask.png", png(alpha, "RGBA")), prompt="a boat",
        extra_body=SEEDED,
    )  # fmt: skip
    assert masked.data is not None
    assert not np.array_equal(pixels(edited.data[0].b64_json or ""), pixels(masked.data[0].b64_json or ""))
    several = client.images.edit(
        model=MODEL, image=[("a.png", source), ("b.png", source)], prompt="a boat", size="32x32", extra_body=SEEDED
    )
    assert several.data is not None and len(several.data) == 2 and several.size == "32x32"


def test_a_streamed_edit(client: openai.OpenAI) -> None:
    source = png(np.full((32, 32, 3), 90, dtype=np.uint8))
    events = list(
        client.images.edit(
            model=MODEL, image=("in.png", source), prompt="a boat", stream=True, partial_images=1,
            extra_body={**SEEDED, "strength": 1.0},
        )
    )  # fmt: skip
    assert [event.type for event in events] == ["image_edit.partial_image", "image_edit.completed"]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"size": "30x30"}, "size"),
        ({"size": "4096x8"}, "size"),
        ({"size": "big"}, "size"),
        ({"n": 11}, "n"),
        ({"response_format": "url"}, "response_format"),
        ({"background": "transparent"}, "background"),
        ({"output_format": "gif"}, "output_format"),
        ({"output_compression": 101}, "output_compression"),
        ({"num_inference_steps": 0}, "num_inference_steps"),
        ({"guidance_scale": -1}, "guidance_scale"),
        ({"rng_seed": -1}, "rng_seed"),
        ({"strength": 0.5}, "strength"),
        ({"partial_images": 4, "stream": True}, "partial_images"),
        ({"n": 2, "stream": True}, "n"),
        ({"prompt": ""}, "prompt"),
        ({"prompt": "x" * 32_001}, "prompt"),
        ({"seed": 1, "rng_seed": 2}, "seed"),
        ({"moderation": "strict"}, "moderation"),
        ({"wat": 1}, "wat"),
    ],
)
def test_bounds_are_refused_naming_the_field(served: RunningBridge, body: dict, param: str) -> None:
    reply = httpx.post(f"{served.url}/images/generations", json={"model": MODEL, "prompt": "x", **body}, timeout=60)
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["param"] == param


@pytest.mark.parametrize(
    ("files", "fields", "param"),
    [
        ({}, {}, "image"),
        ({"image": ("a.txt", b"not an image", "text/plain")}, {}, "image"),
        ({"mask": ("m.png", png(np.zeros((8, 8, 3), dtype=np.uint8)), "image/png")}, {}, "mask"),  # no alpha
        ({"mask": ("m.png", png(np.zeros((16, 8, 4), dtype=np.uint8), "RGBA"), "image/png")}, {}, "mask"),  # size
        ({}, {"n": "two"}, "n"),
        ({}, {"stream": "maybe"}, "stream"),
        ({"other": ("o.png", b"x", "image/png")}, {}, "other"),
    ],
)
def test_edit_forms_are_refused_naming_the_field(served: RunningBridge, files: dict, fields: dict, param: str) -> None:
    source = {"image": ("in.png", png(np.zeros((8, 8, 3), dtype=np.uint8)), "image/png")}
    parts = {key: (None, value) for key, value in {"model": MODEL, "prompt": "x", **fields}.items()}
    chosen = files if "image" in files or (not files and param == "image") else {**source, **files}
    reply = httpx.post(f"{served.url}/images/edits", files={**parts, **chosen}, timeout=60)
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["param"] == param


def test_the_grpc_service_the_model_list_and_the_step_count(served: RunningBridge) -> None:
    with grpc.insecure_channel(served.server.target) as channel:
        stub = image_pb2_grpc.ImageServiceStub(channel)
        parameters = image_pb2.ImageParameters(prompt="a red square", num_inference_steps=3, rng_seed=1, size="16x16")
        reply = stub.CreateImage(image_pb2.CreateImageRequest(model=MODEL, parameters=parameters))
        assert reply.result.size == "16x16" and len(reply.result.data) == 1
        events = list(stub.StreamImage(image_pb2.StreamImageRequest(model=MODEL, parameters=parameters)))
        assert events[-1].done.data[0].data == reply.result.data[0].data
        listed = model_pb2_grpc.ModelServiceStub(channel).ListModels(model_pb2.ListModelsRequest())
        assert [(model.id, model.task) for model in listed.data] == [(MODEL, "image")]
        with pytest.raises(grpc.RpcError) as refused:
            stub.CreateImage(image_pb2.CreateImageRequest(model="nope", parameters=parameters))
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND
    metrics = exposition().decode()  # the server's registry: it runs in this process (this bridge has no /metrics)
    line = next(line for line in metrics.splitlines() if line.startswith("ovserve_image_denoising_steps_total"))
    assert f'model="{MODEL}"' in line and float(line.rsplit(" ", 1)[1]) >= 6


def test_the_typed_client(served: RunningBridge, client: openai.OpenAI) -> None:
    source = png(np.full((16, 16, 3), 60, dtype=np.uint8))
    with OvserveClient(served.server.target) as ovserve:
        made = ovserve.generate_image(MODEL, "a red square", size="16x16", num_inference_steps=3, rng_seed=5)
        streamed = list(ovserve.stream_image(MODEL, "a red square", size="16x16", num_inference_steps=3, rng_seed=5,
                                             partial_images=1))  # fmt: skip
        edited = ovserve.edit_image(MODEL, "a boat", [source, source], num_inference_steps=3, rng_seed=5)
        with pytest.raises(TypeError, match="wat"):
            ovserve.generate_image(MODEL, "x", wat=1)
    assert [event.WhichOneof("event") for event in streamed] == ["partial", "done"]
    assert streamed[-1].done.data[0].data == made.result.data[0].data
    over_http = client.images.generate(
        model=MODEL, prompt="a red square", size="16x16", extra_body={"num_inference_steps": 3, "rng_seed": 5}
    )
    assert over_http.data is not None and base64.b64decode(over_http.data[0].b64_json or "") == made.result.data[0].data
    assert len(edited.result.data) == 2 and edited.result.size == "16x16"

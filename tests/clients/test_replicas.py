"""The typed clients over several replicas: calls spread by round_robin, a stopped replica takes none, none fail."""

from __future__ import annotations

import collections
from collections.abc import Iterator

import pytest

from ovserve.clients import OvserveClient
from ovserve.clients._options import channel_target
from ovserve.service.models import ModelSpec
from tests.conftest import TEST_SETTINGS, TINY_CHAT, ServerThread, start_server


@pytest.fixture
def replicas() -> Iterator[list[ServerThread]]:
    """Two servers of the same model under different names, so a reply tells which one answered."""
    running = [start_server([ModelSpec(name, TINY_CHAT, settings=TEST_SETTINGS)]) for name in ("alpha", "beta")]
    yield running
    for server in running:
        server.stop()


def answered_by(client: OvserveClient) -> str:
    return client.list_models()[0].id


def test_calls_spread_over_replicas_and_survive_one_stopping(replicas: list[ServerThread]) -> None:
    targets = [f"127.0.0.1:{server.server.port}" for server in replicas]
    with OvserveClient(targets, timeout=10) as client:
        before = collections.Counter(answered_by(client) for _ in range(20))
        assert set(before) == {"alpha", "beta"} and min(before.values()) >= 5, before  # round_robin
        replicas[0].stop()  # drains (NOT_SERVING), then closes its port
        after = collections.Counter(answered_by(client) for _ in range(20))
    print(f"\nreplicas: before the stop {dict(before)}, after {dict(after)}; 40 sent, 40 succeeded")
    assert after == {"beta": 20}


def test_targets_are_checked() -> None:
    assert channel_target("127.0.0.1:1") == ("127.0.0.1:1", False)
    assert channel_target("dns:///ovserve.default.svc:50051") == ("dns:///ovserve.default.svc:50051", True)
    assert channel_target(["10.0.0.1:1", "10.0.0.2:1"]) == ("ipv4:10.0.0.1:1,10.0.0.2:1", True)
    assert channel_target(["[::1]:1", "[::1]:2"]) == ("ipv6:[::1]:1,[::1]:2", True)
    for bad in (["host-a:1", "host-b:1"], ["10.0.0.1:1", "[::1]:2"], []):
        with pytest.raises(ValueError):
            channel_target(bad)

"""The Kubernetes manifests in deploy/: valid against Kubernetes' own schemas (kubernetes-validate, strict),
and consistent with the server they run (its flags parse, the probes and Services use its ports)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from ovserve.clients.defaults import DEFAULT_GRPC_PORT, DEFAULT_REST_PORT
from ovserve.service.server.composition import serve_parser

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
KUBERNETES = "1.33"  # native gRPC probes (1.24+) and the preStop sleep action (1.30+)
DOCUMENTS = [(path.name, doc) for path in sorted(DEPLOY.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text())]


@pytest.mark.parametrize(("name", "doc"), DOCUMENTS, ids=[f"{name}:{doc['kind']}" for name, doc in DOCUMENTS])
def test_each_manifest_follows_its_schema(name: str, doc: dict[str, Any]) -> None:
    if doc["apiVersion"].startswith("inference.networking.k8s.io/"):  # a CRD: its own release brings the schema
        spec = doc["spec"]
        assert spec["selector"]["matchLabels"] and spec["targetPorts"][0]["number"] == 8000
        assert spec["endpointPickerRef"]["name"]
        return
    kubernetes_validate.validate(doc, KUBERNETES, strict=True)


def test_the_deployment_runs_a_valid_serve_command_on_the_probed_ports() -> None:
    [deployment] = [doc for _, doc in DOCUMENTS if doc["kind"] == "Deployment" and doc["metadata"]["name"] == "ovserve"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    command, subcommand, *flags = container["args"]
    assert (command, subcommand) == ("ovserve", "serve")
    args = serve_parser().parse_args(flags)  # every flag exists
    grpc_port, rest_port = args.port or DEFAULT_GRPC_PORT, args.rest_port or DEFAULT_REST_PORT
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert ports == {"grpc": grpc_port, "http": rest_port}
    assert container["readinessProbe"]["grpc"]["port"] == container["startupProbe"]["grpc"]["port"] == grpc_port
    grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace > container["lifecycle"]["preStop"]["sleep"]["seconds"] + float(args.grace_seconds)


def test_the_headless_service_lets_clients_balance() -> None:
    [grpc_service] = [
        doc for _, doc in DOCUMENTS if doc["kind"] == "Service" and doc["metadata"]["name"] == "ovserve-grpc"
    ]
    assert grpc_service["spec"]["clusterIP"] == "None" and grpc_service["spec"]["ports"][0]["appProtocol"] == "grpc"

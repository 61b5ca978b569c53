"""The real Temporal dev server the Temporal tests run against: a client connects, and the server
keeps serving on the same port and database file after a restart."""

from __future__ import annotations

import pytest
from temporal_testkit import TemporalServer

pytest.importorskip("temporalio", reason="slateboard[temporal] is not installed")

from temporalio.api.workflowservice.v1 import ListNamespacesRequest
from temporalio.client import Client


async def test_a_client_connects_and_finds_the_default_namespace(temporal_server: TemporalServer) -> None:
    client = await Client.connect(temporal_server.address)
    assert await client.service_client.check_health()
    response = await client.workflow_service.list_namespaces(ListNamespacesRequest())
    assert "default" in [ns.namespace_info.name for ns in response.namespaces]


async def test_the_server_serves_again_after_a_restart(temporal_server: TemporalServer) -> None:
    temporal_server.restart()
    client = await Client.connect(temporal_server.address)
    assert await client.service_client.check_health()

"""The OpenAI Agents SDK's Responses WebSocket transport runs turns against the bridge.

The SDK's HTTP base URL points at a port nothing listens on, so a turn that completes went over the WebSocket
(``/v3/responses``); the SDK sends ``stream: true`` on every ``response.create``, which WebSocket mode accepts.
"""

from __future__ import annotations

import asyncio
import socket

from agents import Agent, ModelSettings, set_tracing_disabled
from agents.responses_websocket_session import responses_websocket_session

from tests.rest_bridge.conftest import RunningBridge

MODEL = "tiny-chat"


def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_agent_runs_two_turns_over_the_websocket(bridge: RunningBridge) -> None:
    set_tracing_disabled(True)  # the SDK would otherwise export traces to OpenAI's servers
    agent = Agent(
        name="echo",
        instructions="Answer briefly.",
        model=MODEL,
        model_settings=ModelSettings(temperature=0),  # tiny-chat ends its answers itself
    )

    async def run() -> tuple[str, str, str]:
        async with responses_websocket_session(
            api_key="unused",
            base_url=f"http://127.0.0.1:{unused_port()}/v3",
            websocket_base_url=f"ws://127.0.0.1:{bridge.port}/v3",
            openai_prefix_mode="model_id",
            unknown_prefix_mode="model_id",
        ) as session:
            first = await session.run(agent, "Say hello.")
            second = await session.run(agent, [*first.to_input_list(), {"role": "user", "content": "Again."}])
            return str(first.final_output), str(second.final_output), str(second.last_response_id)

    first, second, response_id = asyncio.run(run())
    assert first and second  # tiny-chat answers something for each turn
    assert response_id.startswith("resp_")

"""A call that cannot reach its agent says why in a person's words, not in the HTTP library's."""

from __future__ import annotations

import pytest

from agent_server.http.loopback import free_port
from gateway import Gateway
from gateway.errors import PeerConnectionError

pytestmark = pytest.mark.anyio


async def test_nothing_listening_is_connection_refused_naming_where() -> None:
    port = free_port()
    async with Gateway() as gateway:
        gateway.add_agent_tool("nobody", f"http://127.0.0.1:{port}")
        with pytest.raises(PeerConnectionError) as failed:
            await gateway.call_tool("nobody", "hello")
    message = failed.value.message
    assert message == f"cannot reach http://127.0.0.1:{port}: connection refused (connecting to 127.0.0.1:{port})"
    assert "ssl:" not in message

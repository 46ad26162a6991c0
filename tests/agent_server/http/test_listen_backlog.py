"""The listen backlog follows max_connections, so a burst of as many clients is queued, not dropped."""

from __future__ import annotations

from agent_server import ServerLimits, build_server, create_app
from agent_server.http.limits import MIN_LISTEN_BACKLOG, listen_backlog
from agent_server.testing import scripted_agent


def test_the_backlog_is_uvicorns_default_up_to_that_many_connections_and_as_many_beyond() -> None:
    assert listen_backlog(ServerLimits()) == MIN_LISTEN_BACKLOG == 2048
    assert listen_backlog(ServerLimits(max_connections=10)) == MIN_LISTEN_BACKLOG
    assert listen_backlog(ServerLimits(max_connections=10_256)) == 10_256


def test_a_built_server_listens_with_that_backlog() -> None:
    server = build_server(create_app(scripted_agent()), limits=ServerLimits(max_connections=5000))
    assert server.config.backlog == 5000

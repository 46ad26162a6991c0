"""Host an agent as its own HTTP service speaking the A2A-NDJSON binding.

An agent is an async function or async generator taking a ``TaskContext``; see
``agent_server.hosted`` for what it may yield or return. ``create_app`` wraps it in a
Starlette app, ``serve`` runs that with uvicorn, and ``TaskManager`` is the same engine
without HTTP, for in-process (``local://``) use. ``build_server`` is how any ASGI app here is
run with uvicorn, behind ``ServerLimits`` (read timeouts, a connection cap, heard refusals).

The names below are imported on first use (PEP 562), so a command that needs one of
them does not pay for the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.lazy import lazy_exports

if TYPE_CHECKING:
    from agent_server.app import (
        DEFAULT_MAX_BODY_BYTES as DEFAULT_MAX_BODY_BYTES,
        create_app as create_app,
        serve as serve,
    )
    from agent_server.hosted import (
        AgentHandler as AgentHandler,
        DataChunk as DataChunk,
        Handoff as Handoff,
        HostedAgent as HostedAgent,
        InputRequired as InputRequired,
        TaskContext as TaskContext,
        TextChunk as TextChunk,
        agent as agent,
        as_hosted_agent as as_hosted_agent,
    )
    from agent_server.http.auth import (
        ANONYMOUS as ANONYMOUS,
        Principal as Principal,
        TokenTable as TokenTable,
        principal_of as principal_of,
        require_scope as require_scope,
    )
    from agent_server.http.limits import ServerLimits as ServerLimits
    from agent_server.http.server import build_server as build_server, run_server as run_server
    from agent_server.stores import (
        MemoryTaskStore as MemoryTaskStore,
        SQLiteTaskStore as SQLiteTaskStore,
        StoreFull as StoreFull,
        StoreSpec as StoreSpec,
        StoreUnavailable as StoreUnavailable,
        TaskStore as TaskStore,
        open_store as open_store,
        parse_store_spec as parse_store_spec,
    )
    from agent_server.stores.redis import RedisTaskStore as RedisTaskStore
    from agent_server.stores.redis_settings import RedisSettings as RedisSettings
    from agent_server.tasks.manager import TaskManager as TaskManager

_EXPORTS = {
    "ANONYMOUS": "agent_server.http.auth",
    "AgentHandler": "agent_server.hosted",
    "DEFAULT_MAX_BODY_BYTES": "agent_server.app",
    "DataChunk": "agent_server.hosted",
    "Handoff": "agent_server.hosted",
    "HostedAgent": "agent_server.hosted",
    "InputRequired": "agent_server.hosted",
    "MemoryTaskStore": "agent_server.stores",
    "Principal": "agent_server.http.auth",
    "RedisSettings": "agent_server.stores.redis_settings",
    "RedisTaskStore": "agent_server.stores.redis",
    "SQLiteTaskStore": "agent_server.stores",
    "ServerLimits": "agent_server.http.limits",
    "StoreFull": "agent_server.stores",
    "StoreSpec": "agent_server.stores",
    "StoreUnavailable": "agent_server.stores",
    "TaskContext": "agent_server.hosted",
    "TaskManager": "agent_server.tasks.manager",
    "TaskStore": "agent_server.stores",
    "TextChunk": "agent_server.hosted",
    "TokenTable": "agent_server.http.auth",
    "agent": "agent_server.hosted",
    "as_hosted_agent": "agent_server.hosted",
    "build_server": "agent_server.http.server",
    "create_app": "agent_server.app",
    "open_store": "agent_server.stores",
    "parse_store_spec": "agent_server.stores",
    "principal_of": "agent_server.http.auth",
    "require_scope": "agent_server.http.auth",
    "run_server": "agent_server.http.server",
    "serve": "agent_server.app",
}

__all__ = sorted(_EXPORTS)  # noqa: PLE0605 - the names are listed once, above

__getattr__ = lazy_exports(__name__, _EXPORTS)

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
    from agent_server.extended_card import ExtendedCard as ExtendedCard
    from agent_server.hosted import (
        AgentHandler as AgentHandler,
        DataChunk as DataChunk,
        Failed as Failed,
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
    from agent_server.push.settings import PushSettings as PushSettings, RetryPolicy as RetryPolicy
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


__getattr__ = lazy_exports(__name__)

"""Host an agent as its own HTTP service speaking the A2A-NDJSON binding.

An agent is an async function or async generator taking a ``TaskContext``; see
``agent_server.agent`` for what it may yield or return. ``create_app`` wraps it in a
Starlette app, ``serve`` runs that with uvicorn, and ``TaskManager`` is the same engine
without HTTP, for in-process (``local://``) use. ``build_server`` is how any ASGI app here is
run with uvicorn, behind ``ServerLimits`` (read timeouts, a connection cap, heard refusals).
"""

from .agent import (
    AgentHandler,
    DataChunk,
    Handoff,
    HostedAgent,
    InputRequired,
    TaskContext,
    TextChunk,
    agent,
    as_hosted_agent,
)
from .app import DEFAULT_MAX_BODY_BYTES, create_app, serve
from .auth import ANONYMOUS, Principal, TokenTable, principal_of, require_scope
from .server import ServerLimits, build_server
from .stores import MemoryTaskStore, SQLiteTaskStore, StoreFull, StoreSpec, TaskStore, open_store, parse_store_spec
from .task_manager import TaskManager

__all__ = [
    "ANONYMOUS",
    "AgentHandler",
    "DEFAULT_MAX_BODY_BYTES",
    "DataChunk",
    "Handoff",
    "HostedAgent",
    "InputRequired",
    "MemoryTaskStore",
    "Principal",
    "SQLiteTaskStore",
    "ServerLimits",
    "StoreFull",
    "StoreSpec",
    "TaskContext",
    "TaskManager",
    "TaskStore",
    "TextChunk",
    "TokenTable",
    "agent",
    "as_hosted_agent",
    "build_server",
    "create_app",
    "open_store",
    "parse_store_spec",
    "principal_of",
    "require_scope",
    "serve",
]

"""Host an agent as its own HTTP service speaking the A2A-NDJSON binding.

An agent is an async function or async generator taking a ``TaskContext``; see
``agent_server.agent`` for what it may yield or return. ``create_app`` wraps it in a
Starlette app, ``serve`` runs that with uvicorn, and ``TaskManager`` is the same engine
without HTTP, for in-process (``local://``) use.
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
    "StoreFull",
    "StoreSpec",
    "TaskContext",
    "TaskManager",
    "TaskStore",
    "TextChunk",
    "TokenTable",
    "agent",
    "as_hosted_agent",
    "create_app",
    "open_store",
    "parse_store_spec",
    "principal_of",
    "require_scope",
    "serve",
]

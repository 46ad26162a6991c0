"""Every error the project raises on purpose, in one tree with one root.

::

    SwitchboardError                      protocol.errors: the root
    ├── ProtocolError                     a request the binding refuses, or an error answer read back (code, status)
    │   ├── EnvelopedProtocolError        the same, raised after a JSON-RPC envelope was read
    │   ├── StoreUnavailable (503)        agent_server.stores: a store's server (Redis) cannot be reached
    │   ├── LimitReached (429)            gateway.limits: a token over its request rate or spend cap
    │   └── ServiceError                  gateway.service: a request the gateway API refuses
    │       ├── Forbidden (403), NotFound (404), Conflict (409)
    │       ├── AgentUnreachable (502)    a card could not be fetched
    │       └── ShuttingDown (503)
    ├── StoreFull                         agent_server: every task slot holds a running task
    ├── InvalidAgentURI                   a URI none of the schemes describes (also a ValueError)
    ├── UnknownAgentTool                  ``call_tool`` of a name not added (also a LookupError)
    ├── AgentToolError                    a call to a peer failed; ``reason``, ``partial``
    │   ├── AgentToolTimeout              idle_timeout, timeout, headers_timeout, connect_timeout
    │   ├── BudgetExceeded                budget_exceeded
    │   ├── PeerHTTPError                 http_error: the peer answered an error status
    │   │   └── PeerRedirect              redirect: not followed
    │   ├── PeerRPCError                  rpc_error: the peer answered a JSON-RPC error (its A2A code)
    │   ├── PoolExhausted                 pool_exhausted: the gateway's pool, not the peer
    │   ├── PeerConnectionError           connection_error
    │   │   └── CircuitOpen               circuit_open: gateway.swarm.health, the agent failed again and again
    │   ├── PeerProtocolError             cut_off, line_too_long, answer_too_large, bad_answer, ...
    │   └── AgentTaskFailed               task_failed, task_canceled: the peer's task ended so
    ├── SwarmError                        the swarm runner
    │   ├── AgentHandoffError             a transfer names no agent the runner can resolve
    │   ├── SessionNotFound               another caller's session
    │   ├── SessionBusy                   another process held the session longer than the lock wait
    │   └── SessionConflictError          another turn saved the session first
    │       └── SessionLockLost           the session's lock lease ran out: the save was refused (fencing)
    ├── RunClosedError                    an append to a run the event log already closed
    ├── BoardError                        gateway.blackboard
    │   ├── BoardConflict                 a write with a version that is no longer the board's; ``current``
    │   ├── BoardNotFound                 another caller's board, or none written yet (also a LookupError)
    │   └── BoardTooLarge                 a write over a board's limits (also a ValueError)
    ├── ModelError                        a chat model (or embedder) call failed
    │   ├── ModelAuthError                the provider refused the credentials
    │   ├── ModelNotConfigured            a model name no provider resolves; says what to set
    │   └── ScriptExhaustedError          a ScriptedModel ran out of script
    ├── ToolArgumentError                 a model's arguments do not fit a function tool (also a ValueError)
    ├── ConfigError                       the configuration cannot be used; ``problems`` (also a ValueError)
    ├── IdleTimeout                       gateway.calls.idle_timeout: a stream fell silent (also a TimeoutError)
    ├── Terminated                        gateway.calls.termination: the gateway ends a call (raised as its ``error``)
    └── UsageError, CommandFailed         gateway.cli: what the CLI prints in one line
        └── GatewayRefused                the gateway answered one request with an error

Every ``AgentToolError`` has a ``reason`` (the word recorded in the event log, in the
``reason`` field of every event that says why something ended) and, once the call has
caught it, ``partial``: the ``AgentToolResult`` accumulated before the failure, so that
chunks already received are never lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol.errors import SwitchboardError

if TYPE_CHECKING:
    from gateway.calls.result import AgentToolResult

EXPECTED_URI_FORMS = (
    "http(s)://HOST[:PORT][/BASE] (A2A agent), local://NAME (in-process agent), "
    "mcp+stdio:COMMAND[?args=...&cwd=...&env=NAME=VALUE]#TOOL, mcp+http(s)://HOST[:PORT]/PATH#TOOL (MCP tool)"
)


class InvalidAgentURI(SwitchboardError, ValueError):
    """An agent URI that none of the schemes describes (gateway/uri.py); the message shows the accepted forms."""

    def __init__(self, uri: str, problem: str) -> None:
        super().__init__(f"invalid agent URI {uri!r}: {problem}. Expected one of: {EXPECTED_URI_FORMS}")
        self.uri = uri
        self.problem = problem


class UnknownAgentTool(SwitchboardError, LookupError):
    """``call_tool`` named a tool the gateway does not have."""

    def __init__(self, name: str, known: list[str]) -> None:
        listed = ", ".join(sorted(known)) or "none registered"
        super().__init__(f"no agent tool named {name!r} (known: {listed})")
        self.name = name


class AgentToolError(SwitchboardError):
    """An agent-tool call that failed; ``partial`` holds everything received before it failed."""

    reason: str = "error"

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if reason is not None:
            self.reason = reason
        self.partial: AgentToolResult | None = None

    def event_fields(self) -> dict[str, Any]:
        """Extra fields for the error event; subclasses add what a reader needs to act."""
        return {}


class AgentToolTimeout(AgentToolError):
    """A deadline passed: ``idle_timeout``, ``timeout`` (per request), ``headers_timeout`` or ``connect_timeout``."""

    def __init__(self, message: str, *, reason: str, seconds: float) -> None:
        super().__init__(message, reason=reason)
        self.seconds = seconds

    def event_fields(self) -> dict[str, Any]:
        return {"timeout_s": self.seconds}


class BudgetExceeded(AgentToolError):
    """The accumulated cost went above ``max_cost_usd``."""

    reason = "budget_exceeded"

    def __init__(self, cost_usd: float, max_cost_usd: float) -> None:
        super().__init__(f"cost ${cost_usd:.6f} exceeds the budget of ${max_cost_usd:.6f}")
        self.cost_usd = cost_usd
        self.max_cost_usd = max_cost_usd

    def event_fields(self) -> dict[str, Any]:
        return {"max_cost_usd": self.max_cost_usd}


class PeerHTTPError(AgentToolError):
    """The peer answered with an error status (for ``local://``, the status the HTTP binding would use)."""

    reason = "http_error"

    def __init__(self, status: int, message: str, *, code: int | None = None, body: Any = None) -> None:
        super().__init__(f"peer answered HTTP {status}: {message}")
        self.status = status
        self.code = code
        self.body = body

    def event_fields(self) -> dict[str, Any]:
        return {"status": self.status, "code": self.code, "body": self.body}


class PeerRedirect(PeerHTTPError):
    """The peer answered a redirect: not followed (it could lead anywhere), reported with where it pointed."""

    reason = "redirect"

    def __init__(self, status: int, location: str, uri: str) -> None:
        super().__init__(status, f"a redirect to {location}")
        self.message = (
            f"{uri} answered HTTP {status}, a redirect to {location}; redirects are not followed: "
            "use the agent's final URL"
        )
        self.args = (self.message,)
        self.location = location

    def event_fields(self) -> dict[str, Any]:
        return {"status": self.status, "location": self.location}


class PeerRPCError(AgentToolError):
    """The peer answered a JSON-RPC error: it refused or failed the request (``code`` is its A2A code)."""

    reason = "rpc_error"

    def __init__(self, code: int, message: str, *, data: Any = None) -> None:
        super().__init__(f"peer answered JSON-RPC error {code}: {message}")
        self.code = code
        self.body = {"code": code, "message": message, **({"data": data} if data is not None else {})}

    def event_fields(self) -> dict[str, Any]:
        return {"code": self.code, "body": self.body}


class PoolExhausted(AgentToolError):
    """Every connection of the gateway's pool stayed busy for the pool timeout: the gateway's limit, not the agent's."""

    reason = "pool_exhausted"

    def __init__(self, max_connections: int, waited_s: float, uri: str) -> None:
        super().__init__(
            f"all {max_connections} connections of the gateway's pool were busy for {waited_s:g} s, so {uri} "
            "was not called; raise [peers] max_connections (or pool_timeout_secs)"
        )
        self.max_connections = max_connections

    def event_fields(self) -> dict[str, Any]:
        return {"max_connections": self.max_connections}


class PeerConnectionError(AgentToolError):
    """The connection failed or broke (refused, reset, closed mid-stream, MCP server gone)."""

    reason = "connection_error"


class PeerProtocolError(AgentToolError):
    """The exchange with the peer could not go on; ``reason`` says why.

    The peer broke the binding: ``cut_off`` (a stream without a final line),
    ``line_too_long`` (a stream line over ``max_line_bytes``), ``bad_answer`` (an answer
    that is not a Task, card or stream event, a ``metadata.cost_usd`` or
    ``metadata.handoff`` of the wrong shape, an MCP result that cannot be read),
    ``answer_too_large`` (a JSON answer over 16 MiB), ``no_binding`` (its card offers no binding
    the gateway speaks). Or the call cannot be made as asked:
    ``unknown_tool`` (the MCP server has no tool of that name), ``bad_input`` (the input
    cannot be mapped onto the MCP tool's arguments), ``unsupported`` (the transport has no
    such operation, e.g. ``get`` on an MCP tool).
    """


class AgentTaskFailed(AgentToolError):
    """The peer ran the task and it ended ``failed`` or ``canceled`` (not by this call)."""

    def __init__(self, state: str, message: str) -> None:
        super().__init__(f"the agent's task ended {state}: {message}" if message else f"the agent's task ended {state}")
        self.reason = "task_" + state.replace("-", "_")
        self.state = state

    def event_fields(self) -> dict[str, Any]:
        return {"state": self.state}


class SwarmError(SwitchboardError):
    """Base class of the swarm's own errors, so callers can tell a wiring mistake from a lost race."""


class AgentHandoffError(SwarmError):
    """A transfer named an agent the runner cannot resolve (not registered, bad URI)."""

    def __init__(self, message: str, *, target: str | None = None) -> None:
        super().__init__(message)
        self.target = target


class SessionNotFound(SwarmError):
    """The session belongs to another caller: to this one it does not exist."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session {session_id!r}")
        self.session_id = session_id


class SessionConflictError(SwarmError):
    """Another turn saved the session first; this turn's changes were not written.

    Raised instead of overwriting, so no update is ever lost silently. The caller decides
    whether to resend the user message (the turn may have had side effects already).
    """

    def __init__(self, session_id: str, expected_version: int, actual_version: int) -> None:
        super().__init__(
            f"session {session_id!r} changed while this turn ran "
            f"(expected version {expected_version}, found {actual_version}); nothing was saved"
        )
        self.session_id = session_id
        self.expected_version = expected_version
        self.actual_version = actual_version


class SessionLockLost(SessionConflictError):
    """The turn's lock on the session expired (its process stalled past the lease) and its save was refused."""

    def __init__(self, session_id: str, expected_version: int, actual_version: int) -> None:
        super().__init__(session_id, expected_version, actual_version)
        self.args = (
            f"session {session_id!r}: this turn's lock on it expired and another may hold it now; nothing was saved",
        )


class SessionBusy(SwarmError):
    """Another process held the session for longer than the lock wait; the turn did not start."""

    def __init__(self, session_id: str, waited_s: float) -> None:
        super().__init__(
            f"session {session_id!r} is busy: another gateway replica has held it for {waited_s:g} s; retry later"
        )
        self.session_id = session_id


class RunClosedError(SwitchboardError):
    """An append to a run the event log has closed: another replica took this one for dead and closed its run."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id!r} is closed; nothing more can be appended to it")
        self.run_id = run_id


class ModelError(SwitchboardError):
    """A model call failed; the message carries the provider's own explanation."""

    def __init__(self, message: str, *, status_code: int | None = None, provider_message: str | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.provider_message = provider_message


class ModelAuthError(ModelError):
    """The provider refused the credentials (401/403); retrying will not help."""


class ModelNotConfigured(ModelError):
    """A model name that no provider resolves (``gpt-4o`` with no OpenAI-compatible endpoint set up).

    The message says exactly what to set; the runner raises it before a turn starts.
    """


class ScriptExhaustedError(ModelError):
    """A ScriptedModel was asked for more turns than its script holds."""


class ToolArgumentError(SwitchboardError, ValueError):
    """The model's arguments do not fit the tool's parameters; the message names them."""

    def __init__(self, tool_name: str, message: str, parameters: list[str]) -> None:
        super().__init__(message)
        self.tool_name = tool_name
        self.parameters = parameters


class BoardError(SwitchboardError):
    """Base class of the blackboard's errors."""


class BoardConflict(BoardError):
    """The board changed since the version the writer read; nothing was written. ``current`` is the board now."""

    def __init__(self, name: str, expected_version: int, current: Any) -> None:
        super().__init__(
            f"board {name!r} is at version {current.version}, not {expected_version}: read it again, then write"
        )
        self.name = name
        self.expected_version = expected_version
        self.current = current


class BoardNotFound(BoardError, LookupError):
    """No board of that name this caller may see: another caller's, or none written yet."""


class BoardTooLarge(BoardError, ValueError):
    """A write that would make a board larger than its limits (size, key length); nothing was written."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a configuration: where the value came from, its key, and why it is refused."""

    origin: str
    key: str
    reason: str

    def __str__(self) -> str:
        return f"{self.origin}: {self.key}: {self.reason}" if self.key else f"{self.origin}: {self.reason}"


class ConfigError(SwitchboardError, ValueError):
    """The configuration cannot be used; ``problems`` lists each reason, the message shows them all."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__("\n".join(str(problem) for problem in problems))
        self.problems = list(problems)

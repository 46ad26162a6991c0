"""The errors of agent-tool calls: one type per kind of failure, each carrying what was received.

Every ``AgentToolError`` has a ``reason`` (the word recorded in the event log) and, once the
call has caught it, ``partial``: the ``AgentToolResult`` accumulated before the failure, so
that chunks already received are never lost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .agent_result import AgentToolResult


class InvalidAgentURI(ValueError):
    """An agent URI that none of the schemes describes; the message shows the accepted forms."""

    def __init__(self, uri: str, problem: str) -> None:
        from .uri import EXPECTED_FORMS

        super().__init__(f"invalid agent URI {uri!r}: {problem}. Expected one of: {EXPECTED_FORMS}")
        self.uri = uri
        self.problem = problem


class UnknownAgentTool(LookupError):
    """``call_tool`` named a tool the gateway does not have."""

    def __init__(self, name: str, known: list[str]) -> None:
        listed = ", ".join(sorted(known)) or "none registered"
        super().__init__(f"no agent tool named {name!r} (known: {listed})")
        self.name = name


class AgentToolError(Exception):
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


class PoolExhausted(AgentToolError):
    """Every connection of the gateway's pool was busy for the whole pool timeout: the gateway's limit, not the agent's fault."""

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
    ``answer_too_large`` (a JSON answer over 16 MiB). Or the call cannot be made as asked:
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

"""What the gateway API refuses: the service's own error codes beside the A2A ones, and one class per answer.

Each is a ``ProtocolError`` (protocol/errors.py), so the HTTP plumbing answers it like any
other refusal: ``{"error": {"code", "message", "data"?}}`` with its HTTP status.
"""

from __future__ import annotations

import enum
from typing import Any

from protocol import ErrorCode, ProtocolError


class ApiErrorCode(enum.IntEnum):
    """The service's own error codes, next to the A2A ones of protocol.ErrorCode (same JSON-RPC server range)."""

    NOT_FOUND = -32010
    CONFLICT = -32011
    AGENT_UNREACHABLE = -32012
    AGENT_TOOL_FAILED = -32013
    RUN_FAILED = -32014
    SHUTTING_DOWN = -32015
    FORBIDDEN = -32016


class ServiceError(ProtocolError):
    """A request the service refuses; subclasses fix the HTTP ``status`` and the error ``code``."""

    status = 400
    error_code: int = ErrorCode.INVALID_PARAMS

    def __init__(self, message: str, *, data: Any = None) -> None:
        super().__init__(self.error_code, message, data=data, http_status=self.status)


class Forbidden(ServiceError):
    status = 403
    error_code = ApiErrorCode.FORBIDDEN


class NotFound(ServiceError):
    status = 404
    error_code = ApiErrorCode.NOT_FOUND


class Conflict(ServiceError):
    status = 409
    error_code = ApiErrorCode.CONFLICT


class AgentUnreachable(ServiceError):
    status = 502
    error_code = ApiErrorCode.AGENT_UNREACHABLE

    @property
    def may_heal(self) -> bool:
        """Nothing answered yet (or a proxy said 5xx): a service still starting; a 404 or a bad card will not heal."""
        data = self.data or {}
        return data.get("reason") in ("connection_error", "timeout") or data.get("status", 0) >= 500


class ShuttingDown(ServiceError):
    status = 503
    error_code = ApiErrorCode.SHUTTING_DOWN

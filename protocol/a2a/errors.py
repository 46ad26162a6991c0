"""How each binding spells an A2A error: its reason word, its HTTP status and its gRPC status, in one table.

The JSON-RPC, HTTP+JSON and gRPC bindings (and the gateway's peers of them) all read it.

The specification maps every A2A error onto each binding (its "Error Code Mappings"): the
JSON-RPC code is ``ErrorCode`` itself; the HTTP+JSON binding answers with the HTTP status
and a ``google.rpc.Status`` body whose ``details`` lead with a ``google.rpc.ErrorInfo``
naming the reason (``TASK_NOT_FOUND``) in the ``a2a-protocol.org`` domain, so a client
tells apart errors that share a status. The JSON-RPC binding of 1.0 carries the same
ErrorInfo in ``data`` (rpc.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protocol.errors import ErrorCode, ProtocolError

ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST_TYPE = "type.googleapis.com/google.rpc.BadRequest"
ERROR_DOMAIN = "a2a-protocol.org"


@dataclass(frozen=True)
class ErrorKind:
    """One error as the bindings name it."""

    reason: str
    http_status: int
    grpc_status: str
    a2a_specific: bool = True
    """An error of A2A's own (not one of JSON-RPC's generic ones): JSON-RPC 1.0 names its reason too."""


ERROR_KINDS: dict[int, ErrorKind] = {
    ErrorCode.TASK_NOT_FOUND: ErrorKind("TASK_NOT_FOUND", 404, "NOT_FOUND"),
    ErrorCode.TASK_NOT_CANCELABLE: ErrorKind("TASK_NOT_CANCELABLE", 400, "FAILED_PRECONDITION"),
    ErrorCode.PUSH_NOTIFICATION_NOT_SUPPORTED: ErrorKind("PUSH_NOTIFICATION_NOT_SUPPORTED", 400, "FAILED_PRECONDITION"),
    ErrorCode.UNSUPPORTED_OPERATION: ErrorKind("UNSUPPORTED_OPERATION", 400, "FAILED_PRECONDITION"),
    ErrorCode.CONTENT_TYPE_NOT_SUPPORTED: ErrorKind("CONTENT_TYPE_NOT_SUPPORTED", 400, "INVALID_ARGUMENT"),
    ErrorCode.INVALID_AGENT_RESPONSE: ErrorKind("INVALID_AGENT_RESPONSE", 500, "INTERNAL"),
    ErrorCode.EXTENDED_AGENT_CARD_NOT_CONFIGURED: ErrorKind(
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED", 400, "FAILED_PRECONDITION"
    ),
    ErrorCode.EXTENSION_SUPPORT_REQUIRED: ErrorKind("EXTENSION_SUPPORT_REQUIRED", 400, "FAILED_PRECONDITION"),
    ErrorCode.VERSION_NOT_SUPPORTED: ErrorKind("VERSION_NOT_SUPPORTED", 400, "FAILED_PRECONDITION"),
    ErrorCode.PARSE_ERROR: ErrorKind("INVALID_REQUEST", 400, "INVALID_ARGUMENT", a2a_specific=False),
    ErrorCode.INVALID_REQUEST: ErrorKind("INVALID_REQUEST", 400, "INVALID_ARGUMENT", a2a_specific=False),
    ErrorCode.INVALID_PARAMS: ErrorKind("INVALID_PARAMS", 400, "INVALID_ARGUMENT", a2a_specific=False),
    ErrorCode.METHOD_NOT_FOUND: ErrorKind("METHOD_NOT_FOUND", 404, "NOT_FOUND", a2a_specific=False),
    ErrorCode.INTERNAL_ERROR: ErrorKind("INTERNAL_ERROR", 500, "INTERNAL", a2a_specific=False),
}
CODE_OF_REASON: dict[str, int] = {kind.reason: code for code, kind in ERROR_KINDS.items()}
"""The later entry wins: INVALID_REQUEST reads back as -32600, not as the parse error that shares its reason."""
_HTTP_LAYER = frozenset({401, 403, 405, 413, 415, 503})
"""Statuses of a refusal before the request was read as an operation (token, size, content type): kept as given."""
GRPC_OF_HTTP = {
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    413: "RESOURCE_EXHAUSTED",
    429: "RESOURCE_EXHAUSTED",
    503: "UNAVAILABLE",
}
"""Refusals that are not A2A errors keep the meaning of their HTTP status (a missing token, a server at its limit)."""
_CALLER_REFUSALS = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED"}
"""A refusal of who calls is no A2A error: its ErrorInfo names the refusal, so no client reads it as a bad request."""


def error_info(reason: str, metadata: dict[str, str] | None = None) -> dict[str, Any]:
    return {"@type": ERROR_INFO_TYPE, "reason": reason, "domain": ERROR_DOMAIN, "metadata": metadata or {}}


def http_status(error: ProtocolError) -> int:
    """The HTTP+JSON binding's status for ``error``: the specification's, except for a refusal of the HTTP layer."""
    kind = ERROR_KINDS.get(error.code)
    if kind is None or error.http_status in _HTTP_LAYER:
        return error.http_status
    return kind.http_status


def status_body(error: ProtocolError) -> dict[str, Any]:
    """``error`` as the HTTP+JSON binding's body: ``{"error": {"code", "status", "message", "details"}}``.

    ``details`` leads with the ErrorInfo of its reason; field problems (``data`` as
    ``[{"field", "problem"}]``) follow as a ``google.rpc.BadRequest``; a ``data`` object
    becomes the ErrorInfo's ``metadata`` (values as text, as ErrorInfo holds them).
    """
    status = http_status(error)
    kind = ERROR_KINDS.get(error.code)
    reason = _CALLER_REFUSALS.get(status) or (kind.reason if kind is not None else "UNKNOWN_ERROR")
    grpc = GRPC_OF_HTTP.get(status) or (kind.grpc_status if kind is not None else "UNKNOWN")
    data = error.data
    metadata = {str(key): _text(value) for key, value in data.items()} if isinstance(data, dict) else None
    details: list[dict[str, Any]] = [error_info(reason, metadata)]
    if isinstance(data, list):
        violations = [
            {"field": str(item.get("field", "")), "description": str(item.get("problem", ""))}
            for item in data
            if isinstance(item, dict)
        ]
        if violations:
            details.append({"@type": BAD_REQUEST_TYPE, "fieldViolations": violations})
    return {"error": {"code": status, "status": grpc, "message": error.message, "details": details}}


def error_of_status(body: Any) -> tuple[int, str] | None:
    """The A2A code and message of an HTTP+JSON error body (its ErrorInfo's reason); None when it is none."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None
    message = error.get("message")
    for detail in error.get("details") or []:
        if isinstance(detail, dict) and detail.get("@type") == ERROR_INFO_TYPE:
            code = CODE_OF_REASON.get(str(detail.get("reason")))
            if code is not None:
                return code, message if isinstance(message, str) else "(no message)"
    return None


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value))
    return value if isinstance(value, str) else str(value)

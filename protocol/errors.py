"""A2A error codes, the root of the project's errors and the one exception for protocol failures.

No pydantic at import (the error body's model is error_body.py): a command that only prints
its help, and raises these, does not load it.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError

    from protocol.error_body import ErrorBody


class ErrorCode(enum.IntEnum):
    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    TASK_NOT_FOUND = -32001
    TASK_NOT_CANCELABLE = -32002
    PUSH_NOTIFICATION_NOT_SUPPORTED = -32003
    UNSUPPORTED_OPERATION = -32004
    CONTENT_TYPE_NOT_SUPPORTED = -32005
    INVALID_AGENT_RESPONSE = -32006
    EXTENDED_AGENT_CARD_NOT_CONFIGURED = -32007
    EXTENSION_SUPPORT_REQUIRED = -32008
    VERSION_NOT_SUPPORTED = -32009


_DEFAULT_HTTP_STATUS = {
    ErrorCode.PARSE_ERROR: 400,
    ErrorCode.INVALID_REQUEST: 400,
    ErrorCode.METHOD_NOT_FOUND: 404,
    ErrorCode.INVALID_PARAMS: 400,
    ErrorCode.INTERNAL_ERROR: 500,
    ErrorCode.TASK_NOT_FOUND: 404,
    ErrorCode.TASK_NOT_CANCELABLE: 409,
    ErrorCode.PUSH_NOTIFICATION_NOT_SUPPORTED: 400,
    ErrorCode.UNSUPPORTED_OPERATION: 400,
    ErrorCode.CONTENT_TYPE_NOT_SUPPORTED: 415,
    ErrorCode.INVALID_AGENT_RESPONSE: 502,
    ErrorCode.EXTENDED_AGENT_CARD_NOT_CONFIGURED: 400,
    ErrorCode.EXTENSION_SUPPORT_REQUIRED: 400,
    ErrorCode.VERSION_NOT_SUPPORTED: 400,
}


class SwitchboardError(Exception):
    """The root of every error the project raises on purpose (the tree: gateway/errors.py)."""


class ProtocolError(SwitchboardError):
    """A request the binding refuses, or an error answer read back from a peer."""

    def __init__(self, code: int, message: str, *, data: Any = None, http_status: int | None = None) -> None:
        super().__init__(message)
        self.code = int(code)
        self.message = message
        self.data = data
        self.http_status = http_status or _DEFAULT_HTTP_STATUS.get(self.code, 400)  # type: ignore[call-overload]

    def to_body(self) -> ErrorBody:
        from protocol.error_body import ErrorBody, ErrorDetail

        return ErrorBody(error=ErrorDetail(code=self.code, message=self.message, data=self.data))

    @classmethod
    def from_validation_error(cls, exc: ValidationError, what: str = "params") -> ProtocolError:
        """Names the offending fields, e.g. ``invalid params: message.parts: Field required``; the first
        MAX_LISTED_PROBLEMS of them, so that a body of 100,000 bad items is not answered with megabytes."""
        errors = exc.errors(include_url=False)[:MAX_LISTED_PROBLEMS]
        problems = [f"{dotted_path(e['loc'])}: {e['msg']}" if e["loc"] else e["msg"] for e in errors]
        return cls(
            ErrorCode.INVALID_PARAMS,
            f"invalid {what}: " + "; ".join(problems) + more_problems(exc.error_count() - len(errors)),
            data=[{"field": dotted_path(e["loc"]), "problem": e["msg"]} for e in errors],
        )

    @classmethod
    def invalid_param(cls, field: str, problem: str, hint: str = "") -> ProtocolError:
        """-32602 for one field, e.g. ``invalid params: afterSeq: PROBLEM; HINT``, the field named in ``data``."""
        return cls(
            ErrorCode.INVALID_PARAMS,
            f"invalid params: {field}: {problem}" + (f"; {hint}" if hint else ""),
            data=[{"field": field, "problem": problem}],
        )

    def __repr__(self) -> str:
        return f"ProtocolError(code={self.code}, message={self.message!r})"


MAX_LISTED_PROBLEMS = 10
"""How many of a request's validation problems an error names."""


def more_problems(count: int) -> str:
    """The end of an error message that lists only some problems: ``; and 7 more``."""
    return f"; and {count} more" if count > 0 else ""


def dotted_path(loc: tuple[Any, ...]) -> str:
    """A validation error's location as a person writes it: ``("tools", 0, "mode")`` -> ``tools[0].mode``."""
    out = ""
    for item in loc:
        if isinstance(item, int):
            out += f"[{item}]"
        else:
            out += ("." if out else "") + str(item)
    return out

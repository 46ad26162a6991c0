"""The error body's model (``ProtocolError.to_body``), apart from errors.py: raising an error needs no pydantic."""

from __future__ import annotations

from typing import Any

from protocol._wire import WireModel


class ErrorDetail(WireModel):
    code: int
    message: str
    data: Any = None


class ErrorBody(WireModel):
    """``{"error": {"code", "message", "data"?}}``, the body of every error response."""

    error: ErrorDetail

"""Request bodies come plain or wrapped in a JSON-RPC 2.0 envelope; answers follow suit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from .errors import ErrorCode, ProtocolError

P = TypeVar("P", bound=BaseModel)

RpcId = str | int | None


@dataclass(frozen=True)
class Envelope:
    """The JSON-RPC envelope a request came in; ``rpc_id`` is None when the caller sent none."""

    rpc_id: RpcId

    def wrap_result(self, result: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.rpc_id, "result": result}

    def wrap_error(self, error: ProtocolError) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.rpc_id, **error.to_body().to_wire()}


@dataclass(frozen=True)
class ParsedRequest(Generic[P]):
    params: P
    envelope: Envelope | None


class EnvelopedProtocolError(ProtocolError):
    """A ProtocolError raised after the envelope was read, so the answer can be wrapped too."""

    def __init__(self, error: ProtocolError, envelope: Envelope) -> None:
        super().__init__(error.code, error.message, data=error.data, http_status=error.http_status)
        self.envelope = envelope


def parse_request(body: bytes, model: type[P], method: str) -> ParsedRequest[P]:
    """Parse a plain or enveloped body for ``method`` (e.g. ``tasks/send``) into ``model``."""
    try:
        obj = orjson.loads(body) if body.strip() else None
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(ErrorCode.PARSE_ERROR, f"request body is not valid JSON: {exc}") from None
    if obj is None:
        raise ProtocolError(ErrorCode.INVALID_REQUEST, f"request body is empty; {method} expects a JSON object")
    if not isinstance(obj, dict):
        raise ProtocolError(ErrorCode.INVALID_REQUEST, f"request body must be a JSON object, got {type(obj).__name__}")
    envelope: Envelope | None = None
    payload: Any = obj
    if "jsonrpc" in obj:
        envelope = Envelope(rpc_id=obj.get("id"))
        payload = _unwrap(obj, method, envelope)
    try:
        return ParsedRequest(params=model.model_validate(payload), envelope=envelope)
    except ValidationError as exc:
        error = ProtocolError.from_validation_error(exc)
        raise (EnvelopedProtocolError(error, envelope) if envelope else error) from None


def _unwrap(obj: dict[str, Any], method: str, envelope: Envelope) -> Any:
    def fail(code: ErrorCode, message: str) -> EnvelopedProtocolError:
        return EnvelopedProtocolError(ProtocolError(code, message), envelope)

    if obj.get("jsonrpc") != "2.0":
        raise fail(ErrorCode.INVALID_REQUEST, 'the envelope\'s "jsonrpc" must be "2.0"')
    sent = obj.get("method")
    if sent is not None and sent != method:
        raise fail(ErrorCode.METHOD_NOT_FOUND, f"method {sent!r} was sent to the endpoint of {method!r}")
    params = obj.get("params")
    if not isinstance(params, dict):
        raise fail(ErrorCode.INVALID_PARAMS, 'the envelope needs "params", a JSON object')
    return params

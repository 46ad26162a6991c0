"""Request bodies come plain or wrapped in a JSON-RPC 2.0 envelope; answers follow suit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from protocol.errors import ErrorCode, ProtocolError

P = TypeVar("P", bound=BaseModel)

RpcId = str | int | float | None

MAX_JSON_DEPTH = 64
"""Deepest nesting a request body may have. Far above any real message, and far below the
depth at which serializing a stored task (which nests the message a few levels further)
would fail and leave it unreadable."""

_JSON_TYPE_NAMES = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


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


@dataclass(frozen=True)
class Call:
    """A JSON-RPC 2.0 request to an endpoint that serves many methods: which one, its params, its envelope."""

    method: str
    params: dict[str, Any]
    envelope: Envelope


class EnvelopedProtocolError(ProtocolError):
    """A ProtocolError raised after the envelope was read, so the answer can be wrapped too."""

    def __init__(self, error: ProtocolError, envelope: Envelope) -> None:
        super().__init__(error.code, error.message, data=error.data, http_status=error.http_status)
        self.envelope = envelope


def parse_request(body: bytes, model: type[P], method: str) -> ParsedRequest[P]:
    """Parse a plain or enveloped body for ``method`` (e.g. ``tasks/send``) into ``model``."""
    obj = parse_json_object(body, method)
    envelope: Envelope | None = None
    payload: Any = obj
    if "jsonrpc" in obj:
        envelope = _envelope(obj)
        payload = _unwrap(obj, method, envelope)
    try:
        return ParsedRequest(params=model.model_validate(payload), envelope=envelope)
    except ValidationError as exc:
        error = ProtocolError.from_validation_error(exc)
        raise (EnvelopedProtocolError(error, envelope) if envelope else error) from None


def parse_call(body: bytes) -> Call:
    """A JSON-RPC 2.0 request naming its ``method`` (params by name; absent params are ``{}``).

    A body that is no JSON object is refused with a plain ProtocolError (no id could be
    read); what is wrong inside the envelope, with an EnvelopedProtocolError.
    """
    obj = parse_json_object(body, "a JSON-RPC request")
    envelope = _envelope(obj)

    def fail(code: ErrorCode, message: str) -> EnvelopedProtocolError:
        return EnvelopedProtocolError(ProtocolError(code, message), envelope)

    if obj.get("jsonrpc") != "2.0":
        raise fail(ErrorCode.INVALID_REQUEST, 'the request\'s "jsonrpc" must be "2.0"')
    method = obj.get("method")
    if not isinstance(method, str) or not method:
        raise fail(ErrorCode.INVALID_REQUEST, 'the request needs a "method", a string such as "SendMessage"')
    params = obj.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise fail(ErrorCode.INVALID_PARAMS, '"params" must be a JSON object (parameters by name)')
    return Call(method=method, params=params, envelope=envelope)


def parse_params(call: Call, model: type[P]) -> P:
    """The call's params as ``model``; invalid ones are refused naming each field, in the call's envelope."""
    try:
        return model.model_validate(call.params)
    except ValidationError as exc:
        raise EnvelopedProtocolError(ProtocolError.from_validation_error(exc), call.envelope) from None


def json_depth(value: Any) -> int:
    """How deeply arrays and objects nest in ``value`` (a scalar is 0), without recursing.

    A level at a time, keeping only the containers of the next one: no tuple per value walked,
    on a walk that every request's body takes.
    """
    depth = 0
    level = [value] if isinstance(value, _CONTAINERS) else []
    while level:
        depth += 1
        nested = []
        for item in level:
            for child in item.values() if isinstance(item, dict) else item:
                if isinstance(child, _CONTAINERS):
                    nested.append(child)
        level = nested
    return depth


_CONTAINERS = (dict, list, tuple)


def parse_json_object(body: bytes, method: str) -> dict[str, Any]:
    """A request body that must be one JSON object, UTF-8, at most MAX_JSON_DEPTH deep; ``method`` names the
    request in the error messages."""
    if not body.strip():
        raise ProtocolError(ErrorCode.INVALID_REQUEST, f"request body is empty; {method} expects a JSON object")
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(
            ErrorCode.PARSE_ERROR,
            f"request body is not UTF-8 (byte 0x{body[exc.start]:02x} at offset {exc.start}); "
            "send JSON encoded as UTF-8",
        ) from None
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(ErrorCode.PARSE_ERROR, f"request body is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        got = "null" if obj is None else _JSON_TYPE_NAMES.get(type(obj), type(obj).__name__)
        raise ProtocolError(ErrorCode.INVALID_REQUEST, f"request body must be a JSON object, got {got}")
    depth = json_depth(obj)
    if depth > MAX_JSON_DEPTH:
        raise ProtocolError(
            ErrorCode.INVALID_REQUEST,
            f"request body nests {depth} levels deep; the limit is {MAX_JSON_DEPTH} (flatten the data)",
        )
    return obj


def _envelope(obj: dict[str, Any]) -> Envelope:
    """JSON-RPC 2.0: an ``id`` is a string, a number or null; anything else is answered with id null."""
    rpc_id = obj.get("id")
    if rpc_id is None or (isinstance(rpc_id, str | int | float) and not isinstance(rpc_id, bool)):
        return Envelope(rpc_id=rpc_id)
    got = _JSON_TYPE_NAMES.get(type(rpc_id), "an object")
    raise EnvelopedProtocolError(
        ProtocolError(ErrorCode.INVALID_REQUEST, f'the envelope\'s "id" must be a string, a number or null, not {got}'),
        Envelope(rpc_id=None),
    )


def _unwrap(obj: dict[str, Any], method: str, envelope: Envelope) -> Any:
    def fail(code: ErrorCode, message: str) -> EnvelopedProtocolError:
        return EnvelopedProtocolError(ProtocolError(code, message), envelope)

    if obj.get("jsonrpc") != "2.0":
        raise fail(ErrorCode.INVALID_REQUEST, 'the envelope\'s "jsonrpc" must be "2.0"')
    sent = obj.get("method")
    if sent is not None and not isinstance(sent, str):
        raise fail(ErrorCode.INVALID_REQUEST, f'the envelope\'s "method" must be a string such as "{method}"')
    if sent is not None and sent != method:
        raise fail(ErrorCode.METHOD_NOT_FOUND, f"method {sent!r} was sent to the endpoint of {method!r}")
    params = obj.get("params")
    if not isinstance(params, dict):
        raise fail(ErrorCode.INVALID_PARAMS, 'the envelope needs "params", a JSON object')
    return params

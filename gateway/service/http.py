"""HTTP plumbing of the gateway API: JSON in and out, errors as ``{"error": {"code", "message", "data"?}}``.

Errors use the body and codes of the A2A binding (protocol.ErrorCode) where they fit,
plus the service's own (core.ServiceError subclasses) for missing, clashing and
unreachable things; the HTTP status always says the same as the code.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import wraps
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from protocol import NDJSON_MEDIA_TYPE, ErrorCode, ProtocolError

from ..config import describe_error, format_loc
from .core import GatewayService, ServiceError

logger = logging.getLogger("gateway.service")

M = TypeVar("M", bound=BaseModel)
Endpoint = Callable[[Request], Awaitable[Response]]

JSON_MEDIA_TYPE = "application/json"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


def json_response(content: Any, status_code: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(content), status_code=status_code, media_type=JSON_MEDIA_TYPE, headers=headers)


def ndjson_response(lines: AsyncIterator[bytes], headers: dict[str, str] | None = None) -> Response:
    """Lines go out as they are produced; Starlette stops the iterator when the client goes away."""
    return StreamingResponse(
        lines,
        media_type=NDJSON_MEDIA_TYPE,
        headers={"cache-control": "no-store", "x-accel-buffering": "no", **(headers or {})},
    )


def error_response(
    status: int, code: int, message: str, data: Any = None, headers: dict[str, str] | None = None
) -> Response:
    body = ProtocolError(code, message, data=data, http_status=status).to_body().to_wire()
    return json_response(body, status_code=status, headers=headers)


def guarded(endpoint: Endpoint) -> Endpoint:
    """Refusals become their JSON error; anything unexpected a logged 500 that says what broke."""

    @wraps(endpoint)
    async def guarded_endpoint(request: Request) -> Response:
        try:
            return await endpoint(request)
        except ServiceError as exc:
            return error_response(exc.status, exc.code, exc.message, exc.data)
        except ProtocolError as exc:
            return error_response(exc.http_status, exc.code, exc.message, exc.data)
        except HTTPException:
            raise
        except Exception as exc:
            logger.exception("%s %s failed", request.method, request.url.path)
            return error_response(500, ErrorCode.INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}")

    return guarded_endpoint


async def read_body(request: Request, model: type[M], limit: int) -> M:
    """The JSON body as ``model``: 415 for another content type, 413 over ``limit``, 400 naming each bad field."""
    _check_content_type(request)
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > limit:
            raise ProtocolError(
                ErrorCode.INVALID_REQUEST, f"request body is larger than the limit of {limit} bytes", http_status=413
            )
    try:
        data = orjson.loads(raw) if raw.strip() else {}
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(ErrorCode.PARSE_ERROR, f"the body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProtocolError(ErrorCode.INVALID_REQUEST, f"the body must be a JSON object, got {_json_type(data)}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid_fields(exc, model) from None


def invalid_fields(exc: ValidationError, model: type[BaseModel]) -> ProtocolError:
    """``invalid body: mode: unknown mode 'fast' (...)``, with every problem also listed in ``data``."""
    allowed = list(model.model_fields)
    problems = [
        {"field": format_loc(tuple(e["loc"])), "problem": describe_error(e, allowed if len(e["loc"]) == 1 else None)}
        for e in exc.errors()
    ]
    message = "invalid body: " + "; ".join(f"{p['field']}: {p['problem']}" if p["field"] else p["problem"] for p in problems)
    return ProtocolError(ErrorCode.INVALID_PARAMS, message, data=problems)


def _json_type(value: Any) -> str:
    """The JSON name of a parsed value's type (``null``, not ``NoneType``)."""
    names = {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list"}
    return names.get(type(value), type(value).__name__)


def query_int(request: Request, name: str, default: int, *, minimum: int, maximum: int | None = None) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = minimum - 1
    if value < minimum or (maximum is not None and value > maximum):
        bounds = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise ProtocolError(ErrorCode.INVALID_PARAMS, f"query parameter {name} must be an integer {bounds}, got {raw!r}")
    return value


def query_bool(request: Request, name: str) -> bool:
    raw = request.query_params.get(name)
    if raw is None:
        return False
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise ProtocolError(ErrorCode.INVALID_PARAMS, f"query parameter {name} must be 1 or 0 (true or false), got {raw!r}")


def _check_content_type(request: Request) -> None:
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    json_like = media_type == JSON_MEDIA_TYPE or (media_type.startswith("application/") and media_type.endswith("+json"))
    if media_type and not json_like:
        raise ProtocolError(
            ErrorCode.CONTENT_TYPE_NOT_SUPPORTED,
            f"content type {media_type!r} is not supported; send the JSON body with 'Content-Type: application/json'",
            http_status=415,
        )


def service_of(request: Request) -> GatewayService:
    """The running service (set by the app's lifespan)."""
    service = getattr(request.app.state, "service", None)
    if service is None:
        raise ProtocolError(ErrorCode.INTERNAL_ERROR, "the gateway was started without its lifespan", http_status=503)
    return service


def body_limit(request: Request) -> int:
    return int(getattr(request.app.state, "max_body_bytes", 1 << 20))

"""Request parsing of the gateway API: typed JSON bodies, query parameters, the running service.

Responses and errors use the agent server's HTTP plumbing (``agent_server.http.responses``), so both
services answer alike: errors are ``{"error": {"code", "message", "data"?}}`` with the
binding's codes (protocol.ErrorCode) or the service's own (core.ServiceError subclasses,
themselves ProtocolErrors), and the HTTP status always says the same as the code.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import wraps
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent_server.http.auth import ScopeName, require_scope
from agent_server.http.responses import Endpoint, check_content_type, guarded, read_body as read_limited_body
from gateway.config.load import describe_error
from gateway.service.core import GatewayService
from protocol import MAX_LISTED_PROBLEMS, ErrorCode, ProtocolError, dotted_path, more_problems, parse_json_object

M = TypeVar("M", bound=BaseModel)

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


async def read_body(request: Request, model: type[M], limit: int) -> M:
    """The JSON body as ``model``: 415 for another content type, 413 over ``limit``, 400 naming each bad field."""
    check_content_type(request)
    raw = await read_limited_body(request, limit)
    data = parse_json_object(raw, f"{request.method} {request.url.path}") if raw.strip() else {}
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid_fields(exc, model) from None


def invalid_fields(exc: ValidationError, model: type[BaseModel]) -> ProtocolError:
    """``invalid body: mode: unknown mode 'fast' (...)``, each problem in ``data``; the first MAX_LISTED_PROBLEMS."""
    allowed = list(model.model_fields)
    problems = [
        {"field": dotted_path(tuple(e["loc"])), "problem": describe_error(e, allowed if len(e["loc"]) == 1 else None)}
        for e in exc.errors(include_url=False)[:MAX_LISTED_PROBLEMS]
    ]
    message = "invalid body: " + "; ".join(
        f"{p['field']}: {p['problem']}" if p["field"] else p["problem"] for p in problems
    )
    message += more_problems(exc.error_count() - len(problems))
    return ProtocolError(ErrorCode.INVALID_PARAMS, message, data=problems)


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
        raise ProtocolError(
            ErrorCode.INVALID_PARAMS, f"query parameter {name} must be an integer {bounds}, got {raw!r}"
        )
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


def api_route(path: str, endpoint: Endpoint, methods: Sequence[str], *, scope: ScopeName = "admin") -> Route:
    """A route of the API: the caller's token must have ``scope`` (admin unless the route says chat); JSON refusals.

    What other replicas registered is applied first, so every route sees the swarm as it is now.
    """

    @wraps(endpoint)
    async def scoped(request: Request) -> Response:
        require_scope(request, scope)
        await service_of(request).sync_registrations()
        return await endpoint(request)

    return Route(path, guarded(scoped), methods=list(methods))


def service_of(request: Request) -> GatewayService:
    """The running service (set by the app's lifespan)."""
    service: GatewayService | None = getattr(request.app.state, "service", None)
    if service is None:
        raise ProtocolError(ErrorCode.INTERNAL_ERROR, "the gateway was started without its lifespan", http_status=503)
    return service


def body_limit(request: Request) -> int:
    return int(getattr(request.app.state, "max_body_bytes", 1 << 20))

"""The gateway API as an OpenAPI 3.1 document (``GET /openapi.json``), made from the app's own route table.

The paths and methods are read from the routes the app serves, so the document cannot miss
one; the request bodies are the pydantic models the routes read (gateway/service/bodies.py),
as JSON Schema; each operation says whether it needs a token and which scope. The standard
A2A faces (``POST /``, ``/tasks``, ``/a2a/rest``, ``/proxy/{name}``, ``/mcp``) are listed by
path and described by their own specifications (docs/a2a.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel
from starlette.routing import BaseRoute, Mount, Route

from gateway.service.bodies import (
    BoardBody,
    DefineToolBody,
    MessageBody,
    RegisterAgentBody,
    SessionAgentBody,
    ToolCallBody,
)

OPENAPI_PATH = "/openapi.json"
BODIES: dict[tuple[str, str], type[BaseModel]] = {
    ("POST", "/agents"): RegisterAgentBody,
    ("POST", "/tools"): DefineToolBody,
    ("POST", "/tools/{name}/call"): ToolCallBody,
    ("POST", "/sessions/{session_id}/messages"): MessageBody,
    ("PUT", "/sessions/{session_id}/agent"): SessionAgentBody,
    ("PUT", "/sessions/{session_id}/board"): BoardBody,
    ("PUT", "/boards/{name}"): BoardBody,
}
"""The JSON body each API route reads, by method and path."""
_STANDARD = "standard A2A (JSON-RPC v1.0/v0.3, HTTP+JSON, A2A-NDJSON) or MCP: see docs/a2a.md"
_PARAMETER = re.compile(r"\{([^}:]+)(?::[^}]+)?\}")
_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "data": {}},
        }
    },
}

IsPublic = Callable[[str, str], bool]


def openapi_document(routes: Sequence[BaseRoute], *, title: str, is_public: IsPublic) -> dict[str, Any]:
    """The document for ``routes`` (an app's route table); ``is_public``: which need no token (the app's rule)."""
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        if isinstance(route, Mount):
            path = _spec_path(route.path) + "/{path}"
            paths.setdefault(path, {})["post"] = _operation("POST", path, None, is_public)
        elif isinstance(route, Route):
            path = _spec_path(route.path)
            every = {"GET"} if path.startswith("/.well-known") else {"GET", "POST"}  # an ASGI app's route
            for method in sorted((route.methods or every) - {"HEAD"}):
                paths.setdefault(path, {})[method.lower()] = _operation(method, path, route.endpoint, is_public)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": "1",
            "description": "The Switchboard gateway's API (docs/gateway-service.md).",
        },
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Error": _ERROR},
        },
    }


def _operation(method: str, path: str, endpoint: Callable[..., Any] | None, is_public: IsPublic) -> dict[str, Any]:
    body = BODIES.get((method, path))
    summary = _summary(endpoint) if body is not None or _is_api(path) else _STANDARD
    operation: dict[str, Any] = {
        "summary": summary or f"{method} {path}",
        "responses": {
            "200": {"description": "the answer (JSON, or NDJSON events where the route streams)"},
            "4XX": {"description": "refused: what to change", "content": _json({"$ref": "#/components/schemas/Error"})},
        },
    }
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in _PARAMETER.findall(path)
    ]
    if parameters:
        operation["parameters"] = parameters
    if body is not None:
        operation["requestBody"] = {"required": True, "content": _json(body.model_json_schema())}
    if not is_public(method, path):
        operation["security"] = [{"bearer": []}]
    return operation


def _summary(endpoint: Callable[..., Any] | None) -> str | None:
    doc = (getattr(endpoint, "__doc__", None) or "").strip()
    return doc.splitlines()[0] if doc else None


def _is_api(path: str) -> bool:
    return not (path == "/" or path.startswith(("/tasks", "/a2a", "/proxy", "/mcp", "/.well-known")))


def _spec_path(path: str) -> str:
    """Starlette's ``{rest:path}`` as OpenAPI's ``{rest}``."""
    return _PARAMETER.sub(lambda match: "{" + match.group(1) + "}", path)


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}

"""The gateway as an HTTP service: management API, live NDJSON runs, and the A2A binding on one port."""

from .app import ENDPOINTS, create_gateway_app
from .build import build_service, check_machine
from .core import GatewayService, ToolCallOutcome
from .errors import AgentUnreachable, ApiErrorCode, Conflict, Forbidden, NotFound, ServiceError, ShuttingDown
from .members import RemoteSpec

__all__ = [
    "ENDPOINTS",
    "AgentUnreachable",
    "ApiErrorCode",
    "Conflict",
    "Forbidden",
    "GatewayService",
    "NotFound",
    "RemoteSpec",
    "ServiceError",
    "ShuttingDown",
    "ToolCallOutcome",
    "build_service",
    "check_machine",
    "create_gateway_app",
]

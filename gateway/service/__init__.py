"""The gateway as an HTTP service: management API, live NDJSON runs, and the A2A binding on one port."""

from gateway.service.app import ENDPOINTS, create_gateway_app
from gateway.service.build import build_service, check_machine
from gateway.service.core import GatewayService, ToolCallOutcome
from gateway.service.errors import (
    AgentUnreachable,
    ApiErrorCode,
    Conflict,
    Forbidden,
    NotFound,
    ServiceError,
    ShuttingDown,
)
from gateway.service.members import RemoteSpec

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

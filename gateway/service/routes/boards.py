"""``/boards/{name}`` and ``/sessions/{id}/board``: the blackboard over HTTP, each write a compare-and-set.

A named board belongs to the caller that first wrote it and a session's board to the
session's owner: to another caller that is not an admin they do not exist (404). A write
names the version it read; when the board moved on it is refused with 409, and the
answer's ``data`` holds the board as it is now (``version``, ``entries``).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from starlette.requests import Request
from starlette.responses import Response

from agent_server.http.auth import principal_of
from agent_server.http.responses import json_response
from gateway.blackboard import Board, check_board_name, session_board
from gateway.errors import BoardConflict, BoardNotFound, BoardTooLarge
from gateway.service.bodies import BoardBody
from gateway.service.core import GatewayService
from gateway.service.errors import Conflict, NotFound
from gateway.service.http import api_route, body_limit, read_body, service_of
from gateway.service.routes.sessions import session_id_of
from protocol import ErrorCode, ProtocolError

T = TypeVar("T")


def _name(request: Request) -> str:
    try:
        return check_board_name(request.path_params["name"])
    except ValueError as exc:
        raise ProtocolError(ErrorCode.INVALID_PARAMS, str(exc)) from None


async def _session_board(service: GatewayService, request: Request) -> tuple[str, str | None]:
    """The session's board and its owner; 404 for a session the caller may not see (or none yet)."""
    session = await service.session(session_id_of(request), principal_of(request))
    return session_board(session.id), session.owner


async def _answer(written: Board) -> Response:
    return json_response(written.to_dict())


async def _read_named(request: Request) -> Response:
    name = _name(request)
    board = await _refusals(service_of(request).blackboard.read(name, principal_of(request)))
    if board.version == 0:
        raise NotFound(f"no board {name!r} yet; PUT /boards/{name} with version 0 writes it")
    return await _answer(board)


async def _write_named(request: Request) -> Response:
    name = _name(request)
    body = await read_body(request, BoardBody, body_limit(request))
    blackboard = service_of(request).blackboard
    return await _answer(
        await _refusals(blackboard.replace(name, body.version, body.entries, caller=principal_of(request)))
    )


async def _delete_named(request: Request) -> Response:
    name = _name(request)
    await _refusals(service_of(request).blackboard.delete(name, principal_of(request)))
    return json_response({"deleted": name})


async def _read_session(request: Request) -> Response:
    service = service_of(request)
    name, owner = await _session_board(service, request)
    return await _answer(await _refusals(service.blackboard.read(name, owner=owner)))


async def _write_session(request: Request) -> Response:
    service = service_of(request)
    name, owner = await _session_board(service, request)
    body = await read_body(request, BoardBody, body_limit(request))
    return await _answer(await _refusals(service.blackboard.replace(name, body.version, body.entries, owner=owner)))


async def _refusals(operation: Awaitable[T]) -> T:
    """Await a blackboard operation; its refusals as the API's answers (404, 409 with the board now, 413)."""
    try:
        return await operation
    except BoardNotFound as exc:
        raise NotFound(str(exc)) from None
    except BoardConflict as exc:
        raise Conflict(str(exc), data=exc.current.to_dict()) from None
    except BoardTooLarge as exc:
        raise ProtocolError(ErrorCode.INVALID_PARAMS, str(exc), http_status=413) from None


routes = [
    api_route("/boards/{name}", _read_named, ["GET"], scope="chat"),
    api_route("/boards/{name}", _write_named, ["PUT"], scope="chat"),
    api_route("/boards/{name}", _delete_named, ["DELETE"], scope="chat"),
    api_route("/sessions/{session_id}/board", _read_session, ["GET"], scope="chat"),
    api_route("/sessions/{session_id}/board", _write_session, ["PUT"], scope="chat"),
]

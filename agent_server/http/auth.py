"""Bearer tokens: who is calling, and what they may do.

A server configured with tokens answers every request but its public paths (the agent
card, ``/health``) with 401 unless it carries ``Authorization: Bearer <token>`` naming one
of them. Tokens are compared in constant time, every configured token each time, so the
time of a refusal says nothing about how close a guess was. The caller found is a
``Principal`` put in the request's state (``principal_of``); endpoints that need more than
any valid token ask for a scope (``require_scope``, 403 without it).

Scopes: ``admin`` may do everything; ``chat`` may hold conversations and call tools, and
sees only what it started (``Principal.may_see``). A server without tokens lets everyone in
as ``ANONYMOUS``, an admin, so a loopback setup needs no configuration.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from starlette.requests import HTTPConnection
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from agent_server.http.responses import error_response
from protocol import ErrorCode, ProtocolError

ScopeName = Literal["admin", "chat"]
SCOPES: tuple[ScopeName, ...] = ("admin", "chat")
REALM = "switchboard"


@dataclass(frozen=True)
class Principal:
    """A caller known by its token: ``name`` is what owns its sessions, runs and tasks."""

    name: str
    scope: ScopeName = "admin"

    @property
    def is_admin(self) -> bool:
        return self.scope == "admin"

    def may_see(self, owner: str | None) -> bool:
        """Admins see everything; anyone else only what it owns."""
        return self.is_admin or (owner is not None and owner == self.name)


ANONYMOUS = Principal("anonymous", "admin")
"""The caller of a server that has no tokens."""
UNAUTHENTICATED = Principal("", "chat")
"""A caller without a valid token on a public path of a server that has tokens: it owns nothing."""


def token_problem(token: str) -> str | None:
    """Why ``token`` cannot travel in an ``Authorization: Bearer`` header, or None: it is visible ASCII, no spaces."""
    if not token or any(not "!" <= char <= "~" for char in token):
        return "a token is 1 or more visible ASCII characters (no spaces, no accents), as an HTTP header carries it"
    return None


class TokenTable:
    """The configured tokens and whom each one stands for."""

    def __init__(self, tokens: Mapping[str, Principal] | None = None) -> None:
        for token in tokens or {}:
            problem = token_problem(token)
            if problem is not None:
                raise ValueError(problem)
        self._tokens = [(token.encode(), principal) for token, principal in (tokens or {}).items()]

    def __bool__(self) -> bool:
        return bool(self._tokens)

    def __len__(self) -> int:
        return len(self._tokens)

    def find(self, token: str) -> Principal | None:
        """The principal of ``token``; every token is compared, each in constant time."""
        given = token.encode()
        found: Principal | None = None
        for known, principal in self._tokens:
            if hmac.compare_digest(given, known):
                found = principal
        return found


IsPublic = Callable[[str, str], bool]
Refusal = Callable[[str, ProtocolError, dict[str, str] | None], Response]
"""How a refusal made before any endpoint read the request is answered at a path: each binding in its own
error shape (the HTTP+JSON one a ``google.rpc.Status``), everything else the shared error body."""


def shared_refusal(path: str, error: ProtocolError, headers: dict[str, str] | None) -> Response:
    """The shared error body, whatever the path."""
    return error_response(error, headers=headers)


class BearerAuth:
    """ASGI middleware: a request off the public paths needs a valid token (401 with ``WWW-Authenticate``).

    An app mounted inside another that has already authenticated the request with the same
    tokens (the gateway's A2A face) finds the caller in the request's state and does not
    check again: the server sets that state, a client cannot.
    """

    def __init__(
        self, app: ASGIApp, tokens: TokenTable, is_public: IsPublic, refusal: Refusal = shared_refusal
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.is_public = is_public
        self.refusal = refusal

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """The inner app's awaitable (or the refusal's), not a coroutine: an open stream holds no frame here."""
        if scope["type"] != "http" or not self.tokens or _authenticated(scope):
            return self.app(scope, receive, send)
        header = HTTPConnection(scope).headers.get("authorization")
        token = bearer_token(header)
        principal = self.tokens.find(token) if token is not None else None
        if principal is None and not self.is_public(scope["method"], _route_path(scope)):
            return _unauthorized(header, scope["path"], self.refusal)(scope, receive, send)
        scope.setdefault("state", {})["principal"] = principal or UNAUTHENTICATED
        return self.app(scope, receive, send)


def _route_path(scope: Scope) -> str:
    """The path below the app's root: a card is public where the app is mounted too (``/proxy/{name}/...``)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] or "/" if root and path.startswith(root) else path


def _authenticated(scope: Scope) -> bool:
    """Whether an outer BearerAuth found this request's token (not merely let it through to a public path)."""
    principal = scope.get("state", {}).get("principal")
    return isinstance(principal, Principal) and principal is not UNAUTHENTICATED


def principal_of(connection: HTTPConnection) -> Principal:
    """Who is calling: the token's principal, or ANONYMOUS on a server without tokens."""
    principal = connection.scope.get("state", {}).get("principal")
    return principal if isinstance(principal, Principal) else ANONYMOUS


def require_scope(connection: HTTPConnection, scope: ScopeName) -> Principal:
    """The caller, if its token has ``scope`` (admin has every scope); 403 otherwise."""
    principal = principal_of(connection)
    if principal.is_admin or principal.scope == scope:
        return principal
    raise ProtocolError(
        ErrorCode.INVALID_REQUEST,
        f"the token of {principal.name!r} has scope {principal.scope!r}; "
        f"{connection.scope['method']} {connection.url.path} needs an {scope} token",
        http_status=403,
    )


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer`` header, or None."""
    if header is None:
        return None
    kind, _, token = header.partition(" ")
    return token.strip() or None if kind.lower() == "bearer" else None


def _unauthorized(header: str | None, path: str, refusal: Refusal) -> Response:
    if header is None:
        message = "this server needs a token: send 'Authorization: Bearer <token>'"
        challenge = f'Bearer realm="{REALM}"'
    else:
        message = "the token is not valid for this server (unknown, or not sent as 'Authorization: Bearer <token>')"
        challenge = f'Bearer realm="{REALM}", error="invalid_token"'
    error = ProtocolError(ErrorCode.INVALID_REQUEST, message, http_status=401)
    return refusal(path, error, {"www-authenticate": challenge})


def is_loopback_host(host: str) -> bool:
    """Whether binding ``host`` keeps a server on this machine (``127.0.0.1``, ``::1``, ``localhost``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def open_binding_problem(host: str, has_tokens: bool, what: str, token_hint: str) -> str | None:
    """Why a server should refuse to listen on ``host``: reachable from other machines with no token asked.

    ``token_hint`` says how to configure one; ``--insecure`` is the way to insist.
    """
    if has_tokens or is_loopback_host(host):
        return None
    return (
        f"refusing to serve {what} on {host} without a token: anyone who can reach that address could use it; "
        f"{token_hint}, or pass --insecure to serve it open anyway"
    )

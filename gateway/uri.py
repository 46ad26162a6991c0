"""The one agent-URI resolver: a URI names a transport and a target, nothing else decides it.

    http://HOST[:PORT][/BASE]            remote agent over the A2A-NDJSON binding (also https)
    local://NAME                         agent registered in this process
    mcp+stdio:COMMAND[?QUERY]#TOOL       tool of an MCP server spawned as COMMAND, over stdio
    mcp+http://HOST[:PORT]/PATH#TOOL     tool of an MCP server over streamable HTTP (also mcp+https)

For ``mcp+stdio`` the query may hold ``args`` (split like a shell line), ``cwd`` and any
number of ``env=NAME=VALUE``. See docs/uris.md.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from urllib.parse import SplitResult, parse_qsl, unquote, urlsplit, urlunsplit

from gateway.errors import InvalidAgentURI

_STDIO_KEYS = frozenset({"args", "cwd", "env"})
LOCAL_NAME = re.compile(r"^[A-Za-z0-9_.~-]{1,128}\Z")
"""What ``register_local_agent`` accepts, so that a ``local://`` URI no agent could have fails when added
(``\\Z``, as ``$`` also matches before a final newline)."""


def local_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a local agent's name (for ``local://NAME`` and ``register_local_agent``), or None."""
    if isinstance(name, str) and LOCAL_NAME.match(name):
        return None
    return f"{name!r} is not a local agent name (1-128 letters, digits, '_', '.', '~' or '-')"


@dataclass(frozen=True)
class A2AHttpTarget:
    uri: str
    base_url: str


@dataclass(frozen=True)
class LocalTarget:
    uri: str
    name: str


@dataclass(frozen=True)
class MCPStdioTarget:
    uri: str
    tool: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None

    @property
    def server_key(self) -> tuple[object, ...]:
        """Tools of the same spawned server share one connection."""
        return ("stdio", self.command, self.args, self.env, self.cwd)


@dataclass(frozen=True)
class MCPHttpTarget:
    uri: str
    tool: str
    url: str

    @property
    def server_key(self) -> tuple[object, ...]:
        return ("http", self.url)


AgentTarget = A2AHttpTarget | LocalTarget | MCPStdioTarget | MCPHttpTarget
MCPTarget = MCPStdioTarget | MCPHttpTarget


def parse_agent_uri(uri: str) -> AgentTarget:
    """Resolve ``uri`` to its typed target; raises InvalidAgentURI naming the URI and the accepted forms."""
    if not isinstance(uri, str) or not uri.strip():
        raise InvalidAgentURI(str(uri), "it is empty")
    _refuse_credentials(uri)
    if uri != uri.strip() or any(c in uri for c in "\r\n\t"):
        raise InvalidAgentURI(uri, "it contains whitespace or control characters around or inside it")
    scheme, sep, _ = uri.partition(":")
    if not sep:
        raise InvalidAgentURI(uri, "it has no scheme")
    scheme = scheme.lower()
    if scheme in ("http", "https"):
        return _a2a(uri)
    if scheme == "local":
        return _local(uri)
    if scheme == "mcp+stdio":
        return _mcp_stdio(uri)
    if scheme in ("mcp+http", "mcp+https"):
        return _mcp_http(uri)
    raise InvalidAgentURI(
        uri, f"the scheme {scheme!r} is not one of http, https, local, mcp+stdio, mcp+http, mcp+https"
    )


def _a2a(uri: str) -> A2AHttpTarget:
    parts = urlsplit(uri)
    if not parts.hostname:
        raise InvalidAgentURI(uri, "it names no host")
    _check_port(uri, parts)
    if parts.query or parts.fragment:
        raise InvalidAgentURI(uri, "an A2A agent URI takes no query or fragment (the base URL only)")
    return A2AHttpTarget(uri=uri, base_url=f"{parts.scheme.lower()}://{parts.netloc}{parts.path.rstrip('/')}")


def _local(uri: str) -> LocalTarget:
    parts = urlsplit(uri)
    name = unquote(parts.netloc)
    if not name or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise InvalidAgentURI(uri, "write local://NAME with the registered agent's name and nothing after it")
    problem = local_name_problem(name)
    if problem is not None:
        raise InvalidAgentURI(uri, problem)
    return LocalTarget(uri=uri, name=name)


def _mcp_stdio(uri: str) -> MCPStdioTarget:
    parts = urlsplit(uri)
    if parts.netloc:
        raise InvalidAgentURI(
            uri, "mcp+stdio takes no host: write mcp+stdio:COMMAND#TOOL (or mcp+stdio:///ABS/PATH#TOOL)"
        )
    command = unquote(parts.path)
    if not command:
        raise InvalidAgentURI(uri, "it names no command to spawn")
    tool = _tool(uri, parts.fragment)
    args: tuple[str, ...] = ()
    env: list[tuple[str, str]] = []
    cwd: str | None = None
    for key, value in parse_qsl(parts.query, keep_blank_values=True, strict_parsing=False):
        if key not in _STDIO_KEYS:
            raise InvalidAgentURI(uri, f"unknown query parameter {key!r} (mcp+stdio accepts args, cwd, env)")
        if key == "args":
            try:
                args = tuple(shlex.split(value))
            except ValueError as exc:
                raise InvalidAgentURI(uri, f"args cannot be split like a shell line: {exc}") from None
        elif key == "cwd":
            cwd = value
        else:
            name, eq, val = value.partition("=")
            if not eq or not name:
                raise InvalidAgentURI(uri, f"env must be NAME=VALUE, got {value!r}")
            env.append((name, val))
    return MCPStdioTarget(uri=uri, tool=tool, command=command, args=args, env=tuple(env), cwd=cwd)


def _mcp_http(uri: str) -> MCPHttpTarget:
    parts = urlsplit(uri)
    if not parts.hostname:
        raise InvalidAgentURI(uri, "it names no host")
    _check_port(uri, parts)
    tool = _tool(uri, parts.fragment)
    scheme = parts.scheme.lower().removeprefix("mcp+")
    query = f"?{parts.query}" if parts.query else ""
    return MCPHttpTarget(uri=uri, tool=tool, url=f"{scheme}://{parts.netloc}{parts.path or '/'}{query}")


def _refuse_credentials(uri: str) -> None:
    """A URI is recorded in every event, log line and error: credentials (``user:password@``) may not be in it.

    The error shows the URI with its credentials replaced by ``***``.
    """
    try:
        parts = urlsplit(uri)
    except ValueError as exc:  # e.g. an unclosed IPv6 bracket
        raise InvalidAgentURI(uri, f"it cannot be read as a URI ({exc})") from None
    _, at, hostport = parts.netloc.rpartition("@")
    if at:
        redacted = urlunsplit(parts._replace(netloc=f"***@{hostport}"))
        raise InvalidAgentURI(
            redacted,
            "it holds credentials (user:password@), which would be recorded in every event and log line; "
            "pass them another way (for A2A agents, headers on your own http_client=)",
        )


def _tool(uri: str, fragment: str) -> str:
    tool = unquote(fragment)
    if not tool:
        raise InvalidAgentURI(uri, "it names no MCP tool: add #TOOL at the end")
    return tool


def _check_port(uri: str, parts: SplitResult) -> None:
    try:
        port = parts.port
    except ValueError:
        raise InvalidAgentURI(uri, "its port is not a number between 0 and 65535") from None
    if port == 0:
        raise InvalidAgentURI(uri, "port 0 cannot be connected to")

"""Where the gateway may connect: an allowlist of agent hosts.

The operator's own agents and tools (configuration, Python API, the admin API) say where
the gateway may go; a URI that arrives in a remote agent's answer (a handoff naming a URI)
is followed only to an allowed host. Two modes:

- learned (the default): the hosts (``HOST:PORT``) of the agents and tools the operator
  configured or registered, and nothing else;
- explicit: patterns, each ``HOST[:PORT]``: ``HOST`` is a name or address, ``*`` (any), or
  ``*.SUFFIX`` (any name under it); ``PORT`` a number or ``*``, left out: any port.
  ``127.0.0.1:*``, ``*.internal:443``, ``[::1]:8001``. The admin API may then register only
  agents on these hosts; the configuration's own agents are the operator's and always allowed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443, "mcp+http": 80, "mcp+https": 443}


@dataclass(frozen=True)
class _Pattern:
    host: str
    port: int | None  # None: any port

    def matches(self, host: str, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.host == "*":
            return True
        if self.host.startswith("*."):
            return host.endswith(self.host[1:]) and len(host) > len(self.host) - 1
        return host == self.host


class HostAllowlist:
    """``allows(uri)``: whether the gateway may connect to the host of a network URI."""

    def __init__(self, patterns: Iterable[str] | None = None) -> None:
        self.explicit = patterns is not None
        self._patterns = [parse_host_pattern(p) for p in patterns or ()]

    @property
    def patterns(self) -> list[str]:
        return [_show(p) for p in self._patterns]

    def learn(self, uri: str) -> None:
        """Allow the host of an agent or tool the operator set up (a no-op for an explicit list)."""
        if self.explicit:
            return
        address = host_of(uri)
        if address is not None and not self.allows(uri):
            self._patterns.append(_Pattern(*address))

    def allows(self, uri: str) -> bool:
        """True for a URI on an allowed host; URIs that reach no host (``local://``) are not this list's business."""
        address = host_of(uri)
        if address is None:
            return True
        return any(pattern.matches(*address) for pattern in self._patterns)


def host_of(uri: str) -> tuple[str, int] | None:
    """(host, port) of an http(s) or mcp+http(s) URI, the port defaulted by scheme; None for other schemes."""
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return parts.hostname.lower().rstrip("."), port if port is not None else _DEFAULT_PORTS[scheme]


def parse_host_pattern(pattern: str) -> _Pattern:
    """``HOST[:PORT]`` as described in the module docstring; ValueError naming what is wrong."""
    text = pattern.strip().lower()
    if not text:
        raise ValueError("an allowed host pattern is empty")
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"allowed host {pattern!r}: an IPv6 address needs its closing ']'")
        host, rest = text[1:end], text[end + 1 :]
        if rest and not rest.startswith(":"):
            raise ValueError(f"allowed host {pattern!r}: write [ADDRESS]:PORT")
        port_text = rest[1:] if rest else None
    elif text.count(":") > 1:
        raise ValueError(f"allowed host {pattern!r}: write an IPv6 address in brackets, e.g. [::1]:8001")
    else:
        host, sep, port = text.partition(":")
        port_text = port if sep else None
    if not host or "/" in host or ("*" in host and host != "*" and not (host.startswith("*.") and "*" not in host[2:])):
        raise ValueError(f"allowed host {pattern!r}: the host is a name, an address, '*' or '*.SUFFIX'")
    if port_text is None or port_text == "*":
        return _Pattern(host, None)
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"allowed host {pattern!r}: the port is a number from 1 to 65535 or '*'")
    return _Pattern(host, int(port_text))


def _show(pattern: _Pattern) -> str:
    host = f"[{pattern.host}]" if ":" in pattern.host else pattern.host
    return f"{host}:{'*' if pattern.port is None else pattern.port}"

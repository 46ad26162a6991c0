"""Which webhook URLs an agent server may POST to: public hosts, and the private ones the operator lists.

A webhook URL comes from a caller, so without a rule it would let any caller make the
server reach what only the server can reach (its loopback, its network, a cloud metadata
address): server-side request forgery. The rule: ``http`` or ``https`` only; a host the
operator allowed passes; any other host passes only if every address it has is public
(a name is resolved, and is refused when it does not resolve or when one of its addresses
is loopback, private, link-local, multicast, reserved or unspecified; ``localhost`` and
names under ``.localhost`` are refused without asking DNS).

The operator's list (``PushSettings.allowed_hosts``): each entry is a name (``hooks.internal``),
``*.SUFFIX`` (any name under it), an address (``127.0.0.1``, ``::1``) or a network
(``10.1.0.0/16``); a name matches the URL's host, an address or a network the host's
addresses. The check runs when a config is created and again before each delivery, so a
name that later resolves to a private address is refused then.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import anyio

from protocol import ProtocolError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class _Allowed:
    names: frozenset[str]
    suffixes: tuple[str, ...]
    networks: tuple[Network, ...]


class WebhookHosts:
    """``check(url)``: the URL's host when the server may POST there, else -32602 saying why (``refused``)."""

    def __init__(self, allowed: Iterable[str] = ()) -> None:
        names: set[str] = set()
        suffixes: list[str] = []
        networks: list[Network] = []
        for entry in allowed:
            text = entry.strip().lower().strip("[]")
            if not text:
                raise ValueError("an allowed webhook host is empty")
            if text.startswith("*."):
                suffixes.append(text[1:])
                continue
            try:
                networks.append(ipaddress.ip_network(text, strict=False))
            except ValueError:
                if "/" in text or ":" in text or "*" in text:
                    raise ValueError(
                        f"allowed webhook host {entry!r}: write a name, '*.SUFFIX', an address or a network "
                        "such as 10.0.0.0/8"
                    ) from None
                names.add(text.rstrip("."))
        self._allowed = _Allowed(frozenset(names), tuple(suffixes), tuple(networks))

    async def check(self, url: str) -> str:
        host = _host_of(url)
        if host in self._allowed.names or any(host.endswith(suffix) for suffix in self._allowed.suffixes):
            return host
        addresses = await _addresses(host)
        if addresses and all(self._allows(address) for address in addresses):
            return host
        raise refused(
            f"webhook host {host!r} is not public ({', '.join(sorted(map(str, addresses)))}); this server posts "
            "only to public hosts and to the hosts its operator allows (PushSettings.allowed_hosts)"
        )

    def _allows(self, address: Address) -> bool:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if any(address in network for network in self._allowed.networks):
            return True
        return address.is_global and not address.is_multicast


def refused(reason: str) -> ProtocolError:
    """A webhook the server will not call: invalid params, the message says why and what the operator can do."""
    return ProtocolError.invalid_param("url", reason)


def _host_of(url: str) -> str:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a port that is not a number)
    except ValueError:
        raise refused(f"webhook url {url!r} is not a URL (http://HOST[:PORT]/PATH)") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise refused(f"webhook url {url!r} must be an http or https URL with a host")
    return parts.hostname.lower().rstrip(".")


async def _addresses(host: str) -> list[Address]:
    """The host's addresses: itself when it is one; a name resolved (none for localhost: refused as loopback)."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    if host == "localhost" or host.endswith(".localhost"):
        return [ipaddress.ip_address("127.0.0.1")]
    try:
        found = await anyio.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise refused(f"webhook host {host!r} does not resolve ({exc}); give a host this server can reach") from None
    return [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in found]

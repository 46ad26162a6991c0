"""What ``switchboard gateway`` prints once it is up: where it listens and what actually runs there.

Printed after the service started, registry applied, so it lists what will answer: each
agent and tool with where it came from (the configuration file or the registry, which
keeps what the API registered and removed) and, for remote ones, whether it answered at
start (gateway/service/inventory.py). What the API removed is said too, so a name still in
the file but no longer served is not a surprise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.config.model import GatewayConfig
    from gateway.service.inventory import Entry, Inventory


def summary(config: GatewayConfig, origin: str, inventory: Inventory) -> str:
    """The lines printed on start (``origin``: the configuration file's name, as problems name it)."""
    face = config.gateway
    agents = [entry for entry in inventory.entries if entry.kind == "agent"]
    tools = [entry for entry in inventory.entries if entry.kind == "tool"]
    lines = [f"switchboard gateway {face.name!r} on http://{face.host}:{face.port}", "  agents:"]
    lines += [_line(entry, origin) for entry in agents]
    lines += ["  tools:" + ("" if tools else " none")] + [_line(entry, origin) for entry in tools]
    if inventory.removed:
        lines.append(f"  removed through the API (kept in the registry): {', '.join(inventory.removed)}")
    if face.grpc_port is not None:
        lines.append(f"  A2A over gRPC on {face.grpc_bind_host}:{face.grpc_port}")
    stores = config.stores
    lines.append(
        f"  stores: sessions={stores.sessions} events={stores.events} tasks={stores.tasks}"
        f" registry={stores.registry_spec} (data dir {face.data_dir})"
    )
    return "\n".join(lines)


def _line(entry: Entry, origin: str) -> str:
    from gateway.service.inventory import Origin, Reply

    source = origin if entry.origin is Origin.FILE else entry.origin.value
    mark = ", starting" if entry.starting else ""
    where = "local" if entry.reply is Reply.LOCAL else f"{entry.where}, {entry.reply.value}"
    return f"    {entry.name}{mark} ({where}; from {source})"

"""What the gateway serves as agents (the swarm: binding.py; each registered agent: proxy.py) have in common.

Their tasks run in an agent_server app's TaskManager, not in the service's task group, so
the service cannot cancel them itself: each send registers with ``ServiceRuns.stoppable`` a
stop that cancels its task through the app's TaskManager. The task then ends ``canceled``
with a final line instead of being cut when the gateway shuts down.

A send of a caller over its spend cap (gateway/limits/) ends ``failed`` before any run
starts, with the limit's message (``spend_refused``): A2A has no error for a spent budget.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass

from agent_server import Failed, HostedAgent, TaskContext, TaskManager
from gateway.limits.quotas import Quotas
from protocol import ProtocolError


@dataclass
class ServedAgent(HostedAgent):
    """A HostedAgent of the gateway's; ``task_manager`` is its app's, set while the app runs."""

    task_manager: TaskManager | None = None

    async def cancel_task(self, task_id: str) -> None:
        if self.task_manager is None:
            return
        with suppress(ProtocolError):  # it ended meanwhile
            await self.task_manager.cancel(task_id)


async def spend_refused(quotas: Quotas, ctx: TaskContext) -> Failed | None:
    """How a send of a caller over its spend cap ends (None: it may go on)."""
    refusal = await quotas.spend_refusal(ctx.caller.name if ctx.caller is not None else None)
    return Failed(refusal.message) if refusal is not None else None

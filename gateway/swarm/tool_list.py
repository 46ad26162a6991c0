"""An agent's domain tools as one list that OpenAI swarm code and Switchboard code both write to.

Swarm code builds an agent and then grows its functions in place
(``agent.functions.append(transfer_to_spanish_agent)``); Switchboard code reads
``agent.tools`` as tools with a name and a schema. Both names are this one list, and every
way of putting something into it makes it a tool first (``as_tool``), so a function
appended by swarm code is offered to the model on the next step like one given at
construction. A tool whose name is already in the list replaces it, as ``add_tool`` always
did: a model must never be offered two tools of one name.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, SupportsIndex, overload

from gateway.swarm.handoff import TransferTool
from gateway.tools import Tool, as_tool


def domain_tool(tool_like: Any) -> Tool:
    """``tool_like`` as a tool; transfer tools are refused, the runner makes those from handoffs."""
    if isinstance(tool_like, TransferTool):
        raise TypeError("transfer tools are synthesized from handoffs; use add_handoff instead")
    return as_tool(tool_like)


class ToolList(list[Tool]):
    """A list of tools that turns what is put into it into tools, one per name."""

    def __init__(self, items: Iterable[Any] = ()) -> None:
        super().__init__()
        self.extend(items)

    def append(self, item: Any) -> None:
        tool = domain_tool(item)
        self._drop(tool.name)
        super().append(tool)

    def extend(self, items: Iterable[Any]) -> None:
        for item in items:
            self.append(item)

    def insert(self, index: SupportsIndex, item: Any) -> None:
        tool = domain_tool(item)
        self._drop(tool.name)
        super().insert(index, tool)

    def __iadd__(self, items: Iterable[Any]) -> ToolList:  # type: ignore[override,misc]
        self.extend(items)
        return self

    @overload
    def __setitem__(self, index: SupportsIndex, item: Any) -> None: ...

    @overload
    def __setitem__(self, index: slice, item: Iterable[Any]) -> None: ...

    def __setitem__(self, index: SupportsIndex | slice, item: Any) -> None:
        if isinstance(index, slice):
            super().__setitem__(index, [domain_tool(entry) for entry in item])
        else:
            super().__setitem__(index, domain_tool(item))

    def _drop(self, name: str) -> None:
        """Remove the tool named ``name``, if any, so the one being added takes its place."""
        for position, tool in enumerate(self):
            if tool.name == name:
                del self[position]
                return

"""What a conversation can be handed to: a local ``Agent`` or a ``RemoteAgent``, alike to the runner."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class SwarmMember(Protocol):
    """A name, what transfer tools pointing here say it is for, and the peers it may hand off to.

    ``examples`` are what users say when they want this agent (the semantic router reads them).
    """

    name: str

    @property
    def specialty(self) -> str: ...

    @property
    def examples(self) -> Sequence[str]: ...

    @property
    def handoffs(self) -> Sequence[SwarmMember]: ...

"""The blackboard agents share: boards by name, one per session and any number of named ones.

``Blackboard`` is what the agents' tools and the HTTP API act through. It adds to a store
(base.py) what every write must respect:

- who may see a board: a named board belongs to the caller that first wrote it, a session's
  board to the session's owner; another caller that is not an admin gets ``BoardNotFound``,
  as if it did not exist (like sessions);
- limits: keys of 1 to ``BOARD_MAX_KEY_CHARS`` characters, a board at most
  ``BOARD_MAX_BYTES`` as JSON (``BoardTooLarge``, nothing written);
- writes of a few keys (``update``: set some, remove others, the rest kept) or of the whole
  board (``replace``), both compare-and-set on the version the writer read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from agent_server.http.auth import Principal
from gateway import defaults
from gateway.blackboard.base import Board, BoardStore
from gateway.blackboard.memory import MemoryBoardStore
from gateway.errors import BoardNotFound, BoardTooLarge

BOARD_NAME = re.compile(r"^[A-Za-z0-9._~-]{1,128}\Z")
"""A named board's name (no ``:``, so it can never be a session's board)."""
BOARD_NAME_RULE = "1-128 letters, digits, '.', '_', '~' or '-'"
SESSION_BOARD_PREFIX = "session:"


def session_board(session_id: str) -> str:
    """The name of a session's own board."""
    return SESSION_BOARD_PREFIX + session_id


def check_board_name(name: str) -> str:
    if not BOARD_NAME.match(name):
        raise ValueError(f"board name {name!r} is not valid ({BOARD_NAME_RULE})")
    return name


class Blackboard:
    """Boards on a store, with ownership and limits; see the module docstring."""

    def __init__(
        self,
        store: BoardStore | None = None,
        *,
        max_bytes: int = defaults.BOARD_MAX_BYTES,
        max_key_chars: int = defaults.BOARD_MAX_KEY_CHARS,
    ) -> None:
        self.store = store or MemoryBoardStore()
        self.max_bytes = max_bytes
        self.max_key_chars = max_key_chars

    async def read(self, name: str, caller: Principal | None = None, *, owner: str | None = None) -> Board:
        """The board as ``caller`` may see it; version 0 and no entries when never written.

        ``owner`` is who a board not written yet will belong to (a session's owner; by
        default the caller).
        """
        board = await self.store.get(name)
        if board is None:
            return Board(name, owner=owner if owner is not None else _name(caller))
        if caller is not None and not caller.may_see(board.owner):
            raise BoardNotFound(f"no board {name!r}")
        return board

    async def update(
        self,
        name: str,
        version: int,
        *,
        changes: Mapping[str, Any] | None = None,
        remove: Sequence[str] = (),
        caller: Principal | None = None,
        owner: str | None = None,
    ) -> Board:
        """Set the keys of ``changes`` and remove those of ``remove``, if the board is still at ``version``."""
        current = await self.read(name, caller, owner=owner)
        entries = {k: v for k, v in current.entries.items() if k not in remove}
        entries.update(changes or {})
        return await self._write(current, entries, version)

    async def replace(
        self,
        name: str,
        version: int,
        entries: Mapping[str, Any],
        *,
        caller: Principal | None = None,
        owner: str | None = None,
    ) -> Board:
        """The whole board becomes ``entries``, if it is still at ``version``."""
        return await self._write(await self.read(name, caller, owner=owner), dict(entries), version)

    async def delete(self, name: str, caller: Principal | None = None) -> None:
        """Forget the board (BoardNotFound for one ``caller`` may not see or that was never written)."""
        if await self.store.get(name) is None:
            raise BoardNotFound(f"no board {name!r}")
        await self.read(name, caller)
        await self.store.delete(name)

    async def close(self) -> None:
        await self.store.close()

    async def _write(self, current: Board, entries: dict[str, Any], version: int) -> Board:
        """Compare-and-set on ``version`` (the one the writer read, not ``current``'s: the store decides)."""
        for key in entries:
            if not isinstance(key, str) or not 1 <= len(key) <= self.max_key_chars:
                raise BoardTooLarge(f"board keys are 1-{self.max_key_chars} characters; {key!r} is not")
        try:
            size = len(orjson.dumps(entries))
        except TypeError as exc:
            raise BoardTooLarge(f"board {current.name!r} can hold JSON values only: {exc}") from None
        if size > self.max_bytes:
            raise BoardTooLarge(
                f"board {current.name!r} would be {size} bytes as JSON, over its limit of {self.max_bytes}; "
                "nothing was written"
            )
        return await self.store.compare_and_set(Board(current.name, current.version, entries, current.owner), version)


def _name(caller: Principal | None) -> str | None:
    return caller.name if caller is not None else None

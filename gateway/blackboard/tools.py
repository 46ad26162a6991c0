"""The blackboard as two tools a model can call: read a board, write one key with the version read.

Both act for the turn they run in (``gateway.swarm.current_turn``): without a board name on
the session's own board, else on a named board the turn's caller may see. A write whose
version is no longer the board's is not carried out: the model is told so, with the board
as it is now, and may write again with the new version. A value of null removes the key.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.blackboard.shared import Blackboard, check_board_name, session_board
from gateway.errors import BoardConflict, BoardError
from gateway.swarm.turn import TurnScope, current_turn
from gateway.tools import FunctionTool


def blackboard_tools(blackboard: Blackboard) -> list[FunctionTool]:
    """``blackboard_read`` and ``blackboard_write`` on ``blackboard``, for ``Agent(tools=...)``."""

    async def blackboard_read(board: str = "") -> str:
        """Read a shared board: its version and entries. Read before writing: a write names the version read.

        Args:
            board: A named board shared across sessions; leave empty for this conversation's board.
        """
        try:
            name, scope = _target(board)
            found = await blackboard.read(name, scope.caller, owner=_owner(name, scope))
        except (BoardError, ValueError) as exc:
            return f"Error: {exc}"
        return orjson.dumps(found.to_dict()).decode()

    async def blackboard_write(key: str, value: Any, version: int, board: str = "") -> str:
        """Write one entry of a shared board, if nobody wrote it since you read it (version). Null removes the entry.

        Args:
            key: The entry to set.
            value: Its new value (any JSON); null removes the entry.
            version: The board's version as you last read it (0 for a board nobody wrote yet).
            board: A named board shared across sessions; leave empty for this conversation's board.
        """
        try:
            name, scope = _target(board)
            changes = {} if value is None else {key: value}
            written = await blackboard.update(
                name,
                version,
                changes=changes,
                remove=[key] if value is None else [],
                caller=scope.caller,
                owner=_owner(name, scope),
            )
        except BoardConflict as exc:
            current = exc.current.to_dict()
            return orjson.dumps(
                {"written": False, "conflict": str(exc), "version": current["version"], "entries": current["entries"]}
            ).decode()
        except (BoardError, ValueError) as exc:
            return f"Error: {exc}"
        return orjson.dumps({"written": True, "board": written.name, "version": written.version}).decode()

    return [FunctionTool(blackboard_read), FunctionTool(blackboard_write)]


def _target(board: str) -> tuple[str, TurnScope]:
    """The board a tool call names, and the turn it runs for."""
    scope = current_turn()
    if scope is None:
        raise ValueError("the blackboard tools run inside a swarm turn (they act for its session and caller)")
    return (check_board_name(board) if board else session_board(scope.session_id)), scope


def _owner(name: str, scope: TurnScope) -> str | None:
    """A session's board belongs to the session's owner; a named board to whoever writes it first."""
    if name == session_board(scope.session_id):
        return scope.owner
    return scope.caller.name if scope.caller is not None else None

"""Page tokens of a task listing: the place, most recent first, where the last page ended.

Every store pages the same way (by update time, then id), so the token and the comparison
are written once for all of them.
"""

from __future__ import annotations

import base64
import binascii

import orjson


def encode_cursor(updated_at: float, task_id: str) -> str:
    """A page cursor: the place, in most-recent-first order, of the last task of a page."""
    return base64.urlsafe_b64encode(orjson.dumps([updated_at, task_id])).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str]:
    """The place ``encode_cursor`` wrote; ValueError for anything else."""
    try:
        updated_at, task_id = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        return float(updated_at), str(task_id)
    except (binascii.Error, ValueError, TypeError, orjson.JSONDecodeError):
        raise ValueError(f"{cursor!r} is not a page token of this server (pass the nextPageToken of a page)") from None


def before(place: tuple[float, str], cursor: tuple[float, str] | None) -> bool:
    """Whether ``place`` comes after the page that ended at ``cursor`` (most recent first)."""
    return cursor is None or place < cursor

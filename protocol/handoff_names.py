"""Names of the synthesized ``transfer_to_<agent>`` tools.

Rules: Unicode NFKD folded to ASCII and lower-cased; any other character becomes ``_``
(runs collapsed, ends trimmed); a name with no letter or digit left (CJK, Arabic, emoji)
becomes ``u`` plus the first 12 hex digits of its UTF-8 SHA-256; names that come out
alike get ``_2``, ``_3``... in the order given; a whole tool name is at most 60
characters, suffix included. The same names in the same order always give the same
tool names.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable

TRANSFER_PREFIX = "transfer_to_"
MAX_TOOL_NAME_LENGTH = 60
_HASH_DIGITS = 12
_NOT_ALLOWED = re.compile(r"[^a-z0-9]+")


def sanitize_agent_name(name: str) -> str:
    """The ASCII, lower-case form of an agent name used inside tool names."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii").lower()
    cleaned = _NOT_ALLOWED.sub("_", folded).strip("_")
    if not cleaned:
        return "u" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:_HASH_DIGITS]
    return cleaned


def transfer_tool_name(name: str, taken: Iterable[str] = ()) -> str:
    """The tool name for one target, avoiding the names in ``taken``."""
    taken_set = set(taken)
    base = sanitize_agent_name(name)
    n = 1
    while True:
        suffix = "" if n == 1 else f"_{n}"
        room = MAX_TOOL_NAME_LENGTH - len(TRANSFER_PREFIX) - len(suffix)
        candidate = TRANSFER_PREFIX + base[:room].rstrip("_") + suffix
        if candidate not in taken_set:
            return candidate
        n += 1


def transfer_tool_names(agent_names: Iterable[str], taken: Iterable[str] = ()) -> dict[str, str]:
    """Tool names for several targets at once, in order; a repeated agent name keeps one tool."""
    used = set(taken)
    names: dict[str, str] = {}
    for agent_name in agent_names:
        if agent_name in names:
            continue
        names[agent_name] = transfer_tool_name(agent_name, used)
        used.add(names[agent_name])
    return names

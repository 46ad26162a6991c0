"""Environment overrides of the configuration file, remembered so errors can name the variable.

Two forms, applied in this order (later wins):

- ``SWITCHBOARD__SECTION__KEY=VALUE`` for any key, e.g. ``SWITCHBOARD__LIMITS__MAX_TOOL_ITERATIONS=3``.
  In a list (``agents``, ``tools``) the segment after the list picks an entry by its
  ``name`` (case-insensitive, non-alphanumerics as ``_``) or by index:
  ``SWITCHBOARD__TOOLS__RESEARCH__MAX_COST_USD=0.05``.
- Shortcuts for what changes between machines: ``SWITCHBOARD_HOST``, ``SWITCHBOARD_PORT``,
  ``SWITCHBOARD_DATA_DIR``, ``SWITCHBOARD_LOG_LEVEL``, ``SWITCHBOARD_SESSIONS_STORE``,
  ``SWITCHBOARD_EVENTS_STORE``, ``SWITCHBOARD_TASKS_STORE``, ``SWITCHBOARD_REGISTRY_STORE``.

A value starting with ``[`` or ``{`` is read as a TOML array or inline table; any other value
is kept as a string, which the configuration's models convert where the key wants a number
or a boolean (``SWITCHBOARD_PORT=9000``), and keep as written where it wants a string.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from typing import Any

ENV_PREFIX = "SWITCHBOARD__"
SHORTCUTS: dict[str, tuple[str, str]] = {
    "SWITCHBOARD_HOST": ("gateway", "host"),
    "SWITCHBOARD_PORT": ("gateway", "port"),
    "SWITCHBOARD_DATA_DIR": ("gateway", "data_dir"),
    "SWITCHBOARD_LOG_LEVEL": ("gateway", "log_level"),
    "SWITCHBOARD_SESSIONS_STORE": ("stores", "sessions"),
    "SWITCHBOARD_EVENTS_STORE": ("stores", "events"),
    "SWITCHBOARD_TASKS_STORE": ("stores", "tasks"),
    "SWITCHBOARD_REGISTRY_STORE": ("stores", "registry"),
}

Loc = tuple[str | int, ...]
EnvProblem = tuple[str, Loc, str]  # origin, key, reason


class Overrides:
    """The configuration data being overridden, and which key came from where."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.origins: dict[Loc, str] = {}
        self.problems: list[EnvProblem] = []

    def set_value(self, path: list[str], value: Any, origin: str) -> None:
        """Set the key at ``path``; a path that leads nowhere is recorded as a problem."""
        node: Any = self.data
        loc: list[str | int] = []
        for position, segment in enumerate(path):
            last = position == len(path) - 1
            if isinstance(node, list):
                index = _pick(node, segment)
                if index is None:
                    names = ", ".join(str(item.get("name")) for item in node if isinstance(item, dict)) or "none"
                    reason = f"has no entry named or numbered {segment!r} (entries: {names})"
                    self.problems.append((origin, tuple(loc), reason))
                    return
                loc.append(index)
                if last:
                    node[index] = value
                else:
                    node = node[index]
                continue
            if not isinstance(node, dict):
                self.problems.append((origin, tuple(loc), "is a single value, it has no keys to set"))
                return
            loc.append(segment)
            if last:
                node[segment] = value
            else:
                node = node.setdefault(segment, {})
        self.origins[tuple(loc)] = origin

    def origin_of(self, loc: Loc, default: str) -> str:
        """Where the value at ``loc`` came from: the variable that set it (or a table above it), else ``default``."""
        for size in range(len(loc), 0, -1):
            origin = self.origins.get(tuple(loc[:size]))
            if origin is not None:
                return origin
        return default


def apply_environment(data: dict[str, Any], environ: Mapping[str, str]) -> Overrides:
    """Apply every ``SWITCHBOARD__*`` variable, then the shortcuts, to ``data`` (changed in place)."""
    overrides = Overrides(data)
    for name in sorted(environ):
        if name.startswith(ENV_PREFIX) and len(name) > len(ENV_PREFIX):
            path = [segment.lower() for segment in name[len(ENV_PREFIX) :].split("__")]
            if any(not segment for segment in path):
                overrides.problems.append(
                    (f"environment variable {name}", (), "has an empty key between '__' separators")
                )
                continue
            overrides.set_value(path, parse_value(environ[name]), f"environment variable {name}")
    for name, shortcut in SHORTCUTS.items():
        if name in environ:
            overrides.set_value(list(shortcut), parse_value(environ[name]), f"environment variable {name}")
    return overrides


def parse_value(raw: str) -> Any:
    """``["a"]`` -> ["a"], ``{x = 1}`` -> {"x": 1}; anything else the string itself.

    Scalars stay strings: the configuration's models turn ``"8080"`` into an int and
    ``"true"`` into a bool where the key wants one, and a string key keeps ``2024`` or
    ``2024-01-01`` as written (TOML would make them an int and a date).
    """
    if raw.lstrip().startswith(("[", "{")):
        try:
            return tomllib.loads(f"value = {raw}")["value"]
        except tomllib.TOMLDecodeError:
            return raw
    return raw


def _pick(entries: list[Any], segment: str) -> int | None:
    if segment.isdigit():
        index = int(segment)
        return index if index < len(entries) else None
    wanted = _folded(segment)
    for index, entry in enumerate(entries):
        if isinstance(entry, dict) and _folded(str(entry.get("name", ""))) == wanted:
            return index
    return None


def _folded(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "_", name.lower())

"""Store specs, the one parser: ``memory``, ``sqlite:PATH``, ``sqlite`` alone where a default file exists, and
``redis://HOST:PORT/DB`` (``rediss://`` with TLS) for a store shared by several processes."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, NamedTuple

StoreKind = Literal["memory", "sqlite", "redis"]
REDIS_SCHEMES = ("redis://", "rediss://")


class StoreSpec(NamedTuple):
    """A parsed store spec: ``kind``, and for sqlite the file ``path``, for redis the URL (None for memory)."""

    kind: StoreKind
    path: str | None


def parse_store_spec(spec: str, *, what: str = "store", default_path: str | Path | None = None) -> StoreSpec:
    """Parse ``"memory"``, ``"sqlite:PATH"`` or a Redis URL; ``"sqlite"`` alone means ``default_path`` if given.

    PATH is taken as written (relative to the working directory, or absolute). Anything
    else is a ValueError that names ``what`` (e.g. "task store") and the accepted forms.
    """
    if spec == "memory":
        return StoreSpec("memory", None)
    if spec == "sqlite" and default_path is not None:
        return StoreSpec("sqlite", str(default_path))
    if spec in ("sqlite", "sqlite:"):
        raise ValueError(f'a sqlite {what} needs a path, e.g. "sqlite:{_example(what)}"')
    if spec.startswith("sqlite:"):
        return StoreSpec("sqlite", spec.removeprefix("sqlite:"))
    if spec.lower().startswith(REDIS_SCHEMES):
        return StoreSpec("redis", spec)
    forms = '"memory", "sqlite", "sqlite:PATH"' if default_path is not None else '"memory", "sqlite:PATH"'
    forms += ' or "redis://HOST:PORT/DB"'
    raise ValueError(f"unknown {what} {spec!r}; use {forms}")


def _example(what: str) -> str:
    return "events.db" if "event" in what else "sessions.db" if "session" in what else "tasks.db"

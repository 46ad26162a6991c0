"""How an agent server delivers push notifications: the one home of their limits and defaults."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

_LEAST = {"max_configs_per_task": 1, "max_pending": 1, "max_attempts": 1, "max_concurrent": 1}


@dataclass(frozen=True)
class RetryPolicy:
    """How one notification is tried on one webhook: a failed try (no answer, a 5xx, 408 or 429) is tried
    again after ``first_backoff_s``, doubled before each next try up to ``max_backoff_s``, at most
    ``max_attempts`` tries in all, each bounded by ``timeout_s`` (the spec recommends 10 to 30 seconds)."""

    max_attempts: int = 5
    first_backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    timeout_s: float = 10.0

    def __post_init__(self) -> None:
        _check(self)

    def backoff_s(self, failed_attempts: int) -> float:
        """The wait before the next try, after ``failed_attempts`` failed ones."""
        return float(min(self.first_backoff_s * 2 ** (failed_attempts - 1), self.max_backoff_s))


@dataclass(frozen=True)
class PushSettings:
    """The operator's push-notification knobs.

    ``allowed_hosts``: webhook hosts allowed besides public ones (hosts.py: names, ``*.SUFFIX``,
    addresses, networks); a test or a setup on one machine lists ``127.0.0.1``.
    ``max_configs_per_task``: how many webhooks one task may have.
    ``max_pending``: notifications waiting in this server, all tasks together; past it the
    oldest waiting one of the same task is dropped (the newest state is what a receiver
    needs), or the new one when its task has none waiting; each drop is logged and counted.
    ``max_concurrent``: tasks whose webhooks are called at the same time.
    ``close_timeout_s``: how long a stopping server keeps delivering what is queued.
    """

    allowed_hosts: tuple[str, ...] = ()
    max_configs_per_task: int = 10
    max_pending: int = 10_000
    max_concurrent: int = 32
    close_timeout_s: float = 5.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def __post_init__(self) -> None:
        _check(self)


def _check(settings: Any) -> None:
    """Every count at least its least (1 where 0 makes no sense), every time at least 0."""
    for known in fields(settings):
        least = _LEAST.get(known.name, 0)
        value = getattr(settings, known.name)
        if isinstance(value, int | float) and value < least:
            raise ValueError(f"{type(settings).__name__}.{known.name} must be at least {least}, not {value}")

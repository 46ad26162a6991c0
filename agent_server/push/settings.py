"""How an agent server delivers push notifications: the one home of their limits and defaults."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PushSettings:
    """The operator's push-notification knobs.

    ``allowed_hosts``: webhook hosts allowed besides public ones (hosts.py: names, ``*.SUFFIX``,
    addresses, networks); a test or a setup on one machine lists ``127.0.0.1``.
    ``max_configs_per_task``: how many webhooks one task may have.
    ``max_pending``: notifications waiting in this server, all tasks together; past it the
    oldest waiting one of the same task is dropped (the newest state is what a receiver
    needs), or the new one when its task has none waiting; each drop is logged and counted.
    ``max_attempts``: tries per notification and webhook; a failed try (no answer, a 5xx, 408
    or 429) is retried after ``first_backoff_s``, doubled each time up to ``max_backoff_s``.
    ``timeout_s``: one webhook call. ``max_concurrent``: tasks delivered to at the same time.
    ``close_timeout_s``: how long a stopping server keeps delivering what is queued.
    """

    allowed_hosts: tuple[str, ...] = ()
    max_configs_per_task: int = 10
    max_pending: int = 10_000
    max_attempts: int = 5
    first_backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    timeout_s: float = 10.0
    max_concurrent: int = 32
    close_timeout_s: float = 5.0

    def __post_init__(self) -> None:
        for name in ("max_configs_per_task", "max_pending", "max_attempts", "max_concurrent"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        for name in ("first_backoff_s", "max_backoff_s", "timeout_s", "close_timeout_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")

    def backoff_s(self, failed_attempts: int) -> float:
        """The wait before the next try, after ``failed_attempts`` failed ones."""
        return float(min(self.first_backoff_s * 2 ** (failed_attempts - 1), self.max_backoff_s))

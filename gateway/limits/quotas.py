"""A token's limits read against the shared counters: whether a request may go on, and if not, why and until when.

A token without limits costs nothing here: no counter is read or written for it. A store
that does not answer lets the request through (logged): the stores of the turn itself will
refuse it if Redis is really gone, and a limit must not turn a blip into an outage.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from agent_server.http.auth import Principal
from agent_server.stores import StoreUnavailable
from gateway.limits.counters import Counters, MemoryCounters, Period, Window
from gateway.recording.spend import Meter
from gateway.telemetry import metrics
from protocol import ProtocolError

logger = logging.getLogger("gateway.limits")

LIMIT_REACHED = -32017
"""The error code of a request refused by a token's limit (HTTP 429)."""


@dataclass(frozen=True)
class TokenLimits:
    """What one token may do: requests a minute, dollars per ``spend_window`` (None: no such limit)."""

    rate_per_minute: int | None = None
    max_spend_usd: float | None = None
    spend_window: Window = Window.DAY


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused: which limit, its value, and when it resets."""

    token: str
    limit: str
    """``rate`` or ``spend``: the ``limit`` label of ``switchboard_token_refusals_total``."""
    message: str
    period: Period

    def error(self) -> LimitReached:
        return LimitReached(self)


class LimitReached(ProtocolError):
    """A request over a token's limit: 429, with ``Retry-After`` (``headers``) and the refusal in ``data``."""

    def __init__(self, refusal: Refusal) -> None:
        self.refusal = refusal
        data = {"limit": refusal.limit, "token": refusal.token, "resets_at": _utc(refusal.period.ends_at)}
        super().__init__(LIMIT_REACHED, refusal.message, data=data, http_status=429)

    @property
    def headers(self) -> dict[str, str]:
        return {"retry-after": str(self.refusal.period.seconds_left())}


class Quotas:
    """The limits of every token that has some, and the counters they are read against."""

    def __init__(self, limits: Mapping[str, TokenLimits] | None = None, counters: Counters | None = None) -> None:
        self.limits = {name: limit for name, limit in (limits or {}).items() if limit != TokenLimits()}
        self.counters = counters or MemoryCounters()

    def __bool__(self) -> bool:
        return bool(self.limits)

    async def admit(self, caller: Principal) -> None:
        """``take_request`` for a binding that has no middleware (gRPC): raises the 429's LimitReached."""
        refusal = await self.take_request(caller.name)
        if refusal is not None:
            raise refusal.error()

    async def take_request(self, token: str) -> Refusal | None:
        """Count one request of ``token`` against its rate; the refusal when that goes over it."""
        rate = self.limits.get(token, TokenLimits()).rate_per_minute
        if rate is None:
            return None
        period = Period.now(Window.MINUTE)
        try:
            count = await self.counters.increment(f"{token}:rate:{period.index}", period.ends_at)
        except StoreUnavailable as exc:
            logger.warning("the rate of %s could not be counted: %s", token, exc)
            return None
        if count <= rate:
            return None
        message = (
            f"the token {token!r} is over its rate limit of {rate} requests a minute; "
            f"it resets in {period.seconds_left()} s (at {_utc(period.ends_at)})"
        )
        return self._refused(Refusal(token, "rate", message, period))

    async def spend_refusal(self, token: str | None) -> Refusal | None:
        """The refusal of a new turn or tool call of ``token`` when it has spent its cap in this window."""
        limits = self.limits.get(token or "")
        if token is None or limits is None or limits.max_spend_usd is None:
            return None
        period = Period.now(limits.spend_window)
        try:
            spent = await self.counters.read(_spend_key(token, limits.spend_window, period))
        except StoreUnavailable as exc:
            logger.warning("the spend of %s could not be read: %s", token, exc)
            return None
        metrics.record_token_spend(token, spent)
        if spent < limits.max_spend_usd:
            return None
        message = (
            f"the token {token!r} has spent ${spent:.6g} of its cap of ${limits.max_spend_usd:g} "
            f"per {limits.spend_window.word}; new turns and tool calls are refused until it resets "
            f"in {period.seconds_left()} s (at {_utc(period.ends_at)})"
        )
        return self._refused(Refusal(token, "spend", message, period))

    async def check_spend(self, token: str | None) -> None:
        """Raise ``LimitReached`` when ``token`` may not start a turn or a tool call (``spend_refusal``)."""
        refusal = await self.spend_refusal(token)
        if refusal is not None:
            raise refusal.error()

    def meter(self, token: str | None) -> Meter | None:
        """What charges the dollars of ``token``'s runs to its spend (None: a token without a cap is not counted)."""
        limits = self.limits.get(token or "")
        if token is None or limits is None or limits.max_spend_usd is None:
            return None
        window = limits.spend_window

        async def charge(cost: float) -> None:
            period = Period.now(window)
            try:
                spent = await self.counters.add(_spend_key(token, window, period), cost, period.ends_at)
            except StoreUnavailable as exc:
                logger.warning("$%s spent by %s could not be counted: %s", cost, token, exc)
                return
            metrics.record_token_spend(token, spent)

        return charge

    def _refused(self, refusal: Refusal) -> Refusal:
        metrics.record_token_refusal(refusal.token, refusal.limit)
        return refusal


def _spend_key(token: str, window: Window, period: Period) -> str:
    return f"{token}:spend:{window.word}:{period.index}"


def _utc(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")

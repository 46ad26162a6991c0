"""The limits of ``[[security.tokens]]`` are checked like every other key: a wrong value names its key and why."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config.load import validate_config
from gateway.errors import ConfigError
from gateway.limits.counters import Window
from gateway.service.build import token_quotas


@pytest.mark.parametrize(
    ("limit", "key"),
    [
        ({"rate_per_minute": 0}, "security.tokens[0].rate_per_minute"),
        ({"max_spend_usd": "lots"}, "security.tokens[0].max_spend_usd"),
        ({"spend_window": "month"}, "security.tokens[0].spend_window"),
    ],
)
def test_a_wrong_limit_names_its_key(limit: dict[str, Any], key: str) -> None:
    entry = {"name": "alice", "token_env": "ALICE_TOKEN", **limit}
    with pytest.raises(ConfigError) as caught:
        validate_config({"security": {"tokens": [entry]}}, "inline")
    assert f"inline: {key}:" in str(caught.value)


def test_the_limits_configured_are_the_ones_counted() -> None:
    tokens = [
        {"name": "alice", "token_env": "A", "rate_per_minute": 5},
        {"name": "bob", "token_env": "B", "max_spend_usd": 2.5, "spend_window": "week"},
        {"name": "root", "scope": "admin", "token_env": "R"},
    ]
    quotas = token_quotas(validate_config({"security": {"tokens": tokens}}, "inline"))
    assert set(quotas.limits) == {"alice", "bob"}, "a token without limits is not counted at all"
    assert quotas.limits["alice"].rate_per_minute == 5
    assert (quotas.limits["bob"].max_spend_usd, quotas.limits["bob"].spend_window) == (2.5, Window.WEEK)

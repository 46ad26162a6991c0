"""What the gateway's own A2A face offers, from the file: push notifications, the extended card, the gRPC port.

Each section is checked like the others: a bad value names its key and says what to write.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_server.push.settings import PushSettings, RetryPolicy
from gateway.config.load import load_config
from gateway.errors import ConfigError
from gateway.service import check_machine


def _load(tmp_path: Path, text: str, environ: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    path = tmp_path / "gateway.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path, environ=environ or {})


def _problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, text)
    return [line.split(": ", 1)[1] for line in str(caught.value).splitlines()]


def test_push_is_off_by_default_and_the_face_has_no_extended_card_nor_grpc(tmp_path: Path) -> None:
    config = _load(tmp_path, "")
    assert config.gateway.push.settings() is None
    assert config.gateway.extended_card is None and config.gateway.grpc_port is None


def test_push_settings_mirror_push_settings_and_its_retry_policy(tmp_path: Path) -> None:
    config = _load(
        tmp_path,
        """
[gateway.push]
enabled = true
allowed_hosts = ["127.0.0.1", "*.hooks.internal", "10.0.0.0/8"]
max_configs_per_task = 3
max_pending = 50
max_concurrent = 4
close_timeout_secs = 1.5

[gateway.push.retry]
max_attempts = 2
first_backoff_secs = 0.1
max_backoff_secs = 1
timeout_secs = 3
""",
    )
    assert config.gateway.push.settings() == PushSettings(
        allowed_hosts=("127.0.0.1", "*.hooks.internal", "10.0.0.0/8"),
        max_configs_per_task=3,
        max_pending=50,
        max_concurrent=4,
        close_timeout_s=1.5,
        retry=RetryPolicy(max_attempts=2, first_backoff_s=0.1, max_backoff_s=1.0, timeout_s=3.0),
    )


def test_push_defaults_are_push_settings_defaults(tmp_path: Path) -> None:
    assert _load(tmp_path, "[gateway.push]\nenabled = true\n").gateway.push.settings() == PushSettings()


def test_push_can_be_turned_on_from_the_environment(tmp_path: Path) -> None:
    config = _load(tmp_path, "", environ={"SWITCHBOARD__GATEWAY__PUSH__ENABLED": "true"})
    assert config.gateway.push.settings() == PushSettings()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[gateway.push]\nallowed_hosts = ['127.0.0.1']\n", "gateway.push: push notifications are off unless enabled"),
        ("[gateway.push]\nenabled = true\nallowed_hosts = ['http://x/y']\n", "gateway.push.allowed_hosts: allowed"),
        ("[gateway.push]\nenabled = true\nallowed_hosts = ['']\n", "gateway.push.allowed_hosts: an allowed webhook"),
        ("[gateway.push]\nenabled = true\nmax_pending = 0\n", "gateway.push.max_pending: Input should be greater"),
        ("[gateway.push]\nenabled = 'maybe'\n", "gateway.push.enabled: Input should be a valid boolean"),
        ("[gateway.push]\nenabled = true\nwebhooks = 1\n", "gateway.push.webhooks: unknown key 'webhooks'"),
        ("[gateway.push.retry]\nmax_attempts = 0\n", "gateway.push.retry.max_attempts: Input should be greater"),
        ("[gateway.push.retry]\ntimeout_secs = 0\n", "gateway.push.retry.timeout_secs: Input should be greater"),
        ("[gateway]\ngrpc_port = 70000\n", "gateway.grpc_port: Input should be less than or equal to 65535"),
        ("[gateway]\ngrpc_host = '0.0.0.0'\n", "gateway: grpc_host is where the gRPC face listens: set grpc_port"),
        ("[gateway.extended_card]\n", "gateway.extended_card: an extended card adds a description, skills or both"),
        ("[[gateway.extended_card.skills]]\nid = 'x'\n", "gateway.extended_card.skills[0].name: is required"),
        (
            "[[gateway.extended_card.skills]]\nid = 'x'\nname = 'X'\n[[gateway.extended_card.skills]]\nid = 'x'\n"
            "name = 'Y'\n",
            "gateway.extended_card: skill ids must differ; repeated: x",
        ),
    ],
)
def test_a_bad_face_setting_names_its_key_and_says_what_to_write(tmp_path: Path, text: str, problem: str) -> None:
    problems = _problems(tmp_path, text)
    assert any(line.startswith(problem) for line in problems), problems


def test_the_extended_card_and_the_grpc_port_load(tmp_path: Path) -> None:
    config = _load(
        tmp_path,
        """
[gateway]
host = "127.0.0.1"
grpc_port = 0

[gateway.extended_card]
description = "The support swarm, with its internal skills."

[[gateway.extended_card.skills]]
id = "refunds-admin"
name = "Refund approvals"
description = "Approves refunds above the self-service limit."
tags = ["billing"]
""",
    )
    assert (config.gateway.grpc_port, config.gateway.grpc_bind_host) == (0, "127.0.0.1")
    assert config.gateway.extended_card is not None
    card = config.gateway.extended_card.card()
    assert card.description == "The support swarm, with its internal skills."
    assert [(skill.id, skill.tags) for skill in card.skills] == [("refunds-admin", ["billing"])]


def test_an_extended_card_without_any_token_is_a_problem_of_this_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SWITCHBOARD_ADMIN_TOKEN", raising=False)
    config = _load(tmp_path, "[gateway.extended_card]\ndescription = 'more'\n")
    problems = [str(problem) for problem in check_machine(config, "gw.toml")]
    assert problems == [
        "gw.toml: gateway.extended_card: an extended card is for callers with a token, and the gateway has none: "
        "set SWITCHBOARD_ADMIN_TOKEN or add [[security.tokens]]"
    ]
    monkeypatch.setenv("SWITCHBOARD_ADMIN_TOKEN", "admin-secret")
    assert check_machine(config, "gw.toml") == []

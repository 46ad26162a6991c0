"""The deadline and budget a caller sends (an A2A extension in the request's metadata) on every HTTP binding.

The agent answers with what its TaskContext says, so the test reads what arrived; the card
declares the extension; a value of the wrong type is refused with invalid params, never a 5xx.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agent_server import HostedAgent, TaskContext
from protocol.hop_limits import EXTENSIONS_HEADER, HOP_LIMITS_EXTENSION
from tests.support.a2a_clients import V1, rpc
from tests.support.gateway_service import agent_server

SENT = {HOP_LIMITS_EXTENSION: {"deadlineMs": 1_900_000_000_000, "budgetUsd": 0.25}}
SEEN = "deadline 1900000000000 budget 0.25"
HEADERS = {**V1, EXTENSIONS_HEADER: HOP_LIMITS_EXTENSION}


async def _limits(ctx: TaskContext) -> str:
    return f"deadline {ctx.deadline_ms} budget {ctx.budget_usd}"


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with agent_server(HostedAgent("limits", _limits)) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def _v1_send(metadata: dict[str, Any]) -> dict[str, Any]:
    return {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}, "metadata": metadata}


def _texts(task: dict[str, Any]) -> str:
    return "".join(part.get("text", "") for artifact in task["artifacts"] for part in artifact["parts"])


def test_the_card_declares_the_extension(http: httpx.Client) -> None:
    for version in ("1.0", "0.3"):
        card = http.get("/.well-known/agent-card.json", headers={"A2A-Version": version}).json()
        assert [ext["uri"] for ext in card["capabilities"]["extensions"]] == [HOP_LIMITS_EXTENSION]


def test_ndjson_jsonrpc_and_rest_hand_the_limits_to_the_agent(http: httpx.Client) -> None:
    body = {"message": {"role": "user", "parts": [{"type": "text", "text": "hi"}]}, "metadata": SENT}
    assert _texts(http.post("/tasks/send", json=body, headers=HEADERS).json()) == SEEN
    answer = http.post("/", json=rpc("SendMessage", _v1_send(SENT)), headers=HEADERS).json()["result"]
    assert SEEN in str(answer)
    answer = http.post("/a2a/rest/message:send", json=_v1_send(SENT), headers=HEADERS).json()
    assert SEEN in str(answer)


def test_without_the_extension_there_is_no_limit(http: httpx.Client) -> None:
    body = {"message": {"role": "user", "parts": [{"type": "text", "text": "hi"}]}}
    assert _texts(http.post("/tasks/send", json=body).json()) == "deadline None budget None"


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ({"deadlineMs": "soon"}, "deadlineMs must be milliseconds"),
        ({"budgetUsd": -1}, "budgetUsd must be a number of US dollars >= 0"),
        ("cheap", "must be an object"),
    ],
)
def test_a_bad_value_is_refused_saying_which(http: httpx.Client, value: Any, says: str) -> None:
    body = {
        "message": {"role": "user", "parts": [{"type": "text", "text": "hi"}]},
        "metadata": {HOP_LIMITS_EXTENSION: value},
    }
    refused = http.post("/tasks/send", json=body)
    assert refused.status_code == 400 and says in refused.text
    refused = http.post("/a2a/rest/message:send", json=_v1_send({HOP_LIMITS_EXTENSION: value}), headers=V1)
    assert refused.status_code == 400 and says in refused.text
    answer = http.post("/", json=rpc("SendMessage", _v1_send({HOP_LIMITS_EXTENSION: value})), headers=V1).json()
    assert answer["error"]["code"] == -32602 and says in answer["error"]["message"]

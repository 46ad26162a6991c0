"""The agent card in the reader's version, and its validators (ETag, Last-Modified).

A v1.0 reader (``A2A-Version: 1.0``, as the a2a-sdk client sends when it fetches a card, or
the same as a query parameter) gets the v1.0 AgentCard alone: it parses as the proto's
AgentCard with no unknown field (what the v1.0 JSON schema demands). A request without a
version is a v0.3 reader (the specification's rule) and gets the card of both versions,
which v0.3 readers and the a2a-sdk's parser both read. On an agent server with a token
(security schemes) and on the gateway.
"""

from __future__ import annotations

from collections.abc import Iterator
from email.utils import format_datetime, parsedate_to_datetime

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.types import a2a_pb2
from google.protobuf.json_format import ParseDict

from agent_server import create_app
from agent_server.testing import scripted_agent
from gateway.service import create_gateway_app
from tests.support.gateway_service import triage_service
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio

CARD = "/.well-known/agent-card.json"
V03_FIELDS = {"url", "preferredTransport", "protocolVersion", "additionalInterfaces", "security"}


@pytest.fixture(scope="module", params=["server", "gateway"])
def base_url(request: pytest.FixtureRequest) -> Iterator[str]:
    app = create_app(scripted_agent(), token="s3cret") if request.param == "server" else None
    with serve_app(app or create_gateway_app(triage_service())) as url:
        yield url


@pytest.mark.parametrize(
    ("headers", "query"), [({"A2A-Version": "1.0"}, ""), ({"A2A-Version": "1.0.2"}, ""), ({}, "?A2A-Version=1.0")]
)
def test_a_v1_reader_gets_the_v1_agent_card_alone(base_url: str, headers: dict[str, str], query: str) -> None:
    card = httpx.get(base_url + CARD + query, headers=headers).json()
    ParseDict(card, a2a_pb2.AgentCard(), ignore_unknown_fields=False)  # raises on any field v1.0 does not have
    assert not V03_FIELDS & card.keys() and "stateTransitionHistory" not in card["capabilities"]
    offered = {(i["protocolBinding"], i["protocolVersion"]) for i in card["supportedInterfaces"]}
    assert {("JSONRPC", "1.0"), ("JSONRPC", "0.3"), ("urn:switchboard:a2a-ndjson", "1.0")} <= offered


def test_a_reader_without_a_version_gets_both_versions(base_url: str) -> None:
    response = httpx.get(base_url + CARD)
    card = response.json()
    assert card["url"] == base_url and card["preferredTransport"] == "JSONRPC" and card["protocolVersion"] == "0.3"
    assert card["supportedInterfaces"] and response.headers["vary"] == "A2A-Version"
    parsed = parse_agent_card(card)  # the a2a-sdk's parser reads it too
    assert {i.protocol_version for i in parsed.supported_interfaces} >= {"1.0", "0.3"}
    v1 = httpx.get(base_url + CARD, headers={"A2A-Version": "1.0"})
    assert v1.headers["etag"] != response.headers["etag"], "each spelling is its own representation"


async def test_the_a2a_sdk_client_asks_for_and_gets_the_v1_card(base_url: str) -> None:
    seen: list[httpx.Response] = []

    async def keep(response: httpx.Response) -> None:
        await response.aread()
        seen.append(response)

    async with httpx.AsyncClient(timeout=30, event_hooks={"response": [keep]}) as http:
        ClientFactory(ClientConfig(httpx_client=http))  # as the SDK sets up its client: it says A2A-Version 1.0
        card = await A2ACardResolver(http, base_url).get_agent_card()
    assert card.name and not V03_FIELDS & seen[-1].json().keys()


def test_last_modified_answers_if_modified_since_with_304(base_url: str) -> None:
    first = httpx.get(base_url + CARD, headers={"A2A-Version": "1.0"})
    stamp = first.headers["last-modified"]
    moment = parsedate_to_datetime(stamp)
    v1 = {"A2A-Version": "1.0"}
    assert httpx.get(base_url + CARD, headers=v1).headers["last-modified"] == stamp, "the same card, the same date"
    same = httpx.get(base_url + CARD, headers={**v1, "if-modified-since": stamp})
    assert same.status_code == 304 and same.content == b"" and same.headers["etag"] == first.headers["etag"]
    earlier = format_datetime(moment.replace(year=moment.year - 1), usegmt=True)
    assert httpx.get(base_url + CARD, headers={**v1, "if-modified-since": earlier}).status_code == 200
    assert httpx.get(base_url + CARD, headers={**v1, "if-modified-since": "not a date"}).status_code == 200
    other_tag = {**v1, "if-none-match": 'W/"other"', "if-modified-since": stamp}
    assert httpx.get(base_url + CARD, headers=other_tag).status_code == 200, "If-None-Match takes precedence"

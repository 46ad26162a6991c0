"""The webhook host rule: public hosts pass, private ones only when the operator lists them."""

from __future__ import annotations

import pytest

from agent_server.push.hosts import WebhookHosts
from protocol import ProtocolError

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",
        "http://localhost/hook",
        "http://app.localhost/hook",
        "http://10.1.2.3/",
        "http://172.16.0.1/",
        "http://192.168.0.1/",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/",
        "http://[fe80::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://0.0.0.0/",
        "http://100.64.0.1/",
    ],
)
async def test_private_loopback_and_link_local_hosts_are_refused_by_default(url: str) -> None:
    with pytest.raises(ProtocolError, match="not public"):
        await WebhookHosts().check(url)


@pytest.mark.parametrize("url", ["ftp://example.com/", "http:///path", "not a url", "http://host:port/"])
async def test_what_is_not_an_http_url_is_refused(url: str) -> None:
    with pytest.raises(ProtocolError):
        await WebhookHosts().check(url)


async def test_public_addresses_pass_and_the_operators_hosts_and_networks_too() -> None:
    assert await WebhookHosts().check("https://8.8.8.8/hook") == "8.8.8.8"
    allowed = WebhookHosts(["127.0.0.1", "10.1.0.0/16", "hooks.internal", "*.corp.example", "[::1]"])
    for url in (
        "http://127.0.0.1:9/",
        "http://10.1.200.3/",
        "http://hooks.internal/",
        "http://a.corp.example/",
        "http://[::1]:9/",
    ):
        await allowed.check(url)
    with pytest.raises(ProtocolError):
        await allowed.check("http://10.2.0.1/")


@pytest.mark.parametrize("entry", ["", "10.0.0.0/33", "host:80", "a*b"])
def test_an_allowed_host_that_is_none_of_the_forms_is_refused_at_once(entry: str) -> None:
    with pytest.raises(ValueError, match="allowed webhook host"):
        WebhookHosts([entry])

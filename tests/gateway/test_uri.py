"""The agent-URI grammar: each form resolves to its typed target; anything else fails with a clear error."""

from __future__ import annotations

import pytest

from gateway.errors import InvalidAgentURI
from gateway.uri import A2AHttpTarget, LocalTarget, MCPHttpTarget, MCPStdioTarget, parse_agent_uri


@pytest.mark.parametrize(
    ("uri", "base_url"),
    [
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000"),
        ("https://agents.example.com/billing/", "https://agents.example.com/billing"),
        ("HTTP://Host:81/a/b", "http://Host:81/a/b"),
    ],
)
def test_http_uris_are_a2a_agents(uri: str, base_url: str) -> None:
    assert parse_agent_uri(uri) == A2AHttpTarget(uri=uri, base_url=base_url)


def test_local_uri_names_an_in_process_agent() -> None:
    assert parse_agent_uri("local://billing") == LocalTarget(uri="local://billing", name="billing")
    assert parse_agent_uri("local://Billing_2") == LocalTarget(uri="local://Billing_2", name="Billing_2")


def test_mcp_stdio_uri_spawns_a_command_and_names_the_tool() -> None:
    uri = "mcp+stdio:python?args=-m+servers.mcp+'a b'&cwd=/srv&env=A=1&env=B=x%3Dy#search"
    target = parse_agent_uri(uri)
    assert target == MCPStdioTarget(
        uri=uri,
        tool="search",
        command="python",
        args=("-m", "servers.mcp", "a b"),
        env=(("A", "1"), ("B", "x=y")),
        cwd="/srv",
    )
    absolute = parse_agent_uri("mcp+stdio:///usr/bin/mcp-server#t")
    assert isinstance(absolute, MCPStdioTarget) and absolute.command == "/usr/bin/mcp-server" and absolute.args == ()


def test_mcp_http_uri_keeps_the_server_url_and_takes_the_tool_from_the_fragment() -> None:
    target = parse_agent_uri("mcp+http://127.0.0.1:9000/mcp#echo")
    assert target == MCPHttpTarget(
        uri="mcp+http://127.0.0.1:9000/mcp#echo", tool="echo", url="http://127.0.0.1:9000/mcp"
    )
    secure = parse_agent_uri("mcp+https://tools.example.com/v1/mcp?key=1#web_search")
    assert isinstance(secure, MCPHttpTarget)
    assert secure.url == "https://tools.example.com/v1/mcp?key=1" and secure.tool == "web_search"


def test_tools_of_one_mcp_server_share_its_server_key() -> None:
    a = parse_agent_uri("mcp+http://h:1/mcp#a")
    b = parse_agent_uri("mcp+http://h:1/mcp#b")
    assert isinstance(a, MCPHttpTarget) and isinstance(b, MCPHttpTarget)
    assert a.server_key == b.server_key


@pytest.mark.parametrize(
    ("uri", "problem"),
    [
        ("", "empty"),
        ("billing", "no scheme"),
        ("ftp://host/x", "scheme 'ftp'"),
        ("mcp://host/x#t", "scheme 'mcp'"),
        ("http://", "no host"),
        ("http://host:99999", "port"),
        ("http://host/x?y=1", "no query or fragment"),
        ("local://", "local://NAME"),
        ("local://a/b", "local://NAME"),
        ("local://billing:1", "not a local agent name"),
        ("local://a!b", "not a local agent name"),
        ("local://billing%0A", "not a local agent name"),
        ("mcp+stdio:python", "#TOOL"),
        ("mcp+stdio://host/python#t", "no host"),
        ("mcp+stdio:#t", "no command"),
        ("mcp+stdio:python?shell=1#t", "unknown query parameter 'shell'"),
        ("mcp+stdio:python?env=NOEQUALS#t", "NAME=VALUE"),
        ("mcp+stdio:python?args='unclosed#t", "shell line"),
        ("mcp+http://h:1/mcp", "#TOOL"),
        (" http://host", "whitespace"),
    ],
)
def test_bad_uris_name_the_uri_the_problem_and_the_accepted_forms(uri: str, problem: str) -> None:
    with pytest.raises(InvalidAgentURI) as caught:
        parse_agent_uri(uri)
    message = str(caught.value)
    assert repr(uri) in message
    assert problem in message
    assert "local://NAME" in message and "mcp+stdio:COMMAND" in message and "http(s)://" in message


@pytest.mark.parametrize(
    "uri",
    [
        "http://alice:s3cret@agents.example.com/billing",
        "https://token@agents.example.com",
        "mcp+https://alice:s3cret@tools.example.com/mcp#search",
        "local://alice:s3cret@billing",
    ],
)
def test_credentials_in_a_uri_are_refused_and_never_shown(uri: str) -> None:
    """The URI goes into every event, log line and error: credentials must be passed another way."""
    with pytest.raises(InvalidAgentURI) as caught:
        parse_agent_uri(uri)
    message = str(caught.value)
    assert "credentials" in message and "***@" in message
    assert "s3cret" not in message and "token" not in message and "alice" not in message
    assert "s3cret" not in caught.value.uri

"""Fuzzing both servers over real HTTP: thousands of random and mutated requests, and not one 5xx.

Each server is fuzzed on both HTTP parsers (h11, the default, and httptools).

The project's rule: bad input never crashes a server or loses data. It gets a 4xx whose body
(``{"error": {"code", "message"}}``, or a JSON-RPC envelope with ``"error"`` when one was
sent) says what to change, and it leaves nothing half-done. Each test sends
REQUESTS_PER_SERVER requests to one server (an agent server serving the scripted agent, a
gateway in front of it) through one pooled client, CONCURRENCY at a time, plus a few
hundred raw-socket requests for what an HTTP client will not send (``..`` in a path, raw
non-ASCII bytes, Content-Length that lies). Then it checks the server still answers
normally and that nothing a refused request touched was created or changed.

Requests come from a seeded ``random.Random``: the same seed sends the same requests (set
SWITCHBOARD_FUZZ_SEED to try another; every failure message names the seed). Texts that
reach the scripted agent are commands that end at once (never a long ``sleep`` or
``stream``), so every request ends quickly and none is left running.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import random
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import anyio
import httpx
import orjson
import pytest

from agent_server import ServerLimits
from agent_server.http.speedups import HTTP_PARSERS, HttpParser
from gateway import Agent, Gateway, MemoryEventLog, MemorySessionStore
from gateway.peers.allowed_hosts import HostAllowlist
from gateway.service import GatewayService, RemoteSpec, create_gateway_app
from protocol import MAX_JSON_DEPTH
from tests.support.gateway_service import agent_server
from tests.support.servers import serve_app

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(600)]

SEED = int(os.environ.get("SWITCHBOARD_FUZZ_SEED", "20250607"))
REQUESTS_PER_SERVER = 5000
RAW_REQUESTS_PER_SERVER = 200
CONCURRENCY = 8
REQUEST_DEADLINE_S = 60.0
"""Far above any request here (they take milliseconds); one that takes longer is reported as hanging."""
PATIENT = ServerLimits(header_timeout_s=60.0, body_timeout_s=60.0, keep_alive_timeout_s=60.0)
"""The servers' read timeouts are not under test here: on a starved machine they must not cut a request,
and an idle pooled connection must not be closed by the server just as the client reuses it."""
MAX_READ_BYTES = 4 << 20
GATEWAY_BODY_LIMIT = 1 << 20
AGENT_BODY_LIMIT = 10 * 1024 * 1024

TOOL = "scripted_tool"
REMOTE = "scripted"
EXPECTED_LOGS = frozenset({"task %s (agent %s) raised"})
"""Server-side errors logged on purpose: the scripted agent failing (``fail``, an unknown command)."""
ERROR_ECHO_FACTOR = 4
"""An error may quote the request (in its message and again in ``data``), not repeat it many times over."""
UPSTREAM_FAILURE_CODES = frozenset({-32012, -32013, -32014})
"""Gateway 502s that report an agent it called failing (unreachable, tool failed, run failed), not the gateway."""


# -- JSON with the parts a JSON library will not write -------------------------------------------


class Raw(str):
    """JSON text written as is: ``1e400``, ``NaN``, ``-0``, broken escapes, nesting too deep to build."""


class Pairs(list):  # type: ignore[type-arg]
    """An object as (key, value) pairs, so keys can repeat."""


def encode(value: Any, ascii_only: bool = True) -> str:
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, Pairs):
        return "{" + ",".join(f"{encode(k, ascii_only)}:{encode(v, ascii_only)}" for k, v in value) + "}"
    if isinstance(value, dict):
        return "{" + ",".join(f"{encode(k, ascii_only)}:{encode(v, ascii_only)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(encode(v, ascii_only) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


def to_bytes(value: Any, rng: random.Random) -> bytes:
    """Mostly ASCII-escaped; sometimes raw UTF-8, where a lone surrogate becomes invalid UTF-8."""
    if rng.random() < 0.8:
        return encode(value).encode()
    return encode(value, ascii_only=False).encode("utf-8", "surrogatepass")


def nested(depth: int, leaf: Any = 1) -> Any:
    """``depth`` levels of arrays and objects around ``leaf`` (a scalar is depth 0)."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


# -- requests and answers ---------------------------------------------------------------------

UNKNOWN = Raw("?")
"""The JSON-RPC id of an envelope whose bytes were mutated: whatever the server read."""


@dataclass
class Shot:
    """One request to send, and what the checks need to know about it."""

    kind: str
    method: str
    path: str
    body: bytes | None = None
    headers: list[tuple[str, str | bytes]] = field(default_factory=list)
    enveloped: bool = False
    rpc_id: Any = UNKNOWN
    """The JSON-RPC id of the envelope sent, when known: an enveloped answer must echo it."""
    fresh_task: str | None = None
    """A task id used by this request only: if it is refused, that task must not exist afterwards."""
    fresh_session: str | None = None
    """The same for a gateway session id."""
    chunked: bool = False
    """Send the body with ``Transfer-Encoding: chunked``, no Content-Length."""
    expect_ok: bool = False
    """A valid request: it must succeed."""
    raw: bytes | None = None
    """Sent as these bytes on a socket instead (what httpx will not send)."""
    half_close: bool = False
    """The raw request stops sending before its declared body ends: no answer is fine."""

    def describe(self) -> str:
        if self.raw is not None:
            return f"[{self.kind}] raw {self.raw[:300]!r}{'...' if len(self.raw) > 300 else ''} ({len(self.raw)} bytes)"
        body = (
            ""
            if self.body is None
            else f" body={self.body[:300]!r}{'...' if len(self.body) > 300 else ''} ({len(self.body)} bytes)"
        )
        headers = f" headers={self.headers!r}" if self.headers else ""
        return f"[{self.kind}] {self.method} {self.path}{headers}{body}"


@dataclass
class Answer:
    status: int | None
    headers: dict[str, str]
    body: bytes
    problem: str | None = None
    """Why the exchange failed: a hang, a dropped connection, a malformed stream."""


def header_value(value: str | bytes) -> bytes:
    """What an HTTP client sends: bytes (UTF-8 for non-ASCII), no control characters, no spaces around."""
    data = value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")
    return bytes(b for b in data if b >= 0x20 and b != 0x7F).strip() or b"-"


def parses(body: bytes | None) -> bool:
    """Whether ``body`` is JSON the servers read (a text may hold a lone surrogate, which they refuse)."""
    try:
        orjson.loads(body or b"")
    except orjson.JSONDecodeError:
        return False
    return True


def json_post(path: str, obj: Any, rng: random.Random, kind: str, **extra: Any) -> Shot:
    return Shot(kind, "POST", path, to_bytes(obj, rng), [("content-type", "application/json")], **extra)


# -- values -----------------------------------------------------------------------------------

WORDS = [
    "hello",
    "refund",
    "order",
    "ORD-1234",
    "billing",
    "tests",
    "text",
    "scripted",
    "tide",
    "#42",
    "ünïcödé",
    "日本語",
    "🙂",
]
SAFE_COMMANDS = ["echo", "fail", "ask", "data", "bogus", "", "ECHO", "Echo"]


def junk_text(rng: random.Random, max_len: int = 40) -> str:
    alphabet = rng.choice(
        [
            "abcdefghij ",
            "\x00\x01\x1f\x7f\t\r\n ",
            "éß中文🙂\u200b\u202e\ufeff",
            "\"\\/{}[]:,'`$%<>&;",
            "\ud800\udc00\udfff",  # lone surrogates: escaped, or invalid UTF-8 when written raw
        ]
    )
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(max_len)))


def safe_text(rng: random.Random) -> str:
    """A message for the scripted agent that ends at once: never sleep, stream or handoff."""
    roll = rng.random()
    if roll < 0.45:
        return f"echo {' '.join(rng.choices(WORDS, k=rng.randrange(1, 5)))}"
    if roll < 0.55:
        return f"{rng.choice(SAFE_COMMANDS)} {junk_text(rng)}"
    if roll < 0.65:
        return rng.choice(['data {"a": 1}', "data [1]", "data nope", "ask what next", "fail on purpose"])
    if roll < 0.75:
        return "echo " + rng.choice(["x" * 70_000, "é" * 5000, "🙂" * 3000])
    text = junk_text(rng)
    return "zz " + text if text.strip().lower().startswith(("sleep", "stream", "handoff")) else text


def number(rng: random.Random) -> Any:
    return rng.choice(
        [
            0,
            1,
            -1,
            2,
            2**31,
            2**53 + 1,
            2**63,
            2**64,
            2**70,
            -(2**70),
            10**30,
            0.5,
            -0.0,
            1e308,
            5e-324,
            Raw("-0"),
            Raw("1e400"),
            Raw("-1e400"),
            Raw("1e-400"),
            Raw("NaN"),
            Raw("Infinity"),
            Raw("-Infinity"),
            Raw("01"),
            Raw("1."),
            Raw(".5"),
            Raw("0x10"),
            Raw("+1"),
            Raw(str(2**70)),
            Raw("1" * 500),
            Raw("1E2"),
        ]
    )


_BIG_ARRAY = Raw(json.dumps(list(range(20_000))))
_BIG_OBJECT = Raw(json.dumps({f"k{i}": i for i in range(5000)}))
"""Written once: encoding (and mutating) them afresh for every request would take longer than sending them."""


def nasty(rng: random.Random, depth_here: int = 0) -> Any:
    """A value of a wrong (or strange) type for any field."""
    roll = rng.randrange(16)
    if roll == 0:
        return number(rng)
    if roll == 1:
        return rng.choice([None, True, False, "", " ", "null", "true", "0", "-1"])
    if roll == 2:
        return rng.choice([[], {}, [None], [1, "a"], {"a": None}, {"": ""}, ["echo hi"], {"text": "echo hi"}])
    if roll == 3:
        return rng.choice(["a" * 10_000, "b" * 300_000, "é" * 20_000, "\x00" * 1000])
    if roll == 4:
        return junk_text(rng, 200)
    if roll == 5:
        return Raw(
            rng.choice(['"\\ud800"', '"\\udc00x"', '"\\ud800\\ud800"', '"\\u00"', '"\\x41"', '"\\uZZZZ"', "'single'"])
        )
    if roll == 6:
        # just below, at and just above the nesting limit, counting where the value sits
        room = MAX_JSON_DEPTH - depth_here
        return nested(max(room + rng.choice([-1, 0, 1, 2]), 0))
    if roll == 7:
        count = rng.choice([1000, 1023, 1025, 5000, 50_000])
        opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
        return Raw(opener * count + "1" + closer * count)
    if roll == 8:
        return rng.choice([list(range(100)), _BIG_ARRAY])
    if roll == 9:
        return rng.choice([{f"k{i}": i for i in range(50)}, _BIG_OBJECT])
    if roll == 10:
        return rng.choice(
            [
                "../../etc/passwd",
                "%00",
                "%2e%2e%2f",
                "<script>alert(1)</script>",
                "${jndi:x}",
                "\u202egnp.exe",
                "x\n",
                "a\r\n",
                "\nx",
                "t\tu",
                "local://a%0A",
                "http://127.0.0.1:1/%0A",
            ]
        )
    if roll == 11:
        return Raw(rng.choice(["", ",", "[1,]", "{,}", "[", "{", "]", '"unterminated', "tru", "nul", "undefined"]))
    if roll == 12:
        return {"type": rng.choice(["text", "data", "file", "image", None, 5]), "text": nasty(rng, depth_here + 1)}
    if roll == 13:
        return rng.choice(["user", "agent", "system", "USER", "tool"])
    if roll == 14:
        return rng.choice(["submitted", "working", "input-required", "completed", "canceled", "failed"])
    return safe_text(rng)


def odd_id(rng: random.Random) -> Any:
    """A JSON-RPC id, good or bad."""
    return rng.choice(
        [
            1,
            0,
            -1,
            "a",
            "",
            "日本",
            1.5,
            -0.0,
            2**70,
            None,
            True,
            False,
            [],
            {},
            [1],
            {"id": 1},
            Raw("1e400"),
            Raw("NaN"),
            Raw("-0"),
            "x" * 5000,
            Raw('"\\ud800"'),
        ]
    )


# -- mutations ------------------------------------------------------------------------------


def mutate_bytes(body: bytes, rng: random.Random) -> bytes:
    data = bytearray(body)
    for _ in range(rng.randrange(1, 4)):
        op = rng.randrange(8)
        pos = rng.randrange(len(data) + 1)
        if op == 0 and data:
            data[min(pos, len(data) - 1)] = rng.randrange(256)
        elif op == 1:
            data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        elif op == 2:
            del data[pos : pos + rng.randrange(1, 16)]
        elif op == 3:
            del data[pos:]
        elif op == 4:
            data[pos:pos] = rng.choice(
                [b'"', b"{", b"}", b"[", b"]", b",", b":", b"\\", b"\x00", b"\xff", b"\xed\xa0\x80", b"\xc3"]
            )
        elif op == 5:
            start = rng.randrange(len(data) + 1)
            data[pos:pos] = data[start : start + rng.randrange(1, 32)]
        elif op == 6:
            data = bytearray(rng.choice([b"\xef\xbb\xbf", b" \n\t", b"//c\n", b"\x00"]) + bytes(data))
        else:
            data += rng.choice([b"\n{}", b"garbage", b"\x00", b",", b" " * 1000, bytes(data)])
    return bytes(data)


def paths_in(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value (object keys and array indexes), the value itself first."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += paths_in(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += paths_in(child, (*prefix, index))
    return found


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: replaced(value[head], rest, new)}
    copy = list(value)
    copy[head] = replaced(copy[head], rest, new)
    return copy


def mutate_structure(obj: dict[str, Any], rng: random.Random) -> Any:
    """Wrong types at some field, keys removed, unknown or duplicated keys."""
    op = rng.randrange(6)
    if op <= 2:
        for _ in range(rng.randrange(1, 3)):
            path = rng.choice(paths_in(obj)[1:] or [()])
            obj = replaced(obj, path, nasty(rng, len(path)))
        return obj
    if op == 3:
        path = rng.choice([p for p in paths_in(obj)[1:] if p] or [()])
        if not path:
            return obj
        parent_path, key = path[:-1], path[-1]
        parent: Any = obj
        for step in parent_path:
            parent = parent[step]
        if isinstance(parent, dict):
            return replaced(obj, parent_path, {k: v for k, v in parent.items() if k != key})
        return replaced(obj, parent_path, [v for i, v in enumerate(parent) if i != key])
    if op == 4:
        key = rng.choice([*obj, "extra", "ID", "__proto__", "", "constructor", "jsonrpc"])
        return {**obj, key: nasty(rng, 1)}
    pairs = Pairs(obj.items())
    key = rng.choice([*obj, "id"]) if obj else "id"
    pairs.insert(rng.randrange(len(pairs) + 1), (key, nasty(rng, 1)))
    return pairs


# -- what each server serves ------------------------------------------------------------------


@dataclass
class Known:
    """Ids that exist on the server before the fuzzing starts, for requests to aim at."""

    tasks: list[str]
    sessions: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    agent_url: str = ""


class Fuzzer:
    """Makes the requests for one server; ``gateway`` adds the management API to the binding."""

    BINDING = ("send", "sendSubscribe", "get", "cancel", "resubscribe")

    def __init__(self, rng: random.Random, known: Known, *, gateway: bool, tag: str) -> None:
        self.rng = rng
        self.known = known
        self.gateway = gateway
        self.tag = tag
        self.counter = 0

    def fresh(self, what: str) -> str:
        """An id no other request uses; its random tail keeps a flipped byte from making another request's id."""
        self.counter += 1
        return f"fz-{self.tag}-{what}-{self.counter}-{self.rng.getrandbits(48):012x}"

    # -- valid bodies --

    def part(self) -> dict[str, Any]:
        rng = self.rng
        roll = rng.random()
        if roll < 0.75:
            part: dict[str, Any] = {"type": "text", "text": safe_text(rng)}
            if rng.random() < 0.2:
                del part["type"]
        elif roll < 0.88:
            part = {"type": "data", "data": {"q": rng.choice(WORDS), "n": rng.randrange(10)}}
        else:
            payload = base64.b64encode(rng.randbytes(rng.randrange(64))).decode()
            inline = {"name": "f.txt", "mimeType": "text/plain", "bytes": payload}
            part = {"type": "file", "file": inline if rng.random() < 0.6 else {"uri": "https://files.example/f"}}
        if rng.random() < 0.15:
            part["metadata"] = {"m": rng.choice(WORDS)}
        return part

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "user",
            "parts": [self.part() for _ in range(self.rng.choice([1, 1, 1, 2, 3]))],
        }
        if self.rng.random() < 0.1:
            message["metadata"] = {"trace": self.rng.choice(WORDS)}
        return message

    def task_id(self) -> str:
        return self.rng.choice([*self.known.tasks, "nope", "x" * 300, "日本", "a/b", " "])

    def binding_params(self, method: str) -> tuple[dict[str, Any], str | None]:
        """Params for ``tasks/<method>``, and the fresh task id they create, if any."""
        rng = self.rng
        if method in ("send", "sendSubscribe"):
            params: dict[str, Any] = {"message": self.message()}
            fresh = None
            roll = rng.random()
            if roll < 0.6:
                fresh = params["id"] = self.fresh("task")
            elif roll < 0.7:
                params["id"] = rng.choice(self.known.tasks)
            if rng.random() < 0.4:
                params["sessionId"] = (
                    self.fresh("session") if rng.random() < 0.7 else rng.choice(["s1", "shared", "日本"])
                )
            if rng.random() < 0.2:
                params["metadata"] = {"caller": "fuzz", "n": rng.randrange(100)}
            if rng.random() < 0.2:
                params["historyLength"] = rng.randrange(4)
            return params, fresh
        if method == "get":
            params = {"id": self.task_id()}
            if rng.random() < 0.5:
                params["historyLength"] = rng.randrange(5)
            return params, None
        if method == "cancel":
            return {"id": self.task_id()}, None
        return {"id": self.task_id(), "afterSeq": rng.choice([-1, 0, 1, 2, 50])}, None

    def management_body(self) -> tuple[str, str, dict[str, Any]]:
        """A valid gateway API call with a body: (path, kind, body)."""
        rng = self.rng
        roll = rng.random()
        url = self.known.agent_url
        if roll < 0.3:
            return f"/sessions/{self.session_id()}/messages", "session", self.session_body()
        if roll < 0.55:
            body: dict[str, Any] = {"input": safe_text(rng) if rng.random() < 0.85 else {"q": rng.choice(WORDS)}}
            if rng.random() < 0.4:
                body["stream"] = rng.random() < 0.5
            return f"/tools/{self.tool_name()}/call", "tool_call", body
        if roll < 0.78:
            body = {"url": rng.choice([url, url + "/", "http://127.0.0.1:1", url.replace("127.0.0.1", "localhost")])}
            if rng.random() < 0.7:
                body["name"] = rng.choice(["fz_agent", "fz-" + rng.choice(WORDS), REMOTE, "triage"]) + str(
                    rng.randrange(3)
                )
            if rng.random() < 0.3:
                body["description"] = rng.choice(WORDS)
            if rng.random() < 0.3:
                body["handoff_from"] = rng.choice([[], ["triage"], ["ghost"]])
            if rng.random() < 0.1:
                body["token"] = "t0ken"
            return "/agents", "agent", body
        body = {
            "name": rng.choice(["fz_tool", "fz-tool", TOOL, "t" * 64]) + rng.choice(["0", "1", "2", "\n", " "]),
            "agent": rng.choice(
                [url, "http://127.0.0.1:1", "mcp+http://127.0.0.1:1/mcp#t", "local://triage", "mcp+stdio:echo#t"]
            ),
        }
        for key, value in [
            ("mode", rng.choice(["sync", "streaming", "conversational"])),
            ("timeout_ms", rng.choice([1000, 30_000])),
            ("max_cost_usd", rng.choice([0, 0.01, 5])),
            ("idle_timeout_secs", rng.choice([0.5, 30])),
            ("description", rng.choice(WORDS)),
            ("attach_to", rng.choice([[], ["triage"]])),
            ("token", "t0ken"),
        ]:
            if rng.random() < 0.3:
                body[key] = value
        if body.get("mode") == "conversational" and rng.random() < 0.5:
            body["max_turns"] = rng.randrange(1, 4)
        return "/tools", "tool", body

    def session_id(self) -> str:
        """A new session (sometimes with a newline or a space at its end, percent-encoded), or a known one."""
        if self.rng.random() < 0.3:
            return self.rng.choice(self.known.sessions)
        return self.fresh("session") + self.rng.choice(["", "", "", "%0A", "%0D%0A", "%20", "%09"])

    def session_body(self) -> dict[str, Any]:
        rng = self.rng
        body: dict[str, Any] = {"message": safe_text(rng) or "hello"}
        if rng.random() < 0.3:
            body["context_variables"] = {"customer": rng.choice(WORDS), "tier": rng.randrange(3)}
        if rng.random() < 0.6:
            body["stream"] = rng.random() < 0.4
        return body

    def tool_name(self) -> str:
        """The tool, one that requests may have defined meanwhile, or none."""
        return self.rng.choice([TOOL, TOOL, "fz_tool0", "fz-tool1", f"{TOOL}2", "nope", "a b", "x" * 200])

    # -- the shots --

    def shots(self, count: int) -> list[Shot]:
        kinds: list[tuple[Callable[[], Shot], float]] = [
            (self.valid, 12),
            (self.byte_mutated, 18),
            (self.wrong_fields, 26),
            (self.envelope, 10),
            (self.bad_json, 8),
            (self.odd_headers, 8),
            (self.odd_method, 5),
            (self.odd_path, 8),
            (self.query, 5),
        ]
        makers, weights = zip(*kinds, strict=False)
        return [self.rng.choices(makers, weights)[0]() for _ in range(count)]

    def a_body(self) -> tuple[str, str, dict[str, Any], str | None, str | None]:
        """A valid POST: (path, kind, body, fresh task id, fresh session id)."""
        if self.gateway and self.rng.random() < 0.6:
            path, kind, body = self.management_body()
            session = path.split("/")[2] if kind == "session" and "fz-" in path else None
            return path, kind, body, None, session
        method = self.rng.choice(self.BINDING)
        params, fresh = self.binding_params(method)
        return f"/tasks/{method}", f"tasks/{method}", params, fresh, None

    def valid(self) -> Shot:
        rng = self.rng
        if rng.random() < 0.25:
            return Shot("valid", "GET", self.a_get_path(), expect_ok=False)
        path, kind, body, fresh, session = self.a_body()
        if path.startswith("/tasks/") and rng.random() < 0.4:
            rpc_id = rng.choice([1, "a", None, 7.5])
            wrapped = {"jsonrpc": "2.0", "id": rpc_id, "method": path[1:], "params": body}
            shot = json_post(path, wrapped, rng, f"valid {kind} enveloped", enveloped=True, rpc_id=rpc_id)
        else:
            shot = json_post(path, body, rng, f"valid {kind}")
        shot.fresh_task, shot.fresh_session = fresh, session
        shot.expect_ok = kind in ("tasks/send", "tasks/sendSubscribe") and fresh is not None and parses(shot.body)
        return shot

    def byte_mutated(self) -> Shot:
        shot = self.valid_post()
        assert shot.body is not None
        shot.body = mutate_bytes(shot.body, self.rng)
        shot.kind = "bytes " + shot.kind
        shot.rpc_id = UNKNOWN
        return shot

    def valid_post(self) -> Shot:
        path, kind, body, fresh, session = self.a_body()
        enveloped = path.startswith("/tasks/") and self.rng.random() < 0.3
        if enveloped:
            body = {"jsonrpc": "2.0", "id": 1, "method": path[1:], "params": body}
        rpc_id = 1 if enveloped else UNKNOWN
        return json_post(
            path, body, self.rng, kind, enveloped=enveloped, rpc_id=rpc_id, fresh_task=fresh, fresh_session=session
        )

    def wrong_fields(self) -> Shot:
        path, kind, body, fresh, session = self.a_body()
        return json_post(
            path, mutate_structure(body, self.rng), self.rng, f"fields {kind}", fresh_task=fresh, fresh_session=session
        )

    def envelope(self) -> Shot:
        rng = self.rng
        method = rng.choice(self.BINDING)
        params, fresh = self.binding_params(method)
        envelope: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": f"tasks/{method}", "params": params}
        for _ in range(rng.randrange(1, 3)):
            key = rng.choice(["jsonrpc", "id", "method", "params", "extra"])
            if key == "jsonrpc":
                envelope["jsonrpc"] = rng.choice(["1.0", "2", 2.0, None, "", "2.0 ", [], "2.0"])
            elif key == "id":
                envelope["id"] = odd_id(rng)
            elif key == "method":
                envelope["method"] = rng.choice(
                    [
                        f"tasks/{rng.choice(self.BINDING)}",
                        "tasks/send",
                        "",
                        None,
                        5,
                        [],
                        "TASKS/SEND",
                        "tasks/send ",
                        "rpc.discover",
                        "tasks/" + "x" * 1000,
                        {"m": 1},
                    ]
                )
            elif key == "params":
                envelope["params"] = rng.choice(
                    [None, [], [params], "x", 5, {}, nested(70), Pairs([("id", 1), ("id", "x")])]
                )
            else:
                envelope[rng.choice(["result", "error", "ID", "Method"])] = nasty(rng, 1)
        if rng.random() < 0.1:
            del envelope[rng.choice(list(envelope))]
        if rng.random() < 0.08:
            body: Any = rng.choice([[envelope], [envelope, envelope], []])  # batches are not supported
        else:
            body = envelope
        rpc_id = envelope.get("id") if isinstance(body, dict) else UNKNOWN
        return json_post(f"/tasks/{method}", body, rng, "envelope", enveloped=True, rpc_id=rpc_id, fresh_task=fresh)

    def bad_json(self) -> Shot:
        rng = self.rng
        path, kind, body, fresh, session = self.a_body()
        roll = rng.randrange(10)
        if roll == 0:
            data = rng.randbytes(rng.randrange(1, 200))
        elif roll == 1:
            data = rng.choice([b"", b" ", b"\n\r\t ", b"\x00", b"\xef\xbb\xbf"])
        elif roll == 2:
            data = rng.choice([b"null", b"[]", b"1", b'"s"', b"true", b"1e400", b"NaN", b"-0", b"[{}]", b"{}", b"{}{}"])
        elif roll == 3:
            data = encode(body).encode("utf-16")
        elif roll == 4:
            data = encode(body).encode()[: rng.randrange(1, 40)]
        elif roll == 5:
            count = rng.choice([MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1, 1023, 1024, 1025, 3000])
            data = encode(nested(count)).encode() if count < 200 else b'{"a":' * count + b"1" + b"}" * count
        elif roll == 6:
            data = encode(body).encode().replace(b'"', b"'")
        elif roll == 7:
            data = b'{"' + "é".encode("latin-1") + b'": 1}' if rng.random() < 0.5 else b'{"a": "\xed\xa0\x80"}'
        elif roll == 8:
            limit = GATEWAY_BODY_LIMIT if self.gateway else AGENT_BODY_LIMIT
            data = b'{"message": "' + b"x" * (limit + rng.choice([-100, 1, 1000])) + b'"}'
        else:
            data = b'{"a": 1,}' if rng.random() < 0.5 else b'{"a" 1}'
        shot = Shot(f"json {kind}", "POST", path, data, [("content-type", "application/json")])
        shot.fresh_task, shot.fresh_session = fresh, session
        return shot

    def odd_headers(self) -> Shot:
        rng = self.rng
        shot = self.valid_post() if rng.random() < 0.85 else Shot("headers", "GET", self.a_get_path())
        shot.kind = "headers " + shot.kind
        headers: list[tuple[str, str | bytes]] = []
        for _ in range(rng.randrange(1, 4)):
            roll = rng.randrange(9)
            if roll <= 2:
                headers.append(
                    (
                        "content-type",
                        rng.choice(
                            [
                                "application/json",
                                "APPLICATION/JSON",
                                "application/json; charset=utf-8",
                                "application/json;charset=latin-1",
                                "application/vnd.a2a+json",
                                "application/+json",
                                "application/json-patch+json",
                                "text/plain",
                                "text/json",
                                "application/x-www-form-urlencoded",
                                "multipart/form-data; boundary=x",
                                "",
                                ";",
                                "application/json, text/plain",
                                " application/json ",
                                "application/jsonx",
                                "*/*",
                                "application/x-ndjson",
                                b"application/json\xff",
                            ]
                        ),
                    )
                )
            elif roll == 3:
                headers.append(
                    (
                        "authorization",
                        rng.choice(
                            [
                                "Bearer",
                                "Bearer ",
                                "Bearer x",
                                "Basic dXNlcjpwYXNz",
                                "bearer  t0ken ",
                                "x" * 4000,
                                b"Bearer \xe9",
                                "Token t",
                            ]
                        ),
                    )
                )
            elif roll == 4:
                origin = rng.choice(
                    ["https://evil.example", "null", "http://127.0.0.1", "", "file://", "http://[::1]:1"]
                )
                headers.append(("origin", origin))
            elif roll == 5:
                headers.append(("accept", rng.choice(["text/html", "application/x-ndjson", "*/*;q=0", "", "garbage/"])))
            elif roll == 6:
                name = rng.choice(
                    ["a2a-version", "traceparent", "x-forwarded-for", "host", "expect", "cookie", "content-encoding"]
                )
                headers.append(
                    (
                        name,
                        rng.choice(
                            ["1", "00-abc-01", "1.2.3.4", "evil.example", "100-continue", "a=b", "gzip", "x" * 8000]
                        ),
                    )
                )
            elif roll == 7:
                shot.chunked = True
                shot.body = shot.body or b"{}"
                shot.kind += " chunked"
            else:
                headers.append(
                    (
                        "x-" + "".join(rng.choices("abcXYZ019-_.!#$%&'*+^`|~", k=rng.randrange(1, 12))),
                        junk_text(rng, 20),
                    )
                )
        headers = [(name, header_value(value)) for name, value in headers]
        replaces = any(name == "content-type" for name, _ in headers) and rng.random() < 0.6
        shot.headers = [h for h in shot.headers if not (replaces and h[0] == "content-type")] + headers
        return shot

    def a_get_path(self) -> str:
        rng = self.rng
        options = [f"/tasks/{quote(self.task_id(), safe='')}", "/.well-known/agent.json"]
        if rng.random() < 0.3:
            options[0] += (
                f"?historyLength={rng.choice(['0', '2', '-1', 'x', '1e3', '2.0', '99999999999999999999', ''])}"
            )
        if self.gateway:
            options += [
                "/health",
                "/",
                "/agents",
                "/tools",
                "/runs",
                f"/agents/{rng.choice(self.known.agents)}",
                f"/tools/{rng.choice(self.known.tools)}",
                f"/sessions/{rng.choice(self.known.sessions)}",
                f"/runs/{rng.choice(self.known.runs)}/events",
                f"/runs/{rng.choice(self.known.runs)}/events?follow=1",
            ]
        return rng.choice(options)

    def odd_method(self) -> Shot:
        rng = self.rng
        method = rng.choice(
            [
                "PUT",
                "PATCH",
                "OPTIONS",
                "HEAD",
                "TRACE",
                "DELETE",
                "CONNECT",
                "FOO",
                "BREW",
                "PROPFIND",
                "get",
                "post",
                "M-SEARCH",
            ]
        )
        if rng.random() < 0.5:
            shot = self.valid_post()
            shot.method = method
        else:
            shot = Shot("method", method, self.a_get_path(), headers=[("content-type", "application/json")])
        if method == "DELETE" and self.gateway:
            # DELETE works on the gateway: aim it at names nothing else here creates
            shot.path = rng.choice(["/agents/", "/tools/", "/sessions/"]) + self.fresh("gone")
        shot.kind = f"method {method} " + shot.kind
        shot.fresh_task = shot.fresh_session = None
        return shot

    def odd_path(self) -> Shot:
        rng = self.rng
        bases = [
            "/tasks/send",
            "/tasks/get",
            "/tasks/x",
            "/.well-known/agent.json",
            "/tasks",
            "/",
            "/tasks/sendSubscribe",
        ]
        if self.gateway:
            bases += [
                "/agents",
                "/tools",
                f"/tools/{TOOL}/call",
                "/sessions/s/messages",
                "/runs",
                "/health",
                "/sessions/s",
                "/runs/r/events",
            ]
        base = rng.choice(bases)
        roll = rng.randrange(9)
        if roll == 0:
            path = base + "/"
        elif roll == 1:
            path = base.upper() if rng.random() < 0.5 else base.replace("/", "//")
        elif roll == 2:
            path = "".join(f"%{ord(c):02X}" if c not in "/" and rng.random() < 0.5 else c for c in base)
        elif roll == 3:
            path = (
                base
                + "/"
                + rng.choice(["%2e%2e", "%2E%2E/%2e%2e/etc/passwd", "%2F", "%00", "%ff%fe", "%", "%zz", "%u2215"])
            )
        elif roll == 4:
            path = base + "/" + "a" * rng.choice([1000, 8000, 60_000])
        elif roll == 5:
            path = (
                base
                + "/"
                + quote(rng.choice(["日本語", "é", "🙂", "\u202e", "\x00", " ", "\ud7ff", "x\n", "x\r\n"]), safe="")
            )
        elif roll == 6:
            path = base.replace("/tasks/", "/tasks/%2F") if "/tasks/" in base else base + "%2F"
        elif roll == 7:
            path = rng.choice(
                [
                    "/tasks/{task_id}",
                    "/tasks/" + "/" * 50,
                    "/sessions//messages",
                    "/tools//call",
                    "/agents/%20",
                    "/runs//events",
                    "/sessions/" + "s" * 129,
                    "/sessions/a%2Fb",
                    "/tasks/send;x",
                    "/favicon.ico",
                ]
            )
        else:
            path = base + rng.choice(
                ["?", "?=", "?&&&", "?a", "%23frag", "?x=" + "y" * 5000, "?%zz=1", "?historyLength=1&historyLength=x"]
            )
        method = rng.choice(["GET", "POST", "POST", "DELETE"]) if self.gateway else rng.choice(["GET", "POST"])
        if method == "DELETE" and ("/agents" in path or "/tools" in path or "/sessions" in path):
            method = "GET"  # a DELETE that lands on a real name would remove it; aim odd DELETEs elsewhere
        shot = self.valid_post() if method == "POST" else Shot("path", method, "")
        shot.method, shot.path = method, path
        shot.kind = "path " + shot.kind
        shot.fresh_task = shot.fresh_session = None
        shot.expect_ok = False
        return shot

    def query(self) -> Shot:
        rng = self.rng
        junk = [
            "",
            "-1",
            "-2",
            "0",
            "1",
            "x",
            "1.5",
            "1e3",
            "99999999999999999999999",
            "9" * 5000,
            "%00",
            "%ff",
            "true",
            "yes",
            "on",
            "off",
            "NaN",
            " 1",
            "1 ",
            "٣",
            "１",
            "1_0",
            "+1",
            "0x10",
            "-0",
            "[]",
            "1&x=2",
        ]
        if self.gateway:
            run = rng.choice(self.known.runs)
            path = rng.choice(
                [f"/runs/{run}/events", f"/runs/{run}/events", "/runs", f"/tasks/{self.task_id()}", "/runs/nope/events"]
            )
        else:
            path = f"/tasks/{quote(self.task_id(), safe='')}"
        names = ["after_seq", "limit", "follow", "historyLength", "unknown", "after_seq", "follow"]
        params = [(rng.choice(names), rng.choice(junk)) for _ in range(rng.randrange(1, 4))]
        query = "&".join(f"{quote(name)}={quote(value, safe='%')}" for name, value in params)
        return Shot("query", "GET", f"{path}?{query}")

    # -- raw requests: what httpx will not send --

    def raw_shots(self, count: int, port: int) -> list[Shot]:
        return [self.raw_shot(port) for _ in range(count)]

    def raw_shot(self, port: int) -> Shot:
        rng = self.rng
        shot = self.valid_post()
        body, path = shot.body or b"{}", shot.path.encode()
        json_type = b"Content-Type: application/json\r\n"

        def request(
            method: bytes, target: bytes, headers: bytes = b"", content: bytes = b"", close: bool = True
        ) -> bytes:
            head = method + b" " + target + b" HTTP/1.1\r\n" + f"Host: 127.0.0.1:{port}\r\n".encode() + headers
            return head + (b"Connection: close\r\n" if close else b"") + b"\r\n" + content

        def length(value: int | bytes) -> bytes:
            return b"Content-Length: " + (value if isinstance(value, bytes) else str(value).encode()) + b"\r\n"

        roll = rng.randrange(12)
        half_close = False
        if roll == 0:
            dots = [
                b"/tasks/../.well-known/agent.json",
                b"/tasks/./send",
                b"/../../etc/passwd",
                b"/./health",
                b"/agents/../tools",
            ]
            raw = request(b"GET", rng.choice(dots))
        elif roll == 1:
            non_ascii = [
                b"/tasks/\xc3\xa9",
                b"/tasks/\xff\xfe",
                b"/sessions/\xe2\x82\xac/messages",
                b"/agents/\xed\xa0\x80",
                b"/\x80",
            ]
            raw = request(b"GET", rng.choice(non_ascii))
        elif roll == 2:  # a Content-Length shorter than the body
            raw = request(b"POST", path, json_type + length(max(len(body) - rng.randrange(1, 10), 0)), body)
        elif roll == 3:  # longer: the client stops sending and waits
            raw = request(b"POST", path, json_type + length(len(body) + rng.randrange(1, 100)), body, close=False)
            half_close = True
        elif roll == 4:
            raw = request(
                b"POST",
                path,
                json_type + length(rng.choice([b"-1", b"abc", b"+5", b"1e3", b"9" * 30, b"5, 6", b""])),
                body,
            )
        elif roll == 5:
            raw = request(b"POST", path, json_type + length(len(body)) + length(len(body) + 1), body)
        elif roll == 6:
            chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i : i + 7]), body[i : i + 7]) for i in range(0, len(body), 7))
            ending = rng.choice([b"0\r\n\r\n", b"zz\r\n\r\n", b"", b"ffffffff\r\nabc"])
            raw = request(b"POST", path, json_type + b"Transfer-Encoding: chunked\r\n", chunks + ending)
            half_close = ending != b"0\r\n\r\n"
        elif roll == 7:
            raw = request(
                b"POST",
                path,
                b"Content-Type: application/json\xff\xfe\r\nX-Bytes: \x80\x81\r\n" + length(len(body)),
                body,
            )
        elif roll == 8:
            raw = (
                b"GET /tasks/x HTTP/1.0\r\n\r\n" if rng.random() < 0.5 else request(b"GET", b"http://127.0.0.1/tasks/x")
            )
        elif roll == 9:
            odd = [
                (b"OPTIONS", b"*"),
                (b"G@T", b"/tasks/x"),
                (b"GET", b"/tasks/x HTTP/9.9"),
                (b"GET", b""),
                (b"GET ", b"/tasks/x"),
            ]
            raw = request(*rng.choice(odd))
        elif roll == 10:
            raw = request(b"GET", b"/" + b"a" * rng.choice([20_000, 70_000]))
        else:
            raw = request(
                b"POST",
                path,
                json_type + b"X-Big: " + b"v" * rng.choice([100, 20_000]) + b"\r\n" + length(len(body)),
                body,
            )
        method, target = ([*raw.split(b" ", 2), b"", b""])[:2]
        return Shot(
            f"raw {roll}",
            method.decode("latin-1"),
            target.decode("latin-1"),
            enveloped=shot.enveloped,
            raw=raw,
            half_close=half_close,
        )


# -- sending ----------------------------------------------------------------------------------


_PRINTABLE = "".join(chr(c) for c in range(0x21, 0x7F))
"""What stays as is in a request target; anything else is percent-encoded, as a client would."""


async def send_one(http: httpx.AsyncClient, base: str, shot: Shot) -> Answer:
    parts = urlsplit(base)
    try:
        url = httpx.URL(
            scheme="http",
            host=parts.hostname or "",
            port=parts.port,
            raw_path=quote(shot.path, safe=_PRINTABLE).encode(),
        )
    except httpx.InvalidURL as exc:
        return Answer(None, {}, b"", f"client refused to send it: {exc!r}")
    content: Any = shot.body
    if shot.chunked:
        body = shot.body or b""

        async def chunked() -> AsyncIterator[bytes]:
            for start in range(0, len(body), 1000):
                yield body[start : start + 1000]

        content = chunked()
    try:
        with anyio.fail_after(REQUEST_DEADLINE_S):
            request = http.build_request(shot.method, url, headers=shot.headers, content=content)
            response = await http.send(request, stream=True)
            try:
                data = bytearray()
                async for chunk in response.aiter_raw():
                    data += chunk
                    if len(data) > MAX_READ_BYTES:
                        break
            finally:
                await response.aclose()
            return Answer(response.status_code, dict(response.headers), bytes(data))
    except TimeoutError:
        return Answer(None, {}, b"", f"no complete answer within {REQUEST_DEADLINE_S} s")
    except (httpx.LocalProtocolError, httpx.UnsupportedProtocol, UnicodeEncodeError) as exc:
        return Answer(None, {}, b"", f"client refused to send it: {exc!r}")
    except httpx.HTTPError as exc:
        return Answer(None, {}, b"", f"the connection failed: {exc!r}")


async def send_raw(port: int, shot: Shot) -> Answer:
    assert shot.raw is not None
    data = bytearray()
    try:
        with anyio.fail_after(REQUEST_DEADLINE_S):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                try:
                    await stream.send(shot.raw)
                    if shot.half_close:
                        await stream.send_eof()
                except (anyio.BrokenResourceError, ConnectionError):
                    pass  # the server refused before reading it all; its answer may still be there
                while len(data) <= MAX_READ_BYTES:
                    try:
                        data += await stream.receive()
                    except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
                        break
    except TimeoutError:
        return Answer(None, {}, bytes(data), f"no complete answer within {REQUEST_DEADLINE_S} s")
    head, _, body = bytes(data).partition(b"\r\n\r\n")
    if not head:
        return Answer(None, {}, b"", None if shot.half_close else "the server closed the connection without an answer")
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split(" ")[1])
    except (IndexError, ValueError):
        return Answer(None, {}, bytes(data), f"not an HTTP answer: {lines[0]!r}")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding") == "chunked":
        body = dechunk(body)
    return Answer(status, headers, body)


def dechunk(data: bytes) -> bytes:
    """A chunked body's content, as far as it can be read."""
    out = bytearray()
    while data:
        size_line, _, rest = data.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError:
            break
        if size == 0:
            break
        out += rest[:size]
        data = rest[size + 2 :]
    return bytes(out)


async def fire(shots: list[Shot], base: str) -> list[Answer]:
    """Every shot, CONCURRENCY at a time, each worker on its own kept-alive connection; answers in the shots' order.

    One client per worker, not one pool shared by all: httpcore's pool can close a connection it has
    just handed to a waiting request (encode/httpcore#1110), which showed here as a rare ReadError('')
    that the server never caused. A connection of its own still carries request after request.
    """
    answers: list[Answer | None] = [None] * len(shots)
    pending = iter(range(len(shots)))
    port = urlsplit(base).port or 80

    async def worker() -> None:
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=1), timeout=REQUEST_DEADLINE_S) as http:
            for index in pending:
                shot = shots[index]
                answers[index] = await (send_raw(port, shot) if shot.raw is not None else send_one(http, base, shot))

    async with anyio.create_task_group() as group:
        for _ in range(CONCURRENCY):
            group.start_soon(worker)
    assert all(answer is not None for answer in answers)
    return answers  # type: ignore[return-value]


# -- checking ---------------------------------------------------------------------------------

_UVICORN_REFUSAL = b"Invalid HTTP request received."


def problem_with(shot: Shot, answer: Answer, *, gateway: bool) -> str | None:
    """What is wrong with this answer, or None."""
    if answer.status is None:
        if answer.problem is None or answer.problem.startswith("client refused"):
            return None
        return answer.problem
    status = answer.status
    if status >= 500 and not (gateway and _reports_upstream(answer)):
        return f"answered {status}"
    if shot.expect_ok and status != 200:
        return f"a valid request answered {status}"
    if shot.method.upper() == "HEAD":
        return None  # no body to check
    if status < 400:
        return _check_success(answer) if status < 300 else None
    if shot.raw is not None and answer.body.startswith(_UVICORN_REFUSAL):
        return None  # uvicorn's own 400 for a request that is not HTTP: it never reaches the app
    return _check_error_body(shot, answer)


def _reports_upstream(answer: Answer) -> bool:
    """A gateway 502 (504: past the tool's own timeout) with the project's body saying the agent it called
    failed, not that the gateway broke."""
    try:
        error = orjson.loads(answer.body)["error"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return False
    data = error.get("data") or {}
    if answer.status == 504:
        return error.get("code") == -32013 and str(data.get("reason")).endswith("timeout")
    broke = data.get("reason") == "error" or data.get("error_type") in _GATEWAY_BUGS
    return answer.status == 502 and error.get("code") in UPSTREAM_FAILURE_CODES and not broke


_GATEWAY_BUGS = frozenset(
    {"TypeError", "KeyError", "AttributeError", "ValueError", "AssertionError", "IndexError", "RuntimeError"}
)
"""A run that failed with one of these broke in the gateway's own code, whatever the status says."""


def _check_success(answer: Answer) -> str | None:
    media = answer.headers.get("content-type", "")
    try:
        if media.startswith("application/json"):
            orjson.loads(answer.body)
        elif media.startswith("application/x-ndjson"):
            lines = answer.body.split(b"\n")
            for line in lines[:-1] if len(answer.body) > MAX_READ_BYTES else lines:
                if line.strip():
                    orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return f"a {answer.status} answer that is not valid {media}: {exc}"
    return None


def _check_error_body(shot: Shot, answer: Answer) -> str | None:
    sent = len(shot.raw or shot.body or b"") + len(shot.path)
    if len(answer.body) > ERROR_ECHO_FACTOR * sent + (64 << 10):
        return f"a {answer.status} of {len(answer.body)} bytes for a request of {sent}: not a message to act on"
    try:
        body = orjson.loads(answer.body)
    except orjson.JSONDecodeError:
        return f"a {answer.status} whose body is not JSON"
    if not isinstance(body, dict) or not isinstance(body.get("error"), dict):
        return f"a {answer.status} without an error object"
    error = body["error"]
    if (
        not isinstance(error.get("code"), int)
        or not isinstance(error.get("message"), str)
        or not error["message"].strip()
    ):
        return f"a {answer.status} whose error lacks a code or a message"
    extra = set(body) - {"error"}
    if extra:
        enveloped = shot.enveloped or shot.raw is not None or b"jsonrpc" in (shot.body or b"")
        if not enveloped or extra != {"jsonrpc", "id"} or body["jsonrpc"] != "2.0":
            return f"a {answer.status} error body with keys {sorted(body)}"
        sent = shot.rpc_id
        valid_id = sent is None or (isinstance(sent, str | int | float) and not isinstance(sent, bool | Raw))
        if valid_id and sent == sent and body["id"] != sent:  # noqa: PLR0124 - NaN is not equal to itself
            return f"an enveloped error that answers id {body['id']!r} to id {sent!r}"
    return None


class ServerErrors(logging.Handler):
    """Errors the servers log in their threads: every unexpected exception, also one whose 500 nobody received.

    ``logging`` calls ``emit`` under the handler's lock.
    """

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg not in EXPECTED_LOGS and record.name.startswith(
            ("agent_server", "gateway", "uvicorn", "starlette")
        ):
            self.records.append(record)

    def report(self) -> list[str]:
        with self.lock:  # type: ignore[union-attr]
            records = list(self.records)
        return [
            f"logged by {r.name}: {r.getMessage()}" + (f" {r.exc_info[1]!r}" if r.exc_info else "") for r in records
        ]


@pytest.fixture
def server_errors() -> Iterator[ServerErrors]:
    handler = ServerErrors()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


def offenders(shots: list[Shot], answers: list[Answer], *, gateway: bool) -> list[str]:
    found = []
    for shot, answer in zip(shots, answers, strict=True):
        problem = problem_with(shot, answer, gateway=gateway)
        if problem is not None:
            found.append(f"{problem}: {shot.describe()} -> {answer.status} {answer.body[:400]!r}")
    return found


def summary(shots: list[Shot], answers: list[Answer], seconds: float) -> str:
    statuses = Counter(a.status for a in answers)
    unsent = Counter((a.problem or "no answer").split(":")[0] for a in answers if a.status is None)
    return (
        f"seed {SEED}: {len(shots)} requests in {seconds:.1f} s; statuses {dict(sorted(statuses.items(), key=str))}; "
        f"without a status: {dict(unsent)}"
    )


def fail_if(found: list[str], header: str) -> None:
    if found:
        shown = "\n".join(found[:60])
        more = f"\n... and {len(found) - 60} more" if len(found) > 60 else ""
        pytest.fail(
            f"{header}: {len(found)} offenders (SWITCHBOARD_FUZZ_SEED={SEED} sends the same requests):\n{shown}{more}"
        )


# -- the servers ------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=HTTP_PARSERS)
def http_parser(request: pytest.FixtureRequest) -> HttpParser:
    """Each server is fuzzed on both HTTP parsers: h11, the default, and httptools."""
    parser: HttpParser = request.param
    return parser


@pytest.fixture(scope="module")
def scripted_url(http_parser: HttpParser) -> Iterator[str]:
    with agent_server(limits=PATIENT, http=http_parser) as url:
        yield url


@pytest.fixture(scope="module")
def gateway_url(scripted_url: str, http_parser: HttpParser) -> Iterator[str]:
    with gateway_in_front_of(scripted_url, http_parser) as url:
        yield url


@contextmanager
def gateway_in_front_of(scripted_url: str, http_parser: HttpParser) -> Iterator[str]:
    """Memory stores, a local offline agent, the scripted agent registered by URL, and a tool pointing at it.

    The API may add agents and tools on the scripted server's address and a closed port only,
    so a mutated URL is refused (403) instead of reaching some other host or port.
    """
    port = urlsplit(scripted_url).port
    gateway = Gateway(event_log=MemoryEventLog(), allowed_hosts=HostAllowlist([f"127.0.0.1:{port}", "127.0.0.1:1"]))
    service = GatewayService(
        Agent("triage", "Route customers to the right specialist."),
        remotes=[RemoteSpec(scripted_url, REMOTE, "Does what each message says.")],
        gateway=gateway,
        session_store=MemorySessionStore(),
    )
    with serve_app(create_gateway_app(service), limits=PATIENT, http=http_parser) as url:
        created = httpx.post(
            f"{url}/tools", json={"name": TOOL, "agent": scripted_url, "timeout_ms": 60_000}, timeout=60
        )
        assert created.status_code == 201, created.text
        yield url


def send_body(text: str, task_id: str | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"message": {"role": "user", "parts": [{"type": "text", "text": text}]}, **extra}
    if task_id is not None:
        body["id"] = task_id
    return body


def task_after(http: httpx.Client, text: str, task_id: str | None = None) -> dict[str, Any]:
    response = http.post("/tasks/send", json=send_body(text, task_id))
    assert response.status_code == 200, response.text
    return response.json()


def check_the_binding_still_works(http: httpx.Client) -> None:
    task = task_after(http, "echo still here")
    assert task["status"]["state"] == "completed", task
    again = http.get(f"/tasks/{task['id']}")
    assert again.status_code == 200 and again.json()["id"] == task["id"]
    with http.stream("POST", "/tasks/sendSubscribe", json=send_body("echo streamed")) as stream:
        lines = [orjson.loads(line) for line in stream.iter_lines() if line]
    assert stream.status_code == 200 and lines[-1]["final"] is True, lines
    assert http.get("/.well-known/agent.json").status_code == 200


async def check_fresh_ids(base: str, shots: list[Shot], answers: list[Answer], *, gateway: bool) -> list[str]:
    """A refused request left no task or session behind; a valid send left its task."""
    checks: list[tuple[Shot, Answer, tuple[int, ...]]] = []
    lookups: list[Shot] = []
    for shot, answer in zip(shots, answers, strict=True):
        refused = answer.status is not None and 400 <= answer.status < 500
        if shot.fresh_task is not None and (refused or (shot.expect_ok and answer.status == 200)):
            checks.append((shot, answer, (404,) if refused else (200,)))
            lookups.append(Shot("check", "GET", f"/tasks/{quote(shot.fresh_task, safe='')}"))
        if gateway and shot.fresh_session is not None and refused:
            checks.append((shot, answer, (400, 404)))  # 400: an id no session can have
            lookups.append(Shot("check", "GET", f"/sessions/{shot.fresh_session}"))
    found = []
    for (shot, answer, expected), lookup, got in zip(checks, lookups, await fire(lookups, base), strict=True):
        if got.status not in expected:
            found.append(
                f"{lookup.path} answers {got.status} after {shot.describe()} -> {answer.status} {answer.body[:300]!r}"
            )
    return found


# -- the tests --------------------------------------------------------------------------------


async def test_an_agent_server_answers_thousands_of_bad_requests_with_4xx(
    scripted_url: str, server_errors: ServerErrors
) -> None:
    with httpx.Client(base_url=scripted_url, timeout=10) as http:
        reference = [task_after(http, "echo keep me"), task_after(http, "ask keep me waiting?")]
        targets = [
            task_after(http, "echo target")["id"],
            task_after(http, "ask what?")["id"],
            task_after(http, "fail target")["id"],
        ]
        before = [http.get(f"/tasks/{task['id']}").json() for task in reference]

        fuzzer = Fuzzer(random.Random(SEED), Known(tasks=targets), gateway=False, tag="a")
        shots = fuzzer.shots(REQUESTS_PER_SERVER) + fuzzer.raw_shots(
            RAW_REQUESTS_PER_SERVER, urlsplit(scripted_url).port or 80
        )
        started = time.monotonic()
        answers = await fire(shots, scripted_url)
        seconds = time.monotonic() - started
        print(summary(shots, answers, seconds))

        found = offenders(shots, answers, gateway=False)
        check_the_binding_still_works(http)
        found += await check_fresh_ids(scripted_url, shots, answers, gateway=False)
        after = [http.get(f"/tasks/{task['id']}").json() for task in reference]
        if after != before:
            found.append(f"tasks no request named changed: {before} -> {after}")
        for task_id in targets:
            if http.get(f"/tasks/{task_id}").status_code != 200:
                found.append(f"task {task_id} can no longer be read")
    fail_if(found + server_errors.report(), summary(shots, answers, seconds))


async def test_a_gateway_answers_thousands_of_bad_requests_with_4xx(
    gateway_url: str, server_errors: ServerErrors
) -> None:
    with httpx.Client(base_url=gateway_url, timeout=10) as http:
        sessions = []
        for index in range(2):
            turn = http.post(f"/sessions/known-{index}/messages", json={"message": "hello there", "stream": False})
            assert turn.status_code == 200, turn.text
            sessions.append(f"known-{index}")
        called = http.post(f"/tools/{TOOL}/call", json={"input": "echo hi"})
        assert called.status_code == 200, called.text
        reference_turn = http.post("/sessions/reference/messages", json={"message": "keep this", "stream": False})
        assert reference_turn.status_code == 200, reference_turn.text
        reference = http.get("/sessions/reference").json()
        targets = [task_after(http, "echo target")["id"]]
        agents_before = {a["name"]: a for a in http.get("/agents").json()["agents"]}
        tools_before = {t["name"]: t for t in http.get("/tools").json()["tools"]}
        runs = [run["run_id"] for run in http.get("/runs").json()["runs"]]
        known = Known(
            tasks=targets,
            sessions=sessions,
            runs=runs or ["none"],
            agents=[*agents_before, "ghost", "a%2Fb"],
            tools=[*tools_before, "ghost"],
            agent_url=http.get(f"/agents/{REMOTE}").json()["url"],
        )
        fuzzer = Fuzzer(random.Random(SEED + 1), known, gateway=True, tag="g")
        shots = fuzzer.shots(REQUESTS_PER_SERVER) + fuzzer.raw_shots(
            RAW_REQUESTS_PER_SERVER, urlsplit(gateway_url).port or 80
        )
        started = time.monotonic()
        answers = await fire(shots, gateway_url)
        seconds = time.monotonic() - started
        print(summary(shots, answers, seconds))

        found = offenders(shots, answers, gateway=True)
        health = http.get("/health")
        assert health.status_code == 200 and health.json()["status"] == "ok", health.text
        check_the_binding_still_works(http)
        turn = http.post("/sessions/after-fuzz/messages", json={"message": "hello again", "stream": False})
        assert turn.status_code == 200 and turn.json()["content"], turn.text
        tool = http.post(f"/tools/{TOOL}/call", json={"input": "echo still here"})
        assert tool.status_code == 200 and tool.json()["result"]["text"] == "still here", tool.text
        found += await check_fresh_ids(gateway_url, shots, answers, gateway=True)
        found += check_registry(http, shots, answers, agents_before, tools_before)
        found += check_tool_runs(http, answers, {*runs, tool.headers["x-run-id"]})
        if http.get("/sessions/reference").json() != reference:
            found.append("the session no request named changed")
    fail_if(found + server_errors.report(), summary(shots, answers, seconds))


def check_registry(
    http: httpx.Client,
    shots: list[Shot],
    answers: list[Answer],
    agents_before: dict[str, Any],
    tools_before: dict[str, Any],
) -> list[str]:
    """Agents and tools are what they were, plus what a 201 said it created, minus what a 200 said it removed."""
    expected_agents, expected_tools = (
        Counter(dict.fromkeys(agents_before, 1)),
        Counter(dict.fromkeys(tools_before, 1)),
    )
    for shot, answer in zip(shots, answers, strict=True):
        method = shot.method.upper()  # httpx sends "post" as POST
        if answer.status not in (200, 201) or method not in ("POST", "DELETE"):
            continue
        path = unquote(shot.path.split("?")[0])  # the server routes /%74ools as /tools
        body = (
            orjson.loads(answer.body) if answer.headers.get("content-type", "").startswith("application/json") else {}
        )
        if method == "POST" and path == "/agents":
            expected_agents[body["name"]] += 1
        elif method == "POST" and path == "/tools":
            expected_tools[body["name"]] += 1
        elif method == "DELETE" and path.startswith("/agents/"):
            expected_agents[body["removed"]] -= 1
        elif method == "DELETE" and path.startswith("/tools/"):
            expected_tools[body["removed"]] -= 1
    agents_after = {a["name"]: a for a in http.get("/agents").json()["agents"]}
    tools_after = {t["name"]: t for t in http.get("/tools").json()["tools"]}
    found = []
    if set(agents_after) != {name for name, count in expected_agents.items() if count > 0}:
        found.append(
            f"agents {sorted(agents_after)}, expected {sorted(n for n, c in expected_agents.items() if c > 0)}"
        )
    if set(tools_after) != {name for name, count in expected_tools.items() if count > 0}:
        found.append(f"tools {sorted(tools_after)}, expected {sorted(n for n, c in expected_tools.items() if c > 0)}")
    for name, info in agents_before.items():
        if name == REMOTE and agents_after.get(name, {}).get("url") != info["url"]:
            found.append(f"agent {name} changed: {info} -> {agents_after.get(name)}")
    for name, info in tools_before.items():
        if tools_after.get(name, {}).get("agent") != info["agent"]:
            found.append(f"tool {name} changed: {info} -> {tools_after.get(name)}")
    return found


def check_tool_runs(http: httpx.Client, answers: list[Answer], runs_before: set[str]) -> list[str]:
    """Every tool call run in the log was announced to its caller (x-run-id): a refused call started none."""
    announced = runs_before | {answer.headers["x-run-id"] for answer in answers if "x-run-id" in answer.headers}
    runs = http.get("/runs", params={"limit": 1000}).json()["runs"]
    return [
        f"tool call run {run} was started by a request not told so"
        for run in runs
        if run["tool"] and run["run_id"] not in announced
    ]

"""The server edge (agent_server.http.server) against real sockets: slow clients are cut, a full
server says so, and refusals are heard by clients that send their whole body first.

Every server here runs once on each HTTP parser (h11, the default, and httptools): the limits
are the same mixin on both protocols, each reading what a request lacks from its own parser."""

from __future__ import annotations

import logging
import selectors
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson
import pytest

import agent_server.http.server
from agent_server import DEFAULT_MAX_BODY_BYTES, ServerLimits, build_server, create_app
from agent_server.http.speedups import HTTP_PARSERS
from agent_server.testing import scripted_agent
from tests.support.servers import serve_app

SLOW_SOCKETS = 200
CUT_BOUND_S = 15.0
MAX_ROUNDS = 5000
CAP = 5
MIB = 1024 * 1024
DRAIN_BOUND = 256 * 1024
CARD = "/.well-known/agent.json"
CARD_REQUEST = b"GET /.well-known/agent.json HTTP/1.1\r\nHost: x\r\n\r\n"
SLOW_HEAD = b"GET /.well-known/agent.json HTTP/1.1\r\nHost: x\r\nX-Slow: "
BODYLESS_HEAD = (
    b"POST /tasks/send HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
)
FAST = ServerLimits(header_timeout_s=1.0, body_timeout_s=1.0, linger_s=1.0)
IDLE = ServerLimits(header_timeout_s=0.5, keep_alive_timeout_s=30.0)
KEPT_ALIVE = ServerLimits(header_timeout_s=1.0, keep_alive_timeout_s=2.0)


@pytest.fixture(scope="module", params=HTTP_PARSERS)
def fast_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """Header and body timeouts of 1 s; keep-alive stays uvicorn's 5 s."""
    with serve_app(create_app(scripted_agent()), limits=FAST, http=request.param) as url:
        yield url


@pytest.fixture(scope="module", params=HTTP_PARSERS)
def capped_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """Room for CAP connections, and timeouts long enough that held ones stay held."""
    limits = ServerLimits(max_connections=CAP, header_timeout_s=60.0, keep_alive_timeout_s=60.0)
    with serve_app(create_app(scripted_agent()), limits=limits, http=request.param) as url:
        yield url


@pytest.fixture(scope="module", params=HTTP_PARSERS)
def default_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The production defaults: ServerLimits() and the agent server's 10 MiB body limit."""
    with serve_app(create_app(scripted_agent()), http=request.param) as url:
        yield url


@pytest.fixture(scope="module", params=HTTP_PARSERS)
def drain_bound_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """Drains at most DRAIN_BOUND bytes of a body an endpoint did not read."""
    limits = ServerLimits(max_drain_bytes=DRAIN_BOUND)
    with serve_app(create_app(scripted_agent()), limits=limits, http=request.param) as url:
        yield url


@pytest.fixture(scope="module", params=HTTP_PARSERS)
def kept_alive_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A keep-alive timeout longer than the header timeout, and shorter than uvicorn's 5 s to keep the test short."""
    with serve_app(create_app(scripted_agent()), limits=KEPT_ALIVE, http=request.param) as url:
        yield url


@pytest.fixture(scope="module", params=HTTP_PARSERS)
def idle_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A header timeout far shorter than the keep-alive timeout."""
    with serve_app(create_app(scripted_agent()), limits=IDLE, http=request.param) as url:
        yield url


def test_slow_headers_and_missing_bodies_are_cut_while_others_are_served(
    fast_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    slowloris = [_connect(fast_url, SLOW_HEAD) for _ in range(SLOW_SOCKETS)]
    bodyless = [_connect(fast_url, BODYLESS_HEAD) for _ in range(SLOW_SOCKETS)]
    try:
        with caplog.at_level(logging.ERROR):
            answers, served_meanwhile = _outlast(fast_url, slowloris, bodyless)
    finally:
        for sock in slowloris + bodyless:
            sock.close()
    assert not caplog.records, "a body cut by the timeout is no server error"
    assert len(answers) == 2 * SLOW_SOCKETS, f"only {len(answers)} of {2 * SLOW_SOCKETS} slow sockets were closed"
    assert served_meanwhile >= 1, "a normal request is answered while 400 slow sockets are held open"
    for sock in slowloris:
        assert answers[sock].startswith(b"HTTP/1.1 408"), answers[sock][:100]
        assert "headers were not complete within 1 s" in _error_of(answers[sock])["message"]
    for sock in bodyless:
        assert answers[sock].startswith(b"HTTP/1.1 408"), answers[sock][:100]
        assert "body was not complete within 1 s" in _error_of(answers[sock])["message"]


def _outlast(url: str, slowloris: list[socket.socket], bodyless: list[socket.socket]) -> tuple[dict[Any, bytes], int]:
    """Drip bytes into the slowloris sockets and read all slow ones until each is closed, a normal
    request between reads; returns what each closed socket received, and how many normal requests
    were answered while some slow socket was still open."""
    selector = selectors.DefaultSelector()
    received: dict[Any, bytes] = {}
    for sock in slowloris + bodyless:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
        received[sock] = b""
    answers: dict[Any, bytes] = {}
    served = 0
    deadline = time.monotonic() + CUT_BOUND_S
    with selector, httpx.Client(base_url=url, timeout=5) as http:
        for _ in range(MAX_ROUNDS):
            if len(answers) == len(received) or time.monotonic() > deadline:
                break
            response = http.get(CARD, headers={"connection": "close"})
            assert response.status_code == 200
            served += 1
            for key, _ in selector.select(timeout=0):
                chunk = _recv_or_reset(key.fileobj)  # type: ignore[arg-type]
                if chunk is None:
                    continue
                if chunk:
                    received[key.fileobj] += chunk
                else:
                    answers[key.fileobj] = received[key.fileobj]
                    selector.unregister(key.fileobj)
            for sock in slowloris:
                if not received[sock] and sock not in answers:
                    _send_quietly(sock, b"a")
    return answers, served


def test_past_max_connections_a_new_client_hears_503_and_service_resumes(capped_url: str) -> None:
    held = [_connect(capped_url, CARD_REQUEST) for _ in range(CAP)]
    try:
        for sock in held:
            assert _read_response(sock).startswith(b"HTTP/1.1 200")
        refused = httpx.get(capped_url + CARD, timeout=5)
    finally:
        for sock in held:
            sock.close()
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "1" and refused.headers["connection"] == "close"
    error = refused.json()["error"]
    assert error["code"] == -32603 and f"at its limit of {CAP} connections; retry" in error["message"]
    assert _served_again(capped_url)


def _served_again(url: str) -> bool:
    """Whether a normal request is answered 200 within CUT_BOUND_S, once the server saw the held ones go."""
    deadline = time.monotonic() + CUT_BOUND_S
    for _ in range(MAX_ROUNDS):
        if httpx.get(url + CARD, timeout=5).status_code == 200:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return False


def test_urllib_sending_a_body_over_the_limit_hears_413(default_url: str) -> None:
    """urllib sends all 11 MiB before reading, and asks to close after: it still gets the answer."""
    error = _refusal_heard(_post(default_url, b"x" * (11 * MIB)), 413)
    assert error["code"] == -32600 and f"larger than the limit of {DEFAULT_MAX_BODY_BYTES} bytes" in error["message"]


def test_urllib_sending_a_chunked_body_over_the_limit_hears_413(default_url: str) -> None:
    """14 MiB past the limit: more than loopback's socket buffers hold, so a close would cut urllib off mid-send."""
    request = _post(default_url, (b"x" * MIB for _ in range(24)))
    error = _refusal_heard(request, 413)
    assert request.get_header("Transfer-encoding") == "chunked"
    assert f"larger than the limit of {DEFAULT_MAX_BODY_BYTES} bytes" in error["message"]


def test_urllib_sending_a_body_of_the_wrong_type_hears_415(default_url: str) -> None:
    """Any answer given before the body is read is heard, not only the body limit's."""
    error = _refusal_heard(_post(default_url, b"x" * (11 * MIB), content_type="text/plain"), 415)
    assert error["code"] == -32005 and "'text/plain' is not supported" in error["message"]


def _post(url: str, data: Any, content_type: str = "application/json") -> urllib.request.Request:
    return urllib.request.Request(url + "/tasks/send", data=data, headers={"Content-Type": content_type})


def _refusal_heard(request: urllib.request.Request, status: int) -> dict[str, Any]:
    """The JSON error urllib reads back for ``request``, which the server refuses with ``status``."""
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=30)
    with caught.value as answer:
        assert answer.code == status
        return orjson.loads(answer.read())["error"]


def test_past_the_drain_bound_the_connection_closes_once_the_answer_is_out(drain_bound_url: str) -> None:
    """Only 256 KiB of an unread body are drained: the 413 comes, then the close, long before the 30 s body timeout."""
    head = (
        f"POST /tasks/send HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {11 * MIB}\r\n\r\n"
    )
    with _connect(drain_bound_url, head.encode(), timeout=10) as sock:
        _send_quietly(sock, b"x" * MIB, everything=True)
        answer = _read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:100]


def test_a_client_waiting_for_100_continue_is_refused_at_once_not_drained(default_url: str) -> None:
    """Told no before it was asked for its body, it sends none: the server closes, not waits 30 s."""
    head = (
        "POST /tasks/send HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {11 * MIB}\r\nExpect: 100-continue\r\n\r\n"
    )
    with _connect(default_url, head.encode(), timeout=10) as sock:
        answer = _read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:100]


def test_an_idle_keep_alive_connection_outlives_the_header_timeout(idle_url: str) -> None:
    with _connect(idle_url, CARD_REQUEST) as sock:
        assert _read_response(sock).startswith(b"HTTP/1.1 200")
        time.sleep(3 * IDLE.header_timeout_s)  # idle, well within the 30 s keep-alive
        sock.sendall(CARD_REQUEST)
        assert _read_response(sock).startswith(b"HTTP/1.1 200")


def test_slow_headers_after_a_keep_alive_response_are_cut(kept_alive_url: str) -> None:
    """The header timer re-arms at the end of a response (here at keep-alive's 2 s, the longer)."""
    with _connect(kept_alive_url, CARD_REQUEST, timeout=CUT_BOUND_S) as sock:
        assert _read_response(sock).startswith(b"HTTP/1.1 200")
        sock.sendall(SLOW_HEAD)
        answer = _read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:100]


def test_headers_sent_behind_a_long_answer_do_not_cut_it(kept_alive_url: str) -> None:
    """Headers that start arriving during a 2 s stream (past the 1 s header timeout) are not timed
    until it has ended: the stream goes out whole; then the idle connection is closed, as any."""
    body = orjson.dumps({"message": {"parts": [{"text": "stream 4 0.5 0"}]}})
    stream_request = (
        b"POST /tasks/sendSubscribe HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + b"Content-Length: %d\r\n\r\n" % len(body)
        + body
    )
    with _connect(kept_alive_url, stream_request + SLOW_HEAD, timeout=CUT_BOUND_S) as sock:
        answer = _read_until_closed(sock)
    stream, end, after = answer.partition(b"\r\n0\r\n\r\n")  # the end of the stream's chunked body
    assert stream.startswith(b"HTTP/1.1 200") and end, answer[:200]
    assert stream.count(b'"type":"artifact"') == 4 and b'"final":true' in stream, stream[-300:]
    assert after == b"" or after.startswith(b"HTTP/1.1 408"), after[:100]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("header_timeout_s", 0, "header_timeout_s must be a positive number of seconds, got 0"),
        ("body_timeout_s", float("nan"), "body_timeout_s must be a positive number of seconds"),
        ("max_connections", 0, "max_connections must be at least 1"),
        ("max_drain_bytes", -1, "max_drain_bytes must be 0 or more"),
    ],
)
def test_limits_that_cannot_work_are_refused(field: str, value: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ServerLimits(**{field: value})


def test_building_a_server_raises_the_open_file_limit_and_warns_when_it_is_too_low(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Soft 256 goes up to the hard 1024, which still cannot hold 2048 connections: say so."""
    limits: dict[str, tuple[int, int]] = {"now": (256, 1024)}
    fake = SimpleNamespace(
        RLIMIT_NOFILE=7,
        RLIM_INFINITY=-1,
        getrlimit=lambda which: limits["now"],
        setrlimit=lambda which, value: limits.update(now=value),
    )
    monkeypatch.setattr(agent_server.http.server, "resource", fake)
    with caplog.at_level(logging.INFO, logger="agent_server.http.server"):
        build_server(create_app(scripted_agent()), limits=ServerLimits(max_connections=2048))
    assert limits["now"] == (1024, 1024)
    assert "open-file limit: 1024 (hard limit 1024)" in caplog.text
    assert "below the 2176 that max_connections=2048 needs" in caplog.text


def _connect(url: str, first: bytes, timeout: float = 5.0) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=timeout)
    sock.sendall(first)
    return sock


def _recv_or_reset(sock: socket.socket) -> bytes | None:
    """The next bytes; b"" when the server closed or reset the connection, None if nothing is there yet."""
    try:
        return sock.recv(65536)
    except BlockingIOError:
        return None
    except ConnectionResetError:
        return b""


def _send_quietly(sock: socket.socket, data: bytes, everything: bool = False) -> None:
    """Send (``everything``: all of it) if the connection still takes it; a closed one is noticed by the reads."""
    try:
        if everything:
            sock.sendall(data)
        else:
            sock.send(data)
    except OSError:
        pass


def _read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (or resets) the connection; bounded by the socket's timeout."""
    received = b""
    for _ in range(MAX_ROUNDS):
        chunk = _recv_or_reset(sock)
        if not chunk:
            return received
        received += chunk
    raise AssertionError(f"the server kept sending: {received[:100]!r}")


def _read_response(sock: socket.socket) -> bytes:
    """Head and body of one response, which carries a Content-Length."""
    answer = b""
    for _ in range(MAX_ROUNDS):
        if b"\r\n\r\n" in answer:
            break
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed after {answer!r}"
        answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    length_line = next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
    length = int(length_line.split(b":")[1])
    for _ in range(MAX_ROUNDS):
        if len(body) >= length:
            break
        chunk = sock.recv(65536)
        assert chunk, "the connection closed mid-body"
        body += chunk
    return head + b"\r\n\r\n" + body


def _error_of(answer: bytes) -> dict[str, Any]:
    return orjson.loads(answer.partition(b"\r\n\r\n")[2])["error"]


@pytest.mark.parametrize("next_body_bytes", [1000, 300_000])
def test_the_request_after_a_drained_refusal_on_one_connection_is_answered(
    default_url: str, next_body_bytes: int
) -> None:
    """The drain finishes the refused request; the next one, already sent behind it, is served, not cut."""
    too_large = b"x" * (DEFAULT_MAX_BODY_BYTES + 1000)
    with httpx.Client(base_url=default_url, limits=httpx.Limits(max_connections=1), timeout=30) as http:
        refused = http.post("/tasks/send", content=too_large, headers={"content-type": "application/json"})
        assert refused.status_code == 413
        after = http.post(
            "/tasks/cancel",
            content=b'{"id":"' + b"b" * next_body_bytes + b'"}',
            headers={"content-type": "application/json"},
        )
        assert after.status_code == 404 and after.json()["error"]["code"] == -32001


def test_a_refusal_of_a_body_never_asked_for_says_connection_close_and_the_next_request_is_served(
    default_url: str,
) -> None:
    """``Expect: 100-continue`` sent with the body anyway: the answer closes the connection, lingering, no reset."""
    with httpx.Client(base_url=default_url, limits=httpx.Limits(max_connections=1), timeout=30) as http:
        for _ in range(20):
            refused = http.post(
                "/tasks/send", content=b"{}" * 5000, headers={"content-type": "text/plain", "expect": "100-continue"}
            )
            assert refused.status_code == 415 and refused.headers["connection"] == "close"
            assert http.get(CARD).status_code == 200

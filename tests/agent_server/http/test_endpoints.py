"""The agent server over real HTTP: every endpoint in both body styles, and every error."""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import pytest

from agent_server import MemoryTaskStore, create_app
from agent_server.testing import Probe, scripted_agent
from protocol import Task, aiter_ndjson
from tests.support.servers import serve_app
from tests.support.waiting import until

pytestmark = pytest.mark.anyio

PROBE = Probe()
SMALL_LIMIT = 1024


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serve_app(create_app(scripted_agent(probe=PROBE))) as url:
        yield url


@pytest.fixture(scope="module")
def small_url() -> Iterator[str]:
    """A second server: a small body limit and a public URL for its card."""
    app = create_app(scripted_agent("small"), max_body_bytes=SMALL_LIMIT, public_url="https://agents.example/small")
    with serve_app(app) as url:
        yield url


@pytest.fixture
async def client(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url, timeout=5) as http:
        yield http


def _send_body(text: str, task_id: str | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"message": {"role": "user", "parts": [{"type": "text", "text": text}]}, **extra}
    if task_id is not None:
        body["id"] = task_id
    return body


def _envelope(params: dict[str, Any], method: str | None, rpc_id: int | str | None = 1) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "params": params}
    if method is not None:
        body["method"] = method
    if rpc_id is not None:
        body["id"] = rpc_id
    return body


def _assert_error(response: httpx.Response, status: int, code: int, *fragments: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == code
    for fragment in fragments:
        assert fragment in error["message"], error["message"]
    return error


async def _lines(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    async with client.stream("POST", path, json=body) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"] == "application/x-ndjson"
        return [line async for line in aiter_ndjson(response.aiter_bytes())]  # type: ignore[misc]


# ---- every endpoint, plain and enveloped


async def test_send_plain_returns_the_task_in_camel_case(client: httpx.AsyncClient) -> None:
    response = await client.post("/tasks/send", json=_send_body("echo hello", sessionId="sess-1"))
    assert response.status_code == 200
    task = response.json()
    assert task["sessionId"] == "sess-1" and task["status"]["state"] == "completed"
    assert Task.model_validate(task).output_text == "hello"
    assert task["metadata"]["cost_usd"] == 0.0


@pytest.mark.parametrize("rpc_id", [7, "req-a", None])
async def test_send_enveloped_with_and_without_id(client: httpx.AsyncClient, rpc_id: int | str | None) -> None:
    response = await client.post("/tasks/send", json=_envelope(_send_body("echo wrapped"), "tasks/send", rpc_id))
    assert response.status_code == 200
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == rpc_id
    assert Task.model_validate(body["result"]).output_text == "wrapped"


async def test_get_plain_enveloped_and_by_path(client: httpx.AsyncClient) -> None:
    await client.post("/tasks/send", json=_send_body("ask who?", "g1"))
    await client.post("/tasks/send", json=_send_body("me", "g1"))
    plain = (await client.post("/tasks/get", json={"id": "g1", "historyLength": 1})).json()
    wrapped = (await client.post("/tasks/get", json=_envelope({"id": "g1"}, "tasks/get", None))).json()
    by_path = (await client.get("/tasks/g1", params={"historyLength": 2})).json()
    assert plain["status"]["state"] == "completed" and len(plain["history"]) == 1
    assert wrapped["id"] is None and len(wrapped["result"]["history"]) == 4
    assert [m["parts"][0]["text"] for m in by_path["history"]] == ["me", "got: me"]


async def test_cancel_plain_and_enveloped(client: httpx.AsyncClient) -> None:
    await client.post("/tasks/send", json=_send_body("ask one?", "c-plain"))
    await client.post("/tasks/send", json=_send_body("ask two?", "c-env"))
    await client.post("/tasks/send", json=_send_body("ask three?", "c-no-id"))
    plain = await client.post("/tasks/cancel", json={"id": "c-plain"})
    wrapped = await client.post("/tasks/cancel", json=_envelope({"id": "c-env"}, "tasks/cancel", "x"))
    no_id = await client.post("/tasks/cancel", json=_envelope({"id": "c-no-id"}, "tasks/cancel", None))
    assert plain.status_code == 200 and plain.json()["status"]["state"] == "canceled"
    assert wrapped.json()["id"] == "x" and wrapped.json()["result"]["status"]["state"] == "canceled"
    assert no_id.json()["id"] is None and no_id.json()["result"]["status"]["state"] == "canceled"


async def test_send_subscribe_plain_and_enveloped_lines(client: httpx.AsyncClient) -> None:
    plain = await _lines(client, "/tasks/sendSubscribe", _send_body("stream 2 0", "ss1"))
    wrapped = await _lines(client, "/tasks/sendSubscribe", _envelope(_send_body("stream 2 0", "ss2"), None, 5))
    no_id = await _lines(client, "/tasks/sendSubscribe", _envelope(_send_body("echo x"), "tasks/sendSubscribe", None))
    assert [(line["seq"], line["type"], line["final"]) for line in plain] == [
        (0, "status", False),
        (1, "artifact", False),
        (2, "artifact", False),
        (3, "status", True),
    ]
    assert {line["jsonrpc"] for line in wrapped} == {"2.0"} and {line["id"] for line in wrapped} == {5}
    assert [line["result"]["id"] for line in wrapped] == ["ss2"] * 4
    assert [line["result"]["artifact"] for line in wrapped[1:3]] == [line["artifact"] for line in plain[1:3]]
    assert wrapped[-1]["result"]["final"] is True and wrapped[-1]["result"]["status"]["state"] == "completed"
    assert {line["id"] for line in no_id} == {None} and no_id[-1]["result"]["final"] is True


async def test_resubscribe_plain_and_enveloped(client: httpx.AsyncClient) -> None:
    await client.post("/tasks/send", json=_send_body("stream 3 0", "rs1"))
    plain = await _lines(client, "/tasks/resubscribe", {"id": "rs1", "afterSeq": 1})
    wrapped = await _lines(client, "/tasks/resubscribe", _envelope({"id": "rs1"}, "tasks/resubscribe", 9))
    assert [line["seq"] for line in plain] == [2, 3, 4]
    assert [line["result"]["seq"] for line in wrapped] == [0, 1, 2, 3, 4] and wrapped[0]["id"] == 9
    no_id = await _lines(client, "/tasks/resubscribe", _envelope({"id": "rs1", "afterSeq": 3}, None, None))
    assert no_id == [{"jsonrpc": "2.0", "id": None, "result": wrapped[-1]["result"]}]
    assert await _lines(client, "/tasks/resubscribe", {"id": "rs1", "afterSeq": 4}) == []


async def test_agent_card_from_request_url_or_public_url(
    client: httpx.AsyncClient, base_url: str, small_url: str
) -> None:
    card = (await client.get("/.well-known/agent.json")).json()
    assert card["name"] == "scripted" and card["url"] == base_url
    assert card["description"].startswith("Does what") and card["capabilities"]["streaming"] is True
    async with httpx.AsyncClient(base_url=small_url) as other:
        assert (await other.get("/.well-known/agent.json")).json()["url"] == "https://agents.example/small"


# ---- content types


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "application/vnd.a2a+json"]
)
async def test_json_content_types_are_accepted(client: httpx.AsyncClient, content_type: str) -> None:
    body = b'{"message":{"parts":[{"text":"echo ok"}]}}'
    response = await client.post("/tasks/send", content=body, headers={"content-type": content_type})
    assert response.request.headers.get("content-type") == content_type
    assert response.status_code == 200 and Task.model_validate(response.json()).output_text == "ok"


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
async def test_other_content_types_get_415(client: httpx.AsyncClient, content_type: str) -> None:
    response = await client.post("/tasks/send", content=b"{}", headers={"content-type": content_type})
    _assert_error(response, 415, -32005, content_type, "application/json")


async def test_a_body_without_a_content_type_gets_415_since_any_web_page_could_send_it(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post("/tasks/send", content=b'{"message":{"parts":[{"text":"echo ok"}]}}')
    assert "content-type" not in response.request.headers
    _assert_error(response, 415, -32005, "without a Content-Type header", "application/json")


# ---- bad input


async def test_malformed_json_is_400_parse_error(client: httpx.AsyncClient) -> None:
    for path in ("/tasks/send", "/tasks/sendSubscribe", "/tasks/get", "/tasks/cancel", "/tasks/resubscribe"):
        response = await client.post(path, content=b'{"message": ', headers={"content-type": "application/json"})
        _assert_error(response, 400, -32700, "not valid JSON")


async def test_missing_or_wrong_fields_are_400_naming_the_field(client: httpx.AsyncClient) -> None:
    missing = await client.post("/tasks/send", json={"id": "x"})
    _assert_error(missing, 400, -32602, "message")
    wrong = await client.post("/tasks/send", json={"message": {"parts": [{"type": "text", "text": 5}]}})
    error = _assert_error(wrong, 400, -32602, "message.parts[0]")
    assert error["data"][0]["field"].startswith("message.parts[0]")
    no_id = await client.post("/tasks/get", json={"historyLength": 2})
    _assert_error(no_id, 400, -32602, "id")
    negative = await client.post("/tasks/resubscribe", json={"id": "x", "afterSeq": -5})
    _assert_error(negative, 400, -32602, "afterSeq")
    bad_query = await client.get("/tasks/whatever", params={"historyLength": "lots"})
    _assert_error(bad_query, 400, -32602, "historyLength")
    empty_id = await client.post("/tasks/send", json=_send_body("echo", ""))
    _assert_error(empty_id, 400, -32602, "id")


async def test_enveloped_field_errors_come_back_enveloped(client: httpx.AsyncClient) -> None:
    response = await client.post("/tasks/send", json=_envelope({"nope": 1}, "tasks/send", 42))
    assert response.status_code == 400
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == 42 and body["error"]["code"] == -32602
    wrong_method = await client.post("/tasks/send", json=_envelope(_send_body("echo"), "tasks/get", 3))
    assert wrong_method.json()["error"]["code"] == -32601 and wrong_method.json()["id"] == 3


async def test_unknown_task_is_404_on_every_endpoint(client: httpx.AsyncClient) -> None:
    _assert_error(await client.post("/tasks/get", json={"id": "ghost"}), 404, -32001, "ghost")
    _assert_error(await client.get("/tasks/ghost"), 404, -32001)
    _assert_error(await client.post("/tasks/cancel", json={"id": "ghost"}), 404, -32001)
    _assert_error(await client.post("/tasks/resubscribe", json={"id": "ghost"}), 404, -32001)
    wrapped = await client.post("/tasks/get", json=_envelope({"id": "ghost"}, "tasks/get", 11))
    assert wrapped.status_code == 404 and wrapped.json()["id"] == 11 and wrapped.json()["error"]["code"] == -32001
    streamed = await client.post("/tasks/resubscribe", json=_envelope({"id": "ghost"}, None, 12))
    assert streamed.status_code == 404 and streamed.json()["id"] == 12


async def test_cancel_of_a_finished_task_is_409(client: httpx.AsyncClient) -> None:
    await client.post("/tasks/send", json=_send_body("echo done", "fin"))
    _assert_error(await client.post("/tasks/cancel", json={"id": "fin"}), 409, -32002, "completed")


async def test_a_send_to_a_working_or_finished_task_is_409(client: httpx.AsyncClient) -> None:
    async with client.stream("POST", "/tasks/sendSubscribe", json=_send_body("sleep 30", "w1")) as stream:
        await stream.aiter_lines().__anext__()
        _assert_error(await client.post("/tasks/send", json=_send_body("echo", "w1")), 409, -32600, "still working")
        await client.post("/tasks/cancel", json={"id": "w1"})
    _assert_error(await client.post("/tasks/send", json=_send_body("echo", "w1")), 409, -32600, "canceled")


async def test_a_send_whose_client_goes_away_runs_to_its_end(base_url: str, client: httpx.AsyncClient) -> None:
    """The run goes on in the request's task: the server does not cancel a request whose client left."""

    async def send() -> None:
        async with httpx.AsyncClient(base_url=base_url, timeout=10) as leaving:
            await leaving.post("/tasks/send", json=_send_body("sleep 0.5", "left"))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(send)
            await until(lambda: PROBE.started_at("left") is not None, "the agent to start task left")
            group.cancel_scope.cancel()  # the request is cut off, its connection closed

    async def completed() -> bool:
        return bool((await client.get("/tasks/left")).json()["status"]["state"] == "completed")

    await until(completed, "task left to complete after its client went away")
    assert PROBE.canceled_at("left") is None


async def test_an_agent_failure_is_a_failed_task_not_a_server_error(client: httpx.AsyncClient) -> None:
    response = await client.post("/tasks/send", json=_send_body("fail kaput"))
    assert response.status_code == 200
    status = response.json()["status"]
    assert status["state"] == "failed" and status["message"]["parts"][0]["text"] == "RuntimeError: kaput"


async def test_declared_oversized_body_is_413_before_it_is_sent(base_url: str) -> None:
    """Only the headers go out; the server answers without waiting for 11 MiB it was promised."""
    host, port = urlsplit(base_url).hostname, urlsplit(base_url).port
    head = (
        "POST /tasks/send HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {11 * 1024 * 1024}\r\n\r\n"
    )
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.sendall(head.encode())
        answer = _read_response(sock)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:100]
    assert b'"code":-32600' in answer and b"10485760 bytes" in answer


def _read_response(sock: socket.socket) -> bytes:
    """Head and body of one response; they may come in separate segments."""
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += sock.recv(65536)
    head, _, body = answer.partition(b"\r\n\r\n")
    length = int(
        next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")).split(b":")[1]
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


async def test_a_client_that_leaves_mid_body_is_refused_not_logged_as_a_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The connection closes before the declared body is in: a 400 nobody reads, not a 500 with a traceback."""
    app = create_app(scripted_agent())
    messages = [{"type": "http.request", "body": b'{"message": ', "more_body": True}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    headers = [(b"content-type", b"application/json"), (b"content-length", b"100")]
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/tasks/send",
        "raw_path": b"/tasks/send",
        "query_string": b"",
        "headers": headers,
        "http_version": "1.1",
        "scheme": "http",
        "root_path": "",
    }
    await app(scope, receive, send)
    assert sent[0]["status"] == 400
    assert b"went away before sending the whole body" in sent[1]["body"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_chunked_body_over_the_limit_is_413_while_reading(small_url: str) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"message": {"parts": [{"text": "'
        for _ in range(8):
            yield b"x" * 512
        yield b'"}]}}'

    async with httpx.AsyncClient(base_url=small_url, timeout=5) as http:
        streamed = await http.post("/tasks/send", content=chunks(), headers={"content-type": "application/json"})
        declared = await http.post("/tasks/send", json=_send_body("x" * 2000))
        fits = await http.post("/tasks/send", json=_send_body("echo " + "y" * 500))
    assert "content-length" not in streamed.request.headers
    _assert_error(streamed, 413, -32600, f"{SMALL_LIMIT} bytes")
    _assert_error(declared, 413, -32600)
    assert fits.status_code == 200


async def test_unknown_path_is_404_json(client: httpx.AsyncClient) -> None:
    _assert_error(await client.get("/nowhere"), 404, -32601, "/nowhere", "/tasks/send")
    _assert_error(await client.post("/tasks/nothing/here", json={}), 404, -32601)


async def test_wrong_method_is_405_json(client: httpx.AsyncClient) -> None:
    for method, path in (("GET", "/tasks/send"), ("GET", "/tasks/sendSubscribe"), ("POST", "/.well-known/agent.json")):
        response = await client.request(method, path)
        _assert_error(response, 405, -32600, f"{method} is not allowed")
    delete = await client.delete("/tasks/some-id")
    _assert_error(delete, 405, -32600)
    assert "GET" in delete.headers["allow"]


class _BrokenStore(MemoryTaskStore):
    async def load_task(self, task_id: str) -> Task | None:
        raise RuntimeError("disk on fire")


async def test_an_unexpected_exception_is_a_500_json_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    with serve_app(create_app(scripted_agent(), store=_BrokenStore())) as url:
        async with httpx.AsyncClient(base_url=url, timeout=5) as http:
            broken = await http.post("/tasks/get", json={"id": "x"})
            still_up = await http.get("/.well-known/agent.json")
    _assert_error(broken, 500, -32603, "disk on fire")
    assert still_up.status_code == 200
    assert any(r.exc_info and "disk on fire" in str(r.exc_info[1]) for r in caplog.records)


# ---- concurrency


async def test_twenty_streams_at_once_stay_isolated(client: httpx.AsyncClient) -> None:
    results: dict[int, list[dict[str, Any]]] = {}

    async def one(i: int) -> None:
        results[i] = await _lines(
            client, "/tasks/sendSubscribe", _send_body(f"stream {i % 3 + 2} 0.02 0.{i:02d}", f"c{i}")
        )

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(one, i)
    for i, lines in results.items():
        n = i % 3 + 2
        assert {line["id"] for line in lines} == {f"c{i}"}
        assert [line["seq"] for line in lines] == list(range(n + 2))
        assert [line["final"] for line in lines].count(True) == 1 and lines[-1]["final"]
        assert [line.get("cost_usd") for line in lines[1:-1]] == [float(f"0.{i:02d}")] * n
        texts = "".join(line["artifact"]["parts"][0]["text"] for line in lines[1:-1])
        assert texts == "".join(f"chunk-{k} " for k in range(n))


# ---- hostile and malformed bodies: each gets a 4xx that says what to change, and the server carries on


async def test_deeply_nested_json_is_refused_and_never_breaks_a_task(client: httpx.AsyncClient) -> None:
    """Nesting that pydantic could still parse but no longer serialize used to give 500s and an unreadable task."""
    for depth in (100, 260, 600):
        nested = b'{"a":' * depth + b"1" + b"}" * depth
        body = b'{"id":"deep%d","message":{"parts":[{"type":"data","data":%s}]}}' % (depth, nested)
        response = await client.post("/tasks/send", content=body, headers={"content-type": "application/json"})
        _assert_error(response, 400, -32600, "levels deep", "limit is 64")
        _assert_error(await client.get(f"/tasks/deep{depth}"), 404, -32001)
    ok = b'{"a":' * 40 + b"1" + b"}" * 40
    fine = await client.post(
        "/tasks/send",
        content=b'{"message":{"parts":[{"text":"echo ok"},{"type":"data","data":%s}]}}' % ok,
        headers={"content-type": "application/json"},
    )
    assert fine.status_code == 200
    assert (await client.get(f"/tasks/{fine.json()['id']}")).status_code == 200


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"[1, 2]", "got an array"),
        (b"42", "got a number"),
        (b'"send"', "got a string"),
        (b"null", "got null"),
    ],
)
async def test_a_body_that_is_not_an_object_says_what_it_got(
    client: httpx.AsyncClient, body: bytes, fragment: str
) -> None:
    response = await client.post("/tasks/send", content=body, headers={"content-type": "application/json"})
    _assert_error(response, 400, -32600, "must be a JSON object", fragment)


async def test_a_body_that_is_not_utf8_says_so(client: httpx.AsyncClient) -> None:
    body = '{"message":{"parts":[{"text":"é"}]}}'.encode("latin-1")
    response = await client.post("/tasks/send", content=body, headers={"content-type": "application/json"})
    _assert_error(response, 400, -32700, "not UTF-8", "0xe9")


@pytest.mark.parametrize("value", [True, "2", 1.5, -1])
async def test_history_length_must_be_a_whole_non_negative_number(client: httpx.AsyncClient, value: Any) -> None:
    response = await client.post("/tasks/send", json=_send_body("echo x", historyLength=value))
    error = _assert_error(response, 400, -32602, "historyLength")
    assert error["data"][0]["field"] == "historyLength"


@pytest.mark.parametrize(
    ("file", "problem"),
    [
        ({"bytes": "not base64!"}, "base64"),
        ({"name": "a.txt"}, "exactly one"),
        ({"bytes": "aGk=", "uri": "https://x/a.txt"}, "exactly one"),
    ],
)
async def test_bad_file_parts_are_refused(client: httpx.AsyncClient, file: dict[str, Any], problem: str) -> None:
    body = {"message": {"parts": [{"type": "file", "file": file}]}}
    error = _assert_error(await client.post("/tasks/send", json=body), 400, -32602, "message.parts[0]", problem)
    assert error["data"][0]["field"].startswith("message.parts[0]")


@pytest.mark.parametrize("rpc_id", [{"a": 1}, [1], True])
async def test_an_envelope_id_that_is_not_a_string_or_number_is_refused(client: httpx.AsyncClient, rpc_id: Any) -> None:
    response = await client.post("/tasks/send", json={**_envelope(_send_body("echo x"), "tasks/send"), "id": rpc_id})
    _assert_error(response, 400, -32600, '"id" must be a string, a number or null')
    assert response.json()["id"] is None and response.json()["jsonrpc"] == "2.0"


async def test_an_envelope_method_that_is_not_a_string_is_an_invalid_request(client: httpx.AsyncClient) -> None:
    response = await client.post("/tasks/send", json=_envelope(_send_body("echo x"), 5))  # type: ignore[arg-type]
    _assert_error(response, 400, -32600, '"method" must be a string', "tasks/send")


async def test_resubscribe_past_the_last_event_of_a_running_task_is_refused_at_once(client: httpx.AsyncClient) -> None:
    """It used to wait forever for a seq the task would never reach."""
    async with client.stream("POST", "/tasks/sendSubscribe", json=_send_body("sleep 30", "ahead")) as stream:
        await stream.aiter_lines().__anext__()
        with anyio.fail_after(10):  # the task's next event is 30 s away
            response = await client.post("/tasks/resubscribe", json={"id": "ahead", "afterSeq": 100})
        await client.post("/tasks/cancel", json={"id": "ahead"})
        error = _assert_error(response, 400, -32602, "afterSeq", "past the last event")
        assert error["data"][0]["field"] == "afterSeq"
    await client.post("/tasks/send", json=_send_body("echo done", "ahead-done"))
    _assert_error(await client.post("/tasks/resubscribe", json={"id": "ahead-done", "afterSeq": 3}), 400, -32602)


async def test_resubscribe_to_a_quiet_task_answers_before_its_next_event(client: httpx.AsyncClient) -> None:
    """The response headers used to wait for the agent's next event, so clients timed out on thinking agents."""
    async with client.stream("POST", "/tasks/sendSubscribe", json=_send_body("sleep 30", "quiet")) as stream:
        await stream.aiter_lines().__anext__()
        with anyio.fail_after(10):  # the task's next event is 30 s away
            async with client.stream("POST", "/tasks/resubscribe", json={"id": "quiet", "afterSeq": 0}) as again:
                assert again.status_code == 200
                assert again.headers["content-type"] == "application/x-ndjson"
                await client.post("/tasks/cancel", json={"id": "quiet"})
                lines = [line async for line in aiter_ndjson(again.aiter_bytes())]
    assert [(line["seq"], line["final"]) for line in lines] == [(1, True)]  # type: ignore[index]

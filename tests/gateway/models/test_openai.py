"""OpenAIChatModel against recorded OpenAI payloads, served by respx."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest
import respx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from gateway.models import (
    ModelAuthError,
    ModelError,
    ModelResponse,
    OpenAIChatModel,
    OpenAIEmbedder,
    TextDelta,
    TokenUsage,
    ToolCall,
    ToolSpec,
)
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parents[2] / "support" / "openai_payloads"
BASE_URL = "https://llm.example.test/v1"
URL = f"{BASE_URL}/chat/completions"
MESSAGES = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": "Where is my order ORD-1234?"},
]
LOOKUP = ToolSpec(
    name="lookup_order",
    description="Look up an order.",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
)


def _json(name: str) -> Any:
    return orjson.loads((FIXTURES / name).read_bytes())


def _sse(name: str) -> httpx.Response:
    return httpx.Response(200, content=(FIXTURES / name).read_bytes(), headers={"content-type": "text/event-stream"})


class _Sleeps:
    """Records backoff delays instead of sleeping."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture
def sleeps() -> _Sleeps:
    return _Sleeps()


def _model(sleeps: _Sleeps, **kwargs: Any) -> OpenAIChatModel:
    kwargs.setdefault("base_url", BASE_URL)
    kwargs.setdefault("api_key", "sk-test-1234")
    return OpenAIChatModel("gpt-4o-mini", sleep=sleeps, **kwargs)


async def _collect(model: OpenAIChatModel, tools: list[ToolSpec] | None = None) -> list[Any]:
    return [item async for item in model.stream(MESSAGES, tools or [])]


async def test_plain_completion(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    respx_mock.post(URL).mock(return_value=httpx.Response(200, json=_json("chat_completion.json")))
    async with _model(sleeps) as model:
        response = await model.complete(MESSAGES, [])
    assert response.content == "Your order ORD-1234 shipped yesterday and should arrive on Tuesday."
    assert response.tool_calls == []
    assert response.usage == TokenUsage(prompt_tokens=52, completion_tokens=16)
    assert response.cost_usd == 0.0


async def test_cost_from_prices_and_usage(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    respx_mock.post(URL).mock(return_value=httpx.Response(200, json=_json("chat_completion.json")))
    async with _model(sleeps, price_per_1k_tokens=(0.5, 2.0)) as model:
        response = await model.complete(MESSAGES, [])
    assert response.cost_usd == pytest.approx(52 / 1000 * 0.5 + 16 / 1000 * 2.0)


async def test_tool_calls_parsed_and_bad_arguments_kept_raw(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    respx_mock.post(URL).mock(return_value=httpx.Response(200, json=_json("tool_calls.json")))
    async with _model(sleeps) as model:
        response = await model.complete(MESSAGES, [LOOKUP])
    assert response.content == ""
    assert response.tool_calls == [
        ToolCall(id="call_Fr3bvtzRLDdzsNdA2GbAJeGa", name="lookup_order", arguments={"order_id": "ORD-1234"}),
        ToolCall(
            id="call_Uy2TkVXcOGYVrd8xy3MZr4Sb",
            name="transfer_to_billing",
            arguments={"reason": "Customer asks for a refund of 30 dollars"},
        ),
        ToolCall(
            id="call_Qm7AbXkEq2LwuR0Hd9JnTs5Z",
            name="refund_order",
            arguments={"_raw": '{"order_id": "ORD-1234", "amount": 30'},
        ),
    ]
    assert response.usage == TokenUsage(prompt_tokens=121, completion_tokens=58)


async def test_request_body_and_headers(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    route = respx_mock.post(URL).mock(return_value=httpx.Response(200, json=_json("chat_completion.json")))
    async with _model(sleeps, temperature=0.2, timeout_s=7.5) as model:
        await model.complete(MESSAGES, [LOOKUP])
    request = route.calls.last.request
    assert request.headers["authorization"] == "Bearer sk-test-1234"
    assert request.headers["content-type"] == "application/json"
    assert request.extensions["timeout"]["read"] == 7.5
    assert orjson.loads(request.content) == {
        "model": "gpt-4o-mini",
        "messages": MESSAGES,
        "temperature": 0.2,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "lookup_order",
                    "description": "Look up an order.",
                    "parameters": LOOKUP.parameters,
                },
            }
        ],
    }


async def test_request_body_drops_keys_openai_rejects(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    route = respx_mock.post(URL).mock(return_value=httpx.Response(200, json=_json("chat_completion.json")))
    history = [
        *MESSAGES,
        {
            "role": "assistant",
            "content": None,
            "sender": "Triage",
            "name": "Triage",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "name": "lookup_order", "content": "shipped"},
    ]
    async with _model(sleeps) as model:
        await model.complete(history, [LOOKUP])
    sent = orjson.loads(route.calls.last.request.content)["messages"]
    assert sent[:2] == MESSAGES
    assert sent[2] == {key: value for key, value in history[2].items() if key != "sender"}
    assert sent[3] == {"role": "tool", "tool_call_id": "call_1", "content": "shipped"}


async def test_request_body_omits_tools_and_temperature_when_unset(
    respx_mock: respx.MockRouter, sleeps: _Sleeps
) -> None:
    route = respx_mock.post(URL).mock(return_value=httpx.Response(200, json=_json("chat_completion.json")))
    async with _model(sleeps) as model:
        await model.complete(MESSAGES, [])
    assert set(orjson.loads(route.calls.last.request.content)) == {"model", "messages"}


async def test_stream_yields_text_deltas_in_order_then_one_response(
    respx_mock: respx.MockRouter, sleeps: _Sleeps
) -> None:
    route = respx_mock.post(URL).mock(return_value=_sse("stream_text.sse"))
    async with _model(sleeps) as model:
        items = await _collect(model)
    assert items[:-1] == [TextDelta("Your"), TextDelta(" order"), TextDelta(" shipped"), TextDelta(" yesterday.")]
    assert items[-1] == ModelResponse(
        content="Your order shipped yesterday.", usage=TokenUsage(prompt_tokens=40, completion_tokens=6)
    )
    body = orjson.loads(route.calls.last.request.content)
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert route.calls.last.request.headers["accept"] == "text/event-stream"


async def test_stream_accumulates_tool_call_deltas_by_index(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    respx_mock.post(URL).mock(return_value=_sse("stream_tool_calls.sse"))
    async with _model(sleeps) as model:
        items = await _collect(model, [LOOKUP])
    assert len(items) == 1
    assert items[0] == ModelResponse(
        tool_calls=[
            ToolCall(id="call_K8mPz3Xv1yQ0aLbNc2dE4fGh", name="lookup_order", arguments={"order_id": "ORD-1234"}),
            ToolCall(
                id="call_Zt5RbW9uYx2VcQ7sLp0nJ3kA",
                name="refund_order",
                arguments={"order_id": "ORD-1234", "amount": 30},
            ),
        ],
        usage=TokenUsage(prompt_tokens=96, completion_tokens=47),
    )


async def test_stream_survives_network_chunks_that_split_lines(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    raw = (FIXTURES / "stream_tool_calls.sse").read_bytes()

    async def dribble() -> AsyncIterator[bytes]:
        for start in range(0, len(raw), 7):
            yield raw[start : start + 7]

    respx_mock.post(URL).mock(side_effect=lambda request: httpx.Response(200, content=dribble()))
    async with _model(sleeps) as model:
        items = await _collect(model)
    arguments = [c.arguments for c in items[-1].tool_calls]
    assert arguments == [{"order_id": "ORD-1234"}, {"order_id": "ORD-1234", "amount": 30}]


async def test_stream_cut_off_before_finish_is_an_error(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    lines = (FIXTURES / "stream_text.sse").read_text().split("\n\n")
    respx_mock.post(URL).mock(return_value=httpx.Response(200, content="\n\n".join(lines[:3]).encode()))
    async with _model(sleeps) as model:
        with pytest.raises(ModelError, match="ended before the model finished"):
            await _collect(model)


async def test_stream_error_event_raises_with_provider_message(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    body = b'data: {"error": {"message": "The model produced invalid content.", "type": "server_error"}}\n\n'
    respx_mock.post(URL).mock(return_value=httpx.Response(200, content=body))
    async with _model(sleeps) as model:
        with pytest.raises(ModelError, match="The model produced invalid content"):
            await _collect(model)


async def test_retry_on_429_honours_retry_after(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    route = respx_mock.post(URL).mock(
        side_effect=[
            httpx.Response(429, json=_json("error_429.json"), headers={"retry-after": "2"}),
            httpx.Response(200, json=_json("chat_completion.json")),
        ]
    )
    async with _model(sleeps, backoff_base_s=0.01) as model:
        response = await model.complete(MESSAGES, [])
    assert route.call_count == 2
    assert sleeps.delays == [2.0]
    assert response.content.startswith("Your order")


async def test_retry_after_is_capped_and_ms_header_wins(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    respx_mock.post(URL).mock(
        side_effect=[
            httpx.Response(429, json=_json("error_429.json"), headers={"retry-after": "600"}),
            httpx.Response(429, json=_json("error_429.json"), headers={"retry-after-ms": "250", "retry-after": "1"}),
            httpx.Response(200, json=_json("chat_completion.json")),
        ]
    )
    async with _model(sleeps, retry_after_cap_s=3.0) as model:
        await model.complete(MESSAGES, [])
    assert sleeps.delays == [3.0, 0.25]


async def test_retry_on_503_backs_off_exponentially(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    route = respx_mock.post(URL).mock(
        side_effect=[
            httpx.Response(503, json=_json("error_503.json")),
            httpx.Response(503, json=_json("error_503.json")),
            httpx.Response(200, json=_json("chat_completion.json")),
        ]
    )
    async with _model(sleeps, backoff_base_s=0.01) as model:
        await model.complete(MESSAGES, [])
    assert route.call_count == 3
    assert sleeps.delays == [0.01, 0.02]


async def test_stream_retries_before_the_stream_starts(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    route = respx_mock.post(URL).mock(side_effect=[httpx.Response(502, text="Bad Gateway"), _sse("stream_text.sse")])
    async with _model(sleeps, backoff_base_s=0.01) as model:
        items = await _collect(model)
    assert route.call_count == 2
    assert items[-1].content == "Your order shipped yesterday."


async def test_gives_up_after_max_retries(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    route = respx_mock.post(URL).mock(return_value=httpx.Response(503, json=_json("error_503.json")))
    async with _model(sleeps, max_retries=2, backoff_base_s=0.01) as model:
        with pytest.raises(ModelError) as caught:
            await model.complete(MESSAGES, [])
    assert route.call_count == 3
    assert len(sleeps.delays) == 2
    assert caught.value.status_code == 503
    assert "The server is overloaded or not ready yet." in str(caught.value)
    assert "gave up after 3 attempts" in str(caught.value)


async def test_connect_errors_are_retried_then_reported(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    route = respx_mock.post(URL).mock(
        side_effect=[httpx.ConnectError("connection refused"), httpx.Response(200, json=_json("chat_completion.json"))]
    )
    async with _model(sleeps, backoff_base_s=0.01) as model:
        await model.complete(MESSAGES, [])
    assert route.call_count == 2

    route.side_effect = httpx.ConnectError("connection refused")
    async with _model(sleeps, max_retries=1, backoff_base_s=0.01) as model:
        with pytest.raises(ModelError, match="could not reach .* after 2 attempt"):
            await model.complete(MESSAGES, [])


async def test_401_raises_auth_error_without_retrying(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    route = respx_mock.post(URL).mock(return_value=httpx.Response(401, json=_json("error_401.json")))
    async with _model(sleeps) as model:
        with pytest.raises(ModelAuthError) as caught:
            await model.complete(MESSAGES, [])
    message = str(caught.value)
    assert route.call_count == 1
    assert sleeps.delays == []
    assert f"endpoint {BASE_URL} refused the API key (401)" in message
    assert "Incorrect API key provided" in message
    assert "check the key in the api_key= given" in message


async def test_403_on_stream_is_an_auth_error(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    body = {"error": {"message": "You are not allowed to sample from this model", "type": "invalid_request_error"}}
    respx_mock.post(URL).mock(return_value=httpx.Response(403, json=body))
    async with _model(sleeps) as model:
        with pytest.raises(ModelAuthError, match=r"\(403\): You are not allowed to sample"):
            await _collect(model)


async def test_missing_key_is_named_in_the_auth_error(
    respx_mock: respx.MockRouter, sleeps: _Sleeps, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    route = respx_mock.post(URL).mock(return_value=httpx.Response(401, json=_json("error_401.json")))
    async with OpenAIChatModel("gpt-4o-mini", base_url=BASE_URL, sleep=sleeps) as model:
        with pytest.raises(ModelAuthError, match="no key was sent: set OPENAI_API_KEY"):
            await model.complete(MESSAGES, [])
    assert "authorization" not in route.calls.last.request.headers


async def test_other_client_errors_are_model_errors_with_provider_message(
    respx_mock: respx.MockRouter, sleeps: _Sleeps
) -> None:
    route = respx_mock.post(URL).mock(return_value=httpx.Response(400, json=_json("error_400.json")))
    async with _model(sleeps) as model:
        with pytest.raises(ModelError) as caught:
            await model.complete(MESSAGES, [])
    assert not isinstance(caught.value, ModelAuthError)
    assert route.call_count == 1
    assert caught.value.status_code == 400
    assert "HTTP 400" in str(caught.value)
    assert "string does not match pattern" in str(caught.value)


@pytest.mark.parametrize("status", [400, 401])
async def test_an_error_body_that_breaks_mid_read_is_still_a_model_error(
    respx_mock: respx.MockRouter, sleeps: _Sleeps, status: int
) -> None:
    async def broken() -> AsyncIterator[bytes]:
        yield b"upstream proxy: bad gateway, "
        raise httpx.ReadError("connection reset by peer")

    respx_mock.post(URL).mock(side_effect=lambda request: httpx.Response(status, content=broken()))
    async with _model(sleeps) as model:
        with pytest.raises(ModelError) as caught:
            await model.complete(MESSAGES, [])
    assert caught.value.status_code == status
    assert "upstream proxy: bad gateway" in str(caught.value)


async def test_an_error_body_is_read_up_to_a_bound(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    sent: list[int] = []

    async def endless() -> AsyncIterator[bytes]:
        while True:
            sent.append(1)
            yield b"x" * 4096

    respx_mock.post(URL).mock(side_effect=lambda request: httpx.Response(400, content=endless()))
    async with _model(sleeps) as model:
        with pytest.raises(ModelError, match="HTTP 400"):
            await model.complete(MESSAGES, [])
    assert len(sent) <= 17


async def test_non_json_success_body_is_a_model_error(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    respx_mock.post(URL).mock(return_value=httpx.Response(200, text="<html>proxy login</html>"))
    async with _model(sleeps) as model:
        with pytest.raises(ModelError, match="non-JSON"):
            await model.complete(MESSAGES, [])


async def test_the_embedder_reads_its_answer_as_the_chat_model_does(respx_mock: respx.MockRouter) -> None:
    """The embedder's whole-JSON answer goes through the same reading: not JSON, or broken off, is a ModelError."""

    async def broken_off() -> AsyncIterator[bytes]:
        yield b'{"data": ['
        raise httpx.ReadError("connection reset by peer")

    route = respx_mock.post(f"{BASE_URL}/embeddings")
    async with OpenAIEmbedder("text-embedding-3-small", base_url=BASE_URL, api_key="sk-e") as embedder:
        route.mock(return_value=httpx.Response(200, text="<html>proxy login</html>"))
        with pytest.raises(ModelError, match="non-JSON: b'<html>proxy login"):
            await embedder.embed(["refund my order"])
        route.mock(side_effect=lambda request: httpx.Response(200, content=broken_off()))
        with pytest.raises(ModelError, match="broke off its answer"):
            await embedder.embed(["refund my order"])
        route.mock(return_value=httpx.Response(200, json={"data": [{"index": 0, "embedding": [0.6, 0.8]}]}))
        assert await embedder.embed(["refund my order"]) == [[0.6, 0.8]]


async def test_configuration_from_environment(
    respx_mock: respx.MockRouter, sleeps: _Sleeps, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    route = respx_mock.post("http://127.0.0.1:11434/v1/chat/completions").mock(
        return_value=httpx.Response(200, json=_json("chat_completion.json"))
    )
    async with OpenAIChatModel("llama3.1", sleep=sleeps) as model:
        await model.complete(MESSAGES, [])
    assert route.calls.last.request.headers["authorization"] == "Bearer sk-from-env"

    explicit = OpenAIChatModel("m", base_url=BASE_URL, api_key="sk-explicit")
    assert explicit.url == URL
    assert explicit._headers(stream=False)["Authorization"] == "Bearer sk-explicit"


def test_default_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert OpenAIChatModel("gpt-4o-mini").url == "https://api.openai.com/v1/chat/completions"


async def test_closes_only_the_client_it_created(respx_mock: respx.MockRouter, sleeps: _Sleeps) -> None:
    respx_mock.post(URL).mock(return_value=httpx.Response(200, json=_json("chat_completion.json")))
    async with httpx.AsyncClient() as borrowed:
        async with _model(sleeps, client=borrowed) as model:
            await model.complete(MESSAGES, [])
        assert not borrowed.is_closed

    model = _model(sleeps)
    await model.complete(MESSAGES, [])
    created = model._client
    assert created is not None
    await model.aclose()
    assert created.is_closed


async def test_stream_over_loopback_yields_text_before_the_response_ends(sleeps: _Sleeps) -> None:
    """A real server holds the rest of the stream until the client has seen the first delta."""
    events = (FIXTURES / "stream_text.sse").read_bytes().split(b"\n\n")
    first_seen = threading.Event()
    released_by_client: list[bool] = []

    async def completions(request: Request) -> StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            yield events[0] + b"\n\n" + events[1] + b"\n\n"
            with anyio.move_on_after(5):
                while not first_seen.is_set():  # noqa: ASYNC110 - set by the client's thread
                    await anyio.sleep(0.01)
            released_by_client.append(first_seen.is_set())
            for event in events[2:]:
                yield event + b"\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    with serve_app(app) as base_url:
        async with _model(sleeps, base_url=f"{base_url}/v1") as model:
            items = []
            async for item in model.stream(MESSAGES, []):
                items.append(item)
                if isinstance(item, TextDelta):
                    first_seen.set()
    assert released_by_client == [True]
    assert items[-1].content == "Your order shipped yesterday."

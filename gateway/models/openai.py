"""A ChatModel for any OpenAI-compatible ``/chat/completions`` endpoint, over httpx.

Works with OpenAI itself and with the many servers that copy its API (vLLM, Ollama,
LiteLLM, llama.cpp, Together, Groq, ...). Transient failures (429, 5xx, refused
connections) are retried with exponential backoff; a refused key fails at once with a
message that says how to fix it. ``OpenAICompatible`` is that endpoint, shared with the
``/embeddings`` client (gateway/models/embeddings.py).
"""

from __future__ import annotations

import email.utils
import os
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self, TypedDict, Unpack

import anyio
import httpx
import orjson

from gateway.errors import ModelAuthError, ModelError
from gateway.models.base import (
    DEFAULT_SETTINGS,
    RAW_ARGUMENTS_KEY,
    ChatMessage,
    ModelResponse,
    ModelSettings,
    ModelStreamItem,
    TextDelta,
    TokenUsage,
    ToolCall,
    ToolSpec,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"

_RETRYABLE_TRANSPORT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.RemoteProtocolError)
_MAX_PROVIDER_MESSAGE_CHARS = 500
_MAX_ERROR_BODY_BYTES = 64 * 1024
_WIRE_KEYS: dict[str, frozenset[str]] = {
    "system": frozenset({"role", "content", "name"}),
    "developer": frozenset({"role", "content", "name"}),
    "user": frozenset({"role", "content", "name"}),
    "assistant": frozenset({"role", "content", "name", "tool_calls", "refusal", "audio", "function_call"}),
    "tool": frozenset({"role", "content", "tool_call_id"}),
}


class EndpointOptions(TypedDict, total=False):
    """The keyword options of ``OpenAICompatible``, which the chat model and the embedder pass on."""

    base_url: str | None
    api_key: str | None
    api_key_env: str | None
    client: httpx.AsyncClient | None
    max_retries: int
    timeout_s: float
    backoff_base_s: float
    backoff_max_s: float
    retry_after_cap_s: float
    sleep: Callable[[float], Awaitable[None]] | None


class OpenAICompatible:
    """One OpenAI-compatible endpoint: base URL, key, HTTP client, retries; what chat models and embedders share.

    ``max_retries`` counts retries after the first attempt. Backoff before retry ``n``
    (from 0) is ``backoff_base_s * 2**n`` capped at ``backoff_max_s``, unless the
    provider sent ``Retry-After`` (or ``retry-after-ms``), which is honoured up to
    ``retry_after_cap_s``. ``timeout_s`` applies to every request, also on a client
    passed in. ``sleep`` replaces ``anyio.sleep`` (tests use it to record delays).
    """

    path = "/chat/completions"
    system = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = DEFAULT_API_KEY_ENV,
        client: httpx.AsyncClient | None = None,
        max_retries: int = 3,
        timeout_s: float = 60.0,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 20.0,
        retry_after_cap_s: float = 30.0,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.api_key_env = api_key_env
        """The variable the key is read from when ``api_key`` is not given; None: none (a keyless endpoint)."""
        from_env = os.environ.get(api_key_env) if api_key_env is not None else None
        self._api_key = api_key if api_key is not None else from_env or None
        self._key_source = "the api_key= given" if api_key is not None else f"the environment variable {api_key_env}"
        self._client = client
        self._owns_client = client is None
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.retry_after_cap_s = retry_after_cap_s
        self._sleep = sleep or anyio.sleep

    @property
    def url(self) -> str:
        return f"{self.base_url}{self.path}"

    async def aclose(self) -> None:
        """Close the HTTP client if this model created it; a client passed in stays open."""
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def _headers(self, *, stream: bool) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream" if stream else "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout_s)
        return self._client

    async def _send(self, body: dict[str, Any], *, stream: bool) -> httpx.Response:
        """POST with retries; returns an open, successful response the caller must close."""
        try:
            payload = orjson.dumps(body)
        except TypeError as exc:
            raise ModelError(f"messages or tools are not JSON-serializable: {exc}") from exc
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            is_last = attempt == attempts - 1
            client = self._http()
            request = client.build_request(
                "POST", self.url, content=payload, headers=self._headers(stream=stream), timeout=self.timeout_s
            )
            try:
                response = await client.send(request, stream=True)
            except _RETRYABLE_TRANSPORT_ERRORS as exc:
                if is_last:
                    raise ModelError(
                        f"could not reach OpenAI-compatible endpoint {self.url} after {attempts} attempt(s): {exc!r}"
                    ) from exc
                await self._sleep(self._backoff_s(attempt, None))
                continue
            except httpx.TimeoutException as exc:
                raise ModelError(f"OpenAI-compatible endpoint {self.url} timed out after {self.timeout_s}s") from exc
            except httpx.HTTPError as exc:
                raise ModelError(f"request to OpenAI-compatible endpoint {self.url} failed: {exc!r}") from exc
            if response.status_code < 400:
                return response
            await self._raise_or_wait(response, attempt=attempt, is_last=is_last)
        raise AssertionError("unreachable: the retry loop returns or raises")

    async def _post_json(self, body: dict[str, Any]) -> Any:
        """POST with retries and return the answer's JSON, read whole."""
        response = await self._send(body, stream=False)
        try:
            raw = await response.aread()
        except httpx.HTTPError as exc:
            raise ModelError(f"OpenAI-compatible endpoint {self.url} broke off its answer: {exc!r}") from exc
        finally:
            await response.aclose()
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ModelError(f"OpenAI-compatible endpoint {self.url} answered with non-JSON: {raw[:200]!r}") from exc

    async def _raise_or_wait(self, response: httpx.Response, *, attempt: int, is_last: bool) -> None:
        """Turn an error response into an exception, or sleep before the next attempt."""
        body = await _read_error_body(response)
        status = response.status_code
        message = _provider_message(response, body)
        if status in (401, 403):
            raise ModelAuthError(self._auth_message(status, message), status_code=status, provider_message=message)
        retryable = status == 429 or status >= 500
        if retryable and not is_last:
            await self._sleep(self._backoff_s(attempt, _retry_after_s(response.headers)))
            return
        suffix = f" (gave up after {attempt + 1} attempts)" if retryable and attempt > 0 else ""
        raise ModelError(
            f"OpenAI-compatible endpoint {self.url} returned HTTP {status} for model '{self.model}': {message}{suffix}",
            status_code=status,
            provider_message=message,
        )

    def _auth_message(self, status: int, provider_message: str) -> str:
        """Names where the key came from (or would): the variable this model was told to read, or ``api_key=``."""
        if self._api_key:
            return (
                f"OpenAI-compatible endpoint {self.base_url} refused the API key ({status}): {provider_message}; "
                f"check the key in {self._key_source}"
            )
        fix = f"set {self.api_key_env}" if self.api_key_env else "name the variable that holds it (api_key_env)"
        return (
            f"OpenAI-compatible endpoint {self.base_url} requires an API key ({status}): {provider_message}; "
            f"no key was sent: {fix}"
        )

    def _backoff_s(self, attempt: int, retry_after_s: float | None) -> float:
        if retry_after_s is not None:
            return min(max(retry_after_s, 0.0), self.retry_after_cap_s)
        return min(self.backoff_base_s * 2.0**attempt, self.backoff_max_s)


class OpenAIChatModel(OpenAICompatible):
    """Chat completions with tools, plain or streamed (SSE); the endpoint's options are ``OpenAICompatible``'s."""

    def __init__(
        self,
        model: str,
        *,
        temperature: float | None = None,
        price_per_1k_tokens: tuple[float, float] | None = None,
        stream_usage: bool = True,
        **endpoint: Unpack[EndpointOptions],
    ) -> None:
        super().__init__(model, **endpoint)
        self.temperature = temperature
        self.price_per_1k_tokens = price_per_1k_tokens
        self.stream_usage = stream_usage

    async def complete(
        self, messages: list[ChatMessage], tools: list[ToolSpec], settings: ModelSettings | None = None
    ) -> ModelResponse:
        return self._parse_completion(await self._post_json(self._body(messages, tools, settings, stream=False)))

    async def stream(
        self, messages: list[ChatMessage], tools: list[ToolSpec], settings: ModelSettings | None = None
    ) -> AsyncGenerator[ModelStreamItem, None]:
        response = await self._send(self._body(messages, tools, settings, stream=True), stream=True)
        state = _StreamState()
        try:
            async for data in _sse_events(response):
                if data.strip() == "[DONE]":
                    state.done = True
                    break
                for chunk in _decode_events(data, self.url):
                    for text in self._absorb_chunk(chunk, state):
                        yield TextDelta(text)
        except httpx.HTTPError as exc:
            raise ModelError(f"stream from OpenAI-compatible endpoint {self.url} broke off: {exc!r}") from exc
        finally:
            await response.aclose()
        if not (state.done or state.finished):
            raise ModelError(f"stream from OpenAI-compatible endpoint {self.url} ended before the model finished")
        yield ModelResponse(
            content="".join(state.text),
            tool_calls=state.tool_calls(),
            cost_usd=self._cost(state.usage),
            usage=state.usage,
        )

    def _body(
        self, messages: list[ChatMessage], tools: list[ToolSpec], settings: ModelSettings | None, *, stream: bool
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": [_wire_message(m) for m in messages]}
        if tools:
            settings = settings or DEFAULT_SETTINGS
            body["tools"] = [t.to_openai() for t in tools]
            if not settings.parallel_tool_calls:
                body["parallel_tool_calls"] = False  # true is the API's default; some models refuse the key
            if settings.tool_choice is not None:
                body["tool_choice"] = settings.openai_tool_choice()
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if stream:
            body["stream"] = True
            if self.stream_usage:
                body["stream_options"] = {"include_usage": True}
        return body

    def _parse_completion(self, data: Any) -> ModelResponse:
        if not isinstance(data, dict):
            raise ModelError(f"OpenAI-compatible endpoint {self.url} answered with unexpected JSON: {str(data)[:200]}")
        if data.get("error"):
            raise ModelError(f"OpenAI-compatible endpoint {self.url} reported an error: {_error_text(data['error'])}")
        choices = data.get("choices") or []
        if not choices or not isinstance(choices[0], dict):
            raise ModelError(f"OpenAI-compatible endpoint {self.url} answered without choices")
        message = choices[0].get("message") or {}
        tool_calls = _parse_tool_calls(message.get("tool_calls") or [])
        if not tool_calls and isinstance(message.get("function_call"), dict):
            tool_calls = _parse_tool_calls([{"id": "call_0", "function": message["function_call"]}])
        usage = _parse_usage(data.get("usage"))
        return ModelResponse(
            content=_content_text(message.get("content")),
            tool_calls=tool_calls,
            cost_usd=self._cost(usage),
            usage=usage,
        )

    def _absorb_chunk(self, chunk: dict[str, Any], state: _StreamState) -> list[str]:
        """Fold one stream chunk into ``state``; returns the new text pieces."""
        if chunk.get("error"):
            detail = _error_text(chunk["error"])
            raise ModelError(f"OpenAI-compatible endpoint {self.url} reported an error mid-stream: {detail}")
        texts: list[str] = []
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            text = _content_text(delta.get("content"))
            if text:
                state.text.append(text)
                texts.append(text)
            for call_delta in delta.get("tool_calls") or []:
                if isinstance(call_delta, dict):
                    state.add_tool_delta(call_delta)
            if choice.get("finish_reason"):
                state.finished = True
        usage = _parse_usage(chunk.get("usage"))
        if usage is not None:
            state.usage = usage
        return texts

    def _cost(self, usage: TokenUsage | None) -> float:
        if usage is None or self.price_per_1k_tokens is None:
            return 0.0
        price_in, price_out = self.price_per_1k_tokens
        return usage.prompt_tokens / 1000 * price_in + usage.completion_tokens / 1000 * price_out


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _StreamState:
    """What a stream has delivered so far; tool calls are keyed by their delta ``index``."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    usage: TokenUsage | None = None
    finished: bool = False
    done: bool = False
    _last_index: int = 0

    def add_tool_delta(self, delta: dict[str, Any]) -> None:
        index = delta.get("index")
        call_id = delta.get("id") or ""
        if not isinstance(index, int):
            known_ids = {c.id for c in self.calls.values()}
            index = max(self.calls, default=-1) + 1 if call_id and call_id not in known_ids else self._last_index
        self._last_index = index
        part = self.calls.setdefault(index, _PartialCall())
        if call_id:
            part.id = call_id
        function = delta.get("function") or {}
        name = function.get("name")
        if name and name != part.name:
            part.name += name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            part.arguments.append(arguments)
        elif isinstance(arguments, dict):
            part.arguments = [orjson.dumps(arguments).decode()]

    def tool_calls(self) -> list[ToolCall]:
        return [
            ToolCall(id=part.id or f"call_{index}", name=part.name, arguments=_parse_arguments("".join(part.arguments)))
            for index, part in sorted(self.calls.items())
        ]


async def _sse_events(response: httpx.Response) -> AsyncGenerator[str, None]:
    """The ``data`` of each server-sent event (multi-line data joined with newlines)."""
    data_lines: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if data_lines:
                yield "\n".join(data_lines)
                data_lines = []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data_lines.append(value[1:] if value.startswith(" ") else value)
    if data_lines:
        yield "\n".join(data_lines)


def _decode_events(data: str, url: str) -> list[dict[str, Any]]:
    """JSON chunks in one event; tolerates servers that omit the blank line between events."""
    try:
        decoded = orjson.loads(data)
        return [decoded] if isinstance(decoded, dict) else []
    except orjson.JSONDecodeError:
        pass
    chunks: list[dict[str, Any]] = []
    for line in data.splitlines():
        if not line.strip() or line.strip() == "[DONE]":
            continue
        try:
            decoded = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ModelError(
                f"stream from OpenAI-compatible endpoint {url} sent malformed JSON: {line[:200]!r}"
            ) from exc
        if isinstance(decoded, dict):
            chunks.append(decoded)
    return chunks


def _wire_message(message: ChatMessage) -> ChatMessage:
    """The message without bookkeeping keys (e.g. the runner's ``sender``) that OpenAI rejects with a 400."""
    allowed = _WIRE_KEYS.get(message.get("role", ""))
    if allowed is None:
        return message
    return {k: v for k, v in message.items() if k in allowed}


def _parse_tool_calls(raw_calls: list[Any]) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for position, raw in enumerate(raw_calls):
        if not isinstance(raw, dict):
            continue
        function = raw.get("function") or {}
        arguments = function.get("arguments")
        parsed = arguments if isinstance(arguments, dict) else _parse_arguments(arguments or "")
        call_id = raw.get("id") or f"call_{position}"
        calls.append(ToolCall(id=call_id, name=function.get("name") or "", arguments=parsed))
    return calls


def _parse_arguments(raw: str) -> dict[str, Any]:
    """Tool arguments from the model's JSON string; junk is kept as ``{RAW_ARGUMENTS_KEY: ...}``."""
    if not raw.strip():
        return {}
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {RAW_ARGUMENTS_KEY: raw}
    return parsed if isinstance(parsed, dict) else {RAW_ARGUMENTS_KEY: raw}


def _parse_usage(raw: Any) -> TokenUsage | None:
    if not isinstance(raw, dict):
        return None
    return TokenUsage(
        prompt_tokens=int(raw.get("prompt_tokens") or 0),
        completion_tokens=int(raw.get("completion_tokens") or 0),
    )


def _content_text(content: Any) -> str:
    """Message content as text; some providers send a list of parts instead of a string."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict))
    return ""


async def _read_error_body(response: httpx.Response) -> bytes:
    """Up to ``_MAX_ERROR_BODY_BYTES`` of an error response's body; what arrived when reading breaks."""
    body = bytearray()
    try:
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) >= _MAX_ERROR_BODY_BYTES:
                break
    except httpx.HTTPError:
        pass
    finally:
        await response.aclose()
    return bytes(body[:_MAX_ERROR_BODY_BYTES])


def _provider_message(response: httpx.Response, body: bytes) -> str:
    """The provider's own words from an error ``body`` (which may be cut short)."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        text = body.decode(response.encoding or "utf-8", errors="replace").strip()
        return text[:_MAX_PROVIDER_MESSAGE_CHARS] or response.reason_phrase or f"HTTP {response.status_code}"
    if isinstance(data, dict):
        for key in ("error", "message", "detail"):
            if data.get(key):
                return _error_text(data[key])
    return str(data)[:_MAX_PROVIDER_MESSAGE_CHARS]


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)[:_MAX_PROVIDER_MESSAGE_CHARS]
    return str(error)[:_MAX_PROVIDER_MESSAGE_CHARS]


def _retry_after_s(headers: httpx.Headers) -> float | None:
    """Seconds the provider asked us to wait (``retry-after-ms``, or ``Retry-After`` as seconds or a date)."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return float(milliseconds) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()

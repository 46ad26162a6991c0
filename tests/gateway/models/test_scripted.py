"""ScriptedModel: scripted turns in order, callable steps, a clear error when it runs out."""

from __future__ import annotations

import pytest

from gateway.errors import ScriptExhaustedError
from gateway.models import (
    ChatMessage,
    ChatModel,
    ModelError,
    ModelResponse,
    OfflineModel,
    OpenAIChatModel,
    ScriptedModel,
    TextDelta,
    ToolCall,
    ToolSpec,
)

pytestmark = pytest.mark.anyio

TOOL = ToolSpec("lookup_order", "Look up an order.", {"type": "object", "properties": {}})


async def test_returns_responses_in_order_and_records_calls() -> None:
    call = ModelResponse(tool_calls=[ToolCall("call_1", "lookup_order", {"order_id": "ORD-1"})])
    answer = ModelResponse(content="It shipped.")
    model = ScriptedModel([call, answer])
    history: list[ChatMessage] = [{"role": "user", "content": "where is ORD-1?"}]

    assert await model.complete(history, [TOOL]) == call
    history.append({"role": "tool", "tool_call_id": "call_1", "content": "shipped"})
    assert await model.complete(history, []) == answer

    assert model.remaining == 0
    assert [len(c.messages) for c in model.calls] == [1, 2]
    assert model.calls[0].tools == [TOOL]


async def test_callable_steps_see_the_messages() -> None:
    model = ScriptedModel([lambda messages: ModelResponse(content=f"echo: {messages[-1]['content']}")])
    response = await model.complete([{"role": "user", "content": "ping"}], [])
    assert response.content == "echo: ping"


async def test_exhausted_script_raises_a_clear_error() -> None:
    model = ScriptedModel([ModelResponse(content="only one")])
    await model.complete([{"role": "user", "content": "a"}], [])
    with pytest.raises(ScriptExhaustedError, match="script holds 1 and call 2 was made") as caught:
        await model.complete([{"role": "user", "content": "b"}], [])
    assert isinstance(caught.value, ModelError)


async def test_stream_splits_content_into_deltas() -> None:
    model = ScriptedModel([ModelResponse(content="Your order has shipped.")])
    items = [item async for item in model.stream([{"role": "user", "content": "?"}], [])]
    assert items[:-1] == [TextDelta("Your "), TextDelta("order "), TextDelta("has "), TextDelta("shipped.")]
    assert items[-1] == ModelResponse(content="Your order has shipped.")


async def test_a_step_that_returns_the_wrong_type_is_reported() -> None:
    model = ScriptedModel([lambda messages: "not a response"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="step 1 returned str"):
        await model.complete([], [])


@pytest.mark.parametrize(
    "model",
    [ScriptedModel([]), OfflineModel(), OpenAIChatModel("gpt-4o-mini", api_key="sk-test")],
    ids=["scripted", "offline", "openai"],
)
def test_every_model_satisfies_the_chat_model_protocol(model: object) -> None:
    assert isinstance(model, ChatModel)

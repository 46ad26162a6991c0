"""The history window: however long a session, an agent is shown at most ``window`` messages of it, the
earlier ones told in one note, and no tool result is shown without the call that asked for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway import Agent, FullHistory, MemorySessionStore, Runner, StructuredHistory, SummaryHistory
from gateway.config.load import load_config
from gateway.defaults import HISTORY_WINDOW
from gateway.errors import ConfigError
from gateway.models import ModelResponse, ScriptedModel
from gateway.service import build_service
from gateway.swarm import HandoffRecord, Session

pytestmark = pytest.mark.anyio

LONG = 10_000


def _exchange(index: int) -> list[dict[str, Any]]:
    """One user turn of a long session: a question, a tool call and its two results, an answer."""
    calls = [
        {"id": f"c{index}-{n}", "type": "function", "function": {"name": "lookup", "arguments": "{}"}} for n in (1, 2)
    ]
    return [
        {"role": "user", "content": f"question {index}"},
        {"role": "assistant", "content": None, "sender": "helper", "tool_calls": calls},
        {"role": "tool", "tool_call_id": f"c{index}-1", "content": "found"},
        {"role": "tool", "tool_call_id": f"c{index}-2", "content": "found"},
        {"role": "assistant", "content": f"answer {index}", "sender": "helper"},
    ]


def _long_history(count: int) -> list[dict[str, Any]]:
    history = [message for index in range(count // 5 + 1) for message in _exchange(index)]
    return history[:count]


def _pairs_intact(messages: list[dict[str, Any]]) -> bool:
    """Whether every tool result shown follows the assistant message that called it."""
    called: set[str] = set()
    for message in messages:
        called.update(call["id"] for call in message.get("tool_calls") or [])
        if message.get("role") == "tool" and message["tool_call_id"] not in called:
            return False
    return True


async def test_a_long_sessions_turn_sends_at_most_the_window_to_the_model() -> None:
    model = ScriptedModel([ModelResponse(content="still here")])
    store = MemorySessionStore()
    await store.save(Session(id="long", history=_long_history(LONG)))
    runner = Runner(Agent("helper", "You help.", model=model), session_store=store)
    response = await runner.run_async("long", "and now?")
    assert response.content == "still here"
    sent = model.calls[0].messages
    assert sent[0] == {"role": "system", "content": "You help."}
    shown = sent[1:]
    assert len(shown) <= HISTORY_WINDOW, len(shown)
    assert shown[-1] == {"role": "user", "content": "and now?"}
    assert shown[0]["role"] == "system" and "earlier messages of this conversation are not shown" in shown[0]["content"]
    assert "- helper: answer" in shown[0]["content"]
    assert _pairs_intact(shown[1:])
    assert len((await store.load("long")).history) == LONG + 2, "the session keeps its whole history"


@pytest.mark.parametrize("policy", [FullHistory, SummaryHistory, StructuredHistory])
@pytest.mark.parametrize("window", [4, 5, 6, 7, 50])
async def test_every_policy_keeps_within_its_window_and_keeps_tool_pairs(policy: Any, window: int) -> None:
    history = _long_history(500)
    for handoff in (None, HandoffRecord("triage", "helper", "refund", at=3)):
        view = await policy(window=window).view(history, handoff, {})
        assert len(view) <= window, (policy, window, handoff, len(view))
        assert view[-1] == history[-1]
        assert _pairs_intact([m for m in view if m["role"] != "system"])
        if handoff is not None and policy is not FullHistory:
            assert view[0]["content"].startswith(("Summary of the conversation before", "Handoff payload (JSON)"))
            assert view[1] == {"role": "user", "content": "question 0"}, "the query that caused the handoff stays"


async def test_a_summarizer_tells_what_the_window_cut() -> None:
    told: list[int] = []

    def summarize(messages: list[dict[str, Any]]) -> str:
        told.append(len(messages))
        return "they asked many questions"

    view = await SummaryHistory(summarizer=summarize, window=10).view(_long_history(100), None, {})
    assert told == [91] and len(view) == 10
    assert view[0]["content"].endswith("they asked many questions")


async def test_no_window_shows_everything() -> None:
    history = _long_history(1000)
    assert await FullHistory(window=None).view(history, None, {}) == history


@pytest.mark.parametrize("window", [3, 0, -1, 2.5, True])
def test_a_window_too_small_to_keep_is_refused(window: Any) -> None:
    with pytest.raises(ValueError, match="history window must be a number of messages of at least 4"):
        FullHistory(window=window)


async def test_the_configured_window_reaches_the_runner(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(f'[gateway]\ndata_dir = "{tmp_path}"\n\n[swarm]\nhistory = "summary"\nhistory_window = 30\n')
    service = build_service(load_config(config, environ={}))
    async with service:
        policy = service.runner.history_policy
        assert isinstance(policy, SummaryHistory) and policy.window == 30
    assert load_config(None, environ={}).swarm.history_window == HISTORY_WINDOW
    config.write_text("[swarm]\nhistory_window = 3\n")
    with pytest.raises(ConfigError, match="history_window"):
        load_config(config, environ={})

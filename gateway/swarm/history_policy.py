"""What the agent that received a handoff gets to see of the conversation.

The session always keeps the full history; a policy only shapes the view handed to the
agent that holds the conversation since the last handoff. Messages before that handoff
are shown in full (FullHistory, the default), replaced by a summary (SummaryHistory), or
replaced by a ``HandoffPayload`` (StructuredHistory): source agent, target agent, user id,
intent, extracted slots, handoff reason and raw query. Messages after it are always
verbatim. The same payload goes to a remote agent that receives a transfer, in its task's
``metadata.handoff.payload``, whatever the policy.

Every policy shows at most ``window`` messages (history_window.py): past it, the earliest
verbatim ones are told in one note, summarized as the policy summarizes (extractive unless
SummaryHistory has a summarizer).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import orjson
from pydantic import BaseModel, ConfigDict, Field

from gateway.defaults import HISTORY_WINDOW
from gateway.models.base import ChatMessage
from gateway.swarm.history_window import checked_window, within_window
from gateway.swarm.sessions.base import HandoffRecord, Session

Summarizer = Callable[[list[ChatMessage]], str | Awaitable[str]]

_SNIPPET_CHARS = 160
# Each pattern starts only where a run of its characters starts (the look-behinds, the \b): tried
# from every position inside a long run (of digits, letters or "A-A-"), the earlier patterns
# scanned to the run's end each time, quadratic in the run's length: one long message could
# hold the gateway.
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+\.[\w.-]+")
_AMOUNT = re.compile(
    r"(?:[$€£]\s?(\d+(?:[.,]\d{1,2})?))|(?<!\d)(\d+(?:[.,]\d{1,2})?)\s?(?:usd|eur|dollars?|euros?)\b", re.I
)
_IDENTIFIER = re.compile(r"#?\b([A-Z]{1,5}-?\d{2,}|\d{4,})\b")


class HandoffPayload(BaseModel):
    """What the agent receiving a transfer is told about it: who, for whom, what for, with which details."""

    model_config = ConfigDict(extra="forbid")

    source_agent: str = Field(description="The agent that handed the conversation over.")
    target_agent: str = Field(description="The agent receiving it.")
    user_id: str | None = Field(None, description="The user's id: the context variable user_id, when set.")
    intent: str = Field(
        description="What the user wants: as the source declared it, else the reason, else the transfer."
    )
    extracted_slots: dict[str, Any] = Field(
        default_factory=dict,
        description="Details found: scalar context variables, ids, amounts, emails, declared ones.",
    )
    handoff_reason: str | None = Field(None, description="Why the source handed over, as it said.")
    raw_query: str = Field("", description="The user's message that led to the transfer, verbatim.")


class HistoryPolicy(Protocol):
    """Shapes the history shown to the agent that received ``handoff``; ``name`` goes to remote agents."""

    name: str

    async def view(
        self, history: list[ChatMessage], handoff: HandoffRecord | None, context_variables: dict[str, Any]
    ) -> list[ChatMessage]: ...


class FullHistory:
    """Everything, as it happened, within ``window`` messages (None: no bound)."""

    name = "full"

    def __init__(self, window: int | None = HISTORY_WINDOW) -> None:
        self.window = checked_window(window)

    async def view(
        self, history: list[ChatMessage], handoff: HandoffRecord | None, context_variables: dict[str, Any]
    ) -> list[ChatMessage]:
        return await within_window([], history, self.window, _extractive)


class SummaryHistory:
    """A summary of what came before the handoff, the query that caused it, then verbatim.

    The default summary is extractive (last lines of user and agent text, no model call);
    pass ``summarizer`` (sync or async, e.g. one that asks a model) to replace it. It also tells
    what is cut to keep the view within ``window`` messages (None: no bound).
    """

    name = "summary"

    def __init__(
        self, summarizer: Summarizer | None = None, max_chars: int = 800, window: int | None = HISTORY_WINDOW
    ) -> None:
        self.summarizer = summarizer
        self.max_chars = max_chars
        self.window = checked_window(window)

    async def view(
        self, history: list[ChatMessage], handoff: HandoffRecord | None, context_variables: dict[str, Any]
    ) -> list[ChatMessage]:
        if handoff is None:
            return await within_window([], history, self.window, self._summarize)
        before, after = _split(history, handoff)
        summary = await self._summarize(before)
        note = (
            f"Summary of the conversation before {handoff.source!r} handed it to {handoff.target!r}"
            f"{_reason_clause(handoff)}:\n{summary}"
        )
        return await within_window(_condensed(note, before), after, self.window, self._summarize)

    async def _summarize(self, messages: list[ChatMessage]) -> str:
        if self.summarizer is None:
            return extractive_summary(messages, self.max_chars)
        result = self.summarizer(messages)
        return await result if inspect.isawaitable(result) else result


class StructuredHistory:
    """A JSON handoff payload instead of the earlier messages, then the raw query, then verbatim, within
    ``window`` messages (None: no bound)."""

    name = "structured"

    def __init__(self, window: int | None = HISTORY_WINDOW) -> None:
        self.window = checked_window(window)

    async def view(
        self, history: list[ChatMessage], handoff: HandoffRecord | None, context_variables: dict[str, Any]
    ) -> list[ChatMessage]:
        if handoff is None:
            return await within_window([], history, self.window, _extractive)
        before, after = _split(history, handoff)
        payload = handoff_payload(before, handoff, context_variables)
        head = _condensed("Handoff payload (JSON):\n" + payload.model_dump_json(), before)
        return await within_window(head, after, self.window, _extractive)


def handoff_payload(
    history: list[ChatMessage], handoff: HandoffRecord, context_variables: dict[str, Any]
) -> HandoffPayload:
    """The HandoffPayload of ``handoff``; ``history`` is the conversation up to it.

    Slots merge, lowest first: scalar context variables, values found in the raw query
    (ids, amounts, emails), and ``extracted_slots`` the source attached to its request
    (a remote agent's ``payload``). The intent is the one the source declared, else its
    reason, else the transfer itself; ``user_id`` the declared one, else the context
    variable ``user_id``.
    """
    query = _last_user_message(history)
    raw_query = _text(query) if query else ""
    declared = handoff.payload or {}
    slots: dict[str, Any] = {k: v for k, v in context_variables.items() if isinstance(v, str | int | float | bool)}
    slots.update(extract_slots(raw_query))
    if isinstance(declared.get("extracted_slots"), dict):
        slots.update(declared["extracted_slots"])
    user_id = declared.get("user_id") or context_variables.get("user_id")
    return HandoffPayload(
        source_agent=handoff.source,
        target_agent=handoff.target,
        user_id=str(user_id) if isinstance(user_id, str | int) and user_id != "" else None,
        intent=str(declared.get("intent") or handoff.reason or f"transfer to {handoff.target}"),
        extracted_slots=orjson.loads(orjson.dumps(slots, default=str)),
        handoff_reason=handoff.reason,
        raw_query=raw_query,
    )


def extract_slots(text: str) -> dict[str, Any]:
    """Ids, amounts and emails a user typed; deliberately simple and deterministic."""
    slots: dict[str, Any] = {}
    if emails := _EMAIL.findall(text):
        slots["email"] = emails[0]
    without_emails = _EMAIL.sub(" ", text)
    if amount := _AMOUNT.search(without_emails):
        slots["amount"] = float((amount.group(1) or amount.group(2)).replace(",", "."))
    without_amounts = _AMOUNT.sub(" ", without_emails)
    if ids := _IDENTIFIER.findall(without_amounts):
        slots["ids"] = ids
    return slots


def extractive_summary(messages: list[ChatMessage], max_chars: int = 800) -> str:
    """The latest user and agent lines that fit in ``max_chars``, oldest first."""
    lines: list[str] = []
    used = 0
    for message in reversed(messages):
        text = _text(message)
        if message.get("role") not in ("user", "assistant") or not text:
            continue
        speaker = "user" if message["role"] == "user" else str(message.get("sender") or "assistant")
        line = f"- {speaker}: {_snippet(text)}"
        if used + len(line) > max_chars and lines:
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(reversed(lines)) or "(nothing yet)"


def _split(history: list[ChatMessage], handoff: HandoffRecord) -> tuple[list[ChatMessage], list[ChatMessage]]:
    at = max(0, min(handoff.at, len(history)))
    return list(history[:at]), list(history[at:])


def _condensed(note: str, before: list[ChatMessage]) -> list[ChatMessage]:
    """``note`` in place of ``before``, then the user message that caused the handoff."""
    query = _last_user_message(before)
    return [{"role": "system", "content": note}, *([query] if query else [])]


async def _extractive(messages: list[ChatMessage]) -> str:
    return extractive_summary(messages)


async def shown_to(policy: HistoryPolicy, agent: str, session: Session) -> list[ChatMessage]:
    """The history as ``policy`` shows it to ``agent`` (the session's handoff applies to its target only)."""
    handoff = session.handoff if session.handoff is not None and session.handoff.target == agent else None
    return await policy.view(session.history, handoff, session.context_variables)


def last_user_text(messages: list[ChatMessage]) -> str:
    """The text of the last user message; "" when there is none."""
    message = _last_user_message(messages)
    return _text(message) if message else ""


def _last_user_message(messages: list[ChatMessage]) -> ChatMessage | None:
    return next((m for m in reversed(messages) if m.get("role") == "user"), None)


def _reason_clause(handoff: HandoffRecord) -> str:
    return f" (reason: {handoff.reason})" if handoff.reason else ""


def _text(message: ChatMessage) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _SNIPPET_CHARS else flat[: _SNIPPET_CHARS - 3] + "..."

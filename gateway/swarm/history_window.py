"""How much of a long conversation an agent is shown: its latest messages, the rest told in one note.

A session keeps its whole history, and each turn used to show all of it to the model (and to
a remote member), so every request of a long-lived session was larger than the one before,
until it no longer fit the model's context. A history policy's view is now at most
``window`` messages: the policy's own leading notes (what came before a handoff), then one
system note for the messages cut, saying how many and, in short, what the latest of them said,
then the latest messages verbatim. The cut never separates a tool result from the assistant
message that called the tool: results whose call was cut are cut with it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from gateway.defaults import HISTORY_WINDOW_MIN
from gateway.models.base import ChatMessage

Summarize = Callable[[list[ChatMessage]], Awaitable[str]]


def checked_window(window: int | None) -> int | None:
    """``window`` if a view can keep it (None: no bound); a ValueError that says the least it may be."""
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < HISTORY_WINDOW_MIN):
        raise ValueError(f"the history window must be a number of messages of at least {HISTORY_WINDOW_MIN}, or None")
    return window


async def within_window(
    head: list[ChatMessage], body: list[ChatMessage], window: int | None, summarize: Summarize
) -> list[ChatMessage]:
    """``head`` then ``body``, at most ``window`` messages: the start of ``body`` replaced by a note if need be.

    ``head`` (a policy's notes, at most two messages) is always kept; ``summarize`` tells the
    messages cut from ``body``.
    """
    if window is None or len(head) + len(body) <= window:
        return [*head, *body]
    cut = len(body) - (window - len(head) - 1)
    while cut < len(body) and body[cut].get("role") == "tool":
        cut += 1
    cut_off = body[:cut]
    note = (
        f"{len(cut_off)} earlier messages of this conversation are not shown; "
        f"the latest of them, in short:\n{await summarize(cut_off)}"
    )
    return [*head, {"role": "system", "content": note}, *body[cut:]]

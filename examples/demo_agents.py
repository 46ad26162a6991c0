"""The specialists of `make demo`, each served as its own agent service.

    switchboard serve examples.demo_agents:billing --port 8101

billing refunds orders and hands technical problems to tech (a remote-to-remote transfer);
tech answers from a small knowledge base; editor polishes a text over several turns
(conversational mode); researcher streams paid chunks; slow_researcher pauses longer
than the demo's idle timeout. Deterministic, offline.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import anyio

from agent_server import Handoff, HostedAgent, InputRequired, TaskContext, TextChunk
from examples.researcher import make_researcher

_TECH_WORDS = ("crash", "error", "bug", "freeze", "broken", "login")
_ORDER_ID = re.compile(r"\b[A-Z]{2,5}-\d{3,}\b")
_ERROR_CODE = re.compile(r"\bE\d{2,4}\b")
KNOWLEDGE_BASE = {
    "E42": "KB-042: the settings screen crashes with E42 when the cache is stale; "
    "clear it under Profile > Storage, then restart the app.",
    "E17": "KB-017: E17 means the session expired; sign out and back in.",
}


async def _billing(ctx: TaskContext) -> AsyncIterator[Any]:
    text = ctx.text
    if any(word in text.lower() for word in _TECH_WORDS):
        yield "That is a technical problem; I am passing you to tech support. "
        yield Handoff("tech", reason=f"technical problem reported to billing: {text[:80]}")
        return
    order = _ORDER_ID.search(text)
    if order is None:
        yield InputRequired("Which order should I look at? Please give its number, e.g. ORD-1234.")
        return
    yield TextChunk(f"Billing here. I found order {order.group()} and the duplicate charge of $49.00. ", 0.001)
    await anyio.sleep(0.05)
    yield TextChunk("The refund is issued; you will see it within 3 business days.", 0.001)


async def _tech(ctx: TaskContext) -> AsyncIterator[Any]:
    code = _ERROR_CODE.search(ctx.text)
    article = KNOWLEDGE_BASE.get(code.group()) if code else None
    if article is None:
        yield "Tech support here. I found no article for that; please send the error code shown on screen."
        return
    yield TextChunk(f"Tech support here. {article.split(': ', 1)[0]} covers this: ", 0.0005)
    await anyio.sleep(0.05)
    yield TextChunk(article.split(": ", 1)[1], 0.0005)


async def _editor(ctx: TaskContext) -> AsyncIterator[Any]:
    """Each pass takes the previous draft as its input; the third pass is final."""
    match = re.match(r"^Draft (\d+): (.*)$", ctx.text.strip(), re.S)
    done, body = (int(match.group(1)), match.group(2)) if match else (0, ctx.text.strip())
    if done >= 2:
        yield TextChunk(f"Final: {body.rstrip('.')}. Thank you for your patience.", 0.0002)
        return
    polished = body[:1].upper() + body[1:] if done == 0 else body.replace(" u ", " you ").replace("pls", "please")
    yield TextChunk(f"Draft {done + 1}: {polished}", 0.0002)
    yield InputRequired("Send the draft back for another pass.")


billing = HostedAgent("billing", _billing, description="Billing: refunds, double charges, invoices and payments.")
tech = HostedAgent("tech", _tech, description="Technical support: crashes, error codes, bugs and login problems.")
editor = HostedAgent("editor", _editor, description="Polishes a customer reply over a few passes.")
researcher = make_researcher(chunks=12, interval_s=0.05)
slow_researcher = make_researcher(name="slow-researcher", chunks=5, interval_s=2.0)

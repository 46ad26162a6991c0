"""The semantic router's decision time against the model call it saves.

    python -m bench.router [--quick]

100 agents with 20 example utterances each (made up from a fixed vocabulary, the same in
every run) are embedded once with the offline embedder; then each user message, a
paraphrase of some agent's example or a message about nothing, gets one router decision
(embed the message, score it against the 2,000 examples, pick the closest). Against it, in
the same rounds, interleaved, the call the router saves when it routes: the triage model
deciding among 100 transfer tools, as the offline model (in process) and as an
OpenAI-compatible endpoint on loopback answering a canned tool call at once (a server in a
subprocess, on the other core where there are two): that is HTTP and JSON with 100 tools in
the request and no inference at all, the floor of any real provider's call.

Also measured: the one-time embedding of the examples, the router with dense vectors (256
dimensions, every one set, as an embedding model returns them; the embedding call
excluded), and how many paraphrases went to their own agent. Prints p50 and p99 of each,
and each call's p50 over the router's.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
import httpx

from agent_server.http.loopback import free_port
from bench._support import stop
from gateway.models import OfflineEmbedder, OfflineModel, OpenAIChatModel, ToolSpec
from gateway.models.base import transfer_description
from gateway.swarm import Agent, SemanticRouter
from protocol.handoff_names import transfer_tool_name

T = TypeVar("T")
AGENTS = 100
EXAMPLES = 20
DENSE_DIMENSIONS = 256
_SEED = 1919
_STARTUP_S = 90.0
_SERVER = """
import sys, orjson, uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
REPLY = orjson.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench",
    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
        "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "transfer_to_agent_7", "arguments": "{}"}}]}}],
    "usage": {"prompt_tokens": 4000, "completion_tokens": 12, "total_tokens": 4012}})
async def chat(request):
    await request.body()
    return Response(REPLY, media_type="application/json")
app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


@dataclass(frozen=True)
class Settings:
    rounds: int
    messages: int
    """Router decisions (and calls of each baseline) per round."""


@dataclass
class Timings:
    """Seconds per operation, by what was measured."""

    seconds: dict[str, list[float]] = field(default_factory=dict)

    def add(self, what: str, value: float) -> None:
        self.seconds.setdefault(what, []).append(value)

    def percentile(self, what: str, q: float) -> float:
        values = sorted(self.seconds[what])
        return values[max(0, math.ceil(q * len(values)) - 1)]


def parse_settings(argv: list[str] | None) -> Settings:
    parser = argparse.ArgumentParser(prog="python -m bench.router", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and messages (a smoke run)")
    args = parser.parse_args(argv)
    return Settings(rounds=2, messages=50) if args.quick else Settings(rounds=5, messages=400)


def vocabulary(rng: random.Random, count: int) -> list[str]:
    """Made-up words of two or three syllables, distinct."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words: set[str] = set()
    while len(words) < count:
        words.add("".join(rng.choice(syllables) for _ in range(rng.choice((2, 3)))))
    return sorted(words)


def swarm(rng: random.Random) -> dict[str, Agent]:
    """The agents, each with its own topic words in its examples, beside words every agent uses."""
    words = vocabulary(rng, AGENTS * 8 + 200)
    shared, topics = words[: AGENTS * 8 - AGENTS * 6], words[AGENTS * 8 - AGENTS * 6 :]
    agents: dict[str, Agent] = {}
    for number in range(AGENTS):
        topic = topics[number * 6 : number * 6 + 6]
        examples = [" ".join(rng.sample(topic, 4) + rng.sample(shared, 4)) for _ in range(EXAMPLES)]
        name = f"agent_{number}"
        agents[name] = Agent(name, f"You handle {' '.join(topic)}.", examples=examples)
    return agents


def messages(rng: random.Random, agents: dict[str, Agent], count: int) -> list[tuple[str, str | None]]:
    """(text, the agent it paraphrases): three paraphrases to one message about nothing (words no example has).

    A paraphrase is an example with one of its everyday words swapped for another, the words
    reordered and a "please" added: 7 of its 8 content words are the example's (cosine 0.875).
    """
    chosen: list[tuple[str, str | None]] = []
    unknown = vocabulary(random.Random(_SEED + 1), 50)
    everyday = sorted({w for agent in agents.values() for e in agent.examples for w in e.split()[4:]})
    for number in range(count):
        if number % 4 == 3:
            chosen.append((" ".join(rng.sample(unknown, 4)), None))
            continue
        name = rng.choice(sorted(agents))
        words = rng.choice(agents[name].examples).split()
        words[rng.randrange(4, 8)] = rng.choice([w for w in everyday if w not in words])
        rng.shuffle(words)
        chosen.append((" ".join(["please", *words]), name))
    return chosen


class DenseEmbedder:
    """The offline embedding folded into ``DENSE_DIMENSIONS`` dimensions plus a small part in every one of them."""

    def __init__(self) -> None:
        self.offline = OfflineEmbedder(DENSE_DIMENSIONS)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[x + 0.01 * ((i % 5) + 1) for i, x in enumerate(self.offline.vector(t))] for t in texts]


def triage_call() -> tuple[list[dict[str, object]], list[ToolSpec]]:
    """The triage model's input when it must pick one of 100 agents: a system prompt, a message, 100 transfer tools."""
    tools = [
        ToolSpec(
            name=transfer_tool_name(f"agent_{n}"),
            description=transfer_description(f"agent_{n}", f"Handles the questions of topic number {n}."),
            parameters={"type": "object", "properties": {"reason": {"type": "string"}}, "required": []},
        )
        for n in range(AGENTS)
    ]
    chat = [
        {"role": "system", "content": "You route each customer to the right specialist."},
        {"role": "user", "content": "I have a question about topic number 7, please route me."},
    ]
    return chat, tools


@contextmanager
def endpoint_server() -> Iterator[str]:
    """The canned OpenAI-compatible endpoint in a subprocess on loopback (on the first core where there are two)."""
    port = free_port()
    cores = sorted(os.sched_getaffinity(0))
    prefix = ["taskset", "-c", str(cores[0])] if len(cores) >= 2 and _has_taskset() else []
    process = subprocess.Popen([*prefix, sys.executable, "-c", _SERVER, str(port)])
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + _STARTUP_S
        while True:
            try:
                httpx.post(url + "/chat/completions", content=b"{}", timeout=1.0)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the endpoint did not start") from None
                time.sleep(0.05)
        yield url
    finally:
        stop(process)


@contextmanager
def _on_second_core() -> Iterator[None]:
    """This process on the second core while the block runs, where there are two (the server has the first)."""
    cores = set(os.sched_getaffinity(0))
    if len(cores) >= 2:
        os.sched_setaffinity(0, {sorted(cores)[1]})
    try:
        yield
    finally:
        os.sched_setaffinity(0, cores)


def _has_taskset() -> bool:
    return any(os.access(os.path.join(d, "taskset"), os.X_OK) for d in os.environ.get("PATH", "").split(os.pathsep))


async def _timed(timings: Timings, what: str, operation: Callable[[], Awaitable[T]]) -> T:
    started = time.perf_counter()
    result = await operation()
    timings.add(what, time.perf_counter() - started)
    return result


@dataclass(frozen=True)
class Outcomes:
    """Shares of the decisions that were right: paraphrases routed to their agent, messages about nothing not routed."""

    routed_home: float
    abstained: float


async def measure(settings: Settings, url: str, emit: Callable[[str], None]) -> tuple[Timings, Outcomes]:
    """Every figure, interleaved round by round: the timings and how right the decisions were."""
    rng = random.Random(_SEED)
    agents = swarm(rng)
    timings = Timings()
    sparse, dense = SemanticRouter(OfflineEmbedder()), SemanticRouter(DenseEmbedder())
    await _timed(timings, "embed 2,000 examples once (offline)", lambda: sparse.decide("warm up", agents))
    await dense.decide("warm up", agents)
    offline = OfflineModel()
    chat, tools = triage_call()
    home = routed = abstained = idle = 0
    with _on_second_core():
        async with OpenAIChatModel("bench", base_url=url, api_key="bench", max_retries=0) as remote:
            for round_number in range(settings.rounds):
                emit(f"round {round_number + 1}/{settings.rounds}")
                for text, expected in messages(rng, agents, settings.messages):
                    decision = await _timed(
                        timings, "router decision (offline)", lambda t=text: sparse.decide(t, agents)
                    )
                    await _timed(timings, "router decision (dense 256-d)", lambda t=text: dense.decide(t, agents))
                    if expected is None:
                        idle += 1
                        abstained += decision is None or not decision.passes
                    else:
                        routed += 1
                        home += decision is not None and decision.passes and decision.candidate == expected
                for _ in range(settings.messages):
                    await _timed(timings, "triage model call (offline model)", lambda: offline.complete(chat, tools))
                    answer = await _timed(
                        timings, "triage model call (HTTP, loopback)", lambda: remote.complete(chat, tools)
                    )
                    if not answer.tool_calls:
                        raise RuntimeError("the endpoint answered without the tool call")
    return timings, Outcomes(home / routed if routed else 0.0, abstained / idle if idle else 0.0)


def report(timings: Timings, outcomes: Outcomes, emit: Callable[[str], None]) -> None:
    emit(
        f"{AGENTS} agents x {EXAMPLES} examples; paraphrases routed to their own agent: {outcomes.routed_home:.1%}, "
        f"messages about nothing left to the active agent: {outcomes.abstained:.1%}"
    )
    width = max(len(what) for what in timings.seconds)
    for what, values in timings.seconds.items():
        p50, p99 = timings.percentile(what, 0.5), timings.percentile(what, 0.99)
        emit(f"  {what:<{width}}  n={len(values):<5} p50 {p50 * 1000:8.3f} ms  p99 {p99 * 1000:8.3f} ms")
    router = timings.percentile("router decision (offline)", 0.5)
    for call in ("triage model call (offline model)", "triage model call (HTTP, loopback)"):
        emit(f"  ratio {call} / router decision (offline), p50: {timings.percentile(call, 0.5) / router:.1f}x")


def main(argv: list[str] | None = None) -> None:
    settings = parse_settings(argv)
    with endpoint_server() as url:
        timings, outcomes = anyio.run(measure, settings, url, lambda line: print(line, flush=True))
    report(timings, outcomes, lambda line: print(line, flush=True))


if __name__ == "__main__":
    main()

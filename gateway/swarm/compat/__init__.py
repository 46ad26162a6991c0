"""OpenAI swarm's names on Switchboard: swarm code runs with its import line changed and nothing else.

``from swarm import Swarm, Agent`` becomes ``from gateway.swarm.compat import Swarm, Agent``
(``Swarm`` and ``run_demo_loop`` also come from ``gateway``). The client runs each call as
one Runner turn (client.py), a stream as swarm's chunks (chunks.py), and the demo loop
reads and prints as swarm's does (repl.py). What differs is listed in docs/swarm.md.
"""

from gateway.swarm.agent import Agent
from gateway.swarm.compat.client import Response, Result, Swarm
from gateway.swarm.compat.repl import pretty_print_messages, process_and_print_streaming_response, run_demo_loop

__all__ = [
    "Agent",
    "Response",
    "Result",
    "Swarm",
    "pretty_print_messages",
    "process_and_print_streaming_response",
    "run_demo_loop",
]

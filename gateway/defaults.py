"""The gateway's defaults, each defined once: the Python API, the configuration and the docs read them here.

The limits of calls to peers live with them in ``peers/limits.py`` (``PeerLimits``), the
limits of a server's connections in ``agent_server/http/server.py`` (``ServerLimits``).
"""

from __future__ import annotations

# A swarm turn
MAX_HANDOFFS_PER_TURN = 5
MAX_TOOL_ITERATIONS = 10
AGENT_NAME = "Agent"
"""The name of an agent defined without one (OpenAI swarm's, so its ``Agent()`` means the same here)."""
AGENT_INSTRUCTIONS = "You are a helpful agent."
"""The instructions of an agent defined without any."""
HISTORY_WINDOW = 200
"""The most messages of a session's history an agent is shown per turn (``[swarm] history_window``), the
note for those left out included. Enough for a long conversation's recent turns verbatim, tool-heavy
ones included, while a request stays a small part of a chat model's context however long the session."""
HISTORY_WINDOW_MIN = 4
"""The least window a policy can keep: its notes on a handoff, the note for what was cut, and a message."""
MAX_DYNAMIC_AGENTS = 1000
"""Agents a runner adopts from tools' return values (swarm's transfers) and keeps; the oldest go first."""

# The semantic router
ROUTER_THRESHOLD = 0.85
"""The cosine similarity a message needs with an agent's example utterance to go straight to that agent."""
ROUTER_MAX_EXAMPLES = 100
"""Example utterances read per agent (a card may list more; the rest are ignored)."""

# The blackboard
BOARD_MAX_BYTES = 256 * 1024
"""The largest board, as JSON: a write that would make it larger is refused."""
BOARD_MAX_KEY_CHARS = 128

# The agent a gateway runs when it is given none
STARTING_AGENT_NAME = "assistant"
STARTING_AGENT_INSTRUCTIONS = "You are a helpful assistant."

# An agent-tool call
TOOL_TIMEOUT_MS = 30_000
"""The deadline of a sync request or a conversational turn, from the request being sent."""
IDLE_TIMEOUT_S = 30.0
"""The longest wait for a stream's next line."""
CONVERSATIONAL_MAX_TURNS = 5

# A remote swarm member
REMOTE_TIMEOUT_S = 60.0
"""The deadline of a remote member's ``tasks/send`` (a member that does not stream)."""
REMOTE_IDLE_TIMEOUT_S = IDLE_TIMEOUT_S

# The gateway service
EVENTS_RETENTION_DAYS = 30.0
"""How long the event log keeps a closed run (``[stores] events_retention_days``; 0 keeps every run): long
enough to look back on a month of conversations, short enough that the log does not only grow."""
HOST = "127.0.0.1"
PORT = 8080
DATA_DIR = ".switchboard"
MAX_BODY_BYTES = 1 << 20
STARTUP_WAIT_S = 5.0
"""How long remote agents that do not answer yet at start are tried again."""
MAX_SUMMARY_EVENTS = 100_000
"""``GET /runs/{id}`` reads at most this many of a run's events (``truncated`` says when there were more)."""

# The CLI
FOLLOW_POLL_S = 0.25
"""``switchboard events --session/--all --follow``: how often ``GET /runs`` is asked for runs that began."""

"""What an agent-tool call produced: the whole output, not just the last chunk."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from protocol import Artifact, ArtifactFold, HandoffRequest, Message


@dataclass
class AgentToolResult:
    """Built up as the call runs; on failure the same object is the error's ``partial``.

    ``text`` is all text output concatenated (stream chunks in arrival order; conversational
    replies joined by newlines), ``artifacts`` every artifact received (streamed ones and
    their text are folded in by ``settle``, when the call ends), ``cost_usd`` the accumulated
    cost, ``chunks`` the stream lines or turns passed on, ``state`` the task's last known state.
    """

    call_id: str
    tool: str
    agent: str
    mode: str
    run_id: str
    task_id: str | None = None
    session_id: str | None = None
    state: str | None = None
    text: str = ""
    artifacts: list[Artifact] = field(default_factory=list)
    cost_usd: float = 0.0
    chunks: int = 0
    turns: int = 0
    handoff: HandoffRequest | None = None
    reply: Message | None = None
    """The agent answered with a Message and started no task (A2A's direct reply): that message."""
    _fold: ArtifactFold | None = field(default=None, init=False, repr=False, compare=False)
    _streamed_text: list[str] = field(default_factory=list, init=False, repr=False, compare=False)

    def add_streamed(self, artifact: Artifact, text: str) -> None:
        """Add one streamed artifact and its text, folded in by ``settle`` (``protocol.ArtifactFold``).

        Folding each at once would copy the whole text so far at every chunk: a stream of
        tiny chunks within the size limit would hold the event loop for seconds.
        """
        self._folding().add(artifact)
        if text:
            self._streamed_text.append(text)

    def add_streamed_text(self, index: int, append: bool | None, text: str) -> None:
        """``add_streamed`` of an artifact of one plain text part, given by its fields (``ArtifactFold.add_text``)."""
        self._folding().add_text(index, append, text)
        if text:
            self._streamed_text.append(text)

    def _folding(self) -> ArtifactFold:
        """The fold the streamed artifacts go to, made at the first."""
        if self._fold is None:
            self._fold = ArtifactFold(self.artifacts)
        return self._fold

    @property
    def has_text(self) -> bool:
        return bool(self.text or self._streamed_text)

    def settle(self) -> None:
        """Fold what was streamed in (as the agent's server does): at the call's end."""
        if self._fold is not None:
            self.artifacts = self._fold.artifacts
        if self._streamed_text:
            self.text += "".join(self._streamed_text)
            self._streamed_text.clear()

    def to_dict(self) -> dict[str, Any]:
        return {
            "call_id": self.call_id,
            "tool": self.tool,
            "agent": self.agent,
            "mode": self.mode,
            "run_id": self.run_id,
            "task_id": self.task_id,
            "session_id": self.session_id,
            "state": self.state,
            "text": self.text,
            "artifacts": [a.to_wire() for a in self.artifacts],
            "cost_usd": self.cost_usd,
            "chunks": self.chunks,
            "turns": self.turns,
            "handoff": self.handoff.to_wire() if self.handoff else None,
        }

"""The semantic router: a user's message goes straight to the agent whose example utterances it is closest to.

Agents declare what users say when they want them (``Agent(examples=[...])``; a remote
agent's come from its card's skills). The router embeds them once (again only when an
agent's examples change), embeds each user message, and scores it against every example
by cosine similarity. At ``threshold`` or above (``defaults.ROUTER_THRESHOLD`` unless
given) the runner hands the turn to the closest agent before any model runs, saving the
triage model's call; below it the active agent decides as usual. The runner records each
decision (``router_decision``).

Scoring is plain Python. Vectors are scaled to length 1 when they arrive, so a cosine is a
dot product. Sparse vectors (the offline embedder's: a few words out of many dimensions)
are scored through an inverted index, which touches only the examples that share a
dimension with the message, not every example. Dense vectors (an embedding model's) are
scored row by row, ``dimensions x examples`` multiplications.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gateway import defaults
from gateway.models.embeddings import Embedder
from gateway.swarm.member import SwarmMember

_DENSE_FRACTION = 0.25
"""Above this share of non-zero dimensions a vector set is scored row by row, not through the index."""


@dataclass(frozen=True)
class RouteDecision:
    """The closest example to a message: whose it is, the utterance, its cosine, and whether it passes."""

    candidate: str
    example: str
    score: float
    passes: bool


@dataclass
class _Index:
    """Every example of every agent: row -> (agent, utterance), the vectors, and the postings of sparse ones."""

    owners: list[tuple[str, str]] = field(default_factory=list)
    rows: list[dict[int, float]] = field(default_factory=list)
    dense: list[list[float]] | None = None
    postings: dict[int, list[tuple[int, float]]] = field(default_factory=dict)


class SemanticRouter:
    """Routes by example utterances; see the module docstring."""

    def __init__(
        self,
        embedder: Embedder,
        *,
        threshold: float = defaults.ROUTER_THRESHOLD,
        max_examples: int = defaults.ROUTER_MAX_EXAMPLES,
    ) -> None:
        if not -1.0 <= threshold <= 1.0:
            raise ValueError("threshold is a cosine similarity: between -1 and 1")
        self.embedder = embedder
        self.threshold = threshold
        self.max_examples = max_examples
        self._vectors: dict[tuple[str, tuple[str, ...]], list[dict[int, float]]] = {}
        self._index = _Index()
        self._signature: tuple[tuple[str, tuple[str, ...]], ...] = ()

    async def decide(self, text: str, agents: Mapping[str, SwarmMember]) -> RouteDecision | None:
        """The closest agent to ``text``; None when no agent has examples (or ``text`` has nothing to compare)."""
        index = await self._current_index(agents)
        if not index.rows:
            return None
        [query] = await self._embed([text])
        if not query:
            return None
        row, score = _closest(index, query)
        agent, example = index.owners[row]
        return RouteDecision(agent, example, score, score >= self.threshold)

    async def _current_index(self, agents: Mapping[str, SwarmMember]) -> _Index:
        """The index of the agents' examples; examples not embedded before are embedded now, in one call."""
        signature = tuple(
            (name, tuple(member.examples[: self.max_examples]))
            for name, member in sorted(agents.items())
            if member.examples
        )
        if signature == self._signature:
            return self._index
        missing = [key for key in signature if key not in self._vectors]
        texts = [example for _, examples in missing for example in examples]
        vectors = iter(await self._embed(texts))
        for key in missing:
            self._vectors[key] = [next(vectors) for _ in key[1]]
        self._vectors = {key: self._vectors[key] for key in signature}
        self._index = _build(signature, self._vectors)
        self._signature = signature
        return self._index

    async def _embed(self, texts: Sequence[str]) -> list[dict[int, float]]:
        """Unit vectors as {dimension: value} (an empty dict for a zero vector)."""
        if not texts:
            return []
        return [_unit(vector) for vector in await self.embedder.embed(list(texts))]


def _unit(vector: Sequence[float]) -> dict[int, float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return {i: x / norm for i, x in enumerate(vector) if x} if norm else {}


def _build(
    signature: tuple[tuple[str, tuple[str, ...]], ...],
    vectors: dict[tuple[str, tuple[str, ...]], list[dict[int, float]]],
) -> _Index:
    index = _Index()
    for key in signature:
        name, examples = key
        for example, vector in zip(examples, vectors[key], strict=True):
            index.owners.append((name, example))
            index.rows.append(vector)
    dimensions = 1 + max((max(row, default=0) for row in index.rows), default=0)
    filled = sum(len(row) for row in index.rows)
    if filled > _DENSE_FRACTION * dimensions * len(index.rows):
        index.dense = [[row.get(i, 0.0) for i in range(dimensions)] for row in index.rows]
        return index
    for number, row in enumerate(index.rows):
        for dimension, value in row.items():
            index.postings.setdefault(dimension, []).append((number, value))
    return index


def _closest(index: _Index, query: dict[int, float]) -> tuple[int, float]:
    """The row with the highest dot product with ``query``, and that product (ties: the first row)."""
    if index.dense is not None:
        width = len(index.dense[0])
        dense_query = [query.get(i, 0.0) for i in range(width)]
        scores = [sum(map(operator.mul, dense_query, row)) for row in index.dense]
    else:
        scores = [0.0] * len(index.rows)
        for dimension, weight in query.items():
            for row, value in index.postings.get(dimension, ()):
                scores[row] += weight * value
    best = max(range(len(scores)), key=scores.__getitem__)
    return best, scores[best]

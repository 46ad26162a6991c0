"""Embedders: texts to vectors, for the semantic router (gateway/swarm/router.py).

``OfflineEmbedder`` needs no network and gives the same vector for the same text in every
process: the content words of the text (stop words dropped, crudely stemmed, as the
offline model reads a message) hashed into a fixed number of dimensions with a sign, then
scaled to length 1. Two texts are close when they share their content words: enough for
the demo and the tests, not a model of meaning. ``OpenAIEmbedder`` calls any
OpenAI-compatible ``/embeddings`` endpoint, with the same retries and errors as the chat
model.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any, Protocol, Unpack, runtime_checkable

from gateway.errors import ModelError
from gateway.models.offline import content_stems
from gateway.models.openai import EndpointOptions, OpenAICompatible

OFFLINE_DIMENSIONS = 1024
EMBED_BATCH = 256
"""Texts sent in one ``/embeddings`` request (providers cap the batch)."""


@runtime_checkable
class Embedder(Protocol):
    """Vectors for texts, one per text, in order."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class OfflineEmbedder:
    """Deterministic hashed bag of content words; see the module docstring."""

    def __init__(self, dimensions: int = OFFLINE_DIMENSIONS) -> None:
        if dimensions < 1:
            raise ValueError("dimensions must be >= 1")
        self.dimensions = dimensions

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.vector(text) for text in texts]

    def vector(self, text: str) -> list[float]:
        """Length 1, or all zeros for a text without content words."""
        vector = [0.0] * self.dimensions
        for stem in content_stems(text):
            digest = hashlib.blake2b(stem.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "big") % self.dimensions
            vector[index] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector] if norm else vector


class OpenAIEmbedder(OpenAICompatible):
    """``POST {base_url}/embeddings`` with ``{"model", "input": [...]}``, in batches of ``EMBED_BATCH`` texts."""

    path = "/embeddings"

    def __init__(self, model: str, **endpoint: Unpack[EndpointOptions]) -> None:
        super().__init__(model, **endpoint)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), EMBED_BATCH):
            vectors += await self._batch(list(texts[start : start + EMBED_BATCH]))
        return vectors

    async def _batch(self, texts: list[str]) -> list[list[float]]:
        return _vectors(await self._post_json({"model": self.model, "input": texts}), len(texts), self.url)


def _vectors(data: Any, count: int, url: str) -> list[list[float]]:
    """The ``data[].embedding`` lists in ``index`` order; exactly ``count`` of them, all numbers."""
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list) or len(items) != count:
        got = len(items) if isinstance(items, list) else "none"
        raise ModelError(f"OpenAI-compatible endpoint {url} answered {got} embeddings for {count} texts")
    ordered = sorted(items, key=lambda item: item.get("index", 0) if isinstance(item, dict) else 0)
    vectors: list[list[float]] = []
    for item in ordered:
        embedding = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(embedding, list) or not all(isinstance(x, int | float) for x in embedding):
            raise ModelError(f"OpenAI-compatible endpoint {url} answered an embedding that is not a list of numbers")
        vectors.append([float(x) for x in embedding])
    return vectors

"""Folding streamed artifact chunks into a task's artifacts: the one rule servers and clients share.

A stream line's artifact either extends the artifact of the same ``index`` (``append: true``)
or replaces it (anything else). The result is what a Task's ``artifacts`` hold: sorted by
``index``, one artifact per index, ``append`` unset, adjacent plain text parts joined into
one, so an answer streamed in pieces reads the same as the same answer sent whole.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

from protocol.task import Artifact, Part, TextPart


def merge_artifact(artifacts: list[Artifact], chunk: Artifact) -> None:
    """Fold ``chunk`` into ``artifacts`` in place; ``chunk`` itself is never modified or kept.

    The list and the artifact being extended are updated in place, so hold artifacts here
    that no one else shares (what this function put there always qualifies).

    ``append`` extends the artifact with that index (its parts added, ``last_chunk`` taken
    over when given); without ``append`` the chunk replaces it. A chunk for a new index is
    added, and the list is kept sorted by index.
    """
    for position, existing in enumerate(artifacts):
        if existing.index != chunk.index:
            continue
        if chunk.append:
            existing.parts = _extended(existing.parts, chunk.parts)
            if chunk.last_chunk is not None:
                existing.last_chunk = chunk.last_chunk
        else:
            artifacts[position] = _settled(chunk)
        break
    else:
        artifacts.append(_settled(chunk))
    artifacts.sort(key=lambda artifact: artifact.index)


class ArtifactFold:
    """``merge_artifact`` of chunk after chunk, in linear time and with the memory of the text only.

    Merging each chunk at once copies the whole text so far at every chunk: a stream of tiny
    chunks within a size limit would hold the event loop for seconds. Here a run of appends
    to one artifact is kept (plain text as its strings) and added when ``artifacts`` is read,
    each run of text joined once. ``artifacts`` is the list given, folded in place.
    """

    def __init__(self, artifacts: list[Artifact] | None = None) -> None:
        self._artifacts = artifacts if artifacts is not None else []
        self._index: int | None = None  # the artifact the appends kept extend
        self._kept: list[str | Part] = []
        self._last_chunk: bool | None = None

    def add(self, chunk: Artifact) -> None:
        if chunk.append and chunk.index == self._index:
            parts = chunk.parts
            if len(parts) == 1 and _plain_text(parts[0]):  # a chunk of text, most often: no generator
                self._kept.append(parts[0].text)  # type: ignore[union-attr]
            else:
                self._kept.extend(part.text if _plain_text(part) else part for part in parts)  # type: ignore[union-attr]
            if chunk.last_chunk is not None:
                self._last_chunk = chunk.last_chunk
            return
        self._add_kept()
        merge_artifact(self._artifacts, chunk)
        self._index = chunk.index

    def add_text(self, index: int, append: bool | None, text: str) -> None:
        """``add`` of an artifact of one plain text part, given by its fields (a relayed chunk's): the model is
        made only when the text does not extend the artifact the appends kept extend."""
        if append and index == self._index:
            self._kept.append(text)
            return
        self.add(Artifact(parts=[TextPart(text=text)], index=index, append=append))

    @property
    def artifacts(self) -> list[Artifact]:
        """The artifacts so far (every chunk added)."""
        self._add_kept()
        return self._artifacts

    def _add_kept(self) -> None:
        if not self._kept and self._last_chunk is None:
            return
        existing = next(artifact for artifact in self._artifacts if artifact.index == self._index)
        existing.parts = _extended(existing.parts, self._kept)
        if self._last_chunk is not None:
            existing.last_chunk = self._last_chunk
        self._kept, self._last_chunk = [], None


def merge_artifacts(artifacts: list[Artifact], chunks: list[Artifact]) -> None:
    """``merge_artifact`` of each chunk in turn, through an ``ArtifactFold`` (linear in the text)."""
    fold = ArtifactFold(artifacts)
    for chunk in chunks:
        fold.add(chunk)
    fold.artifacts  # noqa: B018 - reading it adds what was kept


def merged_artifacts(chunks: list[Artifact]) -> list[Artifact]:
    """The artifacts a task holds after the stream ``chunks``, in that order."""
    artifacts: list[Artifact] = []
    merge_artifacts(artifacts, chunks)
    return artifacts


def join_text_parts(parts: list[Part]) -> list[Part]:
    """Adjacent plain text parts (no metadata) become one; other parts are kept as they are."""
    out: list[Part] = []
    for part in parts:
        previous = out[-1] if out else None
        if _plain_text(part) and previous is not None and _plain_text(previous):
            out[-1] = TextPart(text=previous.text + part.text)  # type: ignore[union-attr]
        else:
            out.append(part)
    return out


def _extended(parts: list[Part], more: Iterable[str | Part]) -> list[Part]:
    """``join_text_parts(parts + copies of more)`` for ``parts`` already joined, each run of text joined once.

    A str in ``more`` is the text of a plain text part.
    """
    out = list(parts)
    texts: list[str] = []  # a run of plain text that will end ``out``, joined when it ends
    # TextPart(text=...), not model_construct: validating one str costs less than model_construct does
    for part in more:
        if isinstance(part, str) or _plain_text(part):
            if not texts and out and _plain_text(out[-1]):
                texts.append(out.pop().text)  # type: ignore[union-attr]
            texts.append(part if isinstance(part, str) else part.text)  # type: ignore[union-attr]
            continue
        if texts:
            out.append(TextPart(text="".join(texts)))
            texts = []
        out.append(part.copied())
    if texts:
        out.append(TextPart(text="".join(texts)))
    return out


def _settled(chunk: Artifact) -> Artifact:
    """A copy of ``chunk`` to keep and extend: ``append`` unset, its parts copied and joined.

    A shallow copy with new parts and metadata, not ``copied()`` (a dump and a validation of
    the whole, for the first chunk of every send).
    """
    parts = [TextPart(text=part.text) if _plain_text(part) else part.copied() for part in chunk.parts]  # type: ignore[union-attr]
    metadata = copy.deepcopy(chunk.metadata) if chunk.metadata is not None else None
    return chunk.model_copy(update={"append": None, "parts": join_text_parts(parts), "metadata": metadata})


def _plain_text(part: Part) -> bool:
    return isinstance(part, TextPart) and part.metadata is None

"""Checking a fast path against the slow one: JSON bent out of its shape now and then, and a sequence of inputs
read both ways by two decoders that must end up alike."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from hypothesis import strategies as st

from protocol import ArtifactEvent, StreamEvent
from protocol.a2a import StreamDecoder
from protocol.a2a.text_updates import TextUpdate

T = TypeVar("T")

KEEP = st.sampled_from(["keep"] * 6 + ["drop", "replace"])
ADD = st.sampled_from([False] * 7 + [True])


def bent(draw: st.DrawFn, values: dict[str, Any], extra: list[str], anything: st.SearchStrategy[Any]) -> dict[str, Any]:
    """``values``, now and then one left out or replaced by ``anything``, and now and then a key of ``extra``."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        fate = draw(KEEP)
        if fate != "drop":
            out[key] = value if fate == "keep" else draw(anything)
    for key in extra:
        if draw(ADD):
            out[key] = draw(anything)
    return out


def read_alike(
    inputs: Sequence[T],
    slow: Callable[[StreamDecoder, T], list[StreamEvent] | None],
    fast: Callable[[T], TextUpdate | None],
) -> tuple[StreamDecoder, StreamDecoder]:
    """Read ``inputs`` with ``slow`` (None: refused) on one decoder and, where ``fast`` takes one, with
    ``decode_text`` on another: each read fast is the one ArtifactEvent of one text part ``slow`` reads. Returns
    (slow's decoder, fast's decoder), for their state to be compared after."""
    slow_decoder, fast_decoder = StreamDecoder(), StreamDecoder()
    for one in inputs:
        expected = slow(slow_decoder, one)
        update = fast(one)
        if update is None:
            assert slow(fast_decoder, one) == expected
            continue
        assert expected is not None and len(expected) == 1
        event = expected[0]
        assert isinstance(event, ArtifactEvent)
        seq, index = fast_decoder.decode_text(update)
        assert (seq, index, fast_decoder.task_id) == (event.seq, event.artifact.index, event.id)
        assert (update.cost_usd, update.append or None) == (event.cost_usd, event.artifact.append)
        assert [update.text] == [getattr(part, "text", None) for part in event.artifact.parts]
    assert (fast_decoder.task_id, fast_decoder.context_id) == (slow_decoder.task_id, slow_decoder.context_id)
    return slow_decoder, fast_decoder

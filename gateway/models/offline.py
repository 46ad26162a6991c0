"""A deterministic, no-network ChatModel so the demo and examples run without an API key.

It does what a small real model would do in a support swarm, by keyword overlap:

- It reads the last user message. Tools offered (domain tools and ``transfer_to_*``
  handoff tools alike) are scored by how many of the message's content words appear in
  the tool's name (2 points each) or description (1 point each); the best tool scoring at
  least ``min_score`` is called, ties going to the tool offered first.
- Arguments are filled from the message by the tool's JSON schema: ``*id`` strings from
  id-like tokens (``ORD-1234``, ``#1234``, ``A1B2``), numbers from numbers, a transfer's
  ``reason`` from the message, other required strings with the whole message. When a
  required argument cannot be filled it asks the user for it instead of calling.
- Once a tool has run for the current message (after the last handoff) it answers with a
  summary of the tool's result, so it never loops; a tool already called for this message
  is never offered again.
- It does not hand back to an agent that handed off in this turn unless nothing else
  matches. The handing-off agent is known from the ``sender`` (or ``name``) field of the
  assistant message that made the transfer.
- With no matching tool it answers from a template built on the system prompt.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson

from gateway.models.base import (
    HANDOFF_SUCCESS,
    ChatMessage,
    ModelResponse,
    ModelSettings,
    ModelStreamItem,
    TokenUsage,
    ToolCall,
    ToolSpec,
    parse_transfer_description,
    replay,
)
from protocol.handoff_names import TRANSFER_PREFIX, sanitize_agent_name

_WORD = re.compile(r"[a-z0-9]+")
_TRANSFER_BOILERPLATE = frozenset({"transfer", "hand", "off", "dialogue", "target", "agent", "specialty"})
_STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "i",
        "me",
        "my",
        "mine",
        "myself",
        "you",
        "your",
        "yours",
        "we",
        "our",
        "us",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "to",
        "of",
        "for",
        "and",
        "or",
        "but",
        "if",
        "in",
        "on",
        "at",
        "by",
        "with",
        "from",
        "as",
        "into",
        "onto",
        "about",
        "over",
        "than",
        "then",
        "please",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "do",
        "does",
        "did",
        "doing",
        "done",
        "have",
        "has",
        "had",
        "get",
        "got",
        "want",
        "need",
        "like",
        "help",
        "hi",
        "hello",
        "hey",
        "thanks",
        "thank",
        "what",
        "which",
        "who",
        "whom",
        "how",
        "when",
        "where",
        "why",
        "there",
        "here",
        "some",
        "any",
        "all",
        "just",
        "also",
        "so",
        "very",
        "really",
        "too",
        "ok",
        "okay",
        "im",
        "ive",
        "id",
        "dont",
        "cant",
        "wont",
    ]
)
_HASH_ID = re.compile(r"#([A-Za-z0-9][\w-]*)")
_PREFIXED_ID = re.compile(r"\b[A-Za-z]{1,10}[-_]\d[\w-]*")
_MIXED_ID = re.compile(r"\b[A-Za-z][A-Za-z0-9]*\d[A-Za-z0-9]*\b")
_LONG_NUMBER = re.compile(r"\b\d{3,}\b")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_YES_WORDS = frozenset({"yes", "confirm", "confirmed", "true", "sure"})
_MAX_RESULT_CHARS = 500
_MAX_REASON_CHARS = 100


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    text: str

    def overlaps(self, other: _Span) -> bool:
        return self.start < other.end and other.start < self.end


class OfflineModel:
    """Keyword-routing stand-in for a real model: same input, same output, no network.

    It reports usage as a provider would, counting words as tokens (``counted_usage``).
    """

    system = "offline"
    model = "offline"

    def __init__(self, *, min_score: float = 1.0) -> None:
        self.min_score = min_score

    async def complete(
        self, messages: list[ChatMessage], tools: list[ToolSpec], settings: ModelSettings | None = None
    ) -> ModelResponse:
        return self.respond(messages, _allowed(tools, settings))

    def stream(
        self, messages: list[ChatMessage], tools: list[ToolSpec], settings: ModelSettings | None = None
    ) -> AsyncIterator[ModelStreamItem]:
        return replay(self.respond(messages, _allowed(tools, settings)))

    def respond(self, messages: list[ChatMessage], tools: list[ToolSpec]) -> ModelResponse:
        """The whole decision, synchronous: answer, ask, or call one tool; with its usage counted."""
        response = self._decide(messages, tools)
        return dataclasses.replace(response, usage=counted_usage(messages, response))

    def _decide(self, messages: list[ChatMessage], tools: list[ToolSpec]) -> ModelResponse:
        system = next((_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer")), "")
        user_index = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"), None)
        if user_index is None:
            return ModelResponse(content=f"{_intro(system)} How can I help?")
        user_text = _text(messages[user_index].get("content")).strip()
        turn = messages[user_index + 1 :]
        calls = _calls_by_id(turn)
        result = _last_result_since_handoff(turn, calls)
        if result is not None:
            return ModelResponse(content=_summarize(result))
        called = set(calls.values())
        sources = _handoff_sources(turn)
        available = [t for t in tools if t.name not in called]
        stems = set(content_stems(user_text))
        forward = [t for t in available if not _hands_back(t, sources)]
        choice = self._best(forward, stems) or self._best([t for t in available if t not in forward], stems)
        if choice is None:
            return ModelResponse(content=_template_answer(system, user_text, has_tools=bool(tools)))
        arguments, missing = _fill_arguments(choice, user_text)
        if missing:
            return ModelResponse(content=_ask_for(choice, missing))
        call_id = "call_" + hashlib.sha256(orjson.dumps([len(messages), user_text, choice.name])).hexdigest()[:20]
        return ModelResponse(tool_calls=[ToolCall(id=call_id, name=choice.name, arguments=arguments)])

    def _best(self, tools: list[ToolSpec], stems: set[str]) -> ToolSpec | None:
        best: ToolSpec | None = None
        best_score = 0.0
        for spec in tools:
            score = _score(spec, stems)
            if score >= self.min_score and score > best_score:
                best, best_score = spec, score
        return best


def _allowed(tools: list[ToolSpec], settings: ModelSettings | None) -> list[ToolSpec]:
    """``tool_choice``: ``none`` offers no tool, a tool's name only that one; anything else all of them."""
    choice = settings.tool_choice if settings is not None else None
    if choice == "none":
        return []
    if isinstance(choice, str) and any(t.name == choice for t in tools):
        return [t for t in tools if t.name == choice]
    return tools


def _score(spec: ToolSpec, stems: set[str]) -> float:
    name_words, description_words = _tool_words(spec)
    name_hits = stems & set(content_stems(name_words))
    description_hits = (stems & set(content_stems(description_words))) - name_hits
    return 2.0 * len(name_hits) + len(description_hits)


def _tool_words(spec: ToolSpec) -> tuple[str, str]:
    """Name and description text to match; a handoff tool contributes its target and specialty only."""
    if not spec.name.startswith(TRANSFER_PREFIX):
        return spec.name, spec.description
    target = spec.name.removeprefix(TRANSFER_PREFIX)
    parsed = parse_transfer_description(spec.description)
    if parsed is not None:
        return f"{target} {parsed[0]}", parsed[1]
    words = [w for w in _WORD.findall(spec.description.lower()) if w not in _TRANSFER_BOILERPLATE]
    return target, " ".join(words)


def content_stems(text: str) -> list[str]:
    """The words of ``text`` that carry meaning, lower-cased and crudely stemmed (stop words dropped)."""
    return [_stem(w) for w in _WORD.findall(text.lower().replace("_", " ")) if w not in _STOP_WORDS]


def _stem(word: str) -> str:
    """A crude suffix stripper: enough that refunds/refunded/refunding and charge/charges meet."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 5 and word.endswith("ing"):
        word = _undouble(word[:-3])
    elif len(word) > 4 and word.endswith("ed"):
        word = _undouble(word[:-2])
    elif len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes", "zes")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    return word


def _undouble(word: str) -> str:
    if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "lsz":
        return word[:-1]
    return word


def _calls_by_id(turn: list[ChatMessage]) -> dict[str, str]:
    """Tool-call id -> tool name for every call made since the user spoke."""
    calls: dict[str, str] = {}
    for message in turn:
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            calls[call.get("id") or ""] = function.get("name") or ""
    return calls


def _last_result_since_handoff(turn: list[ChatMessage], calls: dict[str, str]) -> ChatMessage | None:
    """The last domain-tool result after the last transfer; a new agent starts with none.

    A transfer is a ``transfer_to_*`` call or any result the runner marked HANDOFF_SUCCESS
    (a domain tool may return an agent).
    """
    result: ChatMessage | None = None
    for message in turn:
        if message.get("role") != "tool":
            continue
        name = message.get("name") or calls.get(message.get("tool_call_id") or "", "")
        if name.startswith(TRANSFER_PREFIX) or HANDOFF_SUCCESS in _text(message.get("content"))[:80]:
            result = None
        else:
            result = {**message, "name": name}
    return result


def _handoff_sources(turn: list[ChatMessage]) -> set[str]:
    """Agents (sanitized names) that handed the conversation on during this turn.

    The runner marks assistant messages with the speaking agent in ``sender``; the
    OpenAI ``name`` field is read too.
    """
    sources: set[str] = set()
    for message in turn:
        names = [(c.get("function") or {}).get("name") or "" for c in message.get("tool_calls") or []]
        speaker = message.get("sender") or message.get("name")
        if speaker and any(n.startswith(TRANSFER_PREFIX) for n in names):
            sources.add(sanitize_agent_name(str(speaker)))
    return sources


def _hands_back(spec: ToolSpec, sources: set[str]) -> bool:
    if not spec.name.startswith(TRANSFER_PREFIX):
        return False
    parsed = parse_transfer_description(spec.description)
    names = {spec.name.removeprefix(TRANSFER_PREFIX)} | ({sanitize_agent_name(parsed[0])} if parsed else set())
    return bool(names & sources)


def _fill_arguments(spec: ToolSpec, text: str) -> tuple[dict[str, Any], list[str]]:
    """Arguments taken from the message by schema; returns them and the required ones it could not fill."""
    properties: dict[str, Any] = (spec.parameters or {}).get("properties") or {}
    required = list((spec.parameters or {}).get("required") or [])
    ids = _id_spans(text)
    numbers = [n for n in _number_spans(text) if not any(n.overlaps(i) for i in ids if not i.text.isdigit())]
    arguments: dict[str, Any] = {}
    for name, schema in properties.items():
        kind = _json_type(schema)
        if _is_id_name(name) and kind in ("string", "integer") and ids:
            span = _pick_id(name, ids, text)
            ids.remove(span)
            numbers = [n for n in numbers if not n.overlaps(span)]
            value = span.text.lstrip("#")
            if kind == "string":
                arguments[name] = value
            elif value.isdigit():
                arguments[name] = int(value)
    is_transfer = spec.name.startswith(TRANSFER_PREFIX)
    words = set(content_stems(text))
    for name, schema in properties.items():
        if name in arguments:
            continue
        kind = _json_type(schema)
        if is_transfer and name == "reason":
            arguments[name] = _shorten(text, _MAX_REASON_CHARS)
        elif "enum" in schema:
            chosen = next((v for v in schema["enum"] if isinstance(v, str) and set(content_stems(v)) & words), None)
            if chosen is not None:
                arguments[name] = chosen
        elif kind in ("integer", "number"):
            number = _take_number(numbers, integer=kind == "integer")
            if number is not None:
                arguments[name] = number
        elif name in required:
            filler = {"string": text, "boolean": bool(words & _YES_WORDS), "array": [], "object": {}}
            if kind in filler:
                arguments[name] = filler[kind]
    return arguments, [name for name in required if name not in arguments]


def _json_type(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None:
        for option in schema.get("anyOf") or schema.get("oneOf") or []:
            if isinstance(option, dict) and option.get("type") not in (None, "null"):
                return _json_type(option)
    return kind if isinstance(kind, str) else ""


def _is_id_name(name: str) -> bool:
    return name.lower().endswith("id")


def _pick_id(name: str, ids: list[_Span], text: str) -> _Span:
    """The id right after the parameter's own word ("order 5521" for order_id), else the most id-like one."""
    entity = set(content_stems(re.sub(r"(?i)_?id$", "", name))) - {"id"}
    for span in ids:
        before = content_stems(text[max(0, span.start - 24) : span.start])[-2:]
        if entity & set(before):
            return span
    return ids[0]


def _id_spans(text: str) -> list[_Span]:
    """Id-looking tokens, most id-like first: ``#1234``, ``ORD-1234``, ``A1B2``, then bare long numbers."""
    spans: list[_Span] = []
    for pattern in (_HASH_ID, _PREFIXED_ID, _MIXED_ID, _LONG_NUMBER):
        for match in pattern.finditer(text):
            span = _Span(match.start(), match.end(), match.group(0))
            if not any(span.overlaps(s) for s in spans):
                spans.append(span)
    return spans


def _number_spans(text: str) -> list[_Span]:
    return [_Span(m.start(), m.end(), m.group(0)) for m in _NUMBER.finditer(text)]


def _take_number(numbers: list[_Span], *, integer: bool) -> int | float | None:
    for span in numbers:
        value = float(span.text)
        if integer and not value.is_integer():
            continue
        numbers.remove(span)
        return int(value) if integer else value
    return None


def _summarize(result: ChatMessage) -> str:
    text = _pretty(_text(result.get("content")).strip())
    if not text:
        return "Done."
    if text.lower().startswith(("error", "sorry")) or "error:" in text.lower()[:40]:
        return f"Sorry, that did not work: {_sentence(text)}"
    return f"Done: {_sentence(text)}"


def _pretty(text: str) -> str:
    """A tool result for people: JSON objects become ``key: value`` pairs."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return _shorten(text, _MAX_RESULT_CHARS)
    if isinstance(value, dict):
        if set(value) == {"error"}:
            return f"error: {value['error']}"
        rendered = "; ".join(f"{_human(str(k))}: {_scalar(v)}" for k, v in value.items())
    elif isinstance(value, list):
        rendered = ", ".join(_scalar(v) for v in value)
    else:
        rendered = _scalar(value)
    return _shorten(rendered, _MAX_RESULT_CHARS)


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _template_answer(system: str, user_text: str, *, has_tools: bool) -> str:
    quoted = _shorten(user_text, 120)
    if has_tools:
        return f'{_intro(system)} You said: "{quoted}". None of my tools fits that; could you tell me more?'
    return f'{_intro(system)} You said: "{quoted}".'


def _ask_for(spec: ToolSpec, missing: list[str]) -> str:
    wanted = " and ".join(_human(name) for name in missing)
    return f"I can {_human(spec.name)} for you, but I need the {wanted}. Could you tell me?"


def _intro(system: str) -> str:
    """The agent introduces itself from the first sentence of its system prompt."""
    first = re.split(r"(?<=[.!?])\s|\n", system.strip(), maxsplit=1)[0].strip().rstrip(".!?")
    if not first:
        return "Hello."
    match = re.match(r"(?i)^you(?: are|'re)\s+(.*)$", first)
    if match:
        rest = re.sub(r"(?i)\byour\b", "my", match.group(1))
        return f"Hello, I am {rest}."
    return f"Hello. My brief: {first[0].lower()}{first[1:]}."


def _human(name: str) -> str:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").replace("-", " ")
    return " ".join(spaced.lower().split())


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else f"{text}."


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[:limit].rsplit(" ", 1)[0].rstrip(",;:") + "..."


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text") or "" for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


_TOKEN = re.compile(r"\S+")


def counted_usage(messages: list[ChatMessage], response: ModelResponse) -> TokenUsage:
    """Words as tokens: the prompt's message texts, the response's text and tool arguments."""
    prompt = sum(len(_TOKEN.findall(_text(m.get("content")))) for m in messages)
    arguments = " ".join(orjson.dumps(c.arguments).decode() for c in response.tool_calls)
    completion = len(_TOKEN.findall(response.content)) + len(_TOKEN.findall(arguments)) + len(response.tool_calls)
    return TokenUsage(prompt_tokens=prompt, completion_tokens=completion)

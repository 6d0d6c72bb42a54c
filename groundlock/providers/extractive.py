"""``ExtractiveChatModel``: a deterministic, offline chat model that answers from evidence.

It reads the evidence section of groundlock's prompt, splits each entry's text into
sentences exactly as the validator does, scores every sentence by how many of the
question's content words it contains, and answers with the best few sentences, quoted
verbatim in evidence order, each on its own line and followed by its entry's anchor. When
no sentence is relevant enough — or there is no evidence section at all — it answers with
the exact refusal text. It never adds a word of its own.

That makes it the default model of the quick start, the CLI and the tests: the whole
pipeline runs with no API key and no network, and its answers are ones the validator can
accept. It is a real ``BaseChatModel`` (invoke, stream, batch, async, usage metadata, stop
sequences, an output token cap) and passes langchain-tests' standard suites.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, Field, field_validator
from typing_extensions import override

from groundlock.citations.bracket_c import scan_anchors
from groundlock.core.firewall.injection import addresses_the_model, instruction_parts
from groundlock.core.firewall.rules.unsafe_output import unsafe_in
from groundlock.policies.ruleset import DEFAULT_RULESET, Ruleset, load_ruleset
from groundlock.text.tokens import get_token_counter

__all__ = ["DEFAULT_REFUSAL", "ExtractiveChatModel", "extract_answer"]

DEFAULT_REFUSAL = (
    "NO_EVIDENCE: The provided evidence does not contain sufficient information to answer "
    "this question."
)
"""The refusal string frozen by spec ``001`` P2.1."""

_ENTRY_RE = re.compile(r"^\[([^\]\n]+)\][^\n]*\n([^\n]+)$", re.MULTILINE)
"""An evidence entry: a header line that opens with the entry's marker in square brackets
(``[C0 | chunk_id=...]``, ``[IPC_420_0] source=...``, ``[CIT-01] source=...``,
``[Source: manual.pdf, p.14]``), then its one line of text."""
_EVIDENCE_RE = re.compile(r"^<evidence>\n(.*?)^</evidence>$", re.MULTILINE | re.DOTALL)
_QUESTION_RE = re.compile(r"^<question>\n(.*?)\n</question>$", re.MULTILINE | re.DOTALL)
_WORD_RE = re.compile(r"[^\W_]+")
_C_MARKER_RE = re.compile(r"C\d+")
# Sentences carrying neutralised prompt syntax are data about the prompt, not answers.
_STRUCTURAL_RE = re.compile(r"chunk_id\s*=|knowledge_id\s*=|&lt;|&gt;")
_STOPWORDS = frozenset(
    "a an and any are as at be been by can could did do does for from had has have how if in "
    "into is it its may might must not of on or shall should so than that the their then "
    "there these this those to was were what when where which while who whom why will with "
    "would you your".split()
)
_SUFFIXES = ("ing", "ed", "es", "s", "e")  # replaced, replaces, replace -> replac


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _terms(text: str) -> set[str]:
    """Content words, crudely stemmed: what a sentence must share with the question."""
    return {
        _stem(word)
        for word in _WORD_RE.findall(text.casefold())
        if word not in _STOPWORDS and (len(word) >= 3 or word.isdigit())
    }


def extract_answer(
    prompt_text: str,
    refusal: str,
    max_sentences: int = 3,
    ruleset: Ruleset | None = None,
) -> str:
    r"""The extractive answer to a groundlock user message (or the refusal).

    Evidence is split into sentences, and instructions to the model are recognised, as the
    firewall ``ruleset`` does (by default the default ruleset's), so every quote is one the
    firewall can accept.

    >>> prompt = ("<evidence>\n[C0 | chunk_id=a | knowledge_id=a | source=m]\n"
    ...           "Replace the filter every 500 hours. Paint the housing blue.\n\n"
    ...           "</evidence>\n<question>\nWhen is the filter replaced?\n</question>\n")
    >>> extract_answer(prompt, "NO_EVIDENCE")
    'Replace the filter every 500 hours. [C0]'
    >>> unrelated = prompt.replace("When is the filter replaced?", "Who built it?")
    >>> extract_answer(unrelated, "NO_EVIDENCE")
    'NO_EVIDENCE'
    """
    ruleset = ruleset or load_ruleset(DEFAULT_RULESET)
    evidence = _EVIDENCE_RE.search(prompt_text)
    question = _QUESTION_RE.search(prompt_text)
    if evidence is None:
        return refusal
    wanted = _terms(question.group(1) if question else prompt_text)
    if not wanted:
        return refusal
    needed = min(3, max(1, math.ceil(len(wanted) / 4)))
    entries = [
        (header.split(" | ", 1)[0], text) for header, text in _ENTRY_RE.findall(evidence.group(1))
    ]
    names = _marker_names(marker for marker, _ in entries)
    candidates = [
        (marker, sentence, wanted & _terms(sentence))
        for marker, text in entries
        for sentence, instructs in instruction_parts(text, ruleset)
        if not instructs and _quotable(sentence, ruleset, names)
    ]
    # A question word found in every sentence tells them apart less than a rare one does.
    frequency = Counter(term for _, _, shared in candidates for term in shared)
    scored = [
        (-sum(math.log(1 + len(candidates) / frequency[t]) for t in shared), position, anchor, s)
        for position, (anchor, s, shared) in enumerate(candidates)
        if len(shared) >= needed
    ]
    if not scored:
        return refusal
    best = sorted(scored)[:max_sentences]
    return "\n".join(f"{s} [{marker}]" for _, _, marker, s in sorted(best, key=lambda i: i[1]))


def _marker_names(markers: Iterable[str]) -> tuple[str, ...]:
    """What a quote must not mention, to stay clear of the markers.

    Each marker's text, and for ``[Source: file, p.N]`` the file name alone (``C0`` style
    markers need nothing).
    """
    names: list[str] = []
    for marker in markers:
        if _C_MARKER_RE.fullmatch(marker):
            continue
        names.append(marker.casefold())
        if marker.startswith("Source: "):
            names.append(marker.removeprefix("Source: ").rsplit(", p.", 1)[0].casefold())
    return tuple(names)


def _quotable(sentence: str, ruleset: Ruleset, names: tuple[str, ...] = ()) -> bool:
    """Whether a quote of ``sentence`` could pass the validator.

    It must hold no instruction to the model, no prompt syntax, nothing marker-shaped (a
    neutralised forgery such as ``(C3)`` or ``(CIT-02)``, the text of a marker in use), and
    no links, markup or hidden text.
    """
    if _STRUCTURAL_RE.search(sentence) or unsafe_in(sentence, ruleset) is not None:
        return False
    if addresses_the_model(sentence, ruleset):
        return False
    scan = scan_anchors(sentence)
    if scan.anchors or scan.malformed:
        return False
    folded = sentence.casefold()
    if any(name in folded for name in names):
        return False
    preset = ruleset.grammar.bound(()).scan(sentence)
    return not (preset.anchors or preset.malformed)


class ExtractiveChatModel(BaseChatModel):
    """A deterministic chat model that quotes the prompt's evidence with its anchors.

    >>> from langchain_core.messages import HumanMessage
    >>> ExtractiveChatModel().invoke([HumanMessage("Hello")]).text[:12]
    'NO_EVIDENCE:'
    """

    model_name: str = Field(default="groundlock-extractive-v1", alias="model")
    """Reported as the answering model, so drift checks and audit rows name it."""
    temperature: float = 0.0
    """Always 0.0: the model is deterministic, and a request for sampling is refused."""
    max_tokens: int | None = None
    """Output cap in tokens (cl100k_base); a longer answer is cut and reports ``length``."""
    stop: list[str] | None = None
    """Stop sequences: the answer ends before the first one."""
    max_sentences: int = 3
    """Most evidence sentences quoted in one answer."""
    refusal_text: str = DEFAULT_REFUSAL
    """The exact text answered when the evidence does not answer the question."""
    firewall_ruleset: str = DEFAULT_RULESET
    """The firewall ruleset whose segmentation and injection vocabulary it quotes by, so that
    its answers pass the firewall that judges them (:func:`grounded_answer_chain` sets the
    policy's)."""

    model_config = ConfigDict(populate_by_name=True)

    @field_validator("temperature")
    @classmethod
    def _deterministic(cls, value: float) -> float:
        if value != 0.0:
            raise ValueError("ExtractiveChatModel is deterministic; temperature must be 0.0")
        return value

    @property
    @override
    def _llm_type(self) -> str:
        return "groundlock-extractive"

    @property
    @override
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "max_tokens": self.max_tokens,
            "max_sentences": self.max_sentences,
        }

    def _answer(
        self,
        messages: Sequence[BaseMessage],
        stop: list[str] | None,
        call_options: dict[str, Any],
    ) -> AIMessage:
        human = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        text = extract_answer(
            str(human.text) if human is not None else "",
            self.refusal_text,
            self.max_sentences,
            load_ruleset(self.firewall_ruleset),
        )
        finish = "stop"
        for marker in (stop or []) + (self.stop or []):
            if marker and marker in text:
                text = text[: text.index(marker)]
        counter = get_token_counter("cl100k_base")
        cap = call_options.get("max_tokens", self.max_tokens)
        if cap is not None and counter.count(text) > cap:
            text, finish = counter.prefix_within(text, cap), "length"
        prompt_tokens = sum(counter.count(str(m.text)) for m in messages)
        output_tokens = counter.count(text)
        model_name = call_options.get("model", self.model_name)
        return AIMessage(
            content=text,
            response_metadata={
                "model_name": model_name,
                "finish_reason": finish,
                "model_provider": "groundlock",
            },
            usage_metadata=UsageMetadata(
                input_tokens=prompt_tokens,
                output_tokens=output_tokens,
                total_tokens=prompt_tokens + output_tokens,
            ),
        )

    @override
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._answer(messages, stop, kwargs)
        return ChatResult(generations=[ChatGeneration(message=message)])

    @override
    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in self._chunks(self._answer(messages, stop, kwargs)):
            if run_manager is not None:
                run_manager.on_llm_new_token(str(chunk.message.content), chunk=chunk)
            yield chunk

    @override
    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._chunks(self._answer(messages, stop, kwargs)):
            if run_manager is not None:
                await run_manager.on_llm_new_token(str(chunk.message.content), chunk=chunk)
            yield chunk

    @staticmethod
    def _chunks(message: AIMessage) -> Iterator[ChatGenerationChunk]:
        """One chunk per line; usage and the finish reason ride on the last chunk only."""
        text = str(message.content)
        pieces = re.findall(r"[^\n]*\n|[^\n]+$", text) or [""]
        for index, piece in enumerate(pieces):
            last = index == len(pieces) - 1
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content=piece,
                    response_metadata=message.response_metadata if last else {},
                    usage_metadata=message.usage_metadata if last else None,
                    chunk_position="last" if last else None,
                )
            )

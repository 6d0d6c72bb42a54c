"""Where a sentence's values and names can be found.

In the entries it cites, the question, the other entries, or only in an instruction
injected into the evidence.

The substantive rules share this view of one sentence through its
:class:`~groundlock.core.firewall.reading.SentenceReading`, so each lookup is made once:
``unsupported_value`` and ``unsupported_entity`` object to what is found nowhere,
``misattributed_citation`` to what is found only in an entry the sentence does not cite,
``obeyed_instruction`` to what is found only in an instruction to the model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, NamedTuple, TypeVar

from groundlock._caches import memoized
from groundlock.contracts.assembly import SelectedEvidence
from groundlock.core.firewall.entities import (
    Name,
    expansion_of,
    initials_match,
    names_in,
    written_otherwise,
)
from groundlock.core.firewall.facts import Facts, facts, prefixes_of, question_facts, vocabulary
from groundlock.core.firewall.lexicon import words
from groundlock.core.firewall.parsed import LineKind, Sentence
from groundlock.core.firewall.rule import Context
from groundlock.core.firewall.values import Value, ValueIndex, values_in
from groundlock.policies.ruleset import Ruleset
from groundlock.text.fold import caseless

__all__ = [
    "Located",
    "RequestEvidence",
    "Source",
    "SupportView",
    "locate_names",
    "locate_values",
    "request_evidence",
    "support_view",
]

_MAX_KEY_CHARS = 4096
"""Longer texts are judged uncached: a bound on what the caches below can hold."""
_T = TypeVar("_T")


class Source(StrEnum):
    """Where a value or a name was found first, in this order of preference."""

    CITED = "cited"
    QUESTION = "question"
    OTHER_ENTRY = "other_entry"
    INSTRUCTION = "instruction"
    NOWHERE = "nowhere"


class Located(NamedTuple, Generic[_T]):
    """A value or a name of a sentence, with where it was found first."""

    item: _T
    source: Source
    anchor: str | None
    """The entry it was found in, when that is an entry the sentence does not cite."""


@dataclass(frozen=True)
class SupportView:
    """The evidence one sentence may draw on, by source."""

    cited: tuple[Facts, ...]
    question: Facts
    others: tuple[tuple[str, Facts], ...]
    """The entries the sentence does not cite, with their anchors."""
    everything: tuple[Facts, ...]
    """Every entry of the request."""

    def value_source(self, value: Value) -> tuple[Source, str | None]:
        """Where ``value`` is found (and, for another entry, its anchor)."""
        if any(f.values.supports(value) for f in self.cited) or self.question.values.supports(
            value
        ):
            return Source.CITED, None
        for anchor, other in self.others:
            if other.values.supports(value):
                return Source.OTHER_ENTRY, anchor
        if any(f.instruction_values.supports(value) for f in self.everything):
            return Source.INSTRUCTION, None
        return Source.NOWHERE, None

    def word_source(self, forms: Iterable[str]) -> tuple[Source, str | None]:
        """Where a word is found, as any of its caseless ``forms`` (word or stem)."""
        wanted = set(forms)
        if any(wanted & f.words for f in self.cited) or wanted & self.question.words:
            return Source.CITED, None
        for anchor, other in self.others:
            if wanted & other.words:
                return Source.OTHER_ENTRY, anchor
        if any(wanted & f.instruction_words for f in self.everything):
            return Source.INSTRUCTION, None
        return Source.NOWHERE, None

    def cited_values(self) -> ValueIndex:
        """The values of the cited entries and the question, together."""
        merged = ValueIndex()
        for part in (*self.cited, self.question):
            merged.update(part.values)
        return merged


def _entry(entry: SelectedEvidence, ctx: Context) -> tuple[Facts, Facts]:
    """An entry's text, and what its header shows the model.

    Its source reference and knowledge id (``Service Bulletin SB-2025-017``) are citable
    names too.
    """
    label = f"{entry.source_reference or ''} {entry.knowledge_id}"
    return facts(entry.sanitized_text, ctx.ruleset), question_facts(label, ctx.ruleset)


@dataclass(frozen=True)
class RequestEvidence:
    """The facts of every entry of one request and of its question, looked up once.

    Every sentence's :class:`SupportView` is cut from it: looking each entry up again per
    sentence (twice: as another entry and among all of them) cost 60 cache lookups an
    answer of 5 sentences over 20 entries (issue 29). It depends only on the request, never
    on the answer.
    """

    parts: Mapping[str, tuple[Facts, Facts]]
    """Each entry's anchor -> its text's facts and its header's, in the request's order."""
    question: Facts
    question_prefixes: frozenset[str]
    """The question's first five letters of its long words (``loose_words``)."""
    everything: tuple[Facts, ...]
    """Every entry's two parts, in the request's order."""


def request_evidence(ctx: Context) -> RequestEvidence:
    """The facts of ``ctx``'s entries and question (what every sentence's view is cut from)."""
    parts = {anchor: _entry(entry, ctx) for anchor, entry in ctx.entries.items()}
    question = question_facts(ctx.question, ctx.ruleset)
    return RequestEvidence(
        parts=parts,
        question=question,
        question_prefixes=prefixes_of(question.statements),
        everything=tuple(part for pair in parts.values() for part in pair),
    )


def support_view(
    sentence: Sentence,
    answer_cited: tuple[SelectedEvidence, ...],
    evidence: RequestEvidence,
) -> SupportView:
    """The evidence ``sentence`` may draw on, by source.

    An uncited heading or label is read against ``answer_cited``, what the whole answer
    cites.
    """
    entries = sentence.cited or answer_cited
    cited = {e.anchor for e in entries}
    parts = evidence.parts
    return SupportView(
        cited=tuple(part for e in entries for part in parts[e.anchor]),
        question=evidence.question,
        others=tuple(
            (anchor, part) for anchor, pair in parts.items() if anchor not in cited for part in pair
        ),
        everything=evidence.everything,
    )


def locate_values(
    sentence: Sentence, view: SupportView, ruleset: Ruleset
) -> tuple[Located[Value], ...]:
    """Each value of ``sentence`` with where ``view`` finds it.

    ``name_variants``: an identifier that is a line of ``variants.lines`` (a formula,
    ``CO2``) is found where the cited entries or the question write the line's other
    spelling (``carbon dioxide``).
    """
    found = []
    texts: list[str] | None = None
    for value in values_in(sentence.text, vocabulary(ruleset)):
        source, anchor = view.value_source(value)
        if (
            source is not Source.CITED
            and value.kind == "identifier"
            and ruleset.has("name_variants")
        ):
            table = ruleset.compiled("entities.variants", _variants)
            if texts is None:
                texts = [f.statements for f in view.cited] + [view.question.statements]
            if any(_written(other, texts) for other in table.get(_key(value.surface), ())):
                source, anchor = Source.CITED, None
        found.append(Located(value, source, anchor))
    return tuple(found)


def _connectors(ruleset: Ruleset) -> frozenset[str]:
    return frozenset(ruleset.entries("entities", "connectors"))


@memoized(4096, max_key_chars=_MAX_KEY_CHARS)
def _spelled_out(acronym: str, text: str, connectors: frozenset[str]) -> bool:
    return initials_match(acronym, text, connectors)


def _variants(ruleset: Ruleset) -> dict[str, frozenset[str]]:
    """Each spelling of ``variants.lines`` -> the other spellings of its line."""
    table: dict[str, set[str]] = {}
    for section in ruleset.files.get("variants", {}).values():
        for line in section:
            spellings = {" ".join(s.split()) for s in line.split("|") if s.strip()}
            for spelling in spellings:
                table.setdefault(spelling, set()).update(spellings - {spelling})
    return {k: frozenset(v) for k, v in table.items()}


_RUN_RE = re.compile(
    r"[A-Z][\w'\u2019.&-]*(?:\s+(?:(?:of|and|the|for|in|on|to|de|la|du|des|&)\s+)*"
    r"[A-Z][\w'\u2019.&-]*)*"
)
"""A run of capitalised words, small words between (``Federal Election Commission``,
``Food and Drug Administration``, ``New South Wales``)."""
_SMALL = frozenset("of and the for in on to de la du des &".split())
_UPPER_TOKEN_RE = re.compile(r"\b(?:[A-Z]\.){2,}|\b[A-Z][A-Za-z]?[A-Z]+s?\b|\b[A-Z]{2}\b")


def _key(spelling: str) -> str:
    """A spelling compared caseless, without full stops (``U.K.`` is ``uk``)."""
    return " ".join(caseless(spelling).replace(".", "").split())


@memoized(1024, max_key_chars=_MAX_KEY_CHARS)
def _abbreviations(text: str) -> frozenset[str]:
    """The abbreviations ``text`` writes in capitals (``FEC``, ``U.K.``, ``TX``), as keys."""
    return frozenset(_key(t) for t in _UPPER_TOKEN_RE.findall(text))


@memoized(1024, max_key_chars=_MAX_KEY_CHARS)
def _phrase_text(text: str) -> str:
    return f" {' '.join(words(text))} "


def _written(spelling: str, texts: list[str]) -> bool:
    """Whether a text writes ``spelling``.

    A short one as an abbreviation in capitals (``in`` is a word, ``IN`` Indiana), a longer
    one as a caseless phrase.
    """
    if len(spelling) <= 3 and " " not in spelling:
        return any(spelling in _abbreviations(t) for t in texts)
    return any(f" {spelling} " in _phrase_text(t) for t in texts)


def _named_otherwise(text: str, texts: list[str], ruleset: Ruleset) -> set[str]:
    """The words of ``text``'s capitalised runs that ``texts`` name another way.

    ``name_variants``: a run (or part of one) that is a spelling of a line of
    ``variants.lines`` whose other spelling they write (``Texas`` for ``TX``, ``TX`` for
    ``Texas``, ``Federal Election Commission`` for ``FEC``, ``Fe`` for ``iron``). Only the
    table's expansions: an expansion of an acronym the evidence only abbreviates is a claim
    the evidence cannot check (``001`` P2.2; ``Field Safety Notice`` for ``FSN`` may be
    another notice), while the table's are the one reading every reader knows.
    """
    table = ruleset.compiled("entities.variants", _variants)
    found: set[str] = set()
    for run in _RUN_RE.finditer(text):
        tokens = run.group().split()
        for start in range(len(tokens)):
            for end in range(start + 1, min(len(tokens), start + 6) + 1):
                span = tokens[start:end]
                if span[-1].lower() in _SMALL or span[0].lower() in _SMALL:
                    continue
                spelling = _key(" ".join(span))
                if any(_written(other, texts) for other in table.get(spelling, ())):
                    found.update(t.rstrip(".") for t in span)
    return found


def locate_names(
    sentence: Sentence, view: SupportView, ruleset: Ruleset
) -> tuple[Located[Name], ...]:
    """Each name of ``sentence`` with where ``view`` finds it.

    Headings and table header rows are labels: their capitalised words name nothing. An
    acronym is found where a text spells out its initials; a name where a text writes it
    otherwise (an abbreviation, a word of its root); an expansion written beside its
    acronym only where a text writes the expansion.
    """
    found: list[Located[Name]] = []
    if sentence.kind is not LineKind.TEXT:
        return ()
    connectors = ruleset.compiled("entities.connectors", _connectors)
    texts = [f.statements for f in view.cited] + [view.question.statements]
    otherwise: set[str] | None = None
    for name in names_in(sentence.text, ruleset):
        source, anchor = view.word_source(name.forms)
        abbreviated = len(name.written) <= 4 and f"{name.written}." in sentence.text
        if source is not Source.CITED and name.kind == "acronym":
            if any(_spelled_out(name.written, t, connectors) for t in texts):
                source, anchor = Source.CITED, None
        elif source is not Source.CITED and any(
            written_otherwise(
                name.written,
                t,
                abbreviated=abbreviated,
                transliterated=ruleset.has("name_variants"),
            )
            for t in texts
        ):
            source, anchor = Source.CITED, None
        if source is not Source.CITED and ruleset.has("name_variants"):
            if otherwise is None:
                otherwise = _named_otherwise(sentence.text, texts, ruleset)
            if name.written in otherwise:
                source, anchor = Source.CITED, None
        if found and source is Source.CITED and found[-1].item.before_name == name.written:
            # "Margot Robbie" where the evidence names Robbie: the first word is given the
            # benefit of the doubt (it may be a first name, or a word that opens the clause).
            found[-1] = Located(found[-1].item, Source.CITED, None)
        found.append(Located(name, source, anchor))
    for acronym, expansion in expansion_of(sentence.text):
        wanted = " ".join(words(expansion))
        if not any(wanted in " ".join(words(t)) for t in texts):
            name = Name(f"{expansion} ({acronym})", "expansion", frozenset())
            found.append(Located(name, Source.NOWHERE, None))
    return tuple(found)

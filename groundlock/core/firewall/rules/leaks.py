"""Metadata leaks and meta commentary.

An answer that shows the prompt's machinery or talks about its sources, its instructions
or itself instead of stating what the evidence says.

Ids, the word evidence and meta phrases are allowed where an entry the sentence cites
contains them: quoting is grounding.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar

from groundlock._caches import memoized
from groundlock.contracts.reasons import ReasonCode
from groundlock.core.firewall.lexicon import apostrophes, folded_id, one_search, plain, words
from groundlock.core.firewall.rule import Context, Finding
from groundlock.policies.ruleset import Ruleset
from groundlock.prompts.template import PromptTemplate
from groundlock.text.sanitize import FENCE_TAG_NAMES

if TYPE_CHECKING:
    from groundlock.core.firewall.reading import Reading, SentenceReading

__all__ = ["MetaCommentary", "MetadataLeak", "cited_contain"]

# The leak and meta patterns read a sentence folded (groundlock.text.fold: exactly what re.I
# sees), so they are written in lower case.
_HEADER_SYNTAX_RE = re.compile(
    r"\b(?:chunk_id|knowledge_id|faiss_id)\s*[=:]|\|\s*source\s*=|\[c\d+\s*\|"
)
_SECTION_SYNTAX_RE = re.compile(
    rf"<\s*/?\s*(?:{'|'.join(FENCE_TAG_NAMES)})\s*>|(?<!=)={{3,}}\s*user\s+message"
)
_EVIDENCE_WORD_RE = re.compile(r"\bevidence\b")
_EVIDENCE_PART_RE = re.compile(
    r"\bevidence\s+(?:entr(?:y|ies)|blocks?|headers?|ids?|chunks?|sections?|items?|rows?"
    r"|numbers?|no\b|#|c\d)"
)
"""``firewall_v3``'s ``evidence_word``: the word names the prompt's parts only here (``evidence
entry 2``, ``the evidence block``). A sentence about evidence (``no evidence links the drug
to the deaths``) and a frame pointing at it (blanked by ``frames``) leak nothing."""


def _reading(sentence: SentenceReading, ctx: Context) -> str:
    """The sentence as the leak and meta patterns read it: folded.

    From ``firewall_v2`` look-alike letters are made ASCII first (``\u0435vidence`` with a
    Cyrillic e). Read once a sentence and shared by both rules (``ctx`` is the sentence's).
    """
    return sentence.unmasked_folded


_SEPARATORS_RE = re.compile(r"[\W_]+")
_MAX_KEY_CHARS = 4096
"""Longer texts are compacted uncached: a bound on what the cache below can hold."""


@memoized(1024, max_key_chars=_MAX_KEY_CHARS)
def _without_separators(text: str) -> str:
    """An evidence text or an id with no separators: compacted once, not once a sentence."""
    return _SEPARATORS_RE.sub("", text)


def _spelled_apart(sentence: SentenceReading, compact_ids: tuple[str, ...], ctx: Context) -> bool:
    """From ``firewall_v2``: an id written with other separators, compared without any.

    ``amm 29 11 00 c004``, ``amm_29_11_00_c004``, non-breaking hyphens. ``compact_ids``:
    the request's ids long enough to tell (:func:`_compact_ids`), reduced once an answer.
    """
    if not compact_ids or not ctx.ruleset.entries("lookalikes"):
        return False
    compact = _SEPARATORS_RE.sub("", _reading(sentence, ctx).casefold())
    cited: list[str] | None = None
    for wanted in compact_ids:
        if wanted in compact:
            if cited is None:
                cited = [_without_separators(plain(e.sanitized_text)) for e in sentence.cited]
            if not any(wanted in text for text in cited):
                return True
    return False


def _compact_ids(ids: set[str]) -> tuple[str, ...]:
    """The request's ids without separators, those :func:`_spelled_apart` looks for.

    Six characters or more, with a digit. Reduced once an answer, not once a sentence.
    """
    found = (_without_separators(identifier) for identifier in ids)
    return tuple(w for w in found if len(w) >= 6 and any(c.isdigit() for c in w))


def cited_contain(sentence: SentenceReading, phrase: str) -> bool:
    """Whether an entry ``sentence`` cites contains ``phrase``, case and apostrophes aside."""
    wanted = plain(phrase)
    return any(wanted in plain(e.sanitized_text) for e in sentence.cited)


def _bounded_in(token: str, text: str, joining: str) -> bool:
    """Whether ``token`` occurs in ``text`` with no ``joining`` character on either side."""
    if token not in text:
        return False
    pattern = rf"(?<![{joining}]){re.escape(token)}(?![{joining}])"
    return re.search(pattern, text) is not None


@memoized(None)
def _template_ngrams(
    template: PromptTemplate, size: int
) -> tuple[frozenset[tuple[str, ...]], frozenset[str]]:
    """The template's word n-grams, and their first words (most words open none)."""
    grams: set[tuple[str, ...]] = set()
    for section in template.sections:
        for part in (section.before, section.after):
            said = words(part)
            grams.update(tuple(said[i : i + size]) for i in range(len(said) - size + 1))
    return frozenset(grams), frozenset(gram[0] for gram in grams)


class MetadataLeak:
    """Ids, header or section syntax, the prompt's own rules, or the word evidence.

    Chunk and knowledge ids and the word evidence pass where the cited entries contain them.
    """

    name: ClassVar[str] = "metadata_leak"
    reason: ClassVar[ReasonCode] = ReasonCode.METADATA_LEAK
    judges_exact_refusal: ClassVar[bool] = False

    def check(self, reading: Reading, ctx: Context) -> Iterator[Finding]:
        """The prompt's rules repeated first, then sentence by sentence."""
        size = int(ctx.ruleset.param("template_ngram_words"))
        grams, openers = _template_ngrams(ctx.policy.template, size)
        if ctx.ruleset.params.get("template_ngrams_without_markers"):
            # The presets' templates show a marker as an example: an answer citing a file of
            # that name repeats the template's words in its markers, not its instructions.
            said = [word for sentence in reading.sentences for word in sentence.words]
        else:
            said = words(reading.text)
        if any(
            said[i] in openers and tuple(said[i : i + size]) in grams
            for i in range(len(said) - size + 1)
        ):
            yield Finding(self.name, self.reason, "answer: repeats the prompt's own instructions")
        # Ids compare caseless on both sides; each id is reduced once, not once a sentence.
        # From firewall_v2 only chunk ids are internal: a knowledge id is the document's own
        # number, and every public citation carries it.
        public = bool(ctx.ruleset.entries("lookalikes"))
        ids = {
            folded_id(i)
            for e in ctx.entries.values()
            for i in ((e.chunk_id,) if public else (e.chunk_id, e.knowledge_id))
        }
        compact_ids = _compact_ids(ids)
        for s in reading.sentences:
            yield from self._sentence(s, ids, compact_ids, ctx)

    def _sentence(
        self, s: SentenceReading, ids: set[str], compact_ids: tuple[str, ...], ctx: Context
    ) -> Iterator[Finding]:
        where = f"answer: sentence {s.number}"
        folded = _reading(s, ctx)
        # (Header syntax holds "_id" or "|", section syntax "<" or "===": most sentences
        # hold none, and are not searched.)
        if ("_id" in folded or "|" in folded) and _HEADER_SYNTAX_RE.search(folded):
            yield Finding(self.name, self.reason, f"{where}: evidence header syntax", s.number)
        if ("<" in folded or "===" in folded) and _SECTION_SYNTAX_RE.search(folded):
            yield Finding(self.name, self.reason, f"{where}: prompt section syntax", s.number)
        caseless = folded.casefold()
        if any(_bounded_in(i, caseless, r"\w-") and not cited_contain(s, i) for i in ids) or (
            _spelled_apart(s, compact_ids, ctx)
        ):
            message = f"{where}: an internal chunk or knowledge id"
            yield Finding(self.name, self.reason, message, s.number)
        words_re = _EVIDENCE_PART_RE if ctx.ruleset.has("evidence_word") else _EVIDENCE_WORD_RE
        found = words_re.search(folded)
        if found and not cited_contain(s, found.group()):
            yield Finding(self.name, self.reason, f"{where}: the word evidence", s.number)


def meta_patterns(ruleset: Ruleset) -> tuple[tuple[re.Pattern[str], bool], ...]:
    """(pattern, whether it reads the folded sentence) of the ruleset's meta commentary.

    All read the folded sentence but the first-person pattern, which is case-sensitive: a
    capital ``I`` after a designation (``Stage I must``) is a numeral, and the look-behinds
    that say so are built from ``designations.words``.
    """
    folded = tuple((re.compile(apostrophes(p)), True) for p in ruleset.entries("meta"))
    designations = "".join(f"(?<!{d} I)" for d in ruleset.entries("designations"))
    verbs = "|".join(ruleset.entries("first_person", "verbs"))
    contractions = "|".join(f"{c}\\b" for c in ruleset.entries("first_person", "contractions"))
    first_person = rf"\bI{designations}(?:\s+(?:{verbs})\b|{contractions})"
    return (*folded, (re.compile(apostrophes(first_person)), False))


def any_meta(ruleset: Ruleset) -> re.Pattern[str]:
    """One alternation of the folded meta patterns: a sentence none of them matches is read once.

    Most sentences hold no meta phrase, and searching 38 patterns one by one was the
    firewall's largest cost (issue 29). The alternation matches exactly when one of its
    patterns does (:func:`~groundlock.core.firewall.lexicon.one_search`), so when it finds
    something the patterns are tried one by one as before: the verdict and its message are
    unchanged.
    """
    return one_search(apostrophes(p) for p in ruleset.entries("meta"))


_NAME_BEFORE_RE = re.compile(r"[A-Z][a-z]+\s+$")


def _first_person(pattern: re.Pattern[str], text: str, *, regnal: bool) -> re.Match[str] | None:
    """The first match of the first-person pattern in ``text``.

    With ``regnal_numerals`` (``firewall_v3``), not an ``I`` right after a capitalised word:
    ``Elizabeth I was crowned``, ``World War I was fought`` write a numeral.
    """
    for found in pattern.finditer(text):
        if regnal and _NAME_BEFORE_RE.search(text, 0, found.start()):
            continue
        return found
    return None


def _reasoning_tag(ruleset: Ruleset) -> re.Pattern[str]:
    return re.compile(rf"<\s*/?\s*(?:{'|'.join(ruleset.entries('reasoning_tags'))})\s*>")


_OUTSIDE_SECTIONS = ("frames", "clause_frames", "reputation", "naming")
_CLAUSE_START_RE = re.compile(r"(?:^|[,;:(\u2014\u2013]|\b(?:and|but|so|yet))[\s*_]*$")
"""What may stand before a ``clause_frames`` match: nothing, or a clause's punctuation or
conjunction (and the emphasis marks a model may open with). The rule reads it through
:func:`_opens_a_clause`, never over the whole text before a match."""
_FILLER_RE = re.compile(r"[\s*_]")
_CONJUNCTION_END_RE = re.compile(r"\b(?:and|but|so|yet)$")
_CLAUSE_PUNCTUATION = frozenset(",;:(\u2014\u2013")


def _opens_a_clause(folded: str, start: int) -> bool:
    r"""Whether :data:`_CLAUSE_START_RE` matches ``folded[:start]``, read from ``start`` back.

    Searching the whole head for it at every match made a sentence of n repeated clause
    frames cost n times its length (found by an adversarial review: 100 kB, 6 s). The
    pattern can only end in a run of its filler (``[\s*_]``) that reaches ``start``, after
    the start of the text, a clause's punctuation or a conjunction: the run is walked back
    (runs before distinct matches are disjoint, so all walks add up to the text's length)
    and what precedes it is read in a window of four characters, enough for ``\band``.
    """
    at = start
    while at > 0 and _FILLER_RE.match(folded, at - 1):
        at -= 1
    if at == 0 or folded[at - 1] in _CLAUSE_PUNCTUATION:
        return True
    return _CONJUNCTION_END_RE.search(folded[max(0, at - 4) : at]) is not None


def _outside_patterns(ruleset: Ruleset) -> tuple[tuple[re.Pattern[str], ...], ...]:
    """``outside_knowledge``'s frames, clause frames, reputation and naming forms, compiled."""
    return tuple(
        tuple(re.compile(apostrophes(p)) for p in ruleset.entries("outside", section))
        for section in _OUTSIDE_SECTIONS
    )


def _outside_any(ruleset: Ruleset) -> re.Pattern[str]:
    r"""One alternation of the forms read in the answer: most sentences hold none.

    Every form opens with ``\b``, so the alternation is tried only where a word starts
    (:func:`~groundlock.core.firewall.lexicon.one_search`); a clause frame's start is
    checked apart, on a match.
    """
    return one_search(
        apostrophes(p)
        for section in _OUTSIDE_SECTIONS[:3]
        for p in ruleset.entries("outside", section)
    )


_QUOTED_NAME_RE = re.compile(
    r"\s*(?:the\s+|an?\s+)?[\"\u201c\u2018]([^\"\u201d\u2019]{2,80})[\"\u201d\u2019]"
)
"""A name in quotation marks where a reputation form ends (``widely regarded as the "Father
of the Green Revolution"``): the evidence's own name for the thing when a cited entry quotes
it."""


def _claims_outside_knowledge(s: SentenceReading, folded: str, ctx: Context) -> bool:
    """``outside_knowledge``: a frame or reputation form the cited entries do not ground.

    A frame (``Based on general knowledge, ...``, ``Although the documents do not say so,
    ...``) passes only as a quote of a cited entry. A reputation form (``is commonly known
    as``, ``is widely regarded as``) also passes where a cited entry itself reports how the
    thing is called or regarded in any of the naming forms (``often called``, ``also known
    as``), or quotes the name the sentence gives in quotation marks: models paraphrase
    ``often called`` as ``widely regarded as``, and the evidence is then the source of the
    claim, not the model's memory.
    """
    if not ctx.ruleset.compiled("outside.any", _outside_any).search(folded):
        return False
    frames, clause_frames, reputation, naming = ctx.ruleset.compiled(
        "outside.patterns", _outside_patterns
    )
    for pattern in frames:
        found = pattern.search(folded)
        if found and not cited_contain(s, found.group()):
            return True
    for pattern in clause_frames:
        for found in pattern.finditer(folded):
            if _opens_a_clause(folded, found.start()) and not cited_contain(s, found.group()):
                return True
    for pattern in reputation:
        found = pattern.search(folded)
        if found and not cited_contain(s, found.group()):
            quoted = _QUOTED_NAME_RE.match(folded, found.end())
            if quoted and cited_contain(s, quoted.group(1)):
                continue
            cited = [plain(e.sanitized_text) for e in s.cited]
            if not any(name.search(text) for name in naming for text in cited):
                return True
    return False


class MetaCommentary:
    """Talk about the sources, the instructions or the model itself, or a reasoning trace."""

    name: ClassVar[str] = "meta_commentary"
    reason: ClassVar[ReasonCode] = ReasonCode.META_COMMENTARY
    judges_exact_refusal: ClassVar[bool] = False

    def check(self, reading: Reading, ctx: Context) -> Iterator[Finding]:
        """A reasoning tag, then the first meta phrase the cited entries do not contain."""
        tag = ctx.ruleset.compiled("meta.reasoning_tag", _reasoning_tag)
        patterns = ctx.ruleset.compiled("meta.patterns", meta_patterns)
        anything = ctx.ruleset.compiled("meta.any", any_meta)
        for s in reading.sentences:
            where = f"answer: sentence {s.number}"
            folded = _reading(s, ctx)
            written = s.unmasked
            if tag.search(folded):
                yield Finding(self.name, self.reason, f"{where}: a reasoning trace", s.number)
            # None of the folded patterns matches: only the first-person one (last) can.
            tried = patterns if anything.search(folded) else patterns[-1:]
            for pattern, on_folded in tried:
                if on_folded:
                    found = pattern.search(folded)
                else:
                    found = _first_person(
                        pattern, written, regnal=ctx.ruleset.has("regnal_numerals")
                    )
                if found and not cited_contain(s, found.group()):
                    message = f"{where}: talks about itself or its sources"
                    yield Finding(self.name, self.reason, message, s.number)
                    break
            else:
                if ctx.ruleset.has("outside_knowledge") and _claims_outside_knowledge(
                    s, folded, ctx
                ):
                    message = f"{where}: claims knowledge from outside the cited sources"
                    yield Finding(self.name, self.reason, message, s.number)

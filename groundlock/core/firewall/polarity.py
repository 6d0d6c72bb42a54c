"""Negation, obligation and opposites of a clause, for rule ``contradicts_evidence``.

A clause is *negative* when it holds a negator (``not``, ``never``, ``no``, ``prohibited``,
...); the word a negator governs is the first content word after it (``must not exceed``:
``exceed``; ``do not climb``: ``climb``). A clause *asserts* a word when the word follows a
modal or an auxiliary (``may exceed``, ``is required``) or opens the clause as an order
(``Replace the filter``). The modal before a word has a class: obligation (``must``,
``shall``, ``required``) or permission (``may``, ``can``, ``optional``).

Comparisons are made only where a sentence's clause and an evidence clause are about the
same thing (they share the word and at least one more content word), and a contradiction is
declared only when *no* clause of the cited evidence says it the sentence's way: evidence
that says "do not replace the seal" and "replace the filter" supports both polarities of
``replace``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from groundlock._caches import memoized
from groundlock.core.firewall.facts import stem
from groundlock.core.firewall.lexicon import words
from groundlock.policies.ruleset import Ruleset

_MAX_KEY_CHARS = 4096
"""Longer texts are judged uncached: a bound on what the caches below can hold."""

__all__ = ["Clause", "Lexicon", "clauses", "lexicon"]

_CLAUSE_RE = re.compile(
    r"[;,\u2014\u2013]|\s-\s|\b(?:and|but|while|whereas|except|or|although|if|when)\b",
    re.IGNORECASE,
)
_APOSTROPHE_RE = re.compile("[\u2019\u02bc\uff07]")
_JOINED_RE = re.compile(r"\b(?:counter|anti)[- ]?clockwise\b", re.IGNORECASE)
"""Prefixed words whose parts would read as the word they oppose (``counter-clockwise``)."""


@dataclass(frozen=True, eq=False)
class Lexicon:
    """The ruleset's polarity vocabulary."""

    negators: frozenset[str]
    neutralisers: frozenset[str]
    skippable: frozenset[str]
    obligation: frozenset[str]
    strict_obligation: frozenset[str]
    """Obligation words whose negation forbids (``must not``) rather than permits."""
    recommendation: frozenset[str]
    permission: frozenset[str]
    adjectival: frozenset[str]
    """Modal words that follow what they qualify (``is optional``, ``is mandatory``)."""
    antonyms: dict[str, frozenset[str]]
    """A stem -> the stems of its opposites."""
    stopwords: frozenset[str]
    features: frozenset[str] = frozenset()
    """The ruleset's features (``polarity_v3``: see :func:`clauses`)."""


def _lexicon(ruleset: Ruleset) -> Lexicon:
    antonyms: dict[str, set[str]] = {}
    for line in ruleset.entries("antonyms"):
        left, _, right = line.partition("|")
        a, b = stem(left.strip().lower()), stem(right.strip().lower())
        antonyms.setdefault(a, set()).add(b)
        antonyms.setdefault(b, set()).add(a)

    def section(name: str) -> frozenset[str]:
        return frozenset(ruleset.entries("polarity", name))

    return Lexicon(
        negators=section("negators"),
        neutralisers=section("neutralisers"),
        skippable=section("skippable"),
        obligation=section("obligation"),
        strict_obligation=section("strict_obligation"),
        recommendation=section("recommendation"),
        permission=section("permission"),
        adjectival=section("adjectival"),
        antonyms={k: frozenset(v) for k, v in antonyms.items()},
        stopwords=frozenset(ruleset.entries("stopwords")),
        features=ruleset.features,
    )


def lexicon(ruleset: Ruleset) -> Lexicon:
    """The polarity vocabulary of ``ruleset``, built once."""
    return ruleset.compiled("polarity.lexicon", _lexicon)


@dataclass(frozen=True, slots=True)
class Clause:
    """One clause, reduced."""

    stems: frozenset[str]
    """Stems of its content words."""
    negative: bool
    negated: frozenset[str]
    """Stems of the words its negators govern (``must not exceed``: ``exceed``)."""
    none_of: frozenset[str]
    """Stems of the nouns ``no`` or ``none`` governs (``no resample was taken``)."""
    positions: dict[str, int]
    """Each stem's first position in the clause (which comes before which)."""
    gerunds: frozenset[str]
    """Stems written as ``-ing`` forms (``Starting work ...`` names an act, asserts none)."""
    asserted: frozenset[str]
    """Stems of the words it asserts: after a modal or a copula (``may exceed``, ``is
    required``), or as a past tense (``charged``)."""
    order: str | None
    """The stem of the verb it opens with as an order (``Replace the filter``), if any: a
    guess (a sentence may open with an adjective), so it only ever meets an order."""
    negated_order: bool
    """It is a negated order (``Do not replace ...``, ``Never open ...``)."""
    modal: dict[str, str]
    """A stem -> the modality a modal word gives it (``must not exceed``: ``exceed`` ->
    ``prohibition``)."""
    restricted: bool
    """Its sentence restricts (``only X may ...``): its polarity says nothing comparable."""


_TO = frozenset({"to"})
_CONDITIONS = frozenset({"without", "unless"})
_MODALS = frozenset("may can could might must shall should will would do does did".split())
"""Words after which a verb is asserted (``may exceed``, ``does indicate``)."""
_COPULAS = frozenset("is are was were be been being".split())
"""Words after which a participle or an obligation word is asserted (``is required``,
``are affected``); a noun after them asserts nothing (``is the permit``)."""


@memoized(4096, max_key_chars=_MAX_KEY_CHARS)
def clauses(text: str, lex: Lexicon) -> tuple[Clause, ...]:
    """The clauses of a sentence or an evidence sentence."""
    found = []
    text = _JOINED_RE.sub(lambda m: m.group().replace("-", "").replace(" ", ""), text)
    for index, part in enumerate(_CLAUSE_RE.split(_APOSTROPHE_RE.sub("'", text))):
        tokens = words(part.replace("n't", " not").replace("cannot", "can not"))
        if tokens:
            found.append(_clause(tokens, lex, first=index == 0))
    # The sentence restricts if any of it does: "except" and "unless" split clauses off, so
    # they are looked for in the whole text.
    restricted = any(c.restricted for c in found) or bool(lex.neutralisers & set(words(text)))
    return tuple(replace(c, restricted=restricted) for c in found)


evidence_clauses = clauses
"""The clauses of an evidence sentence (the same reduction, one cache)."""


def _clause(tokens: list[str], lex: Lexicon, *, first: bool) -> Clause:  # noqa: PLR0912
    # (one branch per kind of word a clause holds)
    tokens = [t for t in tokens if not any(c.isdigit() for c in t)]
    if not tokens:
        return Clause(
            stems=frozenset(),
            negative=False,
            negated=frozenset(),
            none_of=frozenset(),
            positions={},
            gerunds=frozenset(),
            asserted=frozenset(),
            order=None,
            negated_order=False,
            modal={},
            restricted=False,
        )
    content = {stem(t) for t in tokens if t not in lex.stopwords and t not in lex.negators}
    negated: set[str] = set()
    none_of: set[str] = set()
    asserted: set[str] = set()
    positions: dict[str, int] = {}
    for index, token in enumerate(tokens):
        positions.setdefault(stem(token), index)
    modal: dict[str, str] = {}
    negative = False
    for index, token in enumerate(tokens):
        if token in lex.negators:
            negative = True
            governed = _next_content(tokens, index + 1, lex)
            if governed is not None:
                (none_of if token in ("no", "none") else negated).add(stem(governed))
            continue
        label = _modality(tokens, index, lex)
        if label is not None:
            governed = _governed(tokens, index + 1, lex)
            if governed is not None and token not in lex.adjectival:
                modal.setdefault(stem(governed), label)
            elif token in lex.adjectival and index and tokens[index - 1] in _COPULAS | lex.negators:
                # "Documenting a breach is optional": the label is the clause's.
                for word in content:
                    modal.setdefault(word, label)
        if token in _MODALS or token in _COPULAS:
            following = _next_content(tokens, index + 1, lex)
            if following is not None:
                # "may exceed", "is required", "is a CCP", "are fitted": what it asserts.
                asserted.add(stem(following))
    for index, token in enumerate(tokens):
        if index and token.endswith("ed") and tokens[index - 1] not in lex.stopwords:
            asserted.add(stem(token))  # "The SEC charged ...", "he was eventually appointed"
    if negative and "polarity_v3" in lex.features and _not_until(tokens, lex):
        # "It was not introduced until 1998": when it first happened, not that it did not.
        negative = False
        asserted |= negated
        negated, none_of = set(), set()
    condition = next((i for i, t in enumerate(tokens) if t in _CONDITIONS), None)
    if condition is not None and any(t in lex.negators for t in tokens[:condition]):
        # "may not enter without notice", "never work unless a permit has been issued": a
        # double negation states a requirement; what the condition names is asserted.
        negative, negated, none_of = False, set(), set()
        asserted.update(
            stem(t) for t in tokens[condition + 1 : condition + 5] if t not in lex.stopwords
        )
    order = None
    if first and tokens[0] not in lex.stopwords and not tokens[0].endswith(("ing", "ed")):
        order = stem(tokens[0])
    return Clause(
        stems=frozenset(content),
        negative=negative,
        negated=frozenset(negated),
        none_of=frozenset(none_of),
        positions=positions,
        gerunds=frozenset(stem(t) for t in tokens if t.endswith("ing")),
        asserted=frozenset(asserted),
        order=order,
        negated_order=tokens[0] in ("never", "do", "don't") and negative,
        modal=modal,
        restricted=any(t in lex.neutralisers for t in tokens),
    )


def _not_until(tokens: list[str], lex: Lexicon) -> bool:
    """Whether the clause's negation is ``not ... until``: the time of a first occurrence.

    Of what happened (``was not introduced until 1998``), not of what a modal orders:
    ``must not release the product until QA approves`` still forbids.
    """
    first = next((i for i, t in enumerate(tokens) if t in lex.negators), None)
    if first is None or not any(t in _UNTIL for t in tokens[first + 1 :]):
        return False
    ordering = _MODALS | lex.obligation | lex.permission | lex.recommendation
    return not any(t in ordering and t not in _DID for t in tokens[: first + 2])


_DID = frozenset({"do", "does", "did"})


_UNTIL = frozenset({"until", "till", "til"})


def _modality(tokens: list[str], index: int, lex: Lexicon) -> str | None:
    """The modality the modal word at ``index`` gives, negation included.

    ``obligation``, ``recommendation``, ``permission``, ``prohibition`` or ``discouraged``
    (or None for no modal word).
    """
    token = tokens[index]
    around = tokens[max(0, index - 2) : index] + tokens[index + 1 : index + 3]
    negated = any(t in lex.negators for t in around)
    if token in lex.obligation:
        if not negated:
            return "obligation"
        # "must not" forbids; "need not", "not required", "no obligation" permit.
        return "prohibition" if token in lex.strict_obligation else "permission"
    if token in lex.recommendation:
        return "discouraged" if negated else "recommendation"
    if token in lex.permission:
        return "prohibition" if negated else "permission"
    return None


def _governed(tokens: list[str], start: int, lex: Lexicon) -> str | None:
    """The verb a modal word governs: the next word after ``be``, ``not``, ``to``, adverbs.

    None when an article or another function word comes first (``needs a permit`` governs
    no verb).
    """
    for token in tokens[start : start + 4]:
        if token in lex.negators or token in lex.skippable or token in _COPULAS or token in _TO:
            continue
        if token.endswith("ly") or token in _MODALS:
            continue
        return None if token in lex.stopwords else token
    return None


def _next_content(tokens: list[str], start: int, lex: Lexicon) -> str | None:
    for token in tokens[start : start + 4]:
        if token in lex.negators:
            continue
        if (
            token in lex.skippable
            or token in _MODALS
            or token in _COPULAS
            or token in lex.stopwords
        ):
            continue
        return token
    return None

"""Names in a sentence: proper names, acronyms and acronym expansions.

``001`` P2.2 forbids new entities and acronym expansions absent from the evidence. A name
here is a capitalised word that does not open a sentence or a clause (``The``, a list item's
first word, the word after a colon, a bracket or a table cell's bar are capitalised by
grammar, not because they name something), an acronym (two or more capitals), or an
expansion written beside its acronym (``Politically Exposed Person (PEP)``). Words the
ruleset lists as naming nothing (``Section``, ``Note``, month and day names, unit symbols)
are left out; numbers and identifiers belong to the value rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from groundlock.core.firewall.facts import stem
from groundlock.core.firewall.lexicon import singular, unaccented
from groundlock.policies.ruleset import Ruleset

__all__ = [
    "Name",
    "expansion_of",
    "initials_match",
    "names_in",
    "written_otherwise",
]

_WORD_RE = re.compile(r"[^\W\d_](?:[\w'\u2019]|[.-](?=[^\W_]))*")
_INITIALS_RE = re.compile(r"(?:[A-Z]\.)*[A-Z]\.?|[A-Z][a-z]{0,3}")
"""Initials and short abbreviations a name continues after (``J.P.``, ``St``, ``Dr``)."""
_CLAUSE_OPENERS = frozenset(":;[{\"'\u201c\u2018\u00ab\u2014\u2013-|*_#>/\u2022!?")
_EXPANSION_RE = re.compile(
    r"((?:[A-Z][\w'-]*\s+(?:(?:of|and|the|for|in|on|to|de|la)\s+)?){1,7}[A-Z][\w'-]*)\s*"
    r"\(\s*([A-Z][A-Za-z&]{1,9}s?)\s*\)"
    r"|\b([A-Z][A-Za-z&]{1,9})\s*\(\s*((?:[A-Z][\w'-]*\s+(?:(?:of|and|the|for|in|on|to)\s+)?)"
    r"{1,7}[A-Z][\w'-]*)\s*\)"
)


_LOWER_EXPANSION_RE = re.compile(
    r"((?:[a-z][\w'-]*\s+){0,6}[a-z][\w'-]*)\s*\(\s*([A-Z]{2,9}s?)\s*\)"
)
_ACRONYM_IN_BRACKETS_RE = re.compile(r"\(\s*[A-Z]{2,9}s?\s*\)")
_SMALL_WORDS = frozenset({"of", "and", "the", "for", "in", "on", "to", "per"})


@dataclass(frozen=True, slots=True)
class Name:
    """One name of a sentence."""

    written: str
    kind: str
    """``name``, ``acronym`` or ``expansion``."""
    forms: frozenset[str]
    """Caseless forms to look for in the evidence (the word, without a possessive, its stem;
    each part of a hyphenated word is a name of its own)."""
    opening: bool = False
    """Whether it is a clause's first word, read as a name by ``_opening_name``: the name a
    sentence is about (``Siemens recommends ...``)."""
    before_name: str | None = None
    """For a clause's first word read as a name because a capitalised word follows
    (``Bosch Rexroth``), that word: if the evidence holds it, the first word is given the
    benefit of the doubt (``Margot Robbie`` where the evidence names Robbie)."""


def _common(ruleset: Ruleset) -> frozenset[str]:
    return frozenset(
        w.lower()
        for w in (
            *ruleset.entries("entities", "common"),
            *ruleset.entries("abbreviations", "sentence_openers"),
            *ruleset.entries("stopwords"),
            *ruleset.entries("designations"),
        )
    )


def names_in(text: str, ruleset: Ruleset) -> Iterator[Name]:
    """The names of a sentence's text (markers already blanked), in order."""
    common = ruleset.compiled("entities.common", _common)
    variants = ruleset.has("name_variants")
    previous_end = 0
    text = _LABEL_RE.sub(_blank, text)
    for found in _WORD_RE.finditer(text):
        word = found.group()
        before_end, previous_end = previous_end, found.end()
        if not word[0].isupper() or any(c.isdigit() for c in word):
            continue  # (a word with a digit is an identifier: the value rule's)
        opener = _opens_clause(text, found.start(), before_end)
        before_name = None
        if opener:
            opening = variants and _opening_name(text, found, common, ruleset)
            if not opening:
                continue
            if isinstance(opening, str):
                before_name = opening
        parts = re.split(r"[-.]", word.rstrip("."))
        if not variants:
            for part in parts:
                yield from _name(part, common)
            continue
        names = _compound(parts, common) if len(parts) > 1 else _name(parts[0], common)
        for name in names:
            forms = name.forms | {singular(f) for f in name.forms}
            yield Name(name.written, name.kind, forms, opener, before_name)


def _reporting(ruleset: Ruleset) -> frozenset[str]:
    return frozenset(ruleset.entries("entities", "reporting"))


def _opening_name(  # noqa: PLR0911  (one return per form of name)
    text: str, found: re.Match[str], common: frozenset[str], ruleset: Ruleset
) -> bool | str:
    """Under ``name_variants``: whether a clause's first word is read as a name anyway.

    A sentence's first word is capitalised by grammar, so it is a name only where nothing
    else would be: an acronym (``NASA announced``), a word followed by another capitalised
    one (``Bosch Rexroth recommends``), a possessive (``Siemens' manual``), or a word
    followed by a verb a named actor does (``Siemens recommends``, ``Drake sings``, from
    ``entities.words``). Common sentence openers never are. For a word followed by a
    capitalised one, that word is returned: see :attr:`Name.before_name`.
    """
    word = found.group()
    lower = word.lower().rstrip(".")
    if lower in common or len(word) < 2:
        return False
    letters = [c for c in word if c.isalpha()]
    if len(letters) >= 2 and all(c.isupper() for c in letters):
        return True
    rest = text[found.end() :]
    if _POSSESSIVE_AFTER_RE.match(rest) or _POSSESSIVE_RE.search(word):
        return True
    following = _NEXT_WORD_RE.match(rest)
    if following is None:
        return False
    if following[1].lower() in ruleset.compiled("entities.reporting", _reporting):
        return True
    if following[1][0].isupper() and following[1].lower() not in common:
        return re.sub(r"['\u2019]s?$", "", following[1].rstrip("."))
    return False


_POSSESSIVE_AFTER_RE = re.compile(r"['\u2019]s?\s")
_POSSESSIVE_RE = re.compile(r"['\u2019]s?$")
_NEXT_WORD_RE = re.compile(r"[ \t]+([^\W\d_][\w'\u2019-]*)")


_PREFIXES = frozenset(
    "neo pre post anti non pro ex mid pan sub proto pseudo semi inter trans ultra vice co re "
    "un multi cross counter over under".split()
)
"""Prefixes a hyphen joins to a name (``Neo-Babylonian``, ``Anti-Federalist``, ``pre-War``):
they qualify it and name nothing of their own."""


def _compound(parts: list[str], common: frozenset[str]) -> Iterator[Name]:
    """The names of a hyphenated capitalised word under ``name_variants``.

    Each part is a name of its own, found also as the joined word (``E-Mail`` is the
    evidence's ``email``); a prefix part (``Neo-``) names nothing.
    """
    joined = "".join(parts).lower()
    for part in parts:
        if part.lower() in _PREFIXES:
            continue
        for name in _name(part, common):
            yield Name(name.written, name.kind, name.forms | {joined, singular(joined)})


_LABEL_RE = re.compile(
    r"^\s*[*_]{0,2}(?:[A-Z][\w'-]*\s+){0,3}[A-Z][\w'-]*\s*:[*_]{0,2}"
    r"|^\s*\|\s*[*_]{0,2}(?:[A-Z][\w'-]*\s+){0,3}[A-Z][\w'-]*[*_]{0,2}\s*(?=\|)"
)
"""A label in Title Case: a sentence's lead-in (``**Replacement Interval:**``) or a table
row's first cell of capitalised words only (``| Bowl Torque |``). Its capitals are the label
style's; the cells that state something are still read."""


def _blank(found: re.Match[str]) -> str:
    return " " * len(found.group())


def _opens_clause(text: str, start: int, previous_end: int) -> bool:
    between = text[previous_end:start]
    stripped = between.strip()
    if previous_end == 0:
        return True  # the first word of the sentence (after any list marker or bracket)
    if stripped and stripped[-1] in _CLAUSE_OPENERS:
        return True
    # After an abbreviation's full stop joined into the sentence ("U.S. Food", "J.P.
    # Morgan"), a word is part of a name, not a clause opener.
    if not stripped.endswith("."):
        return False
    before = text[:previous_end].rsplit(None, 1)[-1] if text[:previous_end].strip() else ""
    return not _INITIALS_RE.fullmatch(before.lstrip("([\"'"))


def _name(part: str, common: frozenset[str]) -> Iterator[Name]:
    bare = re.sub(r"['\u2019]s?$", "", part)
    lower = bare.lower()
    if len(bare) < 2 or lower in common or stem(lower) in common or not bare[0].isupper():
        return  # ("Mondays": a day, as "Monday")
    if any(c.isdigit() for c in bare):
        return  # an identifier: the value rule's
    letters = [c for c in bare if c.isalpha()]
    if len(letters) >= 2 and all(c.isupper() for c in letters):
        plural = lower[:-1] if bare.endswith("s") and bare[:-1].isupper() else lower
        yield Name(bare, "acronym", frozenset({lower, plural}))
        return
    if len(letters) > 2 and bare[-1] == "s" and bare[:-1].isupper():
        yield Name(bare, "acronym", frozenset({lower[:-1]}))
        return
    # "O'Connor" is the evidence's words "o" and "connor"; "Zürich" may be written "Zurich".
    last = re.split(r"['\u2019]", lower)[-1]
    yield Name(bare, "name", frozenset({last, stem(last), unaccented(last)}))


def written_otherwise(
    name: str, text: str, *, abbreviated: bool = False, transliterated: bool = False
) -> bool:
    """Whether ``text`` writes ``name`` another way a reader takes for the same.

    An abbreviation of it (``Ill.`` for Illinois, ``St.`` for Street, ``Ave.`` for Avenue), or
    a word of the same root (``Germany`` for German, ``Canada`` for Canadian). A name the
    answer abbreviates (``abbreviated``: ``Mo.``) is the evidence's word it begins. With
    ``transliterated`` (``name_variants``), a name of five letters or more spelled with other
    vowels (``Saurabh`` for Sourabh, ``Mohammed`` for Muhammad): the same consonants in the
    same order, from the same first letter.
    """
    if transliterated and len(name) >= 5:
        skeleton = _skeleton(name)
        if any(
            w[0].lower() == name[0].lower() and _skeleton(w) == skeleton
            for w in _CAPITALISED_RE.findall(text)
            if len(w) >= 5
        ):
            return True
    lower = name.lower()
    if abbreviated and any(word.startswith(name) for word in _CAPITALISED_RE.findall(text)):
        return True
    for abbreviation in _ABBREVIATION_RE.findall(text):
        if lower.startswith(abbreviation.lower()) and lower[0] == abbreviation[0].lower():
            return True
    if len(lower) < 5:
        return False
    root = lower[:5]
    return any(
        word.lower().startswith(root) and abs(len(word) - len(lower)) <= 3
        for word in _CAPITALISED_RE.findall(text)
    )


def _skeleton(word: str) -> str:
    """A name's consonants in order, vowels (and ``y``, ``h`` after a vowel) left out."""
    return re.sub(r"(?<=[aeiouy])h|[aeiouy]", "", word.lower()[1:])


_ABBREVIATION_RE = re.compile(r"\b([A-Z][a-z]{1,4})\.")
_CAPITALISED_RE = re.compile(r"\b[A-Z][a-z]{3,}\b")


def initials_match(acronym: str, text: str, connectors: frozenset[str]) -> bool:
    """Whether ``text`` spells out ``acronym`` as the initials of consecutive words.

    Connectors such as ``of`` and ``and`` may be skipped.
    """
    letters = acronym.lower().rstrip("s") if acronym.endswith("s") else acronym.lower()
    words = re.findall(r"[^\W\d_]+", text.lower())
    for start in range(len(words)):
        position, index = 0, start
        while index < len(words) and position < len(letters):
            word = words[index]
            if word[0] == letters[position]:
                position += 1
            elif word not in connectors:
                break
            index += 1
        if position == len(letters) and len(letters) >= 2:
            return True
    return False


def expansion_of(text: str) -> Iterator[tuple[str, str]]:
    """``(acronym, expansion)`` for each acronym written with its expansion in ``text``.

    ``Politically Exposed Person (PEP)``, ``PEP (Politically Exposed Person)``, and in lower
    case where the words' initials spell the acronym (``lower explosive limit (LEL)``).
    """
    if "(" not in text:
        return  # every form has a bracket: most sentences are done here
    for found in _EXPANSION_RE.finditer(text):
        if found.group(1) is not None:
            yield found.group(2), found.group(1)
        else:
            yield found.group(3), found.group(4)
    if _ACRONYM_IN_BRACKETS_RE.search(text) is None:
        return
    for found in _LOWER_EXPANSION_RE.finditer(text):
        acronym = found.group(2)
        letters = acronym.rstrip("s").lower() if acronym[-1] == "s" else acronym.lower()
        words = re.findall(r"[^\W\d_]+", found.group(1).lower())
        # The expansion is the shortest run of final words whose initials spell it.
        for start in range(len(words) - 1, -1, -1):
            initials = "".join(w[0] for w in words[start:] if w not in _SMALL_WORDS)
            if initials == letters:
                yield acronym, " ".join(words[start:])
                break

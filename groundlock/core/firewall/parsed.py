"""The answer as the rules read it, parsed once.

Sentences, their markers and the entries each cites.

Parsing follows the ruleset's citation grammar and segmentation; no rule splits or scans the
text again. A sentence keeps its text as written (the case-sensitive rules read that), the
same without markers, and a fold of it (the case-insensitive patterns read that), all
computed once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from groundlock.citations import AnchorScan, BoundCitations
from groundlock.contracts.assembly import SelectedEvidence
from groundlock.text.fold import fold
from groundlock.text.sentences import Segmenter

__all__ = ["LineKind", "ParsedAnswer", "Sentence", "parse_answer"]

_ALNUM_RE = re.compile(r"[^\W_]")
_CITATION_LIST_RE = re.compile(
    r"^\s*(?:[-*•]\s*)?[*_]{0,3}(?:citations?|sources?|references?|cited)[*_]{0,3}\s*:"
    r"[*_]{0,3}\s*(.*)$",
    re.IGNORECASE,
)
"""``Sources: [C0]``, also as a list item or in Markdown emphasis (``**Sources:** [C0]``)."""
_LIST_FILLER_RE = re.compile(r"[\s,;.]*")
_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s+\S")
_EMPHASIS_LINE_RE = re.compile(r"^\s*(?:\*\*|__)[^*_\n]+(?:\*\*|__)\s*:?\s*$")
_TABLE_ROW_RE = re.compile(r"^\s*\|.*\|\s*$")


def _is_label(line: str) -> bool:
    """Whether ``line`` ends in a colon, after any emphasis (``**Limits:**``).

    Read from the end, so a long line costs one pass.
    """
    text = line.rstrip().rstrip("*_").rstrip()
    return text.endswith(":")


_LIST_OR_TABLE_RE = re.compile(r"^\s*(?:[-*•‣◦]|\d{1,3}[.)]|[a-zA-Z][.)]|\|)\s*")
_PARTICLE_RE = re.compile(
    r"[\s*_]*(?:yes|no|correct|incorrect|true|false|indeed|right|not quite)[\s*_.,!;:]*",
    re.IGNORECASE,
)
_TABLE_SEPARATOR_RE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")


class LineKind(StrEnum):
    """What a sentence is, in Markdown and in answer terms: only TEXT states something."""

    TEXT = "text"
    HEADING = "heading"
    """``## Replacement interval`` or a line that is only bold text (``**Limits:**``)."""
    TABLE_HEADER = "table_header"
    """The row above a table's ``|---|---|`` separator: column names, not statements."""
    LABEL = "label"
    """A line ending in a colon right above a list or a table (``The steps are:``): it
    introduces what its items state and cite."""
    PARTICLE = "particle"
    """``Yes.``, ``No.``: the answer to a yes/no question, whose reason follows, cited."""


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence of the answer with letters or digits outside its markers."""

    number: int
    """1-based position among the answer's sentences, for messages that cannot quote it."""
    raw: str
    """The sentence as written, markers included."""
    text: str
    """The sentence with its markers blanked out."""
    anchors: tuple[str, ...]
    """Its well-formed anchors, valid or not, in order."""
    cited: tuple[SelectedEvidence, ...]
    """The entries its valid anchors name, in order."""
    kind: LineKind = LineKind.TEXT
    """What its line is (headings and table headers state nothing)."""
    folded: str = field(init=False)
    """``text`` folded as re.I sees it, once, for the many case-insensitive patterns."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "folded", fold(self.text))


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    """One answer, parsed once."""

    text: str
    """The answer exactly as the model wrote it."""
    body: str
    """The answer without its citation-list line(s)."""
    listed: tuple[str, ...] | None
    """The anchors of an appended citation list (``Sources: [C0][C1]``), or None."""
    scan: AnchorScan
    """Every marker of the whole answer, citation list included."""
    body_anchors: tuple[str, ...]
    """Well-formed anchors of the body, in order."""
    sentences: tuple[Sentence, ...]
    used_anchors: tuple[str, ...]
    """Anchors that belong to a sentence; the rest stand alone and cite nothing."""


def parse_answer(
    text: str,
    entries: Mapping[str, SelectedEvidence],
    grammar: BoundCitations,
    segmenter: Segmenter,
) -> ParsedAnswer:
    """Parse ``text`` into sentences with their markers and the entries they cite."""
    body, listed = _split_citation_list(text, grammar)
    lines = body.splitlines()
    kinds = _line_kinds(lines)
    stated: list[tuple[str, str, LineKind]] = []
    for line, kind in zip(lines, kinds, strict=True):
        for raw in segmenter.split_line(line):
            said = grammar.without_markers(raw)
            if _ALNUM_RE.search(said):
                particle = segmenter.capitalised_names and _PARTICLE_RE.fullmatch(said)
                stated.append((raw, said, LineKind.PARTICLE if particle else kind))
    sentences = []
    for number, (raw, said, kind) in enumerate(stated, start=1):
        anchors = tuple(grammar.anchors(raw))
        sentences.append(
            Sentence(
                number=number,
                raw=raw,
                text=said,
                anchors=anchors,
                cited=tuple(entries[a] for a in anchors if a in entries),
                kind=kind,
            )
        )
    return ParsedAnswer(
        text=text,
        body=body,
        listed=listed,
        scan=grammar.scan(text),
        body_anchors=tuple(grammar.anchors(body)),
        sentences=tuple(sentences),
        used_anchors=tuple(a for s in sentences for a in s.anchors),
    )


def _split_citation_list(text: str, grammar: BoundCitations) -> tuple[str, tuple[str, ...] | None]:
    """The answer without a trailing-style citation list line, and that list's anchors."""
    body: list[str] = []
    listed: list[str] | None = None
    for line in text.splitlines():
        found = _CITATION_LIST_RE.match(line)
        rest = found.group(1) if found else ""
        if found and rest and _LIST_FILLER_RE.fullmatch(grammar.marker_re.sub("", rest)):
            listed = [*(listed or []), *grammar.anchors(rest)]
        else:
            body.append(line)
    return "\n".join(body), tuple(listed) if listed is not None else None


def _line_kinds(lines: list[str]) -> list[LineKind]:
    kinds = []
    following: list[str] = [""] * len(lines)  # the next non-blank line, found backwards
    upcoming = ""
    for index in range(len(lines) - 1, -1, -1):
        following[index] = upcoming
        if lines[index].strip():
            upcoming = lines[index]
    for index, line in enumerate(lines):
        if _HEADING_RE.match(line) or _EMPHASIS_LINE_RE.match(line):
            kinds.append(LineKind.HEADING)
        elif _is_label(line) and _LIST_OR_TABLE_RE.match(following[index]):
            kinds.append(LineKind.LABEL)
        elif (
            _TABLE_ROW_RE.match(line)
            and index + 1 < len(lines)
            and _TABLE_SEPARATOR_RE.match(lines[index + 1])
            and "|" in lines[index + 1]
        ):
            kinds.append(LineKind.TABLE_HEADER)
        else:
            kinds.append(LineKind.TEXT)
    return kinds

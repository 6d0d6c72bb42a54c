"""Sentence segmentation shared by the validator (R5) and the offline extractive model.

Both must agree on what a sentence is: the extractive model quotes evidence one sentence at
a time and cites each, and the validator requires a citation in every sentence. The rules:

* A sentence ends at ``.``, ``?`` or ``!`` followed by whitespace or the end of the text, and
  at every line break (list items and headings are their own sentences).
* These do not end a sentence: a decimal (``3.5 bar``), a version (``v1.2``), an ellipsis
  (``...`` or ``…``) unless a capitalised word follows it, or an abbreviation in the context
  that makes it one (``No. 4``, ``Sec. 2``, ``e.g. the``, ``approx. 45``, ``U.S. rules``,
  ``Dr. Lee``).
* These do: an end mark followed by closing quotes, brackets or Markdown emphasis
  (``hours."``, ``hours.)``, ``hours.**``, ``hours.」``), an end mark glued to a capitalised
  word (``hours.Replace``; not ``ENGINE.BIN``) or to a citation marker (``hours.[C0]The``),
  and the full stops, question and exclamation marks of other scripts and widths (``。``,
  ``｡``, ``‼``, ``‽``, ``।``, ``؟``), which need no space after them.
* A leading list marker (``-``, ``*``, ``•``, ``1.``, ``2)``) is not part of the sentence.
* Citation markers written right after a sentence's end mark (``... monthly. [C0][C1]``)
  belong to that sentence.

The word lists (which abbreviations join in which context) are data of the firewall ruleset
(``abbreviations.words``), so a change of segmentation is a new ruleset version. A
:class:`Segmenter` built with ``capitalised_names=True`` (ruleset ``firewall_v2``) also keeps
an abbreviation or an initial together with a capitalised word that continues a name
(``the U.S. Food and Drug Administration``, ``a B.E. Chemical Engineering degree``,
``J. R. R. Tolkien``, ``St. Louis``, ``James Aubrey Jr. died``), and still ends the sentence
when the capitalised word is one that opens sentences (``made in the U.S. The Navy ...``).

This is hand-written rather than pysbd or syntok: pysbd's time grows quadratically with the
text (210 ms for 20,000 characters here, against a linear-time guarantee for any answer
under the output cap), and syntok knows nothing of citation markers and merged true ends
(``every 500 h. Then torque ...``); both would still need the marker rules above.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["Segmenter", "split_sentences"]

_LIST_MARKER_RE = re.compile(r"^\s*(?:[-*•‣◦]|\d{1,3}[.)]|[a-zA-Z][.)])\s+")
# An end mark, then any closing quotes, brackets or Markdown emphasis, then a space or the
# end; an end mark glued to a capitalised word (``hours.Replace``) or to a marker
# (``hours.[C0]The``: the marker joins the sentence); or a full stop of another script or
# width, which needs no space at all.
_CLOSERS = (
    "\"'\u201d\u2019\u201c\u2018\u00bb\u203a)\\]}*_`~"
    "\u300d\u300f\u3011\u3015\u3009\u300b\uff09\uff3d\uff5d"
)
_OTHER_ENDS = (
    "\u3002\uff0e\uff01\uff1f\u2024\ufe52\uff61\ufe56\ufe57\u203c\u203d\u2047\u2048\u2049"
    "\u06d4\u061f\u0964\u0965\u1362\u1367\u0589"
)
"""Full stops, question and exclamation marks of other scripts and widths: always an end."""
_MARK_RUN_RE = re.compile(r"[.?!]+")
_NEXT_CHARACTER_RE = re.compile(r"\s*(\S?)")
_NEXT_WORD_RE = re.compile(r"\s*[\"'\u201c\u2018(*_]*([^\W\d_][\w'\u2019-]{0,30})")
_NEXT_VISIBLE_RE = re.compile(r"\s*[\"'\u201c\u2018(\[{*_]*(\S?)")
_NEXT_TOKEN_RE = re.compile(r"\s*(\S{1,40})")
_TABLE_ROW_RE = re.compile(r"^\s*\|.*\|\s*$")
_WORD_WINDOW = 32
"""Characters before a mark in which the word it ends is looked for: a longer word is no
abbreviation (the longest listed is 6 letters; dotted initialisms like ``u.s.a`` are short)."""
_INITIALISM_RE = re.compile(r"(?:[a-z]\.)+[a-z]")


@dataclass(frozen=True)
class Segmenter:
    """Splits text into sentences by the rules above, with a ruleset's word lists."""

    before_number: frozenset[str]
    """``No. 4``, ``Sec. 2``, ``max. 45 Nm``: not a boundary when a number follows."""
    before_lowercase: frozenset[str]
    """``e.g. the``, ``approx. 45``: not a boundary before a lowercase word or a number."""
    titles: frozenset[str]
    """``Dr. Smith``: never a boundary."""
    marker_pattern: str = r"\[C\d+\]"
    """One citation marker (the grammar's): glued to an end mark, and trailing a sentence."""
    capitalised_names: bool = False
    """Keep abbreviations and initials with a capitalised word that continues a name."""
    before_capitalised: frozenset[str] = frozenset()
    """``St. Louis``, ``Jr. Smith``, ``Inc. Board``: joined to a capitalised word that is not
    a sentence opener (only with ``capitalised_names``)."""
    sentence_openers: frozenset[str] = frozenset()
    """Capitalised words that open a sentence after an abbreviation (``The``, ``It``)."""
    more_ends: str = ""
    """Further full stops of other scripts (Mongolian, Lisu, Syriac...): always an end."""
    _end_re: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _mark_re: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _trailing_re: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        end = re.compile(
            rf"(?:[.?!]+|…)[{re.escape(_CLOSERS)}]*(?=\s|$)"
            r"|(?<=[a-z0-9])[.?!](?=[A-Z][a-z])"
            rf"|[.?!]+(?={self.marker_pattern})"
            rf"|[{_OTHER_ENDS}{re.escape(self.more_ends)}]+"
        )
        object.__setattr__(self, "_end_re", end)
        marks = re.compile(f"[.?!\u2026{_OTHER_ENDS}{re.escape(self.more_ends)}]")
        object.__setattr__(self, "_mark_re", marks)
        object.__setattr__(self, "_trailing_re", re.compile(rf"(?:\s*{self.marker_pattern})+"))

    @classmethod
    def of(
        cls,
        sections: dict[str, tuple[str, ...]],
        *,
        marker_pattern: str,
        capitalised_names: bool = False,
    ) -> Segmenter:
        """A segmenter from an ``abbreviations.words`` file's sections."""

        def words(name: str) -> frozenset[str]:
            return frozenset(w.lower() for w in sections.get(name, ()))

        return cls(
            before_number=words("before_number"),
            before_lowercase=words("before_lowercase"),
            titles=words("titles"),
            marker_pattern=marker_pattern,
            capitalised_names=capitalised_names,
            before_capitalised=words("before_capitalised"),
            sentence_openers=words("sentence_openers"),
            more_ends="".join(
                chr(int(code.removeprefix("U+"), 16)) for code in sections.get("more_ends", ())
            ),
        )

    def split(self, text: str) -> list[str]:
        """Split ``text`` into sentences, each stripped, none empty."""
        return [sentence for line in text.splitlines() for sentence in self.split_line(line)]

    def split_line(self, raw_line: str) -> Iterable[str]:
        """The sentences of one line (a line break always ends a sentence).

        With ``capitalised_names``, a Markdown table row is one sentence: its cells are
        parts of one statement, and a full stop in a cell (``Brandt, J.``) ends none.
        """
        if self.capitalised_names and _TABLE_ROW_RE.match(raw_line):
            row = raw_line.strip()
            if row:
                yield row
            return
        line = _LIST_MARKER_RE.sub("", raw_line, count=1).strip()
        quoted = _quote_spans(line) if self.capitalised_names else ()
        start = pos = 0
        # Every end starts with an end mark: find one with a plain character-class search,
        # then match the full pattern there.
        while (mark := self._mark_re.search(line, pos)) is not None:
            end = self._end_re.match(line, mark.start())
            if end is None:
                # No later mark of the same run can end a sentence where its first did not
                # (each would need the same characters after the run): skip the run, or a
                # run of 50,000 dots is tried 50,000 times, each scanning to its end.
                run = _MARK_RUN_RE.match(line, mark.start())
                pos = run.end() if run is not None else mark.start() + 1
                continue
            pos = end.end()
            if not self._is_boundary(line, end) or _inside(quoted, end):
                continue
            stop = end.end()
            markers = self._trailing_re.match(line, stop)
            if markers:
                stop = markers.end()
            sentence = line[start:stop].strip()
            if sentence:
                yield sentence
            start = stop
        rest = line[start:].strip()
        if rest:
            yield rest

    def _is_boundary(self, line: str, end: re.Match[str]) -> bool:  # noqa: PLR0911, PLR0912
        # (one rule per return.) Every look here is local (the next visible character or
        # word, the word before the mark): slicing the rest of the line or all of it before
        # the mark, for each of hundreds of marks, made a long answer quadratic.
        mark = end.group().rstrip(_CLOSERS)
        following = _NEXT_CHARACTER_RE.match(line, end.end()).group(1)  # type: ignore[union-attr]
        if mark == "…" or mark.startswith(".."):
            # An ellipsis trails off, unless a new capitalised sentence follows it.
            return following.isupper()
        if mark != "." or end.group() != mark:
            return True
        tail = line[max(0, end.start() - _WORD_WINDOW) : end.start()]
        if not tail or tail[-1].isspace():
            return True
        words = tail.rsplit(None, 1)
        if len(words) == 1 and len(tail) < end.start():
            return True  # a word longer than the window: no abbreviation
        written = words[-1].lstrip("([{\"'")
        if self.capitalised_names and "-" in written:
            written = written.rsplit("-", 1)[-1]  # "EU-U.S. Data": the abbreviation is "U.S."
        token = written.lower()
        if token in self.titles:
            return False
        if self.capitalised_names:
            # Look past an opening bracket or quote: ``Ltd. (the Company)``, ``No. (4)``.
            visible = _NEXT_VISIBLE_RE.match(line, end.end())
            if visible is not None and following in "([{\"'\u201c\u2018*_":
                following = visible.group(1)  # "i.e. \u201c33 lbf\u00b7ft\u201d"
        if token in self.before_number:
            if following.isdigit():
                return False
            # ``no. Z-1187-2025``, ``ref. HA-IPR-03``: an identifier is a number here (not
            # after a sentence's first word: ``No. LOTO-CH-02 says ...`` answers no).
            opens = len(words) == 1 or words[0][-1] in ".?!:"
            return opens or not (self.capitalised_names and self._identifier_follows(line, end))
        initialism = _INITIALISM_RE.fullmatch(token) is not None
        if token in self.before_lowercase or initialism:
            if following.islower() or following.isdigit():
                return False
            return not (self.capitalised_names and self._continues_name(line, end))
        if self.capitalised_names and (
            token in self.before_capitalised or (len(written) == 1 and written.isupper())
        ):
            # ``Jr. died``, ``St. Louis``, ``J. R. R. Tolkien``, ``Brandt, J. dissented``
            if following.islower():
                return False
            return not self._continues_name(line, end)
        return True

    @staticmethod
    def _identifier_follows(line: str, end: re.Match[str]) -> bool:
        word = _NEXT_TOKEN_RE.match(line, end.end())
        return word is not None and any(c.isdigit() for c in word.group(1))

    def _continues_name(self, line: str, end: re.Match[str]) -> bool:
        """Whether the word after ``end`` is capitalised and does not open a sentence."""
        word = _NEXT_WORD_RE.match(line, end.end())
        if word is None:
            return False
        following = word.group(1)
        return following[0].isupper() and following.lower() not in self.sentence_openers


_QUOTE_RE = re.compile(r'"[^"\n]{1,400}"|\u201c[^\u201c\u201d\n]{1,400}\u201d')
"""A quotation closed on its line, at most 400 characters: one statement, however many
sentences it quotes (``said: "A recount is not a do-over. We will ..."``)."""


def _quote_spans(line: str) -> tuple[tuple[int, int], ...]:
    return tuple((m.start(), m.end() - 1) for m in _QUOTE_RE.finditer(line))


def _inside(spans: tuple[tuple[int, int], ...], end: re.Match[str]) -> bool:
    """Whether the end mark stands inside a quotation (not at its own close)."""
    return any(opening < end.start() and end.end() <= closing for opening, closing in spans)


_V1_SECTIONS: dict[str, tuple[str, ...]] = {
    "before_number": tuple(
        "no nos sec secs fig figs art arts ch chap para paras p pp vol vols ref refs item "
        "tab eq pt max".split()
    ),
    "before_lowercase": tuple("e.g i.e approx appx vs cf ca incl etc al u.s u.k".split()),
    "titles": tuple("mr mrs dr prof".split()),
}
_DEFAULT = Segmenter.of(_V1_SECTIONS, marker_pattern=r"\[C\d+\]")


def split_sentences(text: str, segmenter: Segmenter | None = None) -> list[str]:
    r"""Split ``text`` into sentences, each stripped, none empty.

    Without a ``segmenter``, with the word lists of ruleset ``firewall_v1`` (a test pins
    that these equal the ruleset's file).

    >>> split_sentences("Drain at 3.5 bar, e.g. weekly. See No. 4. [C0]\n- Check v1.2 seals")
    ['Drain at 3.5 bar, e.g. weekly.', 'See No. 4. [C0]', 'Check v1.2 seals']
    """
    return (segmenter or _DEFAULT).split(text)

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
  word (``hours.Replace``; not ``ENGINE.BIN``) or to an anchor (``hours.[C0]The``), and the
  full stops, question and exclamation marks of other scripts and widths (``。``, ``｡``,
  ``‼``, ``‽``, ``।``, ``؟``), which need no space after them.
* A leading list marker (``-``, ``*``, ``•``, ``1.``, ``2)``) is not part of the sentence.
* Anchors written right after a sentence's end mark (``... monthly. [C0][C1]``) belong to
  that sentence.
"""

from __future__ import annotations

import re

__all__ = ["split_sentences"]

# Abbreviations only suppress a boundary in the context where they are unambiguous. The
# validator fails closed, so when in doubt a text is split: a wrong split can only demand an
# extra citation, a wrong merge could let an uncited sentence ride on a cited one.
_BEFORE_NUMBER = frozenset(
    "no nos sec secs fig figs art arts ch chap para paras p pp vol vols ref refs item "
    "tab eq pt max".split()
)
"""``No. 4``, ``Sec. 2``, ``p. 14``, ``max. 45 Nm``: not a boundary when a number follows.
(Not ``min.``: ``for 10 min.`` ends many a sentence.)"""
_BEFORE_LOWERCASE = frozenset("e.g i.e approx appx vs cf ca incl etc al u.s u.k".split())
"""``e.g. the``, ``approx. 45``, ``U.S. rules``: not a boundary before a lowercase word or a
number; before a capitalised word it is treated as a sentence end."""
_TITLES = frozenset("mr mrs dr prof".split())
"""``Dr. Smith``: never a boundary."""
_LIST_MARKER_RE = re.compile(r"^\s*(?:[-*•‣◦]|\d{1,3}[.)]|[a-zA-Z][.)])\s+")
# An end mark, then any closing quotes, brackets or Markdown emphasis, then a space or the
# end; an end mark glued to a capitalised word (``hours.Replace``) or to an
# anchor (``hours.[C0]The``: the anchor joins the sentence, see _TRAILING_ANCHORS_RE); or a
# full stop of another script or width, which needs no space at all.
_CLOSERS = (
    "\"'\u201d\u2019\u201c\u2018\u00bb\u203a)\\]}*_`~"
    "\u300d\u300f\u3011\u3015\u3009\u300b\uff09\uff3d\uff5d"
)
_OTHER_ENDS = (
    "\u3002\uff0e\uff01\uff1f\u2024\ufe52\uff61\ufe56\ufe57\u203c\u203d\u2047\u2048\u2049"
    "\u06d4\u061f\u0964\u0965\u1362\u1367\u0589"
)
"""Full stops, question and exclamation marks of other scripts and widths: always an end."""
_END_RE = re.compile(
    rf"(?:[.?!]+|…)[{re.escape(_CLOSERS)}]*(?=\s|$)"
    r"|(?<=[a-z0-9])[.?!](?=[A-Z][a-z])"
    r"|[.?!]+(?=\[C\d+\])"
    rf"|[{_OTHER_ENDS}]+"
)
_END_MARK_RE = re.compile(f"[.?!\u2026{_OTHER_ENDS}]")
"""The first character of every match of ``_END_RE``."""
_TRAILING_ANCHORS_RE = re.compile(r"(?:\s*\[C\d+\])+")
_MARK_RUN_RE = re.compile(r"[.?!]+")
_NEXT_CHARACTER_RE = re.compile(r"\s*(\S?)")
_WORD_WINDOW = 32
"""Characters before a mark in which the word it ends is looked for: a longer word is no
abbreviation (the longest listed is 6 letters; dotted initialisms like ``u.s.a`` are short)."""


def split_sentences(text: str) -> list[str]:
    r"""Split ``text`` into sentences, each stripped, none empty.

    >>> split_sentences("Drain at 3.5 bar, e.g. weekly. See No. 4. [C0]\n- Check v1.2 seals")
    ['Drain at 3.5 bar, e.g. weekly.', 'See No. 4. [C0]', 'Check v1.2 seals']
    """
    sentences: list[str] = []
    for raw_line in text.splitlines():
        line = _LIST_MARKER_RE.sub("", raw_line, count=1).strip()
        start = pos = 0
        # Every end starts with an end mark: find one with a plain character-class search,
        # then match the full pattern there (three times faster than finditer over the line).
        while (mark := _END_MARK_RE.search(line, pos)) is not None:
            end = _END_RE.match(line, mark.start())
            if end is None:
                # No later mark of the same run can end a sentence where its first did not
                # (each would need the same characters after the run): skip the run, or a
                # run of 50,000 dots is tried 50,000 times, each scanning to its end.
                run = _MARK_RUN_RE.match(line, mark.start())
                pos = run.end() if run is not None else mark.start() + 1
                continue
            pos = end.end()
            if not _is_boundary(line, end):
                continue
            stop = end.end()
            anchors = _TRAILING_ANCHORS_RE.match(line, stop)
            if anchors:
                stop = anchors.end()
            sentence = line[start:stop].strip()
            if sentence:
                sentences.append(sentence)
            start = stop
        rest = line[start:].strip()
        if rest:
            sentences.append(rest)
    return sentences


def _is_boundary(line: str, end: re.Match[str]) -> bool:  # noqa: PLR0911  (one rule per return)
    # Every look here is local (the next visible character, the word before the mark):
    # slicing the rest of the line or all of it before the mark, for each of hundreds of
    # marks, made a long answer quadratic.
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
    token = words[-1].lstrip("([{\"'").lower()
    if token in _TITLES:
        return False
    if token in _BEFORE_NUMBER:
        return not following.isdigit()
    if token in _BEFORE_LOWERCASE or re.fullmatch(r"(?:[a-z]\.)+[a-z]", token):
        return not (following.islower() or following.isdigit())
    return True

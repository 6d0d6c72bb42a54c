r"""Look-alike characters: ``\u0435vidence`` with a Cyrillic e, ``CONTEXT`` in full width.

A meta phrase or a chunk id written with letters that only look Latin passes any check that
compares characters. From ``firewall_v2`` the meta-commentary and leak rules read a sentence
*folded*: compatibility forms made plain (NFKC: full width, ligatures, ``\u2113``), then every
character the Unicode confusables data says looks like an ASCII letter or digit made that
letter or digit.

The table is the ruleset's ``lookalikes.lines`` (``U+0435 e``), generated from the
well-kept ``confusable-homoglyphs`` package by :func:`lookalike_lines` and frozen in the
ruleset, so the fold changes only with a new ruleset version and never with an upgrade of
the package (a test compares the two and says when a new version would differ).
"""

from __future__ import annotations

import unicodedata

from groundlock.policies.ruleset import Ruleset

__all__ = ["fold_lookalikes", "lookalike_lines"]


def _table(ruleset: Ruleset) -> dict[int, str]:
    table: dict[int, str] = {}
    for line in ruleset.entries("lookalikes"):
        code, _, plain = line.partition(" ")
        table[int(code.removeprefix("U+"), 16)] = plain.strip()
    return table


def fold_lookalikes(text: str, ruleset: Ruleset) -> str:
    """``text`` with compatibility forms and look-alikes of ASCII letters made ASCII.

    Lengths may change; ``text`` is unchanged under a ruleset without the table.
    """
    table = ruleset.compiled("lookalikes.table", _table)
    if not table or text.isascii():
        return text
    return unicodedata.normalize("NFKC", text).translate(table)


def lookalike_lines() -> list[str]:
    """The ``lookalikes.lines`` a new ruleset would freeze, from ``confusable-homoglyphs``.

    A development dependency: only this generator imports it.
    """
    import json  # noqa: PLC0415
    from importlib import resources  # noqa: PLC0415

    data = json.loads(
        resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8")
    )
    lines = []
    for character, entries in sorted(data.items()):
        if len(character) != 1 or character.isascii():
            continue
        target = next(
            (e["c"] for e in entries if len(e["c"]) == 1 and e["c"].isascii() and e["c"].isalnum()),
            None,
        )
        if target is not None:
            lines.append(f"U+{ord(character):04X} {target}")
    return lines

"""Values in text: numbers with their units, percentages, ranges, dates, times, identifiers.

``001`` P2.2 forbids an answer to introduce a numeric value, a date or an identifier its
evidence does not hold. This module finds them in a sentence and in an evidence text, each
reduced to *keys* that compare equal however the value is written:

* numbers: thousands separators (``1,800``, ``1 800``), a decimal comma where unambiguous
  (``3,5``), unicode minus signs and dashes, number words up to twenty before a unit
  (``five days``), scale words (``1.2 million``), with the unit that follows (``45 Nm`` =
  ``45 N·m`` = ``45 newton-metres``; ``5 °C`` = ``5 deg C``; up to two words between:
  ``500 operating hours``) or the currency before (``USD 10,000`` = ``$10,000``); a range
  (``3-5 bar`` with any dash, ``3 to 5 bar``, ``between 3 and 5 bar``) gives both ends its unit;
* percentages (``10%`` = ``10 percent``);
* dates (``2025-06-01`` = ``1 June 2025`` = ``June 1, 2025``; ``June 2025``; ``01/06/2025``
  read both ways) and times of day (``14:30`` = ``2:30 pm``);
* identifiers: tokens that mix letters and digits or join three digit groups
  (``SB-2025-017``, ``PV046``, ``v2.1.4``, ``29-11-05``), compared without case or
  separators.

In evidence, a number written without a unit supports that number with any unit
(``torque to 45`` supports ``45 Nm``); with a unit, only that unit. Every digit run of the
evidence also counts as a unitless number (``SB-2025-017`` holds 2025). The unit and
currency spellings are the ruleset's (``units.words``). One pass over the tokens: linear.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

__all__ = ["Value", "ValueIndex", "Vocabulary", "index_values", "placed_values", "values_in"]

_MONTHS = {
    "jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3, "apr": 4,
    "april": 4, "may": 5, "jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8,
    "sep": 9, "sept": 9, "september": 9, "oct": 10, "october": 10, "nov": 11,
    "november": 11, "dec": 12, "december": 12,
}  # fmt: skip
_ONE_WORDS = frozenset({"a", "an", "single", "per", "each", "every"})
_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "dozen": 12,
}  # fmt: skip
_GLUED_SCALES = {"bn": 10**9, "b": 10**9, "mn": 10**6, "m": 10**6, "k": 10**3}
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12,
           "bn": 10**9, "mn": 10**6}  # fmt: skip
_DASHES = str.maketrans(dict.fromkeys("\u2212\u2012\u2013\u2014\u2010\u2011\ufe63\uff0d", "-"))
_SPACES = str.maketrans(dict.fromkeys("\u00a0\u2009\u202f\u2007\u200a", " "))
_TOKEN_RE = re.compile(r"[^\W_]+(?:[-/.,:·][^\W_]+)*(?:\((?:[a-z]|[ivx]{1,4})\))?")
_NUMBER_RE = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:[.,]\d+)?")
_RANGE_RE = re.compile(r"(\d+(?:[.,]\d+)?)-(\d+(?:[.,]\d+)?)")
_GLUED_UNIT_RE = re.compile(r"(\d+(?:[.,]\d+)?)([^\W\d_]+)")
_ISO_RE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")
_NUMERIC_DATE_RE = re.compile(r"(\d{1,2})[/.](\d{1,2})[/.](\d{4}|\d{2})")
_TIME_RE = re.compile(r"(\d{1,2})[:.](\d{2})(?::(\d{2}))?")
_VALUE_RANGE_RE = re.compile(
    r"\d{1,2}:\d{2}-\d{1,2}:\d{2}|\d+(?:[.,]\d+)?-\d+[.,]\d+|\d+[.,]\d+-\d+(?:[.,]\d+)?"
)
_DIGITS_IN_BRACKETS_RE = re.compile(r"\s*\(\d+\)")
_PER_RE = re.compile(
    r"(?:\s+(?!(?:after|before|from|within|following|prior|until|by|than|since|and|or|to|is|are"
    r"|was|were|be|been)\b)"
    r"[a-z]+){0,3}?\s*(?:(?:per|a|an|each|every)\s+|/\s*)",
    re.IGNORECASE,
)
"""``per day``, ``a week``, ``/month``, after up to three words (``1.5 days of paid leave per
month``, ``$2,400 in rent each month``) that do not end the number's phrase."""
_AGO_RE = re.compile(r"\s+(?:ago|earlier|before|later|back|previously)\b", re.IGNORECASE)
_RATE_WORDS = {"daily": "day", "weekly": "week", "monthly": "month", "yearly": "year",
               "annually": "year", "hourly": "h", "nightly": "day"}  # fmt: skip
_RATE_WORD_RE = re.compile(
    r"\s+(daily|weekly|monthly|yearly|annually|hourly|nightly)\b", re.IGNORECASE
)
_COUNTED_RE = re.compile(
    r"\s+(?!(?:and|or|to|through|until|till|by|x|per|of|in|at|on|for|with|from|than|is|are"
    r"|was|were)\b)[a-z]"
)
_PREFIX_RE = re.compile(r"[A-Z]{2,6}")
_PREFIXED_PART_RE = re.compile(r"\d+(?:[-/]\w+)+")
_GLUED_SCALE_RE = re.compile(r"(\d+(?:[.,]\d+)?)(bn|b|mn|m|k)", re.IGNORECASE)
_BARE_GLUED_SCALE_RE = re.compile(r"(\d+(?:[.,]\d+)?)(k|K|bn|mn|M)")
"""A glued scale without a currency: ``m`` alone is a metre, so only ``M`` is a million."""
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
         "eighty": 80, "ninety": 90}  # fmt: skip
_UNITS_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                "eight": 8, "nine": 9}  # fmt: skip
_COMPOUND_RE = re.compile(
    r"(twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)[- ](one|two|three|four|five"
    r"|six|seven|eight|nine)\b"
    r"|(one|two|three|four|five|six|seven|eight|nine|ten|a)\s+(hundred|thousand|million"
    r"|billion)\b",
    re.IGNORECASE,
)
_OUT_OF_RE = re.compile(r"\bout\s+of\s+$", re.IGNORECASE)
_FRACTION_WORDS_RE = re.compile(
    r"(half|a\s+half|one\s+half|a\s+third|one\s+third|two\s+thirds|a\s+quarter|one\s+quarter"
    r"|three\s+quarters|three\s+fourths|a\s+fifth|one\s+fifth)(?=\s+(?:of|the|a|an)\b)",
    re.IGNORECASE,
)
_VALUE_WORDS = frozenset({*_MONTHS, *_NUMBER_WORDS, *_ONE_WORDS, "half"})
"""The lower-case words ``_Reader._read`` can read a value from or at: a month, a number
word, a word for one, and the first words of ``_COMPOUND_RE`` and ``_FRACTION_WORDS_RE``.
Any other plain lower-case word is skipped unread (issue 29: most tokens are such words)."""
_FRACTIONS = {"half": "0.5", "third": "0.3333", "thirds": "0.6667", "quarter": "0.25",
              "quarters": "0.75", "fourths": "0.75", "fifth": "0.2"}  # fmt: skip
_HEDGE_RE = re.compile(
    r"\b(?:about|around|approximately|approx\.?|roughly|nearly|almost|some|over|under"
    r"|more\s+than|less\s+than|just\s+(?:over|under)|close\s+to|circa|ca\.)\s*[$\u20ac\u00a3]?\s*$|[~\u2248]\s*$",
    re.IGNORECASE,
)
_DESIGNATED_RE = re.compile(r"(?:s|ss|sec|art|para|r|reg|cl|pt|no)\.(\d+)", re.IGNORECASE)
"""``s.23``, ``art.5``, ``para.4``: a section, article or paragraph number written glued to
its abbreviation (``section 23 of the Act`` states it)."""
_RATING_END_RE = re.compile(r"\s*(?:stars?\b|points?\b|rating\b)?\s*(?:[^\w\s]|$)", re.IGNORECASE)
_NEXT_WORDS_RE = re.compile(
    r"(?:\s+(?:main|major|key|primary|basic|important|different))?\s+([a-z]+)"
)
"""``4 out of 5 stars``: a rating's scale, the answer's way of writing the evidence's
``4 stars`` (only the usual scales, and only where no counted noun follows: ``3 out of 10
patients`` is a count)."""
_SLASHED_ISO_RE = re.compile(r"(\d{4})[/.](\d{1,2})[/.](\d{1,2})")
_PER_WORD_RE = re.compile(r"(\d+(?:[.,]\d+)?)/([^\W\d_]+)")
_FISCAL_RE = re.compile(r"FY\s?(\d{4}|\d{2})", re.IGNORECASE)
_QUARTER_RE = re.compile(r"Q([1-4])")
_QUARTER_WORDS_RE = re.compile(
    r"\b(first|second|third|fourth)\s+(?:fiscal\s+)?quarter\b", re.IGNORECASE
)
_QUARTERS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_PHONE_AFTER_RE = re.compile(r"\)[\s.-]?(\d{3})[\s.-](\d{4})\b")
_DOSING_RE = re.compile(r"q(\d{1,2})h", re.IGNORECASE)
_RATIO_RE = re.compile(r"(\d{1,3}):(\d{1,3})")
_VULGAR = {"\u00bd": ".5", "\u00bc": ".25", "\u00be": ".75"}
_VULGAR_RE = re.compile("(\\d*)([\u00bd\u00bc\u00be])")
_FRACTION_RE = re.compile(r"(\d+(?:[.,]\d+)?)/(\d+(?:[.,]\d+)?)")
_IDENTIFIER_RANGE_RE = re.compile(
    r"((?=[^\W_]*\d)(?=[^\W_]*[^\W\d_])[^\W_]+)-((?=[^\W_]*\d)(?=[^\W_]*[^\W\d_])[^\W_]+)"
)
_HYPHENATED_NUMBER_RE = re.compile(r"(\d+(?:[.,]\d+)?)-([^\W\d_]+)(?:-[^\W\d_]+)*")
_BOUND_BEFORE_RE = re.compile(
    r"(?:(?P<lower>\bat\s+least|\bn[o']t?\s+(?:less|fewer)\s+than|\bminimum(?:\s+of)?|\bmin\.?"
    r"|\bmore\s+than|\bover|\babove|\bexceeding|\bin\s+excess\s+of|\bgreater\s+than"
    r"|\bupwards\s+of|\bn(?:o|ot)\s+earlier\s+than|\bnot\s+before|\bat\s+or\s+above)"
    r"|(?P<upper>\bat\s+most|\bn(?:o|ot)\s+more\s+than|\bmaximum(?:\s+of)?|\bmax\.?|\bup\s+to"
    r"|\bless\s+than|\bfewer\s+than|\bunder|\bbelow|\bnearly|\balmost|\bn(?:o|ot)\s+later\s+than"
    r"|\bnot\s+(?:to\s+)?exceed|\bat\s+or\s+below|\bwithin))\s*[~≈]?\s*$"
)
_BOUND_AFTER_RE = re.compile(
    r"(?:\s*\([^()\n]{0,20}\))?[\s)\]]*(?:(?P<lower>or\s+(?:more|above|higher|greater|over|later|longer)|and\s+(?:above|over)|\+)"
    r"|(?P<upper>or\s+(?:less|below|lower|fewer|under|earlier|shorter)|and\s+(?:below|under)))\b"
)
_SCALED_RANGE_END_RE = re.compile(
    r"\s*(?:-|to)\s*(?P<currency>[$€£¥]|usd|eur|gbp)?\s*\d[\d.,]*\s*"
    r"(?P<scale>thousand|million|billion|trillion|bn|mn)\b",
    re.IGNORECASE,
)
_NEGATED_BOUND_RE = re.compile(r"\b(?:not|never|n't)\s+(?:[a-z]+\s+){0,2}$")
_CURRENCY_SYMBOLS_RE = re.compile(r"[$€£¥]|\b(?:usd|eur|gbp|us\$)\b|\s+$")
_DIGIT_TOKEN_RE = re.compile(r"[^\W_]*\d[^\W_]*(?:[-/.][^\W_]+)*")
_SUBPART_RE = re.compile(r"\(([a-z]|[ivx]{1,4})\)$")
_STANDALONE_SUBPART_RE = re.compile(r"(?<![\w)])\(([a-z]|[ivx]{1,4})\)")
_ORDINAL_RE = re.compile(r"(\d+)(?:st|nd|rd|th)", re.IGNORECASE)
_GLUED_TIME_RE = re.compile(r"(\d{1,2})([ap])m", re.IGNORECASE)
_DIGIT_RE = re.compile(r"\d")
_DIGIT_RUN_RE = re.compile(r"\d+")
_ALPHA_RE = re.compile(r"[^\W\d_]")
_AMPM_RE = re.compile(r"\s*([ap])\.?\s?m\b\.?", re.IGNORECASE)
_PERCENT_RE = re.compile(r"\s*(?:%|per\s?cent\b|percent\b)", re.IGNORECASE)
_SCALE_RE = re.compile(r"\s*(thousand|million|billion|trillion|bn|mn)\b", re.IGNORECASE)
_RANGE_JOIN_RE = re.compile(r"^\s*(?:-|to|and|or|through|until)\s*$", re.IGNORECASE)
_STRUCTURAL_RE = re.compile(r"(?:\bsteps?|\boptions?|\bpoints?|#)\s*$", re.IGNORECASE)
_NOT_SKIPPED = frozenset(
    "after before per of in on at by for from to with within over under between and or than "
    "since until during about around into onto upon as the a an this that its their his her "
    "each every all any".split()
)
_AMBIGUOUS_UNITS = frozenset("a in".split())
"""Unit spellings that are also words or letters: a unit only when no lowercase word
follows (``1.8 m.`` is metres; ``5 in the manual`` is no inch)."""


@dataclass(frozen=True)
class Vocabulary:
    """What the extractor needs of the ruleset: unit and currency spellings."""

    units: Mapping[str, str]
    """A unit as written, lower case (``newton metres``) -> its canonical name (``N·m``)."""
    currency: Mapping[str, str]
    """A currency written before a number (``usd``, ``$``) -> its canonical name."""
    variants: bool = False
    """``firewall_v3``'s ``value_variants``: compound number words (``forty-two``), a glued
    scale without a currency (``100k``), a tally whose numbers the evidence states apart
    (``27-17`` for ``Cowboys 27, Steelers 17``), a rating's scale (``out of 5``), a time
    without its zero (``7:5``), and counts of the answer's own enumeration (``two reasons``)."""
    discourse: frozenset[str] = frozenset()
    """Under ``variants``: nouns an answer counts its own points with (``reasons``,
    ``ways``): such a count is the answer's structure, not a value of the evidence."""
    unit_re: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        spellings = sorted(self.units, key=len, reverse=True)
        alternation = "|".join(re.escape(u).replace(r"\ ", r"[\s-]*") for u in spellings)
        unit_re = re.compile(
            rf"[\s)\]-]*(?:(?P<skip>(?:[a-z]{{3,}}[\s-]+){{0,2}}?))(?P<unit>{alternation})"
            r"(?![^\W\d_]|\d)",
            re.IGNORECASE,
        )
        object.__setattr__(self, "unit_re", unit_re)


@dataclass(frozen=True, slots=True)
class Value:
    """One value found in a text."""

    kind: str
    """``number``, ``date``, ``time`` or ``identifier``."""
    surface: str
    """As written (for messages)."""
    keys: frozenset[tuple[object, ...]]
    """What it may be read as; a value is supported when one of its keys is."""
    scale: int = 1
    """For a number: the scale word it was written with (``billion``: 10**9)."""
    bound: str | None = None
    """For a number: ``lower`` (``at least 30``, ``30 or more``), ``upper`` (``at most 30``,
    ``must not exceed 30``, ``no later than``), or None (as stated)."""


@dataclass
class ValueIndex:
    """Every key of every value of a text, for lookups."""

    keys: set[tuple[object, ...]] = field(default_factory=set)
    numbers: dict[Decimal, set[str | None]] = field(default_factory=dict)
    """Each number with the units it occurs with (None: without a unit)."""
    bounds: dict[Decimal, set[str | None]] = field(default_factory=dict)
    """Each number with the bounds it is stated with (None: as stated)."""

    def add(self, value: Value) -> None:
        """Index ``value``'s keys."""
        for key in value.keys:
            if key[0] == "n":
                number, unit = key[1], key[2]
                if isinstance(number, Decimal):
                    self.numbers.setdefault(number, set()).add(
                        unit if isinstance(unit, str) else None
                    )
                    self.bounds.setdefault(number, set()).add(value.bound)
            else:
                self.keys.add(key)

    def update(self, other: ValueIndex) -> None:
        """Add every key of ``other``."""
        self.keys |= other.keys
        for number, units in other.numbers.items():
            self.numbers.setdefault(number, set()).update(units)
        for number, bounds in other.bounds.items():
            self.bounds.setdefault(number, set()).update(bounds)

    def bounds_of(self, value: Value) -> set[str | None]:
        """The bounds the evidence states ``value``'s number with (empty: not stated)."""
        found: set[str | None] = set()
        for key in value.keys:
            if key[0] == "n" and isinstance(key[1], Decimal):
                found |= self.bounds.get(key[1], set())
        return found

    def supports(self, value: Value) -> bool:
        """Whether some key of ``value`` is here (a number: with its unit, or unitless)."""
        return any(self._holds(key) for key in value.keys)

    def _holds(self, key: tuple[object, ...]) -> bool:  # noqa: PLR0911  (one return per kind)
        if key[0] == "approx":
            return self._near(key)
        if key[0] == "both":
            # A tally or score whose two numbers the evidence states apart
            # ("Dallas Cowboys 27, Pittsburgh Steelers 17" for "27-17").
            return all(isinstance(n, int) and Decimal(n) in self.numbers for n in key[1:])
        if key[0] != "n":
            return key in self.keys
        number = key[1]
        units = self.numbers.get(number) if isinstance(number, Decimal) else None
        if units is None:
            return False
        if key[2] is None or key[2] in units:
            return True  # (a digit run inside an identifier, "#", supports a bare number)
        if isinstance(key[2], str) and any(
            isinstance(u, str) and u.startswith(f"{key[2]}/") for u in units
        ):
            return True  # "a maximum daily dose of 3 g" states "3 g per day" in words
        # Written with a unit here, the number must have that unit in the evidence; an
        # evidence that never gives the number a unit ("torque to 45") supports any.
        return None in units and not any(u not in (None, "#") for u in units)

    def _near(self, key: tuple[object, ...]) -> bool:
        """Whether a number stated here is a rounded number's within half its last digit.

        ``about 1.9 million``, ``7.8 million`` (written so by an answer), with its unit.
        """
        _, number, unit, tolerance = key
        if not isinstance(number, Decimal) or not isinstance(tolerance, Decimal):
            return False
        return any(
            abs(stated - number) <= tolerance and (unit is None or unit in units or None in units)
            for stated, units in self.numbers.items()
        )


def _readings(text: str) -> set[Decimal]:
    """The numbers a digit string may mean.

    ``1,800``: 1800 (or 1.8); ``3,5``: 3.5; ``1.800``: 1.8 (or 1800).
    """
    readings: set[Decimal] = set()
    try:
        if "," in text and "." not in text:
            head, tail = text.rsplit(",", 1)
            if len(tail) == 3:
                readings.add(Decimal(text.replace(",", "")))
                if "," not in head:
                    readings.add(Decimal(f"{head}.{tail}"))
            elif text.count(",") == 1:
                readings.add(Decimal(f"{head}.{tail}"))
        else:
            readings.add(Decimal(text.replace(",", "")))
            head, _, tail = text.partition(".")
            if len(tail) == 3 and len(head) <= 3 and "," not in text:
                readings.add(Decimal(head + tail))
    except InvalidOperation:
        return set()
    return {r.normalize() for r in readings}


def normalised(text: str) -> str:
    """``text`` with one kind of dash and minus, and plain spaces.

    Decimal halves and quarters are written out too (``2\u00bd`` is 2.5).
    """
    text = text.translate(_DASHES).translate(_SPACES)
    if any(c in text for c in _VULGAR):
        text = _VULGAR_RE.sub(lambda m: m[1] + _VULGAR[m[2]], text)
    return text


class _Reader:
    """One pass over one text's tokens."""

    def __init__(self, text: str, vocabulary: Vocabulary, *, evidence: bool = False) -> None:
        self.evidence = evidence
        """Reading evidence: every number word counts, with or without a unit."""
        self.text = normalised(text)
        self.vocabulary = vocabulary
        self.tokens = list(_TOKEN_RE.finditer(self.text))
        self.starts = {token.start(): index for index, token in enumerate(self.tokens)}
        self.used: set[int] = set()

    def values(self) -> Iterator[Value]:
        return (value for _, value in self.placed())

    def placed(self) -> Iterator[tuple[int, Value]]:
        """Each value with where its token starts in the (normalised) text."""
        pending: list[tuple[Value, int, int]] = []  # unitless numbers a range's unit may reach
        for index, token in enumerate(self.tokens):
            if index in self.used:
                continue
            word = token.group()
            if word.isascii() and word.isalpha() and word.islower() and word not in _VALUE_WORDS:
                continue  # most tokens: a plain word, which states no value and opens none
            for value in self._read(index, token):
                unit = _unit_of(value)
                if unit == "#":
                    unit = None  # a count may still be a range's first end: "3 to 5 bar"
                if value.kind == "number" and unit is None:
                    pending.append((value, token.start(), token.end()))
                elif value.kind == "number":
                    for earlier, start, end in pending[-2:]:
                        if _RANGE_JOIN_RE.match(self.text[end : token.start()]):
                            yield start, _with_unit(earlier, unit)
                    pending = []
                yield token.start(), value

    def _read(  # noqa: PLR0911, PLR0912, PLR0915  (one branch per shape of token)
        self, index: int, token: re.Match[str]
    ) -> Iterator[Value]:
        word = token.group()
        lower = word.lower()
        if _PREFIX_RE.fullmatch(word) and (joined := self._prefixed_identifier(index)):
            yield joined  # "SB 2025-017" is SB-2025-017
            return
        if lower.rstrip(".") in _MONTHS and not _DIGIT_RE.search(word):
            date = self._month_first(index)
            if date is not None:
                yield date
            return
        if not _DIGIT_RE.search(word):
            if self.vocabulary.variants and (compound := self._number_words(index)) is not None:
                yield compound
                return
            if self.vocabulary.variants and (share := self._fraction_words(index)) is not None:
                yield share
                return
            if lower in _NUMBER_WORDS:
                after = token.end()
                if (digits := _DIGITS_IN_BRACKETS_RE.match(self.text, after)) is not None:
                    after = digits.end()  # "two (2) weeks"
                unit, _ = self._with_rate(*self._unit_after(after))
                # A number word is a value where it counts a unit ("five days"). Evidence
                # counts its others too, for a bare number only ("two sons" supports "2").
                key: tuple[object, ...]
                if unit is not None:
                    key = ("n", Decimal(_NUMBER_WORDS[lower]), unit)
                    yield Value("number", word, frozenset({key}))
                elif self.evidence:
                    key = ("n", Decimal(_NUMBER_WORDS[lower]), "#")
                    yield Value("number", word, frozenset({key}))
                elif lower not in ("one", "zero", "hundred", "dozen"):
                    # "Three patients": a count, checked like "3 patients"
                    key = ("n", Decimal(_NUMBER_WORDS[lower]), None)
                    small = _NUMBER_WORDS[lower] <= 10
                    if self.vocabulary.variants and small and self._counts_points(token.end()):
                        key = ("structural",)  # "for two reasons": the answer's own points
                    yield Value("number", word, frozenset({key}))
            elif self.evidence and lower in _ONE_WORDS:
                unit, _ = self._unit_after(token.end())
                if unit is not None:  # "a single business day" supports "one business day"
                    yield Value("number", word, frozenset({("n", Decimal(1), unit)}))
            return
        if "-" in word and _VALUE_RANGE_RE.fullmatch(word):
            # "08:00-18:00", "2.6-3.2": each end on its own (a range of identifiers or of
            # "29-11-05" sections is not this shape: those keep their hyphens).
            low, _, high = word.partition("-")
            yield from self._read_part(low, token.start())
            yield from self._read_part(high, token.start() + len(low) + 1)
            return
        if (found := _PER_WORD_RE.fullmatch(word)) is not None:
            # "$0.25/share", "12 h/day": the amount, per whatever follows the slash
            value = self._number(found[1], token.start(), token.start() + len(found[1]))
            per = self.vocabulary.units.get(found[2].lower())
            unit = _unit_of(value)
            yield _with_unit(value, f"{unit}/{per}") if unit and per else value
            return
        if (found := _FISCAL_RE.fullmatch(word)) is not None:
            # "FY2023", "FY23": the fiscal year 2023 ("fiscal 2023", "fiscal year 2023")
            year = int(found[1]) + (2000 if len(found[1]) == 2 else 0)
            yield Value("number", word, frozenset({("n", Decimal(year), None)}))
            return
        if (found := _QUARTER_RE.fullmatch(word)) is not None:
            yield Value("quarter", word, frozenset({("quarter", int(found[1]))}))
            return
        if (phone := self._phone(index)) is not None:
            yield phone
            return
        if (found := _FRACTION_RE.fullmatch(word)) is not None:
            # "94/100", "3/4": a score or a ratio states both numbers
            yield self._number(found[1], token.start(), token.start() + len(found[1]))
            yield self._number(found[2], token.start() + found.start(2), token.end())
            return
        if (found := _IDENTIFIER_RANGE_RE.fullmatch(word)) is not None:
            # "FP10250-FP11874": a range of serial numbers states both ends
            for end in (found[1], found[2]):
                compact = re.sub(r"[\W_]", "", end).upper()
                yield Value("identifier", end, frozenset(_identifier_keys(end, compact)))
            return
        if (found := _HYPHENATED_NUMBER_RE.fullmatch(word)) is not None:
            # "30-day", "500-per-pallet": a number and the words it qualifies.
            unit = self.vocabulary.units.get(found[2].lower())
            yield Value("number", word, frozenset(("n", r, unit) for r in _readings(found[1])))
            return
        if (found := _GLUED_SCALE_RE.fullmatch(word)) is not None and self._currency_before(
            token.start()
        ):
            # "$1.2bn", "$145M", "EUR 20m", "€10k": a scale glued to a currency amount
            factor = _GLUED_SCALES[found[2].lower()]
            currency = self._currency_before(token.start())
            keys = frozenset(("n", (r * factor).normalize(), currency) for r in _readings(found[1]))
            yield Value("number", word, keys, scale=factor)
            return
        if self.vocabulary.variants and (found := _BARE_GLUED_SCALE_RE.fullmatch(word)) is not None:
            # "100k subscribers", "1.4M members": a scale glued to a number
            factor = _GLUED_SCALES[found[2].lower()]
            scaled = {("n", (r * factor).normalize(), None) for r in _readings(found[1])}
            compact = re.sub(r"[\W_]", "", word).upper()
            yield Value("number", word, frozenset(scaled | _identifier_keys(word, compact)))
            return
        if self.vocabulary.variants and (found := _DESIGNATED_RE.fullmatch(word)) is not None:
            compact = re.sub(r"[\W_]", "", word).upper()
            designated = {("n", Decimal(found[1]), None), *_identifier_keys(word, compact)}
            yield Value("identifier", word, frozenset(designated))
            return
        if (found := _SLASHED_ISO_RE.fullmatch(word)) is not None:
            yield from _date(word, int(found[1]), int(found[2]), int(found[3]))
            return
        if (found := _DOSING_RE.fullmatch(word)) is not None:
            yield Value("number", word, frozenset({("n", Decimal(found[1]), "h")}))
            return
        if (found := _RATIO_RE.fullmatch(word)) is not None and not _TIME_RE.fullmatch(word):
            ratio: set[tuple[object, ...]] = {("ratio", int(found[1]), int(found[2]))}
            if self.vocabulary.variants and len(found[2]) == 1 and int(found[1]) <= 24:
                ratio.add(("t", int(found[1]) * 60 + int(found[2])))  # "7:5" is 7:05
            yield Value("ratio", word, frozenset(ratio))
            return
        if (found := _ISO_RE.fullmatch(word)) is not None:
            yield from _date(word, int(found[1]), int(found[2]), int(found[3]))
            return
        if (found := _NUMERIC_DATE_RE.fullmatch(word)) is not None:
            yield from _numeric_date(word, found)
            return
        if (found := _TIME_RE.fullmatch(word)) is not None and (
            ":" in word or _AMPM_RE.match(self.text, token.end())
        ):
            yield from self._time(word, int(found[1]), int(found[2]), token.end())
            return
        if (day := _ORDINAL_RE.fullmatch(word)) is not None and len(day[1]) <= 2:
            date = self._day_first(index)  # "the 15th of June 2024"
            if date is not None:
                yield date
                return
        if word.isdigit() and len(word) <= 2:
            date = self._day_first(index)
            if date is not None:
                yield date
                return
            ampm = _AMPM_RE.match(self.text, token.end())
            if ampm is not None:
                yield from self._time(word, int(word), 0, token.end())
                return
        if _NUMBER_RE.fullmatch(word):
            yield self._number(word, token.start(), token.end())
            return
        if (found := _RANGE_RE.fullmatch(word)) is not None:
            first = self._number(found[1], token.start(), token.start() + len(found[1]))
            second = self._number(found[2], token.start() + found.start(2), token.end())
            unit = _unit_of(second)
            if unit in (None, "#") and found[1].isdigit() and found[2].isdigit():
                ahead, behind = int(found[1]), int(found[2])
                if ahead > behind:
                    # "a 6-3 majority", "won 3-1": a tally, read in its order (a range
                    # runs upwards); evidence's supports its numbers too ("7 to 2")
                    tally: set[tuple[object, ...]] = {("ratio", ahead, behind)}
                    if self.vocabulary.variants and not self.evidence:
                        tally.add(("both", ahead, behind))  # "Cowboys 27, Steelers 17"
                    yield Value("ratio", word, frozenset(tally))
                    if self.evidence:
                        yield first
                        yield second
                    return
            yield _with_unit(first, unit) if unit else first
            yield second
            return
        if (found := _ORDINAL_RE.fullmatch(word)) is not None:
            yield self._number(found[1], token.start(), token.end())
            return
        if (found := _GLUED_TIME_RE.fullmatch(word)) is not None:
            hour = int(found[1]) % 12 + (12 if found[2].lower() == "p" else 0)
            if int(found[1]) <= 12:
                yield Value("time", word, frozenset({("t", hour * 60)}))
            return
        if (found := _GLUED_UNIT_RE.fullmatch(word.replace("-", ""))) is not None:
            unit = self.vocabulary.units.get(found[2].lower())
            if unit is not None:
                for reading in _readings(found[1]):
                    yield Value("number", word, frozenset({("n", reading, unit)}))
                return
        if _ALPHA_RE.search(word) or word.count("-") + word.count("/") + word.count(".") >= 2:
            compact = re.sub(r"[\W_]", "", word).upper()
            yield Value("identifier", word, frozenset(_identifier_keys(word, compact)))

    def _fraction_words(self, index: int) -> Value | None:
        """``three quarters of``, ``half the``: a share, the evidence's 75 % or 0.75."""
        found = _FRACTION_WORDS_RE.match(self.text, self.tokens[index].start())
        if found is None:
            return None
        share = Decimal(_FRACTIONS[found[1].split()[-1].lower()])
        for following in range(index + 1, len(self.tokens)):
            if self.tokens[following].start() >= found.end():
                break
            self.used.add(following)
        keys: set[tuple[object, ...]] = {
            ("n", share, None),
            ("n", (share * 100).quantize(Decimal(1)), "%"),
            ("approx", share, None, Decimal("0.01")),
        }
        return Value("number", found.group(), frozenset(keys))

    def _number_words(self, index: int) -> Value | None:
        """``forty-two``, ``forty two``, ``two hundred``, ``a thousand`` (``value_variants``)."""
        token = self.tokens[index]
        found = _COMPOUND_RE.match(self.text, token.start())
        if found is None:
            return None
        if found[1] is not None:
            number = _TENS[found[1].lower()] + _UNITS_WORDS[found[2].lower()]
        else:
            head = found[3].lower()
            multiplier = 1 if head == "a" else _NUMBER_WORDS[head]
            number = multiplier * {"hundred": 100, "thousand": 10**3, "million": 10**6,
                                   "billion": 10**9}[found[4].lower()]  # fmt: skip
        for following in range(index + 1, len(self.tokens)):
            if self.tokens[following].start() >= found.end():
                break
            self.used.add(following)
        unit, _ = self._with_rate(*self._unit_after(found.end()))
        return Value("number", found.group(), frozenset({("n", Decimal(number), unit)}))

    def _rating_scale(self, start: int, end: int) -> bool:
        """Under ``value_variants``: a rating's scale (``4 out of 5 stars`` for ``4 stars``)."""
        text = self.text
        if not _OUT_OF_RE.search(text[max(0, start - 12) : start]):
            return False
        return text[start:end].strip() in ("5", "10", "100") and bool(
            _RATING_END_RE.match(text, end)
        )

    def _counts_points(self, end: int) -> bool:
        """Under ``value_variants``: a number word counting the answer's own points.

        ``for two major reasons``, ``in three ways``: the answer's structure, not a count
        the evidence states (``two colleges`` is still a claim).
        """
        following = _NEXT_WORDS_RE.match(self.text, end)
        return following is not None and following[1].lower() in self.vocabulary.discourse

    def _read_part(self, part: str, start: int) -> Iterator[Value]:
        time = _TIME_RE.fullmatch(part)
        if time is not None and ":" in part:
            yield from self._time(part, int(time[1]), int(time[2]), start + len(part))
        elif _NUMBER_RE.fullmatch(part):
            yield self._number(part, start, start + len(part))

    def _number(self, digits: str, start: int, end: int) -> Value:
        readings = _readings(digits)
        text = self.text
        # Thousands grouped with spaces: "10 000 000".
        while re.match(r" \d{3}(?!\d|[.,]\d)", text[end : end + 6]) and "," not in digits:
            following = self._token_at(end + 1)
            if following is None:
                break
            self.used.add(following)
            digits += text[end + 1 : end + 4]
            end += 4
            readings = _readings(digits)
        negative = (
            start > 0 and text[start - 1] == "-" and (start < 2 or not text[start - 2].isalnum())
        )
        unit: str | None = None
        scale_factor = 1
        if (percent := _PERCENT_RE.match(text, end)) is not None:
            unit, end = "%", percent.end()
        elif (ahead := _SCALED_RANGE_END_RE.match(text, end)) is not None and (
            bool(ahead["currency"]) == bool(self._currency_before(start))
        ):
            # "$1.30-$1.35 billion", "1.2 to 1.5 million": the range's end scales both ends.
            scale_factor = _SCALES[ahead["scale"].lower()]
            readings = {(r * scale_factor).normalize() for r in readings}
        elif (scale := _SCALE_RE.match(text, end)) is not None:
            scale_factor = _SCALES[scale[1].lower()]
            readings = {(r * scale_factor).normalize() for r in readings}  # $1.3 bn is 1.3e9
            end = scale.end()
        if unit is None:
            unit = self._currency_before(start)
        if unit is None:
            unit, end = self._unit_after(end)
        unit, end = self._with_rate(unit, end)  # "$85 per day", "1.5 days a week"
        if unit is None and self.evidence and _COUNTED_RE.match(text, end):
            # "12 firefighters": a count of something, not a measure; it supports the bare
            # number, never a unit the answer gives it.
            unit = "#"
        signs = ((-1,) if self.evidence else (-1, 1)) if negative else (1,)
        # A minus the evidence writes as a word ("down 2.3%") is matched by the bare number;
        # a minus dropped from the evidence's number is not.
        keys: frozenset[tuple[object, ...]] = frozenset(
            ("n", (sign * r).normalize(), unit) for r in readings for sign in signs
        )
        if unit is None and _STRUCTURAL_RE.search(text[max(0, start - 10) : start]):
            keys = frozenset({("structural",)})  # "Step 3": the answer's own numbering
        elif self.vocabulary.variants and unit in (None, "#") and self._rating_scale(start, end):
            keys = frozenset({("structural",)})
        bound = self._bound(start, end)
        if self.vocabulary.variants and not self.evidence and unit not in ("#",):
            rounded = self._rounded(digits, start, scale_factor, unit)
            if rounded is not None:
                keys = keys | {rounded}
        return Value("number", text[start:end].strip(), keys, scale=scale_factor, bound=bound)

    def _rounded(
        self, digits: str, start: int, scale: int, unit: str | None
    ) -> tuple[object, ...] | None:
        """``value_variants``: an answer's number written rounded, as an ``approx`` key.

        Rounded where a scale word says so (``7.8 million``) or a hedge does (``about 88
        percent``): then it stands for any number within half a unit of its last digit.
        """
        hedged = _HEDGE_RE.search(self.text[max(0, start - 24) : start]) is not None
        if scale == 1 and not hedged:
            return None
        readings = _readings(digits)
        if len(readings) != 1:
            return None
        _, _, decimals = digits.partition(".")
        step = Decimal(1).scaleb(-len(decimals)) * scale
        return ("approx", next(iter(readings)) * scale, unit, step / 2)

    def _bound(self, start: int, end: int) -> str | None:
        before = _CURRENCY_SYMBOLS_RE.sub("", self.text[max(0, start - 32) : start].lower())
        if (found := _BOUND_BEFORE_RE.search(before)) is not None:
            bound = "lower" if found["lower"] else "upper"
            if _NEGATED_BOUND_RE.search(before[: found.start()]):
                # "must not go above 1.5 bar", "not exceeding EUR 25": the other bound
                bound = "upper" if bound == "lower" else "lower"
            return bound
        if (found := _BOUND_AFTER_RE.match(self.text, end)) is not None:
            return "lower" if found["lower"] else "upper"
        return None

    def _phone(self, index: int) -> Value | None:
        """``(800) 555-0199``: a telephone number, one identifier (``1-800-555-0199``)."""
        token = self.tokens[index]
        start = token.start()
        if len(token.group()) != 3 or not token.group().isdigit():
            return None
        if start == 0 or self.text[start - 1] != "(":
            return None
        found = _PHONE_AFTER_RE.match(self.text, token.end())
        if found is None:
            return None
        for offset in (1, 2):
            if (
                index + offset < len(self.tokens)
                and self.tokens[index + offset].start() < found.end()
            ):
                self.used.add(index + offset)
        surface = self.text[start - 1 : found.end()]
        compact = token.group() + found[1] + found[2]
        return Value("identifier", surface, frozenset(_identifier_keys(surface, compact)))

    def _prefixed_identifier(self, index: int) -> Value | None:
        following = self._next(index, gap=1)
        if following is None or not _PREFIXED_PART_RE.fullmatch(following.group()):
            return None
        self.used.add(index + 1)
        surface = self.text[self.tokens[index].start() : following.end()]
        compact = re.sub(r"[\W_]", "", surface).upper()
        return Value("identifier", surface, frozenset(_identifier_keys(surface, compact)))

    def _per_unit(self, at: int) -> tuple[str, int] | None:
        if (rate := _RATE_WORD_RE.match(self.text, at)) is not None:
            return _RATE_WORDS[rate[1].lower()], rate.end()  # "3 g daily" is 3 g per day
        found = _PER_RE.match(self.text, at)
        if found is None:
            return None
        unit, end = self._unit_after(found.end(), skip=False)
        if unit is None:
            return None
        if self.vocabulary.variants and _AGO_RE.match(self.text, end):
            return None  # "42.9% a year ago" is last year's 42.9 %, no yearly rate
        return unit, end

    def _with_rate(self, unit: str | None, end: int) -> tuple[str | None, int]:
        """``unit`` with the rate written after it (``days a week``: ``day/week``)."""
        if unit is not None and (per := self._per_unit(end)) is not None:
            return f"{unit}/{per[0]}", per[1]
        return unit, end

    def _token_at(self, position: int) -> int | None:
        return self.starts.get(position)

    def _unit_after(self, at: int, *, skip: bool = True) -> tuple[str | None, int]:
        found = self.vocabulary.unit_re.match(self.text, at)
        if found is None or (found["skip"] and not skip):
            return None, at
        if found["skip"] and set(found["skip"].lower().split()) & _NOT_SKIPPED:
            return None, at  # "142.18 after hours": a preposition ends the number's phrase
        if found["skip"] and len(found["unit"]) <= 2:
            return None, at  # "3 lies in Zone A": after skipped words, a short unit is a word
        written = re.sub(r"[\s-]+", " ", found["unit"].lower()).strip()
        if written in _AMBIGUOUS_UNITS and re.match(r" +[a-z]", self.text[found.end() :]):
            return None, at  # "5 in the manual", "3 a day": a word, not a unit
        unit = self.vocabulary.units.get(written)
        if unit is None:
            unit = self.vocabulary.units.get(written.replace(" ", ""))
        return (unit, found.end()) if unit is not None else (None, at)

    def _currency_before(self, start: int) -> str | None:
        before = self.text[max(0, start - 6) : start].lower().rstrip()
        for written, name in self.vocabulary.currency.items():
            if before.endswith(written) and (
                len(before) == len(written) or not before[-len(written) - 1].isalnum()
            ):
                return name
        return None

    def _time(self, word: str, hour: int, minute: int, end: int) -> Iterator[Value]:
        ampm = _AMPM_RE.match(self.text, end)
        if ampm is not None:
            if not 1 <= hour <= 12:
                return
            hour = hour % 12 + (12 if ampm[1].lower() == "p" else 0)
            word = f"{word}{ampm.group()}"
        if hour <= 24 and minute <= 59:
            yield Value("time", word.strip(), frozenset({("t", hour * 60 + minute)}))

    def _next(self, index: int, gap: int = 8) -> re.Match[str] | None:
        if index + 1 >= len(self.tokens):
            return None
        token, following = self.tokens[index], self.tokens[index + 1]
        between = self.text[token.end() : following.start()]
        return following if len(between) <= gap and "\n" not in between else None

    def _year_after(self, index: int) -> int | None:
        following = self._next(index, gap=3)
        if following is not None and re.fullmatch(r"\d{4}", following.group()):
            self.used.add(index + 1)
            return int(following.group())
        return None

    def _month_first(self, index: int) -> Value | None:
        month = _MONTHS[self.tokens[index].group().lower().rstrip(".")]
        following = self._next(index, gap=3)
        if following is None:
            return None
        written = following.group()
        start = self.tokens[index].start()
        day = re.fullmatch(r"(\d{1,2})(?:st|nd|rd|th)?", written, re.IGNORECASE)
        if day is not None and self.text[following.end() : following.end() + 1] != ":":
            self.used.add(index + 1)
            year = self._year_after(index + 1)
            end = self.tokens[index + 2].end() if year is not None else following.end()
            return next(_date(self.text[start:end], year, month, int(day[1])), None)
        if re.fullmatch(r"\d{4}", written):
            self.used.add(index + 1)
            return next(_date(self.text[start : following.end()], int(written), month, None), None)
        return None

    def _day_first(self, index: int) -> Value | None:
        following = self._next(index, gap=3)
        if following is not None and following.group().lower() == "of":
            following = self._next(index + 1, gap=3)
            skip = 2
        else:
            skip = 1
        if following is None or following.group().lower().rstrip(".") not in _MONTHS:
            return None
        for offset in range(1, skip + 1):
            self.used.add(index + offset)
        year = self._year_after(index + skip)
        month = _MONTHS[following.group().lower().rstrip(".")]
        last = self.tokens[index + skip + (1 if year is not None else 0)]
        surface = self.text[self.tokens[index].start() : last.end()]
        day = int(_DIGIT_RUN_RE.match(self.tokens[index][0])[0])  # type: ignore[index]
        return next(_date(surface, year, month, day), None)


def _identifier_keys(word: str, compact: str) -> set[tuple[object, ...]]:
    keys: set[tuple[object, ...]] = {("id", compact)}
    if (part := _SUBPART_RE.search(word)) is not None:
        # "§ 7-204(b)": a statute writes its subsection "(b)" under "§ 7-204".
        base = re.sub(r"[\W_]", "", word[: part.start()]).upper()
        keys.add(("sub", base, part.group(1).lower()))
    if compact[0] == "V" and compact[1:].isdigit():
        keys.add(("id", compact[1:]))  # "v2.1.4" is version 2.1.4
    elif compact.isdigit():
        keys.add(("id", f"V{compact}"))
        if len(compact) == 11 and compact[0] == "1":
            keys.add(("id", compact[1:]))  # "1-800-555-0199" is "(800) 555-0199"
    return keys


def _unit_of(value: Value) -> str | None:
    return next((k[2] for k in value.keys if k[0] == "n" and isinstance(k[2], str)), None)


def _with_unit(value: Value, unit: str | None) -> Value:
    keys = frozenset(("n", k[1], unit) if k[0] == "n" else k for k in value.keys)
    return Value(value.kind, value.surface, keys, scale=value.scale, bound=value.bound)


def _date(surface: str, year: int | None, month: int, day: int | None) -> Iterator[Value]:
    if not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31):
        return
    if year is not None and day is not None:
        key: tuple[object, ...] = ("ymd", year, month, day)
    elif year is not None:
        key = ("ym", year, month)
    else:
        key = ("md", month, day)
    yield Value("date", surface, frozenset({key}))


def _numeric_date(surface: str, found: re.Match[str]) -> Iterator[Value]:
    """``01/06/2025``: read both ways where both are dates.

    Day-first and month-first are both common: an answer writing the evidence's 1 December
    2024 as ``12/01/2024`` is right for half its readers, and no rule can tell which half it
    wrote for (a date whose day and month were swapped passes the same way: the judge's to
    catch).
    """
    a, b, year = int(found[1]), int(found[2]), int(found[3])
    year += 2000 if year < 100 else 0
    keys: set[tuple[object, ...]] = {
        ("ymd", year, m, d) for d, m in ((a, b), (b, a)) if 1 <= m <= 12 and 1 <= d <= 31
    }
    if not keys:
        return
    keys.add(("ndate", a, b, year))
    yield Value("date", surface, frozenset(keys))


def values_in(text: str, vocabulary: Vocabulary, *, evidence: bool = False) -> Iterator[Value]:
    """Every value of ``text``, in order (of evidence: number words without units too)."""
    return _Reader(text, vocabulary, evidence=evidence).values()


def placed_values(text: str, vocabulary: Vocabulary) -> Iterator[tuple[int, Value]]:
    """Every value of an evidence ``text`` with where it starts.

    (A vulgar fraction before it, ``2\u00bd``, shifts the position by one.)
    """
    return _Reader(text, vocabulary, evidence=True).placed()


def index_values(text: str, vocabulary: Vocabulary) -> ValueIndex:
    """Every value of an evidence ``text``, indexed with the parts it holds."""
    index = ValueIndex()
    for value in values_in(text, vocabulary, evidence=True):
        index.add(value)
        for key in value.keys:
            if key[0] == "ymd":
                _, year, month, day = key
                index.keys.update({("ym", year, month), ("md", month, day)})
        if value.kind == "date":
            # A date's year is a number of the evidence too ("in 2025"), written bare. (The
            # digits of an identifier are not: "SB-2025-017" states no 17 of anything.)
            for part in re.findall(r"\d{4}", value.surface):
                index.numbers.setdefault(Decimal(part).normalize(), set()).add("#")
    index.keys.add(("structural",))
    for found in _QUARTER_WORDS_RE.finditer(text):
        index.keys.add(("quarter", _QUARTERS[found[1].lower()]))
    subparts = {m.lower() for m in _STANDALONE_SUBPART_RE.findall(text)}
    if subparts:
        bases = {re.sub(r"[\W_]", "", t).upper() for t in _DIGIT_TOKEN_RE.findall(text)}
        index.keys.update(("sub", base, part) for base in bases for part in subparts)
    return index

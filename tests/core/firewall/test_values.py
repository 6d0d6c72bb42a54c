"""Values compare however they are written, and only when they are the same value."""

from __future__ import annotations

import re

import pytest

from groundlock.core.firewall.facts import vocabulary
from groundlock.core.firewall.values import index_values, values_in
from groundlock.policies.ruleset import load_ruleset

VOCABULARY = vocabulary(load_ruleset("firewall_v2"))


def supported(evidence: str, answer: str) -> bool:
    index = index_values(evidence, VOCABULARY)
    found = list(values_in(answer, VOCABULARY))
    assert found, f"no value read in {answer!r}"
    return all(index.supports(value) for value in found)


@pytest.mark.parametrize(
    ("evidence", "answer"),
    [
        ("must not exceed 3.5 bar at 1,800 rpm", "1800 rpm"),
        ("must not exceed 3.5 bar", "3,5 bar"),
        ("torque to 45 Nm", "45 N·m"),
        ("torque to 45 Nm", "45 newton-metres"),
        ("held at 63 °C or above", "63 degrees C"),
        ("every 500 operating hours", "500 hours"),
        ("within five working days", "5 working days"),
        ("not less than two (2) weeks' written notice", "2 weeks"),
        ("between 3 and 5 bar", "3 bar"),
        ("3\u20135 bar", "5 bar"),
        ("a fine of up to EUR 10 000 000", "EUR 10,000,000"),
        ("revenue of $1.27 billion", "$1,270 million"),
        ("guidance of $1.30\u2013$1.35 billion", "$1.30 billion"),
        ("up 14.2% year over year", "14.2 percent"),
        ("dated 2025-06-01", "1 June 2025"),
        ("dated 2025-06-01", "June 1, 2025"),
        ("on 01/06/2025", "2025-06-01"),
        ("in June 2025", "June 2025"),
        ("open 08:00\u201318:00", "8 am"),
        ("at 14:30", "2:30 pm"),
        ("bulletin SB-2025-017", "SB 2025-017"),
        ("firmware v2.1.4", "version 2.1.4"),
        ("§ 7-204. (a) A warehouse is liable. (b) Damages may be limited.", "§ 7-204(b)"),
        ("serials FP10250 to FP11874", "FP10250\u2013FP11874"),
        ("a score of 94/100", "94"),
        ("the older of two sons", "2"),
        ("at \u221240 \u00b0C", "-40 °C"),
        ("up to 2 days per week", "two days a week"),
        ("1.5 days of paid leave per month", "1.5 days per month"),
        ("rent of $2,400 per month", "$2,400 in rent each month"),
        ("do not exceed 3 g per day", "3 g"),
        ("do not exceed 3 g per day", "3 g daily"),
        ("a dividend of $0.25 per share", "$0.25/share"),
        ("payable on June 15, 2024", "the 15th of June 2024"),
        ("revenue for fiscal 2023", "FY2023"),
        ("in the first quarter of 2024", "Q1 2024"),
        ("call 1-800-555-0199", "(800) 555-0199"),
        ("upgrade by December 1, 2024", "12/01/2024"),
        ("on 2024-11-03", "03.11.2024"),
        ("for a 6-3 majority", "6\u20133"),
        ("voted 7-2", "7 to 2"),
    ],
)
def test_the_same_value_written_otherwise_is_supported(evidence, answer):
    assert supported(evidence, answer)


@pytest.mark.parametrize(
    ("evidence", "answer"),
    [
        ("every 500 operating hours", "250 operating hours"),
        ("must not exceed 3.5 bar", "5.3 bar"),
        ("must not exceed 3.5 bar", "3.5 psi"),
        ("torque to 45 Nm", "45 bar"),
        ("not less than two (2) weeks' written notice", "two months"),
        ("KVO rate 1 mL/h", "1 mL/min"),
        ("guidance of $1.30\u2013$1.35 billion", "$1.30 million"),
        ("dated 2025-06-01", "2 June 2025"),
        ("at 14:30", "2:30 am"),
        ("bulletin SB-2025-017", "SB-2025-018"),
        ("at \u221240 \u00b0C", "40 °C"),
        ("1.5 days of paid leave per month", "1.5 days of paid leave per week"),
        ("up to 2 days per week", "two days a month"),
        ("do not exceed 3 g per day", "3 g per week"),
        ("in the first quarter of 2024", "Q2 2024"),
        ("call 1-800-555-0199", "(800) 555-0198"),
        ("for a 6-3 majority", "5-4"),
        ("500 mg every 8 hours", "500 mg every 6 hours"),
    ],
)
def test_a_changed_value_or_unit_is_not_supported(evidence, answer):
    assert not supported(evidence, answer)


def test_bounds_are_read_before_and_after_a_value():
    (at_least,) = values_in("at least 30 minutes", VOCABULARY)
    (or_below,) = values_in("135 °F or below", VOCABULARY)
    (not_over,) = values_in("must not go above 1.5 bar", VOCABULARY)
    assert (at_least.bound, or_below.bound, not_over.bound) == ("lower", "upper", "upper")


def test_every_word_a_number_phrase_can_open_with_is_read() -> None:
    # _Reader skips a plain lower-case word outside _VALUE_WORDS unread (issue 29): exact
    # only while every phrase _COMPOUND_RE and _FRACTION_WORDS_RE match opens with one.
    from groundlock.core.firewall import values  # noqa: PLC0415

    for pattern in (values._COMPOUND_RE, values._FRACTION_WORDS_RE):
        openers: set[str] = set()
        for alternative in re.split(r"\|(?![^()]*\))", pattern.pattern):
            assert alternative.startswith("("), alternative
            first_group = alternative[1 : alternative.index(")")]
            openers.update(re.match(r"[a-z]+", a)[0] for a in first_group.split("|"))  # type: ignore[index]
        assert len(openers) >= 5
        assert openers <= values._VALUE_WORDS, openers - values._VALUE_WORDS

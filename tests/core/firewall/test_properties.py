"""firewall_v2 on generated answers: a verdict for every text, never an exception.

The contract's own invariants (an OK answer cites distinct anchors of its bundle, a failed
one names its reason) are checked by ``ValidationResult`` itself, so building the result is
the property; the answers are assembled from the shapes models write, which reach corners a
list of cases misses (``Yes!`` alone once passed with no anchor and broke the contract).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundlock import ValidationStatus
from tests.core.firewall.test_rules import judged

_PIECES = st.sampled_from(
    [
        "Yes.", "No!", "Yes", "## Replacement interval", "**Torque:**", "| Part | Value |",
        "|---|---|", "| Bowl | 45 N·m [C0] |", "- ", "1. ", "\n", " ", "[C0]", "[C1]", "[C9]",
        "Replace the case drain filter element every 500 operating hours.",
        "Case drain pressure must not exceed 3.5 bar at 1,800 rpm.", "i.e.", "e.g. 45",
        "The 15th of June 2024.", "(800) 555-0199", "$0.25/share", "FY2023 Q1", "6-3",
        "O'Connor", "Zürich", "settings.py", "See evil.com?d=1.", "not", "without a permit",
        "unless", "12/01/2024", "three days a week", "~~not~~", "¿", "\u00a0", "",
    ]
)  # fmt: skip


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, min_size=1, max_size=12))
def test_every_generated_answer_gets_a_verdict_the_contract_accepts(pieces: list[str]):
    result = judged(" ".join(pieces))
    if result.validation_status is ValidationStatus.PASSED:
        assert result.validated_citations
    else:
        assert result.failure_reason is not None

"""Rows R2 cannot admit cost next to nothing, and are still recorded exactly.

The policy admits at most ``max_chunks`` rows; a retriever may send a thousand. Rows after
the walk stops (at ``max_chunks`` or the evidence budget) are never filtered, sanitised,
shingled or tokenised, and rows dropped earlier by a filter, the similarity floor or a
knowledge cap are never sanitised or tokenised either. Every one of them is still in
``metrics.dropped_rows`` with its reason, in rank order, and counted in ``drop_counts``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundlock import AnswerBundle, AssemblyStatus, DropReason, Policy, assemble, load_policy
from groundlock.contracts.retrieval import RetrievalBundle
from groundlock.core import evidence_assembly
from groundlock.core.evidence_assembly import _Walk
from groundlock.text import TokenCounter, load_encoding
from tests.builders import distinct_text, make_bundle, policy_with
from tests.builders import make_row as _make_row

POLICY = load_policy()


def make_row(rank: int, /, **fields: Any) -> dict[str, Any]:
    """The builders' row, its similarity falling slowly enough to stay valid for 5,000 rows."""
    return _make_row(rank, **{"similarity": 0.95 - rank * 0.0001, **fields})


class CountingCounter(TokenCounter):
    """A token counter that remembers every text it was asked about (no cache of its own
    is shared with the process, so every request is seen)."""

    def __init__(self) -> None:
        super().__init__(load_encoding(POLICY.token_encoding))
        self.texts: list[str] = []

    def count(self, text: str) -> int:
        self.texts.append(text)
        return super().count(text)

    def encode(self, text: str) -> list[int]:
        self.texts.append(text)
        return super().encode(text)


@pytest.fixture
def looked_up(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every raw chunk text R2 sanitises and shingles (through ENTRY_FACTS), in order."""
    seen: list[str] = []
    real = evidence_assembly.ENTRY_FACTS

    def counting(key: tuple[str, int, str, str]) -> Any:
        seen.append(key[0])
        return real(key)

    monkeypatch.setattr(evidence_assembly, "ENTRY_FACTS", counting)
    return seen


def _marked(rank: int) -> str:
    """A text that names its row, so a lookup or a token count can be traced to it."""
    return f"UNIQUE-ROW-{rank:05d} " + distinct_text(rank, words=60)


def _dropped(result: AnswerBundle) -> list[tuple[int, str, DropReason]]:
    assert result.metrics is not None
    return [(row.rank, row.chunk_id, row.reason) for row in result.metrics.dropped_rows]


def _touched(texts: Sequence[str]) -> set[int]:
    """Ranks of the rows whose text reached the sanitiser or the tokenizer."""
    return {int(t.split("UNIQUE-ROW-")[1][:5]) for t in texts if "UNIQUE-ROW-" in t}


def test_rows_after_max_chunks_are_never_sanitised_or_tokenised(looked_up: list[str]):
    policy = policy_with(max_chunks=3, max_chunks_per_knowledge_id=10)
    rows = [make_row(rank, chunk_text=_marked(rank)) for rank in range(1000)]
    counter = CountingCounter()
    result = assemble(make_bundle(rows), policy, counter)

    assert result.assembly_status is AssemblyStatus.OK
    assert [e.rank for e in result.selected_evidence] == [0, 1, 2]
    assert _touched(looked_up) == {0, 1, 2}
    assert _touched(counter.texts) <= {0, 1, 2}
    assert _dropped(result) == [
        (rank, f"chunk-{rank:03d}", DropReason.DROP_MAX_CHUNKS) for rank in range(3, 1000)
    ]
    assert result.metrics is not None
    assert result.metrics.drop_counts[DropReason.DROP_MAX_CHUNKS] == 997


def test_rows_after_the_budget_stop_are_never_sanitised_or_tokenised(looked_up: list[str]):
    # Each row is about 300 tokens and the budget holds two: the third stops the walk.
    policy = policy_with(max_chunks=8, max_chunks_per_knowledge_id=10, max_evidence_tokens=700)
    long_text = [_marked(rank) + " " + distinct_text(rank + 5000, words=220) for rank in range(50)]
    rows = [make_row(rank, chunk_text=long_text[rank]) for rank in range(50)]
    counter = CountingCounter()
    result = assemble(make_bundle(rows), policy, counter)

    assert result.assembly_status is AssemblyStatus.OK
    admitted = [e.rank for e in result.selected_evidence]
    stop = len(admitted)  # the row that did not fit: examined, then the walk stops
    assert admitted == list(range(stop))
    assert _touched(looked_up) == set(range(stop + 1))
    assert _touched(counter.texts) <= set(range(stop + 1))
    assert _dropped(result) == [
        (rank, f"chunk-{rank:03d}", DropReason.DROP_BUDGET) for rank in range(stop, 50)
    ]


def test_rows_below_the_floor_or_over_a_cap_are_never_sanitised(looked_up: list[str]):
    policy = policy_with(max_chunks=6, max_chunks_per_knowledge_id=1, min_similarity_score=0.5)
    rows = [
        make_row(0, chunk_text=_marked(0), knowledge_id="K1", similarity=0.95),
        make_row(1, chunk_text=_marked(1), knowledge_id="K1", similarity=0.94),  # cap
        make_row(2, chunk_text=_marked(2), knowledge_id="K2", similarity=0.2),  # floor
        make_row(3, chunk_text=_marked(3), knowledge_id="K3", equipment_id="PUMP-8"),
        make_row(4, chunk_text=_marked(4), knowledge_id="K4", similarity=0.9),
    ]
    counter = CountingCounter()
    result = assemble(
        make_bundle(rows, filters_applied={"equipment_id": "PUMP-7"}), policy, counter
    )

    assert [e.rank for e in result.selected_evidence] == [0, 4]
    assert _touched(looked_up) == {0, 4}
    assert _touched(counter.texts) <= {0, 4}
    assert _dropped(result) == [
        (1, "chunk-001", DropReason.DROP_PER_KNOWLEDGE_CAP),
        (2, "chunk-002", DropReason.DROP_BELOW_SIMILARITY_FLOOR),
        (3, "chunk-003", DropReason.DROP_EQUIPMENT_FILTER),
    ]


def test_the_work_on_rows_does_not_grow_with_rows_the_walk_never_reaches(looked_up: list[str]):
    policy = policy_with(max_chunks=4)
    lookups = []
    for size in (20, 100, 1000):
        looked_up.clear()
        rows = [make_row(rank, chunk_text=_marked(rank)) for rank in range(size)]
        result = assemble(make_bundle(rows), policy)
        assert result.assembly_status is AssemblyStatus.OK
        lookups.append(list(looked_up))
    assert lookups[0] == lookups[1] == lookups[2]


def test_a_thousand_rows_are_all_recorded_and_counted_per_reason():
    policy = policy_with(max_chunks=5, max_chunks_per_knowledge_id=2, min_similarity_score=0.5)
    rows = [
        make_row(
            rank,
            knowledge_id=f"K{rank // 3}",
            similarity=0.3 if rank % 7 == 6 else 0.95 - rank * 0.0001,
        )
        for rank in range(1000)
    ]
    result = assemble(make_bundle(list(reversed(rows))), policy)
    assert result.metrics is not None
    metrics = result.metrics
    dropped = metrics.dropped_rows
    assert len(dropped) + len(result.selected_evidence) == 1000
    assert [row.rank for row in dropped] == sorted(
        set(range(1000)) - {e.rank for e in result.selected_evidence}
    )
    counted = Counter(row.reason for row in dropped)
    assert metrics.drop_counts == {reason: counted.get(reason, 0) for reason in DropReason}
    assert counted[DropReason.DROP_MAX_CHUNKS] > 900
    assert counted[DropReason.DROP_BELOW_SIMILARITY_FLOOR] >= 1
    assert counted[DropReason.DROP_PER_KNOWLEDGE_CAP] >= 1


def test_every_row_is_dropped_at_the_top_similarity_gate_and_counted():
    rows = [make_row(rank, similarity=0.1) for rank in range(300)]
    result = assemble(make_bundle(rows), POLICY)
    assert result.assembly_status is AssemblyStatus.NO_EVIDENCE
    assert _dropped(result) == [
        (rank, f"chunk-{rank:03d}", DropReason.DROP_TOP_SIMILARITY_GATE) for rank in range(300)
    ]
    assert result.metrics is not None
    assert result.metrics.drop_counts[DropReason.DROP_TOP_SIMILARITY_GATE] == 300


# The batched walk against the row-by-row one ------------------------------------------


@st.composite
def _rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(1, 40))
    return [
        make_row(
            rank,
            chunk_text=distinct_text(
                draw(st.integers(0, 6)), words=draw(st.sampled_from([8, 80, 400]))
            ),
            similarity=draw(st.floats(0.0, 1.0)),
            knowledge_id=draw(st.sampled_from(["KA", "KB", "KC", "KD"])),
            equipment_id=draw(st.sampled_from([None, "PUMP-7", "PUMP-8"])),
        )
        for rank in range(count)
    ]


@st.composite
def _policies(draw: st.DrawFn) -> Policy:
    evidence = draw(st.integers(60, 2000))
    return policy_with(
        policy_version="GENERATED_V1",
        max_chunks=draw(st.integers(1, 8)),
        max_chunks_per_knowledge_id=draw(st.integers(1, 3)),
        max_evidence_tokens=evidence,
        max_total_prompt_tokens=evidence + 1500,
        max_chunk_token_ratio=draw(st.sampled_from([0.25, 0.5, 1.0])),
        min_similarity_score=draw(st.sampled_from([0.0, 0.4, 0.7])),
        min_top_similarity_score=0.7,
    )


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=_rows(), policy=_policies(), filters=st.sampled_from([None, {"equipment_id": "PUMP-7"}])
)
@pytest.mark.slow
def test_the_walk_records_what_visiting_every_row_would(
    rows: list[dict[str, Any]], policy: Policy, filters: dict[str, str] | None
):
    bundle = RetrievalBundle.model_validate(make_bundle(rows, filters_applied=filters))
    counter = policy.token_counter
    batched = _Walk(policy, counter, bundle.filters_applied)
    batched.walk(bundle.results)
    one_by_one = _Walk(policy, counter, bundle.filters_applied)
    for row in bundle.results:
        one_by_one.visit(row)

    assert batched.selected == one_by_one.selected
    assert batched.dropped == one_by_one.dropped
    assert batched.counts == one_by_one.counts == Counter(d["reason"] for d in batched.dropped)
    assert batched.stopped_by == one_by_one.stopped_by
    assert (batched.hidden_removed, batched.neutralized) == (
        one_by_one.hidden_removed,
        one_by_one.neutralized,
    )

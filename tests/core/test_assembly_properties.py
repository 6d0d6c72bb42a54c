"""Properties of R2 over generated inputs: total, order-free, and always within budget."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundlock import AnswerBundle, AssemblyStatus, Policy, assemble, load_policy
from groundlock.text import get_token_counter
from groundlock.text.sanitize import FENCE_TAG_NAMES
from tests.builders import distinct_text, make_bundle, make_row, policy_with

COUNTER = get_token_counter("cl100k_base")
POLICY = load_policy()

_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text fragments chosen to stress sanitising and token boundaries: punctuation runs at the
# end of a chunk, digits, non-Latin scripts, hidden characters, forged syntax.
_FRAGMENTS = st.sampled_from(
    [
        "Replace the seal.", "Torque to 45 Nm!", "Pressure 3.5 bar...", "see 29-11-05)",
        "Warnung: Druck prüfen —", "압력을 확인하십시오。", "[C3]", "[C9 | chunk_id=x]",
        "</evidence>", "\u200b", "\u202e", "\x00", "\r\n", "e.g.", "?!", "«quote»", "🙂",
        "<|endoftext|>", "{question}", "\t", "-----", "###",
    ]
)  # fmt: skip


@st.composite
def _chunk_texts(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 3))
    if kind == 0:  # one of a few shared texts, so duplicates happen
        return distinct_text(draw(st.integers(0, 3)), words=draw(st.sampled_from([5, 40])))
    if kind == 1:  # long enough to need trimming under small ratios
        return distinct_text(draw(st.integers(0, 10_000)), words=draw(st.integers(50, 900)))
    parts = draw(st.lists(_FRAGMENTS, min_size=1, max_size=8))
    return " ".join(parts) + draw(_FRAGMENTS)


@st.composite
def _rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(1, 14))
    rows = []
    for rank in range(count):
        row = make_row(
            rank,
            chunk_text=draw(_chunk_texts()),
            similarity=draw(st.floats(0.5, 1.0)),
            equipment_id=draw(st.sampled_from([None, "PUMP-7", "PUMP-8"])),
            event_date=draw(st.sampled_from([None, "2024-05-01", "2025-05-01"])),
        )
        if draw(st.booleans()):
            row["knowledge_id"] = draw(st.sampled_from(["KB-A", "KB-B", "KB-C"]))
        rows.append(row)
    return rows


@st.composite
def _policies(draw: st.DrawFn) -> Policy:
    evidence = draw(st.integers(40, 2200))
    reserved = draw(st.integers(1, 800))
    return policy_with(
        policy_version="GENERATED_V1",
        max_chunks=draw(st.integers(1, 8)),
        max_chunks_per_knowledge_id=draw(st.integers(1, 3)),
        max_evidence_tokens=evidence,
        reserved_output_tokens=reserved,
        max_total_prompt_tokens=evidence + reserved + 500,
        max_chunk_token_ratio=draw(st.sampled_from([0.1, 0.25, 0.35, 0.5, 1.0])),
        overlap_ratio_threshold=draw(st.sampled_from([0.3, 0.5, 0.8, 1.0])),
        min_top_similarity_score=0.76,
        min_similarity_score=draw(st.sampled_from([0.5, 0.76])),
    )


_FILTERS = st.sampled_from(
    [None, {"equipment_id": "PUMP-7"}, {"date_from": "2025-01-01"}, {"knowledge_type": "X"}]
)


def _snapshot(result: AnswerBundle) -> tuple[Any, ...]:
    return (
        result.assembly_status,
        result.reason_code,
        result.selected_evidence,
        result.evidence_block_text,
        result.metrics,
    )


@_SETTINGS
@given(rows=_rows(), policy=_policies(), filters=_FILTERS, data=st.data())
def test_selection_is_identical_for_every_permutation_of_the_rows(
    rows: list[dict[str, Any]], policy: Policy, filters: Any, data: st.DataObject
):
    shuffled = data.draw(st.permutations(rows))
    first = assemble(make_bundle(rows, filters_applied=filters), policy)
    second = assemble(make_bundle(shuffled, filters_applied=filters), policy)
    assert _snapshot(first) == _snapshot(second)


@_SETTINGS
@given(rows=_rows(), policy=_policies(), filters=_FILTERS)
def test_selected_evidence_never_exceeds_budget_ratio_or_caps(
    rows: list[dict[str, Any]], policy: Policy, filters: Any
):
    result = assemble(make_bundle(rows, filters_applied=filters), policy)
    assert result.assembly_status in {AssemblyStatus.OK, AssemblyStatus.NO_EVIDENCE}
    assert result.metrics is not None
    exact = COUNTER.count(result.evidence_block_text)
    assert exact == result.metrics.evidence_token_count <= policy.max_evidence_tokens
    for entry in result.selected_evidence:
        assert COUNTER.count(entry.entry_text) == entry.token_count <= policy.max_chunk_tokens
    per_knowledge = Counter(entry.knowledge_id for entry in result.selected_evidence)
    assert max(per_knowledge.values(), default=0) <= policy.max_chunks_per_knowledge_id
    assert len(result.selected_evidence) <= policy.max_chunks
    assert [e.rank for e in result.selected_evidence] == sorted(
        e.rank for e in result.selected_evidence
    )
    assert result.metrics.selected_k + len(result.metrics.dropped_rows) == len(rows)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
_BUNDLE_KEYS = [*make_bundle().keys(), "filters_applied", "retrieval_latency_ms"]
_ROW_KEYS = [*make_row(0).keys(), "knowledge_id", "source_reference", "similarity_score"]


@st.composite
def _mutated_bundles(draw: st.DrawFn) -> Any:
    bundle = make_bundle(draw(_rows()))
    for _ in range(draw(st.integers(1, 4))):
        rows = bundle.get("results")
        row_dicts = [row for row in rows if isinstance(row, dict)] if isinstance(rows, list) else []
        if draw(st.booleans()) and row_dicts:
            target = draw(st.sampled_from(row_dicts))
            key = draw(st.sampled_from(_ROW_KEYS))
        else:
            key = draw(st.sampled_from(_BUNDLE_KEYS))
            target = bundle
        if draw(st.booleans()):
            target.pop(key, None)
        else:
            target[key] = draw(_JSON)
    return bundle


@_SETTINGS
@given(payload=_JSON | _mutated_bundles())
@pytest.mark.slow
def test_any_input_assembles_or_fails_with_a_reason_code(payload: Any):
    result = assemble(payload, POLICY)
    assert isinstance(result, AnswerBundle)
    if result.assembly_status is AssemblyStatus.OK:
        assert result.reason_code is None
        assert result.evidence_block_text
    else:
        assert result.reason_code is not None
        assert result.message


_VALUE = r"([^\[\]|<>\n]+)"
_HEADER_RE = re.compile(
    rf"\[C(\d+) \| chunk_id={_VALUE} \| knowledge_id={_VALUE} \| source={_VALUE}\]"
)
_FENCE_RE = re.compile(r"<\s*/?\s*(?:" + "|".join(FENCE_TAG_NAMES) + r")\b", re.IGNORECASE)
_ANCHOR_RE = re.compile(r"\[\s*[Cc]\s*[-+]?\s*\d")
# Mostly ids that are valid but unusual (any letters, digits, punctuation, inner spaces, '='),
# sometimes arbitrary text that the contract must refuse.
_UNUSUAL_ID = st.text(
    alphabet=st.characters(categories=["L", "N", "P", "S"], exclude_characters="[]|<>"),
    min_size=1,
    max_size=30,
).map(lambda value: value.replace("=", " = ").strip() or "id")


@st.composite
def _hostile_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    rows = []
    ids = draw(st.sampled_from([_UNUSUAL_ID, _UNUSUAL_ID, _UNUSUAL_ID, st.text(max_size=40)]))
    for rank in range(draw(st.integers(1, 6))):
        row = make_row(
            rank,
            chunk_id=f"{rank}-" + draw(ids),
            chunk_text=draw(st.text(min_size=1, max_size=200) | _chunk_texts())
            + f" (row {rank} {distinct_text(rank, words=6)})",
        )
        row["knowledge_id"] = draw(ids)
        row["source_reference"] = draw(ids)
        rows.append(row)
    return rows


@_SETTINGS
@given(rows=_hostile_rows())
def test_accepted_bundles_render_exactly_one_header_and_one_text_line_per_chunk(
    rows: list[dict[str, Any]],
):
    result = assemble(make_bundle(rows), POLICY)
    if result.assembly_status is not AssemblyStatus.OK:
        return
    lines = result.evidence_block_text.split("\n")
    assert len(lines) == 3 * len(result.selected_evidence) + 1
    for position, entry in enumerate(result.selected_evidence):
        header, text, blank = lines[3 * position : 3 * position + 3]
        match = _HEADER_RE.fullmatch(header)
        assert match is not None, header
        assert match.group(1) == str(position)
        assert match.group(2) == entry.chunk_id
        assert (text, blank) == (entry.sanitized_text, "")
        assert not _FENCE_RE.search(text)
        assert not _ANCHOR_RE.search(text)

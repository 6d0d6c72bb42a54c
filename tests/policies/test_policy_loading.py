"""Versioned, hash-locked policies: the 001 snapshot, tamper refusal, user policies."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from groundlock import (
    AssembleEvidence,
    Policy,
    PolicyError,
    TokenizerUnavailableError,
    load_policy,
    lock_policy,
)
from groundlock.policies import available_policies

BUILTIN = Path(load_policy.__code__.co_filename).parent / "R2_POLICY_V1.json"


def test_r2_policy_v1_holds_the_values_frozen_in_spec_001_and_000():
    policy = load_policy("R2_POLICY_V1")
    assert (
        policy.max_chunks, policy.max_chunks_per_knowledge_id, policy.max_evidence_tokens,
        policy.reserved_output_tokens, policy.max_total_prompt_tokens,
        policy.max_chunk_token_ratio, policy.overlap_ratio_threshold, policy.ordering_mode,
        policy.sanitization_mode, policy.strict_no_evidence, policy.min_top_similarity_score,
        policy.token_encoding,
    ) == (6, 2, 2200, 800, 3500, 0.35, 0.80, "rank_strict", "safe_normalize_v1", True, 0.76,
          "cl100k_base")  # fmt: skip
    assert policy.allowed_knowledge_types == (
        "MAINTENANCE_PROCEDURE", "INSPECTION_RECORD", "FAILURE_REPORT", "OPERATING_MANUAL",
        "SAFETY_NOTICE", "REGULATION",
    )  # fmt: skip
    assert policy.max_chunk_tokens == 770  # floor(0.35 * 2200), not 769 from float rounding
    assert available_policies() == [
        "CIT_LABEL_POLICY_V1",
        "CIT_LABEL_POLICY_V1_LEXICAL",
        "CIT_LABEL_POLICY_V2",
        "CIT_LABEL_POLICY_V2_LEXICAL",
        "LEXICAL_POLICY_V1",
        "R2_POLICY_V1",
        "R2_POLICY_V2",
        "R2_POLICY_V2_JUDGED",
        "R2_POLICY_V3",
        "R2_POLICY_V3_JUDGED",
        "R2_POLICY_V3_LEXICAL",
        "R2_POLICY_V3_STRICT",
        "R2_POLICY_V4",
        "R2_POLICY_V4_JUDGED",
        "R2_POLICY_V4_LEXICAL",
        "R2_POLICY_V4_STRICT",
        "SEMANTIC_ID_POLICY_V1",
        "SEMANTIC_ID_POLICY_V1_LEXICAL",
        "SEMANTIC_ID_POLICY_V2",
        "SEMANTIC_ID_POLICY_V2_LEXICAL",
        "SOURCE_PAGE_POLICY_V1",
        "SOURCE_PAGE_POLICY_V1_LEXICAL",
        "SOURCE_PAGE_POLICY_V2",
        "SOURCE_PAGE_POLICY_V2_LEXICAL",
        "SOURCE_PAGE_POLICY_V3",
        "SOURCE_PAGE_POLICY_V3_LEXICAL",
    ]


def test_r2_policy_v2_selects_as_v1_and_judges_with_firewall_v2():
    v1, v2 = load_policy("R2_POLICY_V1"), load_policy("R2_POLICY_V2")
    firewall = {"policy_version", "description", "firewall_ruleset", "firewall_modes"}
    assert v1.model_dump(exclude=firewall) == v2.model_dump(exclude=firewall)
    assert (v1.firewall_ruleset, v2.firewall_ruleset) == ("firewall_v1", "firewall_v2")


def test_r2_policy_v3_selects_as_v2_and_v4_is_the_default():
    v2, v3 = load_policy("R2_POLICY_V2"), load_policy("R2_POLICY_V3")
    firewall = {"policy_version", "description", "firewall_ruleset", "firewall_modes"}
    assert v2.model_dump(exclude=firewall) == v3.model_dump(exclude=firewall)
    assert v3.firewall_ruleset == "firewall_v3"
    assert load_policy("R2_POLICY_V4").firewall_ruleset == "firewall_v4"
    assert load_policy().policy_version == "R2_POLICY_V4"
    # The default flags the rules below 90 % precision on real model output; the strict
    # preset enforces every rule; the judged one adds the support judge and nothing else.
    assert {rule for rule, mode in v3.firewall_modes.items() if mode == "flag"} == {
        "unsupported_entity",
        "rebound_value",
        "support_coverage",
    }
    strict, judged = load_policy("R2_POLICY_V3_STRICT"), load_policy("R2_POLICY_V3_JUDGED")
    assert set(strict.firewall_modes.values()) == {"enforce"}
    assert strict.firewall_modes.keys() == v3.firewall_modes.keys()
    assert judged.support_judge is not None
    assert judged.model_dump(exclude={"policy_version", "description", "support_judge"}) == (
        v3.model_dump(exclude={"policy_version", "description", "support_judge"})
    )


def test_source_page_policy_v2_is_v1_judged_by_source_page_v2():
    # Stored answers name SOURCE_PAGE_POLICY_V1: it keeps its ruleset, and its hash.
    v1, v2 = load_policy("SOURCE_PAGE_POLICY_V1"), load_policy("SOURCE_PAGE_POLICY_V2")
    own = {"policy_version", "description", "firewall_ruleset"}
    assert v1.model_dump(exclude=own) == v2.model_dump(exclude=own)
    assert (v1.firewall_ruleset, v2.firewall_ruleset) == ("source_page_v1", "source_page_v2")
    assert v1.policy_sha256 == "7cd93ea200e2e9b5734957e59efc24543211cddc5e7e1ce49c54888a40ea8c9d"
    assert "source_page_v2" in v2.description


def test_v1_keeps_the_hash_its_audit_rows_carry():
    # Fields added with rulesets count in the hash only when they leave their defaults.
    assert load_policy("R2_POLICY_V1").policy_sha256 == (
        "0ddcf14c2e8ca18d5e27d35bf6722a5c9f7387254669336b61dcc2e70ec825b8"
    )


def test_policy_is_frozen():
    policy = load_policy()
    with pytest.raises(ValidationError):
        policy.max_chunks = 60  # type: ignore[misc]


def test_hash_ignores_formatting_but_not_values(tmp_path: Path):
    data = json.loads(BUILTIN.read_text(encoding="utf-8"))
    reformatted = tmp_path / "R2_POLICY_V1.json"
    reformatted.write_text(json.dumps(data, indent=8, sort_keys=True), encoding="utf-8")
    shutil.copy(BUILTIN.with_suffix(".sha256"), tmp_path / "R2_POLICY_V1.sha256")
    assert load_policy(reformatted).policy_sha256 == load_policy("R2_POLICY_V1").policy_sha256


@pytest.mark.parametrize(
    ("key", "value"),
    [("min_top_similarity_score", 0.8), ("max_chunks", 7), ("description", "edited")],
)
def test_edited_policy_refuses_to_load(tmp_path: Path, key: str, value: object):
    data = json.loads(BUILTIN.read_text(encoding="utf-8"))
    data[key] = value
    edited = tmp_path / "R2_POLICY_V1.json"
    edited.write_text(json.dumps(data), encoding="utf-8")
    shutil.copy(BUILTIN.with_suffix(".sha256"), tmp_path / "R2_POLICY_V1.sha256")
    with pytest.raises(PolicyError, match="does not match the sha256 recorded"):
        load_policy(edited)


def test_policy_without_its_lock_refuses_to_load(tmp_path: Path):
    shutil.copy(BUILTIN, tmp_path / "R2_POLICY_V1.json")
    with pytest.raises(PolicyError, match="cannot read policy"):
        load_policy(tmp_path / "R2_POLICY_V1.json")


def test_users_add_their_own_policy_by_writing_and_locking_a_file(tmp_path: Path):
    data = json.loads(BUILTIN.read_text(encoding="utf-8"))
    data.update(policy_version="PLANT_POLICY_V2", max_chunks=4, description="Plant policy.")
    path = tmp_path / "PLANT_POLICY_V2.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    recorded = lock_policy(path)
    policy = load_policy(path)
    assert (policy.policy_version, policy.max_chunks, policy.policy_sha256) == (
        "PLANT_POLICY_V2", 4, recorded,
    )  # fmt: skip
    assert recorded != load_policy().policy_sha256


def test_policy_version_must_match_its_file_name(tmp_path: Path):
    data = json.loads(BUILTIN.read_text(encoding="utf-8"))
    path = tmp_path / "OTHER_NAME_V1.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(PolicyError, match="declares policy_version 'R2_POLICY_V1'"):
        lock_policy(path)


def test_duplicate_keys_are_rejected_rather_than_silently_last_wins(tmp_path: Path):
    text = BUILTIN.read_text(encoding="utf-8").replace(
        '"max_chunks": 6,', '"max_chunks": 6,\n  "max_chunks": 60,'
    )
    path = tmp_path / "R2_POLICY_V1.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PolicyError, match="repeats the key"):
        lock_policy(path)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"min_similarity_score": 0.9}, "must not exceed min_top_similarity_score"),
        ({"max_evidence_tokens": 3000}, "must fit in max_total_prompt_tokens"),
        ({"ordering_mode": "score_desc"}, "rank_strict"),
        ({"strict_no_evidence": False}, "strict_no_evidence"),
        ({"max_chunk_token_ratio": 0.0}, "max_chunk_token_ratio"),
        ({"allowed_knowledge_types": []}, "allowed_knowledge_types"),
        ({"overlap_ratio_threshold": 1.5}, "overlap_ratio_threshold"),
        ({"max_chunks": "6"}, "max_chunks"),
        ({"unexpected": 1}, "unexpected"),
    ],
)
def test_incoherent_or_lenient_policies_are_invalid(overrides: dict[str, object], message: str):
    with pytest.raises(ValidationError, match=message):
        Policy.model_validate({**load_policy().model_dump(), **overrides})


def test_policy_naming_an_encoding_without_an_offline_copy_refuses_to_load(tmp_path: Path):
    data = json.loads(BUILTIN.read_text(encoding="utf-8"))
    data.update(policy_version="O200K_POLICY_V1", token_encoding="o200k_base")  # noqa: S106
    path = tmp_path / "O200K_POLICY_V1.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    lock_policy(path)
    with pytest.raises(TokenizerUnavailableError, match="no offline copy"):
        load_policy(path)


def test_unknown_builtin_name_lists_what_exists():
    with pytest.raises(PolicyError, match=r"available: .*R2_POLICY_V1"):
        load_policy("R3_POLICY_V1")


def test_a_copied_builtin_with_a_changed_value_is_refused_by_every_stage():
    builtin = load_policy("R2_POLICY_V1")
    assert builtin.policy_sha256  # computed, and cached on the instance
    changed = builtin.model_copy(update={"min_similarity_score": 0.01})
    assert changed.policy_sha256 != builtin.policy_sha256
    with pytest.raises(PolicyError, match="content differs"):
        AssembleEvidence(policy=changed)


def test_a_renamed_copy_recomputes_what_it_derives():
    builtin = load_policy("R2_POLICY_V1")
    assert builtin.max_chunk_tokens == 770
    renamed = builtin.model_copy(
        update={"policy_version": "PLANT_V1", "max_chunk_token_ratio": 0.5}
    )
    assert renamed.max_chunk_tokens == 1100
    assert renamed.policy_sha256 != builtin.policy_sha256
    AssembleEvidence(policy=renamed)  # a new name may carry new values


def test_a_copy_that_breaks_an_invariant_is_refused():
    with pytest.raises(ValidationError, match="backoff"):
        load_policy().execution.model_copy(update={"backoff_initial_seconds": 1e6})


@pytest.mark.parametrize(
    ("given", "meant"),
    [("r2_policy_v2", "R2_POLICY_V2"), ("R2_POLICY_V22", "R2_POLICY_V2"),
     ("R2_POLICY_V2_JUGDED", "R2_POLICY_V2_JUDGED"), ("source_page_policy_v1",
     "SOURCE_PAGE_POLICY_V1")],
)  # fmt: skip
def test_a_name_in_the_wrong_case_or_with_a_typo_gets_a_suggestion(given: str, meant: str):
    # Not "cannot read policy 'r2_policy_v2' and its lock": a name is not a file.
    with pytest.raises(PolicyError, match=rf"did you mean {meant}\?"):
        load_policy(given)

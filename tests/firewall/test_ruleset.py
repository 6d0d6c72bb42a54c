"""Firewall rulesets: hash-locked, named by the policy, and recorded with every verdict."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from groundlock import load_policy, validate_answer
from groundlock.core.firewall.registry import RULES
from groundlock.policies import ruleset as rulesets
from groundlock.policies.ruleset import (
    RulesetError,
    available_rulesets,
    check_modes,
    load_ruleset,
    ruleset_sha256,
)
from groundlock.text import sentences
from groundlock.text.sentences import Segmenter, split_sentences
from tests.core.test_validate import executed


def test_every_built_in_ruleset_loads_and_names_only_known_rules():
    assert "firewall_v1" in available_rulesets()
    for name in available_rulesets():
        ruleset = load_ruleset(name)
        own = ruleset_sha256(rulesets._builtin_dir() / name)
        manifest = json.loads((rulesets._builtin_dir() / name / "manifest.json").read_text())
        if "extends" in manifest:  # its identity covers its base's too
            base = load_ruleset(manifest["extends"])
            assert (
                ruleset.sha256
                == hashlib.sha256(f"{own}\0{base.name}\0{base.sha256}".encode()).hexdigest()
            )
        else:
            assert ruleset.sha256 == own
        assert set(ruleset.rules) <= set(RULES)
        assert len(set(ruleset.rules)) == len(ruleset.rules)
        assert set(ruleset.modes) <= set(ruleset.rules)


def test_a_ruleset_changed_under_its_name_refuses_to_load(tmp_path, monkeypatch):
    root = tmp_path / "rulesets"
    shutil.copytree(rulesets._builtin_dir(), root)
    (root / "firewall_v1" / "stopwords.words").write_text("a the\n", encoding="utf-8")
    monkeypatch.setattr(rulesets, "_builtin_dir", lambda: root)
    load_ruleset.cache_clear()
    try:
        with pytest.raises(RulesetError, match="does not match the sha256"):
            load_ruleset("firewall_v1")
    finally:
        load_ruleset.cache_clear()


def test_an_unknown_ruleset_is_refused_by_name():
    with pytest.raises(RulesetError, match="no built-in firewall ruleset named 'firewall_v0'"):
        load_ruleset("firewall_v0")


def test_the_default_segmentation_is_firewall_v1s():
    v1 = load_ruleset("firewall_v1").segmenter
    default = Segmenter.of(
        {"before_number": (), "before_lowercase": (), "titles": ()}, marker_pattern=r"\[C\d+\]"
    )
    text = "See No. 4. Meets U.S. rules. Ask Dr. Lee. Use e.g. a wrench. [C0]"
    assert v1 == sentences._DEFAULT
    assert split_sentences(text) == v1.split(text) != default.split(text)


def test_only_rules_with_a_mode_can_be_set_to_flag():
    v1 = load_ruleset("firewall_v1")
    with pytest.raises(RulesetError, match="always enforce"):
        check_modes(v1, {"uncited_sentence": "flag"})


def test_the_verdict_names_the_ruleset_that_judged_it():
    policy = load_policy("R2_POLICY_V1")
    result = validate_answer(executed("Replace it every 500 operating hours. [C0]"), policy)
    ruleset = load_ruleset("firewall_v1")
    assert (result.firewall_ruleset, result.firewall_ruleset_sha256) == (
        "firewall_v1",
        ruleset.sha256,
    )


def test_the_readme_r5_table_is_the_default_rulesets_table():
    import re  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    from groundlock import load_policy  # noqa: PLC0415

    readme = (Path(__file__).parent.parent.parent / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \d+ \| `(\w+)` \| `(\w+)` \| (enforce|flag) \|", readme, re.M)
    policy = load_policy()
    ruleset = load_ruleset(policy.firewall_ruleset)
    assert ruleset.name == "firewall_v4"
    assert [rule for rule, _, _ in rows] == list(ruleset.rules)
    assert [reason for _, reason, _ in rows] == [RULES[r].reason.value for r in ruleset.rules]
    modes = [ruleset.mode_of(r, policy.firewall_modes) for r in ruleset.rules]
    assert [mode for _, _, mode in rows] == modes


def test_the_frozen_look_alike_table_is_what_the_confusables_data_gives():
    # The table is generated from confusable-homoglyphs and frozen in the ruleset; when a
    # new release of the package would change it, this says so (a new ruleset version).
    from groundlock.core.firewall.lookalikes import fold_lookalikes, lookalike_lines  # noqa: PLC0415

    v2 = load_ruleset("firewall_v2")
    assert list(v2.entries("lookalikes")) == lookalike_lines()
    assert fold_lookalikes("\u0435vidence \uff23\uff2f\uff2e\uff34\uff25\uff38\uff34", v2) == (
        "evidence CONTEXT"
    )
    assert fold_lookalikes("\u0435vidence", load_ruleset("firewall_v1")) == "\u0435vidence"

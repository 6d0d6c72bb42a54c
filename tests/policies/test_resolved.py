"""A policy is resolved once: its ruleset, template, tokenizer, grammar and segmenter.

The stages and the pure functions take these parts from the policy they were given; no
module below the command line looks a ruleset, template or encoding up by name.
"""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

from groundlock import AssembleEvidence, BuildPrompt, ValidateAnswer
from groundlock.errors import PolicyError
from groundlock.policies import load_policy
from groundlock.policies.resolved import resolve_policy
from groundlock.policies.ruleset import load_ruleset
from groundlock.prompts.template import load_template

PACKAGE = Path(__file__).resolve().parents[2] / "groundlock"
BY_NAME = {"load_ruleset", "load_template", "get_token_counter"}
"""Loaders of a policy's parts by name; only the policy package, the loaders' own modules
and the entry points may call them (a policy is resolved once, when it is loaded or a stage
is built). ``load_policy`` itself is an entry point: a chain or stage may be given a name."""
ALLOWED = {"policies", "prompts", "text", "cli", "providers", "serve", "spark", "__init__.py"}
"""Where a name is still the input: the policy package and the loaders themselves, the
command line and the server's and Spark's entry points (they are given a policy name),
and the offline model (configured by a ruleset name, as a chat model is by a model id)."""


@pytest.mark.parametrize("name", ["R2_POLICY_V1", "R2_POLICY_V3", "SEMANTIC_ID_POLICY_V1"])
def test_a_loaded_policy_carries_the_parts_its_names_name(name: str) -> None:
    policy = load_policy(name)
    ruleset, template = load_ruleset(policy.firewall_ruleset), load_template(policy.prompt_template)
    assert (policy.ruleset.name, policy.ruleset.sha256) == (ruleset.name, ruleset.sha256)
    assert policy.grammar is policy.ruleset.grammar
    assert policy.grammar.name == ruleset.grammar.name
    assert policy.segmenter is policy.ruleset.segmenter
    assert (policy.template.version, policy.template.sha256) == (template.version, template.sha256)
    assert policy.token_counter.encoding.name.startswith(policy.token_encoding)
    assert policy.resolved is policy.resolved  # resolved once, then handed out


def test_a_copy_shares_the_resolution_and_a_changed_copy_gets_its_own() -> None:
    policy = load_policy("R2_POLICY_V3")
    assert policy.model_copy().resolved is policy.resolved
    changed = policy.model_copy(
        update={
            "policy_version": "MY_POLICY_V1",
            "firewall_ruleset": "firewall_v1",
            "firewall_modes": {},
        }
    )
    assert changed.resolved is not policy.resolved
    assert changed.ruleset.name == "firewall_v1"
    assert changed.resolved.policy == changed


def test_a_policy_built_in_code_gets_the_loaders_checks_when_a_stage_is_built() -> None:
    # A history window needs a template with a history section: load_policy refuses such a
    # file, and a policy built in code is refused the same way, before any request.
    incoherent = load_policy("R2_POLICY_V3").model_copy(
        update={"policy_version": "MY_POLICY_V1", "history": {"max_turns": 2, "max_tokens": 50}}
    )
    with pytest.raises(PolicyError, match="history window needs a template"):
        resolve_policy(incoherent)
    for stage in (AssembleEvidence, BuildPrompt, ValidateAnswer):
        with pytest.raises(PolicyError, match="history window needs a template"):
            stage(policy=incoherent)


def test_pickling_a_policy_carries_its_values_not_its_loaded_parts() -> None:
    # Spark ships the policy to every executor: its bytes must stay the policy's JSON-size
    # values, not a ruleset's vocabulary and a tokenizer.
    fresh = load_policy("R2_POLICY_V3").model_copy()
    before = len(pickle.dumps(fresh))
    assert fresh.grammar is not None  # resolved now
    after = pickle.dumps(fresh)
    assert len(after) == before
    assert pickle.loads(after).resolved is fresh.resolved  # noqa: S301  (our own bytes)


def _calls_by_name(path: Path, root: Path = PACKAGE) -> list[str]:
    tree = ast.parse(path.read_text("utf-8"))
    return [
        f"{path.relative_to(root)}:{node.lineno} {node.func.id}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in BY_NAME
    ]


def test_nothing_below_the_entry_points_looks_a_part_up_by_name() -> None:
    offenders = [
        call
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] not in ALLOWED
        for call in _calls_by_name(path)
    ]
    assert offenders == []


def test_the_name_check_sees_a_lookup(tmp_path: Path) -> None:
    probe = tmp_path / "core" / "probe.py"
    probe.parent.mkdir()
    probe.write_text(
        "from groundlock.policies.ruleset import load_ruleset\n"
        "def grammar_of(policy):\n"
        "    return load_ruleset(policy.firewall_ruleset).grammar\n"
    )
    assert _calls_by_name(probe, tmp_path) == ["core/probe.py:3 load_ruleset"]


def test_clearing_the_caches_clears_the_resolution_with_them() -> None:
    from groundlock._caches import clear_caches  # noqa: PLC0415

    policy = load_policy("R2_POLICY_V3")
    before = policy.ruleset
    clear_caches()
    assert policy.ruleset is load_ruleset(policy.firewall_ruleset)
    assert policy.ruleset is not before  # the loader's cache was emptied, and so was ours

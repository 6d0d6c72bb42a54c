"""``groundlock lock``: one command locks and checks policies, templates and rulesets.

The oracle for the hashes is the locks shipped with the package, written by the tools
before this command existed: a copy of a built-in artefact must lock to the same sha256.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from groundlock import load_policy
from groundlock.cli import main
from groundlock.errors import PolicyError

PACKAGE = Path(__file__).parents[2] / "groundlock"
POLICIES = PACKAGE / "policies"
RULESETS = POLICIES / "rulesets"
PROMPTS = PACKAGE / "prompts"


def _recorded(lock: Path) -> str:
    return lock.read_text(encoding="ascii").split()[0]


@pytest.fixture
def own(tmp_path: Path) -> Path:
    """A folder with a policy of one's own, a copied ruleset and a copied template."""
    text = (POLICIES / "R2_POLICY_V1.json").read_text(encoding="utf-8")
    (tmp_path / "PLANT_POLICY_V1.json").write_text(
        text.replace('"R2_POLICY_V1"', '"PLANT_POLICY_V1"'), encoding="utf-8"
    )
    shutil.copytree(RULESETS / "firewall_v2", tmp_path / "firewall_v2")
    shutil.copy(PROMPTS / "prompt_template_v1.txt", tmp_path)
    return tmp_path


def test_one_command_locks_all_three_kinds_as_their_loaders_check(own: Path, capsys) -> None:
    paths = [own / "PLANT_POLICY_V1.json", own / "firewall_v2", own / "prompt_template_v1.txt"]
    assert main(["lock", *map(str, paths)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in out] == [
        ["locked", "policy"], ["locked", "ruleset"], ["locked", "template"]
    ]  # fmt: skip
    # The copies lock to the sha256 the shipped locks record.
    assert _recorded(own / "firewall_v2.sha256") == _recorded(RULESETS / "firewall_v2.sha256")
    assert _recorded(own / "prompt_template_v1.sha256") == _recorded(
        PROMPTS / "prompt_template_v1.sha256"
    )
    # The policy's lock is the one load_policy checks.
    assert load_policy(own / "PLANT_POLICY_V1.json").policy_version == "PLANT_POLICY_V1"
    # Locking again changes nothing; --check agrees.
    assert main(["lock", *map(str, paths)]) == 0
    assert all(line.startswith("unchanged") for line in capsys.readouterr().out.splitlines())
    assert main(["lock", "--check", *map(str, paths)]) == 0


def test_a_changed_artefact_is_refused_not_relocked(own: Path, capsys) -> None:
    policy = own / "PLANT_POLICY_V1.json"
    assert main(["lock", str(policy)]) == 0
    policy.write_text(
        policy.read_text(encoding="utf-8").replace('"max_chunks": 6', '"max_chunks": 7'),
        encoding="utf-8",
    )
    before = (own / "PLANT_POLICY_V1.sha256").read_text(encoding="ascii")
    capsys.readouterr()
    assert main(["lock", str(policy)]) == 1
    err = capsys.readouterr().err
    assert "changed since it was locked" in err
    assert "a changed policy is a new version" in err
    assert (own / "PLANT_POLICY_V1.sha256").read_text(encoding="ascii") == before
    with pytest.raises(PolicyError, match="does not match the sha256"):
        load_policy(policy)
    assert main(["lock", "--check", str(policy)]) == 1
    assert "does not match its lock" in capsys.readouterr().err
    assert main(["lock", "--relock", str(policy)]) == 0
    assert capsys.readouterr().out.startswith("relocked")
    assert load_policy(policy).max_chunks == 7


def test_an_invalid_artefact_is_refused_and_no_lock_is_written(own: Path, capsys) -> None:
    template = own / "prompt_template_v2.txt"
    template.write_text("no sections at all\n", encoding="utf-8")
    ruleset = own / "firewall_v2"
    manifest = ruleset / "manifest.json"
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace('"firewall_v2"', '"firewall_v9"', 1),
        encoding="utf-8",
    )
    renamed = own / "OTHER_POLICY_V1.json"
    shutil.copy(own / "PLANT_POLICY_V1.json", renamed)
    assert main(["lock", str(template), str(ruleset), str(renamed)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3
    assert "template 'prompt_template_v2.txt'" in err[0]
    assert "must name the ruleset 'firewall_v2'" in err[1]
    assert "declares policy_version 'PLANT_POLICY_V1'" in err[2]
    assert not (own / "prompt_template_v2.sha256").exists()
    assert not (own / "firewall_v2.sha256").exists()
    assert not (own / "OTHER_POLICY_V1.sha256").exists()


def test_a_path_that_is_none_of_the_three_is_a_usage_error_before_any_write(
    own: Path, capsys
) -> None:
    (own / "notes.yaml").write_text("a: 1\n", encoding="utf-8")
    (own / "empty").mkdir()
    for bad in ("notes.yaml", "empty", "missing.json"):
        args = ["lock", str(own / "PLANT_POLICY_V1.json"), str(own / bad)]
        assert main(args) == 2, bad
        assert capsys.readouterr().err.startswith("groundlock: error: ")
    assert not (own / "PLANT_POLICY_V1.sha256").exists()


def test_every_shipped_artefact_matches_its_lock(capsys) -> None:
    """What a user runs in CI over their own folder, run over the package's own."""
    shipped = [
        *sorted(POLICIES.glob("*.json")),
        *sorted(p for p in RULESETS.iterdir() if p.is_dir()),
        *sorted(PROMPTS.glob("prompt_template_*.txt")),  # (the judge prompt has its own form)
    ]
    assert len(shipped) >= 25
    assert main(["lock", "--check", *map(str, shipped)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(shipped)


def test_a_template_or_ruleset_its_loader_could_not_name_is_refused(own: Path, capsys) -> None:
    shutil.copy(own / "prompt_template_v1.txt", own / "Plant Template.txt")
    shutil.copytree(own / "firewall_v2", own / "Firewall-V9")
    assert main(["lock", str(own / "Plant Template.txt"), str(own / "Firewall-V9")]) == 1
    err = capsys.readouterr().err
    assert "'Plant Template' is not a name its loader accepts" in err
    assert "'Firewall-V9' is not a name its loader accepts" in err
    assert not (own / "Plant Template.sha256").exists()
    assert not (own / "Firewall-V9.sha256").exists()

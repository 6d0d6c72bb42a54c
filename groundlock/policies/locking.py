"""One lock tool for the three frozen artefacts: policies, prompt templates and rulesets.

Each lives beside a ``<name>.sha256`` file that its loader checks on every load, so an edit
that was not saved under a new version refuses to load. Before this module a policy had
:func:`~groundlock.policies.loader.lock_policy`, a ruleset a function with no command, and a
template nothing at all (issue 29). :func:`lock` takes any of the three by path, tells them
apart by shape, validates the artefact the way its loader will, and writes the lock only
where none exists yet: an artefact that is locked already and has changed is refused, since
an auditor reads a version name as a promise that its content never changed (``relock``
overrides that, for a version nothing has been judged under yet). ``check`` writes nothing
and fails on a missing or stale lock: what CI runs over a folder of one's own policies.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from groundlock.errors import PolicyError
from groundlock.policies.loader import policy_lock_value
from groundlock.policies.ruleset import RulesetError, ruleset_lock_value
from groundlock.prompts.template import PromptTemplateError, parse_template

__all__ = ["LockError", "Locked", "kind_of", "lock"]

Kind = Literal["policy", "template", "ruleset"]

_LOADABLE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
"""A template version or ruleset name its loader accepts (the policy loader checks its own)."""
Action = Literal["locked", "unchanged", "relocked", "checked"]


class LockError(ValueError):
    """An artefact cannot be locked, or (with ``check``) its lock is missing or stale."""


@dataclass(frozen=True)
class Locked:
    """What :func:`lock` did with one artefact."""

    kind: Kind
    path: Path
    sha256: str
    action: Action


def kind_of(path: Path) -> Kind:
    """What ``path`` is, by shape: a ruleset folder, a policy's JSON or a template's text.

    Raises:
        LockError: none of the three.
    """
    if path.is_dir():
        if (path / "manifest.json").is_file():
            return "ruleset"
        raise LockError(f"{path.name!r}: a folder is a ruleset only with a manifest.json")
    if path.suffix == ".json":
        return "policy"
    if path.suffix == ".txt":
        return "template"
    raise LockError(
        f"{path.name!r}: not a policy (.json), a prompt template (.txt) or a ruleset folder"
    )


def _template_lock_value(path: Path) -> str:
    """The sha256 ``load_template`` checks: the file's bytes, once they parse as a template."""
    try:
        raw = path.read_bytes()
        parse_template(path.stem, raw.decode("utf-8"))
    except OSError as exc:
        raise LockError(f"cannot read {path.name!r}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise LockError(f"template {path.name!r} is not UTF-8") from exc
    except PromptTemplateError as exc:
        raise LockError(f"template {path.name!r}: {exc}") from exc
    return hashlib.sha256(raw).hexdigest()


def _value(kind: Kind, path: Path) -> str:
    name = path.name if kind == "ruleset" else path.stem
    if kind != "policy" and not _LOADABLE_NAME.match(name):
        raise LockError(
            f"{kind} {path.name!r}: {name!r} is not a name its loader accepts "
            "(lower-case letters, digits and '_', a letter first)"
        )
    try:
        if kind == "policy":
            return policy_lock_value(path)
        if kind == "ruleset":
            return ruleset_lock_value(path)
    except (PolicyError, RulesetError) as exc:
        raise LockError(str(exc)) from exc
    return _template_lock_value(path)


def lock(path: str | Path, *, check: bool = False, relock: bool = False) -> Locked:
    """Validate ``path`` as its loader would and write (or, with ``check``, verify) its lock.

    The lock is ``<name>.sha256`` beside the artefact, ``<sha256>  <file name>``, the format
    every loader reads.

    Raises:
        LockError: not an artefact, invalid, locked with another sha256 (without
            ``relock``), or with ``check`` a lock that is missing or stale.
    """
    path = Path(path)
    kind = kind_of(path)
    sha256 = _value(kind, path)
    lock_path = path.with_name(f"{path.stem if kind != 'ruleset' else path.name}.sha256")
    try:
        recorded = lock_path.read_text(encoding="ascii").split()[:1]
    except (OSError, UnicodeDecodeError):
        recorded = []
    if check:
        if not recorded:
            raise LockError(f"{kind} {path.name!r} has no lock ({lock_path.name})")
        if recorded[0] != sha256:
            raise LockError(f"{kind} {path.name!r} does not match its lock ({lock_path.name})")
        return Locked(kind, path, sha256, "checked")
    if recorded and recorded[0] == sha256:
        return Locked(kind, path, sha256, "unchanged")
    if recorded and not relock:
        raise LockError(
            f"{kind} {path.name!r} changed since it was locked: a changed {kind} is a new "
            f"version (a new name); --relock rewrites the lock of one nothing was judged under"
        )
    lock_path.write_text(f"{sha256}  {path.name}\n", encoding="ascii")
    return Locked(kind, path, sha256, "relocked" if recorded else "locked")

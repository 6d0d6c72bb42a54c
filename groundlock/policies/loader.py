"""Load versioned policy files and refuse any whose content no longer matches its lock.

A policy lives in ``<VERSION>.json`` with its content hash in ``<VERSION>.sha256`` beside
it. Editing the JSON without writing a new version makes the hashes disagree and the policy
refuses to load: a changed threshold can never ride along silently under an old name.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from groundlock._caches import memoized
from groundlock.errors import PolicyError
from groundlock.policies.model import Policy
from groundlock.policies.resolved import ResolvedPolicy, resolve_policy

__all__ = [
    "DEFAULT_POLICY",
    "ResolvedPolicy",
    "available_policies",
    "check_policy_identity",
    "load_policy",
    "lock_policy",
    "policy_lock_value",
    "resolve_policy",
]

DEFAULT_POLICY = "R2_POLICY_V4"
"""The policy used when none is named."""

_NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
_LOCK_SUFFIX = ".sha256"


def _builtin_dir() -> Path:
    return Path(str(resources.files("groundlock.policies")))


def available_policies() -> list[str]:
    """Versions of the policies shipped with groundlock, sorted."""
    return sorted(p.stem for p in _builtin_dir().glob("*.json"))


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    duplicates = sorted({key for key in keys if keys.count(key) > 1})
    if duplicates:
        raise PolicyError(f"policy file repeats the key(s) {', '.join(duplicates)}")
    return dict(pairs)


def _resolve(policy: str | os.PathLike[str]) -> tuple[Path, str | None]:
    if isinstance(policy, str) and _NAME_RE.match(policy):
        path = _builtin_dir() / f"{policy}.json"
        if not path.is_file():
            raise PolicyError(f"no built-in policy named {policy!r}{_suggestion(policy)}")
        return path, policy
    if isinstance(policy, str) and not Path(policy).exists() and _looks_like_a_name(policy):
        # ``r2_policy_v2``: a built-in name in the wrong case or with a typo, not a file.
        raise PolicyError(f"no built-in policy named {policy!r}{_suggestion(policy)}")
    return Path(policy), None


def _looks_like_a_name(text: str) -> bool:
    return "/" not in text and "\\" not in text and not text.lower().endswith(".json")


def _suggestion(name: str) -> str:
    """``; did you mean X?`` for the closest built-in name (case aside), and the list."""
    names = available_policies()
    close = difflib.get_close_matches(name.upper(), names, n=1, cutoff=0.75)
    guess = f"; did you mean {close[0]}?" if close else ""
    return f"{guess} (available: {', '.join(names)})"


def _parse(raw: bytes, file_name: str) -> Policy:
    try:
        return Policy.model_validate(json.loads(raw, object_pairs_hook=_reject_duplicate_keys))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, error['loc'])) or 'policy'}: {error['msg']}"
            for error in exc.errors(include_url=False, include_input=False)
        )
        raise PolicyError(f"policy {file_name!r} is not a valid policy: {problems}") from exc
    except ValueError as exc:  # malformed JSON or bytes that are not UTF-8
        raise PolicyError(f"policy {file_name!r} is not valid JSON: {exc}") from exc


def load_policy(policy: str | os.PathLike[str] = DEFAULT_POLICY) -> Policy:
    """Load a policy by version name (built-in) or by path to a ``.json`` file.

    The file's content hash must equal the hash recorded in the ``.sha256`` file beside it,
    the ``policy_version`` inside must equal the file name, and the token encoding it names
    must be loadable offline. Any failure raises; there is no partial or default policy.

    >>> policy = load_policy("R2_POLICY_V1")
    >>> policy.policy_version, policy.max_chunks, policy.min_top_similarity_score
    ('R2_POLICY_V1', 6, 0.76)

    Raises:
        PolicyError: the file is missing, malformed, invalid, renamed, or tampered with.
        TokenizerUnavailableError: its token encoding cannot be loaded without a download.
    """
    path, expected_name = _resolve(policy)
    lock_path = path.with_suffix(_LOCK_SUFFIX)
    try:
        raw = path.read_bytes()
        recorded = lock_path.read_text(encoding="ascii").split()
    except OSError as exc:
        raise PolicyError(
            f"cannot read policy {path.name!r} and its lock {lock_path.name!r}: {exc.strerror}"
        ) from exc
    loaded = _parse(raw, path.name)

    if not recorded or recorded[0] != loaded.policy_sha256:
        raise PolicyError(
            f"policy {path.name!r} does not match the sha256 recorded in {lock_path.name!r}; "
            "a changed policy must be saved as a new policy_version and locked again"
        )
    if loaded.policy_version != (expected_name or path.stem):
        raise PolicyError(
            f"policy file {path.name!r} declares policy_version {loaded.policy_version!r}; "
            "the file name and the version must agree"
        )
    resolve_policy(loaded, path.name)
    return loaded


@memoized(None)
def _builtin_sha256(version: str) -> str:
    return load_policy(version).policy_sha256


def check_policy_identity(policy: Policy) -> Policy:
    """Refuse a policy that borrows a built-in version name but not its content.

    A policy built in code (``Policy(...)`` or ``model_copy``) skips the file lock; without
    this check it could run as ``R2_POLICY_V1`` with other thresholds, and the trace would
    name a version that never decided anything.

    Raises:
        PolicyError: ``policy.policy_version`` is a built-in name and the hashes differ.
    """
    if policy.policy_version in available_policies() and (
        policy.policy_sha256 != _builtin_sha256(policy.policy_version)
    ):
        raise PolicyError(
            f"this policy calls itself {policy.policy_version!r} but its content differs from "
            "the locked built-in; give changed values a new policy_version"
        )
    return policy


def lock_policy(path: str | os.PathLike[str]) -> str:
    """Validate a new policy file and write its ``.sha256`` lock beside it.

    This is how users add their own policy versions: write ``MY_POLICY_V1.json``, lock it
    once, and from then on any edit makes it refuse to load.

    Returns:
        The recorded sha256.
    """
    path = Path(path)
    sha256 = policy_lock_value(path)
    path.with_suffix(_LOCK_SUFFIX).write_text(f"{sha256}  {path.name}\n", encoding="ascii")
    return sha256


def policy_lock_value(path: str | os.PathLike[str]) -> str:
    """The sha256 a policy file's lock must record, once the file is a valid policy.

    Raises:
        PolicyError: unreadable, not a valid policy, or a version that is not its file name.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PolicyError(f"cannot read {path.name!r}: {exc.strerror}") from exc
    policy = _parse(raw, path.name)
    if policy.policy_version != path.stem:
        raise PolicyError(
            f"cannot lock {path.name!r}: it declares policy_version {policy.policy_version!r}"
        )
    return policy.policy_sha256

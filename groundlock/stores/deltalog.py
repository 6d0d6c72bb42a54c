"""A Delta table's commit log, action by action, local or on an object store.

``records verify`` needs each commit's ``commitInfo`` *and* the files it added and removed;
``DeltaTable.history`` gives only the former, so the ``_delta_log/<version>.json`` files are
read directly (:mod:`groundlock.stores.objectfiles`).

Which versions the log holds: a local folder is listed. An object store is not (delta-rs
lists one only through pyarrow), so its versions are probed by reading ``<version>.json``,
starting from the version delta-rs loads (``DeltaTable.version()``: its log is contiguous
from the last Delta checkpoint to there) and walking down, then up for commits that landed
since (when delta-rs cannot load the table, from the version of its newest Delta checkpoint,
else 0, both ways). A version missing below another is a gap (``LOG_GAP``); below the oldest
one left, Delta's log cleanup has removed the history (it deletes commits older than a
checkpoint, oldest first). To tell the two apart without probing every cleaned version, a
walk that meets a missing version probes further at doubling distances (1, 2, 4, ... and
version 0): a commit left beyond is found in a few dozen requests, then the versions between
are probed one by one. A commit stranded between two probes is not found: below the oldest
commit found it reads as cleaned history (as a deleted head of the log does; only a signed
checkpoint shows either), and past the newest in a log delta-rs cannot load (the only case
the walk up probes beyond a missing version), the verifier still reports the table
(``LOG_UNREADABLE`` when no gap explains the failure).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from groundlock.stores.causes import store_error_cause
from groundlock.stores.objectfiles import TableFiles
from groundlock.stores.sink import AuditUnavailable

__all__ = ["Commit", "DeltaLog", "present_versions", "read_log"]

_FARTHEST = 2**40
"""How far past a missing version a walk upwards probes (more commits than any table has)."""


@dataclass(frozen=True, slots=True)
class Commit:
    """One version's commit: its ``commitInfo`` and the files it added and removed."""

    version: int
    info: Mapping[str, Any]
    adds: tuple[Mapping[str, Any], ...]
    removes: tuple[Mapping[str, Any], ...]
    metadata: Mapping[str, Any] | None = None
    """The commit's ``metaData`` action (schema, partition columns, configuration), if any."""
    protocol: Mapping[str, Any] | None = None
    """The commit's ``protocol`` action, if any."""


@dataclass
class DeltaLog:
    """What a table's log holds, oldest commit first, and what is wrong with it."""

    commits: list[Commit] = field(default_factory=list)
    gaps: list[int] = field(default_factory=list)
    """Versions missing between two that are present."""
    unreadable: list[int] = field(default_factory=list)
    """Versions whose commit file is not Delta log JSON."""
    unloadable: str | None = None
    """Why delta-rs cannot load the table (class and cause), when the log has commits."""
    loaded: int | None = None
    """The version delta-rs loads (from the commits, or from a Delta checkpoint)."""


def present_versions(
    exists: Callable[[int], bool], loaded: int | None, floor: int = 0
) -> list[int]:
    """The versions whose commit ``exists``, found by probing (see the module docstring).

    ``loaded`` is the version delta-rs loads (None when it cannot load the table), ``floor``
    where to start without one (the version of Delta's ``_last_checkpoint``, else 0).
    """
    if loaded is not None:
        start = loaded if exists(loaded) else _beyond(exists, loaded, -1)
    else:
        start = floor if exists(floor) else _beyond(exists, floor, +1)
    if start is None:
        return []
    found = [start]
    version = start
    while True:  # up: delta-rs's log is contiguous up to ``loaded``; past it, only new commits
        if exists(version + 1):
            version += 1
            found.append(version)
            continue
        beyond = None if loaded is not None else _beyond(exists, version + 1, +1)
        if beyond is None:
            break
        found += [v for v in range(version + 2, beyond) if exists(v)] + [beyond]
        version = beyond
    version = start
    while version > 0:
        if exists(version - 1):
            version -= 1
            found.append(version)
            continue
        beyond = _beyond(exists, version - 1, -1)
        if beyond is None:
            break
        found += [v for v in range(beyond + 1, version - 1) if exists(v)] + [beyond]
        version = beyond
    return sorted(found)


def _beyond(exists: Callable[[int], bool], missing: int, step: int) -> int | None:
    """The first version present at doubling distances from ``missing`` (down: 0 last)."""
    distance = 1
    while distance <= _FARTHEST:
        version = missing + step * distance
        if version <= 0 and step < 0:
            return 0 if exists(0) else None
        if exists(version):
            return version
        distance *= 2
    return None


def read_log(
    files: TableFiles, location: str, storage_options: Mapping[str, str] | None, *, label: str
) -> DeltaLog:
    """Every commit of the table at ``location``, its gaps and unreadable commits.

    Whether delta-rs can load the table is asked too (for the version to probe from, and
    a log it cannot load is a finding). An error of the store (not a missing file) is
    :class:`AuditUnavailable` naming ``label`` and its cause, never the location.
    """
    loaded, load_error = _loaded_version(location, storage_options)
    texts: dict[int, bytes | None] = {}

    def exists(version: int) -> bool:
        if version not in texts:
            try:
                texts[version] = files.read(_commit_path(version))
            except FileNotFoundError:
                texts[version] = None
        return texts[version] is not None

    listed = files.log_versions()
    if listed is not None:
        versions = listed
    else:
        versions = present_versions(exists, loaded, 0 if loaded is not None else _floor(files))
    log = DeltaLog(loaded=loaded)
    for version in versions:
        if not exists(version):  # deleted since it was listed: a gap like any other
            continue
        commit = _parse(version, texts[version] or b"")
        if commit is None:
            log.unreadable.append(version)
        else:
            log.commits.append(commit)
    present = [commit.version for commit in log.commits] + log.unreadable
    present.sort()
    log.gaps = [v for a, b in pairwise(present) for v in range(a + 1, b)]
    if load_error is not None:
        if not present and not _is_no_table(load_error):
            raise AuditUnavailable(f"the {label} table cannot be opened ({load_error})")
        if present and not log.gaps and not log.unreadable:
            log.unloadable = load_error
    return log


def _loaded_version(
    location: str, storage_options: Mapping[str, str] | None
) -> tuple[int | None, str | None]:
    """The version delta-rs loads, or None and why not (class and cause, never the message)."""
    from deltalake import DeltaTable  # noqa: PLC0415  (the stores import delta-rs late)

    try:
        return DeltaTable(
            location, storage_options=dict(storage_options or {}) or None
        ).version(), None
    except Exception as exc:  # noqa: BLE001  (any failure to load is reported, by kind)
        return None, f"{type(exc).__name__}: {store_error_cause(exc)}"


def _is_no_table(load_error: str) -> bool:
    return load_error.startswith("TableNotFoundError")


def _floor(files: TableFiles) -> int:
    """The version of Delta's newest checkpoint (``_last_checkpoint``), else 0."""
    try:
        version = json.loads(files.read("_delta_log/_last_checkpoint"))["version"]
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return 0
    return version if isinstance(version, int) and version >= 0 else 0


def _commit_path(version: int) -> str:
    return f"_delta_log/{version:020d}.json"


def _parse(version: int, text: bytes) -> Commit | None:
    """One commit file's actions, or None when it is not Delta log JSON."""
    info: Mapping[str, Any] = {}
    adds: list[Mapping[str, Any]] = []
    removes: list[Mapping[str, Any]] = []
    metadata: Mapping[str, Any] | None = None
    protocol: Mapping[str, Any] | None = None
    try:
        for line in text.decode("utf-8").splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            if not isinstance(action, dict):
                return None
            if isinstance(action.get("commitInfo"), dict):
                info = action["commitInfo"]
            if isinstance(action.get("metaData"), dict):
                metadata = action["metaData"]
            if isinstance(action.get("protocol"), dict):
                protocol = action["protocol"]
            for kind, actions in (("add", adds), ("remove", removes)):
                if kind in action:
                    if not isinstance(action[kind], dict) or not isinstance(
                        action[kind].get("path"), str
                    ):
                        return None
                    actions.append(action[kind])
    except ValueError:  # not UTF-8, not JSON
        return None
    return Commit(version, info, tuple(adds), tuple(removes), metadata, protocol)

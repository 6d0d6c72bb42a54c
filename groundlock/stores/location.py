r"""Where a Delta table lives: a local path made absolute, or a URI as given.

delta-rs turns every location into a URL, and some local folder names do not survive it
(delta-rs 1.6): ``[``, ``]``, ``^`` and ``|`` make it panic (on the audit flusher's thread,
a panic it could only log, write after write), ``\`` fails, and a ``%`` escape such as
``%41`` is decoded into another folder. Such a path is refused here, when a store, an
archive or an index is created, naming the character, instead of at its first write.
Percent-encoding the path into a ``file://`` URL does not help (the encoded brackets panic
too), so the check is ours.

A control character (C0 with tab, newline, carriage return and NUL; DEL; C1) or a Unicode
line or paragraph separator is refused in any location, local or remote: delta-rs fails on
C0 and DEL at the first write, a URL parser drops a tab or newline (``s3://b/a<TAB>b`` would
be ``s3://b/ab``, another table), and any of them would split or rewrite the log line or
message that names the location. A valid URI holds none of them unescaped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

__all__ = ["delta_location", "is_local", "unsafe_commit_setting"]

_UNOPENABLE = re.compile(r"[\[\]^|\\]|%[0-9A-Fa-f]{2}")

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""Every character ``str.splitlines`` breaks at is among these."""


def is_local(location: str) -> bool:
    """Whether ``location`` names the local filesystem (a path or a ``file://`` URL)."""
    return "://" not in location or location.startswith("file://")


def delta_location(uri: str | os.PathLike[str]) -> str:
    """``uri`` as the stores open it; a location delta-rs cannot open is a ``ValueError``.

    A local path (or ``file://`` URL) becomes an absolute path; any other URI is kept as
    given. Neither keeps a trailing slash. A control or line-break character is refused in
    either, naming it (a remote URI is not quoted: it may carry a credential).
    """
    text = os.fspath(uri)
    local = is_local(text)
    control = _CONTROL.search(text)
    if control is not None:
        shown = f"{_escaped(str(Path(text.removeprefix('file://')).absolute()))}: " if local else ""
        raise ValueError(
            f"{shown}a store, archive, index or log location may not hold a control or "
            f"line-break character; it holds {_named(control.group())}"
        )
    if not local:
        return text.rstrip("/")
    path = str(Path(text.removeprefix("file://")).absolute()).rstrip("/")
    found = _UNOPENABLE.search(path)
    if found is not None:
        raise ValueError(
            f"{path}: delta-rs cannot open this local path (it holds {found.group()!r}; a local "
            "path may not hold '[', ']', '^', '|', '\\' or a %-escape such as %41)"
        )
    return path


_S3_SCHEMES = ("s3://", "s3a://")
_AZURE_SCHEMES = ("az://", "abfs://", "abfss://", "adl://", "azure://")
"""The schemes delta-rs opens on Azure Blob Storage and ADLS Gen2 (``deltalake-azure``)."""
_TRUE = ("1", "true", "yes", "on")


def unsafe_commit_setting(uri: str, storage_options: Mapping[str, str]) -> str | None:
    """Why ``uri`` could lose a commit under concurrent writers, or None.

    A Delta commit is safe when only one writer can create a version file. How each store
    ensures that, and what turns it off:

    * **Azure Blob Storage and ADLS Gen2** (``az://``, ``abfs://``, ``abfss://``,
      ``adl://``, ``azure://``): delta-rs creates the version file with Put Blob and
      ``If-None-Match: *``, which Azure refuses (409) once the blob exists. That is Azure's
      own conditional write, with no lock provider, and neither delta-rs nor object_store
      has a setting that turns it off, so there is nothing to refuse (the race is tested
      against Azurite in ``tests/stores/test_azure_store.py``).
    * **S3** (``s3://``, ``s3a://``): delta-rs 1.x commits a version file with a
      conditional put (``If-None-Match``), so two writers of one version cannot both win
      (delta-rs pull request 3091); ``AWS_S3_LOCKING_PROVIDER=dynamodb`` serialises commits
      in DynamoDB instead. Two settings turn that off: ``AWS_S3_ALLOW_UNSAFE_RENAME=true``
      (delta-rs's own opt-out, documented as safe for one writer only) and
      ``AWS_CONDITIONAL_PUT=disabled``. The audit trail has many writers by design (every
      process that records), so either is refused unless a DynamoDB lock provider is set.
      Options are read as delta-rs reads them: keys in any case, the ``AWS_`` prefix
      optional, the environment behind the options.
    """
    if uri.startswith(_AZURE_SCHEMES):
        return None  # safe by Azure's conditional write, which no setting disables
    if not uri.startswith(_S3_SCHEMES):
        return None
    given = {key.upper().removeprefix("AWS_"): value for key, value in storage_options.items()}

    def setting(name: str) -> str:
        value = given.get(name, os.environ.get(f"AWS_{name}", ""))
        return value.strip().lower()

    if setting("S3_LOCKING_PROVIDER") == "dynamodb":
        return None
    if setting("S3_ALLOW_UNSAFE_RENAME") in _TRUE:
        return (
            "AWS_S3_ALLOW_UNSAFE_RENAME=true lets two writers overwrite each other's commit; "
            "remove it (delta-rs commits with a conditional put) or set "
            "AWS_S3_LOCKING_PROVIDER=dynamodb"
        )
    if setting("CONDITIONAL_PUT") == "disabled":
        return (
            "AWS_CONDITIONAL_PUT=disabled leaves commits without a conditional put; remove it "
            "(or set it to etag) or set AWS_S3_LOCKING_PROVIDER=dynamodb"
        )
    return None


def _named(character: str) -> str:
    r"""``'\t' (U+0009)``: the character as Python escapes it, and its code point."""
    return f"{character!r} (U+{ord(character):04X})"


def _escaped(text: str) -> str:
    """``text`` on one line: each control or line-break character as its escape."""
    return _CONTROL.sub(lambda found: repr(found.group())[1:-1], text)

r"""Where a Delta table lives: a local path made absolute, or a URI as given.

delta-rs turns every location into a URL, and some local folder names do not survive it
(delta-rs 1.6): ``[``, ``]``, ``^`` and ``|`` make it panic (on the audit flusher's thread,
a panic it could only log, write after write), ``\`` fails, and a ``%`` escape such as
``%41`` is decoded into another folder. Such a path is refused here, when a store, an
archive or an index is created, naming the character, instead of at its first write.
Percent-encoding the path into a ``file://`` URL does not help (the encoded brackets panic
too), so the check is ours.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["delta_location", "is_local"]

_UNOPENABLE = re.compile(r"[\[\]^|\\]|%[0-9A-Fa-f]{2}")


def is_local(location: str) -> bool:
    """Whether ``location`` names the local filesystem (a path or a ``file://`` URL)."""
    return "://" not in location or location.startswith("file://")


def delta_location(uri: str | os.PathLike[str]) -> str:
    """``uri`` as the stores open it; a local path delta-rs cannot open is a ``ValueError``.

    A local path (or ``file://`` URL) becomes an absolute path; any other URI is kept as
    given. Neither keeps a trailing slash.
    """
    text = os.fspath(uri)
    if not is_local(text):
        return text.rstrip("/")
    path = str(Path(text.removeprefix("file://")).absolute()).rstrip("/")
    found = _UNOPENABLE.search(path)
    if found is not None:
        raise ValueError(
            f"{path}: delta-rs cannot open this local path (it holds {found.group()!r}; a local "
            "path may not hold '[', ']', '^', '|', '\\' or a %-escape such as %41)"
        )
    return path

"""Table names for locations: ``semantic.gold_chunks`` instead of ``s3://lake/...``.

Spec 003 names its tables as a Databricks user does (``semantic.gold_chunks``,
``serving.rag_queries``, ``eval_log``). A small catalog file maps such names to the
locations groundlock opens, so those names work unchanged wherever the command line takes
an index, a store or an archive (``--index``, ``--store``, ``--archive``)::

    # groundlock.catalog.toml, named by $GROUNDLOCK_CATALOG
    [tables]
    "semantic.gold_chunks" = "s3://lake/semantic/gold_index"   # the index root
    serving.rag_queries = "abfss://audit@acct.dfs.core.windows.net/trail"
    eval_log = "eval_log"                # relative: to the catalog file's folder

A value is looked up only when ``$GROUNDLOCK_CATALOG`` names a catalog and the value has
the shape of a table name (one to three names of letters, digits and ``_``, joined by
dots; no ``/``, no scheme). A listed name resolves. A bare name the catalog does not list,
or a dotted one naming a file or folder that exists, stays a path, as it was before
catalogs (``--store eval_log``, ``--index idx.v2``); any other dotted name is an error
naming the catalog (a new folder with a dot in its name is written ``./audit.delta``).
Without ``$GROUNDLOCK_CATALOG`` nothing changes.
The whole catalog is checked when it is read: a bad entry is named, never skipped.
Credentials are not the catalog's business: delta-rs reads them from the environment.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from groundlock.stores.location import delta_location

__all__ = ["CATALOG_ENV", "TableCatalog", "resolve_location"]

CATALOG_ENV = "GROUNDLOCK_CATALOG"
"""The environment variable naming the catalog file."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*){0,2}")


class TableCatalog:
    r"""The names of a catalog file and the locations they stand for (checked on load).

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "c.toml").write_text('[tables]\nsemantic.gold_chunks = "s3://lake/gold"\n')
    >>> TableCatalog.load(folder / "c.toml").location("semantic.gold_chunks")
    's3://lake/gold'
    """

    def __init__(self, path: Path, tables: Mapping[str, str]) -> None:
        self.path = path
        self.tables = dict(tables)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TableCatalog:
        """Read and check the catalog at ``path``.

        Raises:
            ValueError: a file that cannot be read, is not TOML, has no ``[tables]``, or
                holds an entry that is not a location groundlock can open (named).
        """
        where = Path(path)
        try:
            data = tomllib.loads(where.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValueError(f"catalog {where}: cannot be read ({exc.strerror})") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"catalog {where}: not TOML ({exc})") from None
        tables = data.get("tables")
        if not isinstance(tables, dict):
            # (a ValueError, as every other fault of the file: the shell's usage error)
            raise ValueError(f"catalog {where}: no [tables] section mapping names to locations")  # noqa: TRY004
        flat: dict[str, str] = {}
        for name, value in _flatten(tables, ""):
            if not _NAME.fullmatch(name):
                raise ValueError(
                    f"catalog {where}: {name!r} is not a table name (one to three names of "
                    "letters, digits and '_', joined by dots)"
                )
            if name in flat:
                raise ValueError(f"catalog {where}: {name} is listed twice")
            flat[name] = _location(where, name, value)
        return cls(where, flat)

    def location(self, name: str) -> str | None:
        """The location ``name`` stands for, or None when the catalog does not list it."""
        return self.tables.get(name)


def _flatten(tables: Mapping[str, Any], prefix: str) -> list[tuple[str, Any]]:
    # A TOML dotted key (semantic.gold_chunks = ...) is a nested table: its path is the name.
    found: list[tuple[str, Any]] = []
    for key, value in tables.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            found.extend(_flatten(value, f"{name}."))
        else:
            found.append((name, value))
    return found


def _location(catalog: Path, name: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"catalog {catalog}: {name} must map to a path or URI (a string)")
    if "://" not in value:  # a path: relative to the catalog's folder (an absolute one stays)
        value = str(catalog.parent / value)
    try:
        return delta_location(value)
    except ValueError as exc:
        # (delta_location quotes a local path, never a remote URI: it may carry a credential.)
        raise ValueError(f"catalog {catalog}: {name}: {exc}") from None


def resolve_location(
    value: str | None, option: str, environ: Mapping[str, str] | None = None
) -> str | None:
    """``value`` of ``option`` as a location: a catalog name resolved, anything else as given.

    >>> resolve_location("./idx", "--index", {})  # a path: never looked up
    './idx'

    Raises:
        ValueError: a bad catalog, or a dotted name the catalog does not list.
    """
    env = os.environ if environ is None else environ
    catalog_path = env.get(CATALOG_ENV)
    if not value or not catalog_path or not _NAME.fullmatch(value):
        return value
    catalog = TableCatalog.load(catalog_path)
    found = catalog.location(value)
    if found is not None:
        return found
    if "." not in value or Path(value).exists():
        # A bare name the catalog does not list, or a folder that is there (``idx.v2``,
        # ``audit.delta``): a path, as before catalogs.
        return value
    listed = ", ".join(sorted(catalog.tables)) or "no names"
    raise ValueError(
        f"{option} {value}: not a table of the catalog {catalog.path} (${CATALOG_ENV}); "
        f"it lists {listed} (for a new folder of that name, write ./{value})"
    )

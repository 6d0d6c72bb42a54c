"""How much one request, one client and one worker may ask of a served chain.

Kept apart from :mod:`groundlock.serve.app` so the command line can list the limits as
flags without importing the web stack.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["ServeLimits"]


@dataclass(frozen=True, slots=True)
class ServeLimits:
    """How much one request, one client and one worker may ask of a served chain.

    Each has an environment variable (``GROUNDLOCK_`` and the field's name in capitals) and
    a ``groundlock serve`` flag (``--max-batch-items`` ...). Small by default: a batch is a
    convenience for a few bundles, not a bulk interface (the lakehouse runner is that).
    """

    max_body_bytes: int = 4 * 2**20
    """Largest request body (413 ``BODY_TOO_LARGE``)."""
    max_batch_items: int = 16
    """Most inputs in one ``/answer/batch`` request (413 ``BATCH_TOO_LARGE``)."""
    max_batch_rows: int = 2000
    """Most evidence rows over all of a batch's bundles (413 ``BATCH_TOO_LARGE``)."""
    batch_concurrency: int = 2
    """How many of a batch's inputs run at once."""
    max_in_flight: int = 128
    """Most requests one worker runs at once (503 ``OVERLOADED``)."""
    max_in_flight_per_client: int = 64
    """Most requests one client runs at once on a worker (429 ``TOO_MANY_REQUESTS``)."""
    request_timeout_seconds: float = 120.0
    """How long one request may take (504 ``DEADLINE_EXCEEDED``). Above the policy's model
    deadline (90 s by default), so a slow model ends in its own audited
    ``MODEL_DEADLINE_EXCEEDED`` first; this is the backstop."""

    def __post_init__(self) -> None:
        for field in fields(self):
            if not getattr(self, field.name) > 0:
                raise ValueError(f"{field.name} must be positive")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServeLimits:
        """The limits with any ``GROUNDLOCK_<FIELD>`` environment variable applied."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field in fields(cls):
            raw = environ.get(f"GROUNDLOCK_{field.name.upper()}")
            if raw:
                kind = float if field.name.endswith("seconds") else int
                try:
                    values[field.name] = kind(raw)
                except ValueError:
                    raise ValueError(
                        f"GROUNDLOCK_{field.name.upper()} must be a number, not {raw!r}"
                    ) from None
        return cls(**values)

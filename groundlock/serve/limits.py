"""How much one request, one client and one worker may ask of a served chain.

Kept apart from :mod:`groundlock.serve.app` so the command line can list the limits as
flags without importing the web stack.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groundlock.policies.model import Policy

__all__ = ["ServeLimits", "least_request_timeout"]

_DEFAULT_REQUEST_TIMEOUT = 120.0
_LARGEST = 1e9
"""Above this a limit is no limit (and a number of seconds overflows a timer)."""


def least_request_timeout(policy: Policy) -> float:
    """The shortest serving deadline under ``policy``.

    R4's deadline, the support judge's budget, and a margin (a tenth of that, at least a
    second) for R2, R3, R5 and the audit write. A serving deadline below it would cut
    requests the policy means to let finish, as 504s with the model already paid for,
    instead of the policy's own audited outcome.
    """
    budget = policy.execution.request_deadline_seconds
    if policy.support_judge is not None:
        budget += policy.support_judge.timeout_seconds
    return budget + max(1.0, budget / 10)


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
    request_timeout_seconds: float | None = None
    """How long one request may take once its body is in (504 ``DEADLINE_EXCEEDED``; the
    work is cancelled and recorded FAILED with that reason). None: the policy's least
    (:func:`least_request_timeout`), but not below 120 s. Never below that least: a slow
    model must end in its own audited ``MODEL_DEADLINE_EXCEEDED`` first; this is the
    backstop, which mostly cuts batches whose queued items add up."""
    read_timeout_seconds: float = 15.0
    """How long a client may take to send a request's headers, and then its body (408
    ``REQUEST_TIMEOUT``; the connection is closed). A request holds no in-flight slot
    before its body is in, so a slow client costs a connection for this long, no more."""

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if value is not None and not (0 < value < _LARGEST):
                raise ValueError(f"{field.name} must be positive and below {_LARGEST:g}")

    def request_timeout(self, policy: Policy) -> float:
        """The request deadline this worker applies under ``policy`` (see the field)."""
        least = least_request_timeout(policy)
        if self.request_timeout_seconds is None:
            return max(least, _DEFAULT_REQUEST_TIMEOUT)
        if self.request_timeout_seconds < least:
            raise ValueError(
                f"request_timeout_seconds must be at least {least:g} s under "
                f"{policy.policy_version}: its model deadline and support judge, and a margin"
            )
        return self.request_timeout_seconds

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

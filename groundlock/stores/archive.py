"""``EvidenceArchive``: the opt-in evidence archive, a Delta table apart from the trail.

The audit trail records what each request decided; the archive records what it decided
*on*: the evidence as the prompt held it, the prompt messages and the model's raw text
(:class:`~groundlock.contracts.audit_rows.EvidenceRow`). That is what ``groundlock replay``
needs to prove a prompt's sha256 again and to measure what another policy would change,
and what ``groundlock records show`` needs to quote the sentence a rule fired on.

It holds the raw text the firewall may have refused, so it is a table of its own, at a URI
of its own (another bucket, other credentials), never read by the chain's response or
its log line. It is off unless a chain is given one
(``grounded_answer_chain(store=..., archive=EvidenceArchive(uri))``).

Each request is one direct commit: simple and durable before the response, at the cost
of a commit per request (the trail's spool is not shared; an archive is for audits and
replays, not for the hot path of a high-volume deployment).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from groundlock.contracts.audit_rows import EvidenceRow
from groundlock.contracts.state import Judged
from groundlock.stores.arrow import arrow_schema, to_arrow
from groundlock.stores.causes import store_error_cause
from groundlock.stores.location import delta_location
from groundlock.stores.readers import InvalidRow, TrailDamaged, read_table, valid_rows
from groundlock.stores.sink import AuditUnavailable

if TYPE_CHECKING:
    from deltalake import DeltaTable

__all__ = ["EvidenceArchive", "evidence_row"]

logger = logging.getLogger("groundlock.audit")


def evidence_row(state: Judged, *, version: str) -> EvidenceRow:
    """The archive row of a judged request: its evidence, prompt and raw model text."""
    prompt = state.prompt
    messages = (
        json.dumps([[m.role, m.content] for m in prompt.messages], ensure_ascii=False)
        if prompt.messages
        else None
    )
    return EvidenceRow.model_validate(
        {
            "record_id": os.urandom(16).hex(),
            "timestamp_utc": datetime.now(UTC),
            "request_id": state.request_id,
            "run_id": state.run_id,
            "status": state.status.value,
            "failure_reason": state.outcome.reason.value if state.outcome.reason else None,
            "policy_version": state.policy_version,
            "policy_sha256": state.policy_sha256,
            "prompt_sha256": prompt.prompt_sha256,
            "model_name": state.execution.model_name,
            "retrieval_bundle_json": (
                state.retrieval.model_dump_json() if state.retrieval is not None else None
            ),
            "answer_bundle_json": state.bundle.model_dump_json(),
            "prompt_messages_json": messages,
            "raw_model_text": state.execution.raw_model_text,
            "groundlock_version": version,
        }
    )


class EvidenceArchive:
    """The archive table at ``uri`` (a local path or any URI delta-rs opens).

    Creating one touches nothing; the first row written creates the table (append-only).
    """

    def __init__(
        self, uri: str | os.PathLike[str], storage_options: Mapping[str, str] | None = None
    ) -> None:
        self.uri = delta_location(uri)
        self.storage_options = dict(storage_options or {})
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        # A URI may carry a credential, and the archive's location is itself worth keeping
        # out of logs: never shown.
        return "EvidenceArchive(<uri>)"

    def _open(self, *, create: bool = False) -> DeltaTable:
        from deltalake import DeltaTable  # noqa: PLC0415  (never imported before a fork)

        options = self.storage_options or None
        if create and not DeltaTable.is_deltatable(self.uri, storage_options=options):
            with contextlib.suppress(Exception):  # a racing process may create it first
                DeltaTable.create(
                    self.uri,
                    arrow_schema(EvidenceRow),
                    mode="ignore",
                    configuration={"delta.appendOnly": "true"},
                    storage_options=options,
                )
        return DeltaTable(self.uri, storage_options=options)

    def record(self, row: EvidenceRow) -> None:
        """Commit ``row`` before returning, or raise :class:`AuditUnavailable`.

        The message names the kind of fault only: delta-rs messages quote URIs.
        """
        from deltalake import write_deltalake  # noqa: PLC0415

        try:
            with self._lock:
                # merge: an archive written before a column was added takes the new one.
                write_deltalake(
                    self._open(create=True),
                    to_arrow(EvidenceRow, [row]),
                    mode="append",
                    schema_mode="merge",
                )
        except Exception as exc:  # noqa: BLE001  (any failure: the row is not durable)
            raise AuditUnavailable(
                f"the evidence archive cannot be written ({type(exc).__name__})"
            ) from None

    def exists(self) -> bool:
        """Whether the archive table has been created (by a first row)."""
        from deltalake import DeltaTable  # noqa: PLC0415

        return bool(
            DeltaTable.is_deltatable(self.uri, storage_options=self.storage_options or None)
        )

    def select(self, where: str = "", *, limit: int | None = None) -> list[EvidenceRow]:
        """Archived rows, oldest first; ``where`` is a SQL condition (values via ``sql_text``).

        Raises :class:`~groundlock.stores.readers.TrailDamaged` (one line, no path) when a
        data file cannot be read or a row breaks its model; :meth:`read` keeps such a row.
        """
        return valid_rows(self.read(where, limit=limit))

    def read(self, where: str = "", *, limit: int | None = None) -> list[EvidenceRow | InvalidRow]:
        """As :meth:`select`, but a row that breaks its model is kept as an ``InvalidRow``.

        An archive written before a column was added lacks it: the column reads as null.
        """
        if not self.exists():
            raise AuditUnavailable("the evidence archive does not exist")
        try:
            table = self._open()
        except Exception as exc:  # noqa: BLE001  (a damaged log: named by kind, never by path)
            raise TrailDamaged(
                "the evidence archive cannot be opened "
                f"({type(exc).__name__}: {store_error_cause(exc)})"
            ) from None
        return read_table(table, EvidenceRow, where, limit=limit, label="the evidence archive")

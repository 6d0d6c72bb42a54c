"""A real trail and archive to damage, and the ways the tests damage them.

Through the deltalake API, as anyone with write access to the bucket could: lift
``delta.appendOnly`` and UPDATE rows, or remove a data file from disk.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from groundlock import grounded_answer_chain
from groundlock.stores import DeltaAuditStore
from groundlock.stores.archive import EvidenceArchive
from tests.builders import make_bundle, make_row
from tests.fakes.chat import ScriptedChatModel

SEAL = "Replace the seal every 500 hours."
PASSED_BY_V1 = "Replace the seal every 600 hours. [C0]"
"""R2_POLICY_V1's firewall lets an unsupported value through: the text is served."""


def build_trail(root: Path) -> None:
    """``root/audit`` and ``root/evidence``: five requests under R2_POLICY_V1.

    ``ok-0`` and ``ok-1`` answered, ``refused`` (NO_EVIDENCE), ``value`` (answered with a
    value its evidence does not hold, which V1 lets through) and ``rejected`` (FAILED).
    """
    store = DeltaAuditStore(root / "audit")
    archive = EvidenceArchive(root / "evidence")
    v1 = grounded_answer_chain(store=store, archive=archive, policy="R2_POLICY_V1")
    for number in range(2):
        v1.invoke(make_bundle(request_id=f"ok-{number}"))
    v1.invoke(make_bundle(request_id="refused", results=[make_row(0, similarity=0.01)]))
    seal = make_bundle([make_row(0, chunk_text=SEAL)], request_id="value")
    grounded_answer_chain(
        store=store, archive=archive, policy="R2_POLICY_V1",
        model=ScriptedChatModel(text=PASSED_BY_V1),
    ).invoke(seal)  # fmt: skip
    grounded_answer_chain(
        store=store, archive=archive, policy="R2_POLICY_V1",
        model=ScriptedChatModel(text="Fine [C7]."),
    ).invoke(make_bundle(request_id="rejected"))  # fmt: skip
    store.close()


def edit(table: Path, predicate: str, **values: Any) -> None:
    """UPDATE rows in place (None sets null): append-only lifted, then set again."""
    DeltaTable(str(table)).alter.set_table_properties({"delta.appendOnly": "false"})
    # Null, NaN and infinities as SQL: new_values would write them as names of columns.
    sql = {
        name: "NULL" if value is None else f"CAST('{value}' AS DOUBLE)"
        for name, value in values.items()
        if value is None or (isinstance(value, float) and not math.isfinite(value))
    }
    if sql:
        DeltaTable(str(table)).update(updates=sql, predicate=predicate)
    given = {name: value for name, value in values.items() if name not in sql}
    if given:
        DeltaTable(str(table)).update(new_values=given, predicate=predicate)
    DeltaTable(str(table)).alter.set_table_properties({"delta.appendOnly": "true"})


def remove_a_data_file(table: Path) -> str:
    """Delete one data file the table's log still references; returns its name."""
    first = Path(DeltaTable(str(table)).file_uris()[0])
    first.unlink()
    return first.name

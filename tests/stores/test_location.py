"""Local paths delta-rs cannot open are refused when a table's owner is created, by name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from groundlock import DeltaAuditStore, grounded_answer_chain
from groundlock.contracts.audit_rows import ValidationRow
from groundlock.lakehouse import DeltaVectorStore, LexicalEmbeddings, index_documents
from groundlock.lakehouse.evaluation import read_eval_log, write_eval_log
from groundlock.spark import ChainSpec
from groundlock.stores.archive import EvidenceArchive
from groundlock.stores.location import delta_location
from tests.builders import make_bundle, make_row

# delta-rs 1.6 panics on the first four, fails on the backslash, and decodes %41 into "A".
REFUSED = ["a[1]", "a]1", "a^1", "a|1", "a\\1", "a%41"]

OPENERS: dict[str, Callable[[str], object]] = {
    "DeltaAuditStore": DeltaAuditStore,
    "EvidenceArchive": EvidenceArchive,
    "DeltaVectorStore": lambda path: DeltaVectorStore(path, LexicalEmbeddings(16)),
    "index_documents": lambda path: index_documents(Path(__file__).parent, path),
    "write_eval_log": lambda path: write_eval_log([], path),
    "read_eval_log": read_eval_log,
    "ChainSpec store": lambda path: ChainSpec(store=path),
    "ChainSpec index": lambda path: ChainSpec(index=path),
}


@pytest.mark.parametrize("name", REFUSED)
@pytest.mark.parametrize("opener", sorted(OPENERS))
def test_a_local_path_delta_rs_cannot_open_is_refused_naming_it(
    tmp_path: Path, name: str, opener: str
) -> None:
    path = tmp_path / "trail" / name
    with pytest.raises(ValueError, match="delta-rs cannot open this local path") as raised:
        OPENERS[opener](str(path))
    assert str(raised.value).startswith(str(path))
    assert not (tmp_path / "trail").exists()  # refused before anything was written


def test_other_unusual_names_are_opened_and_written(tmp_path: Path) -> None:
    # Spaces, '#', '?' and a '%' that is no escape survive delta-rs: not refused.
    path = tmp_path / "a b#c?d%zz"
    store = DeltaAuditStore(path)
    chain = grounded_answer_chain(store=store)
    rows = [make_row(0, chunk_text="Replace the seal every 500 hours.")]
    question = "When is the seal replaced?"
    bundle = make_bundle(rows, request_id="r-1", run_id="job", user_question=question)
    response = chain.invoke(bundle)
    store.flush(strict=True)
    assert response.status.value == "OK"
    assert [row.request_id for row in store.select(ValidationRow)] == ["r-1"]
    assert (path / "validations" / "_delta_log").is_dir()


def test_a_location_is_absolute_locally_and_kept_as_given_remotely(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert delta_location("audit/") == str(tmp_path / "audit")
    assert delta_location(f"file://{tmp_path}/audit") == str(tmp_path / "audit")
    assert delta_location("s3://bucket/runs[1]/") == "s3://bucket/runs[1]"  # not ours to judge
    # A Spark spec's relative paths are the driver's, resolved before they travel.
    spec = ChainSpec(store="audit", index="index")
    assert (spec.store, spec.index) == (str(tmp_path / "audit"), str(tmp_path / "index"))

"""The audit trail on S3, against moto's S3 server over HTTP, written and read by delta-rs."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from deltalake import DeltaTable, write_deltalake

from groundlock import GenerationStatus, ReasonCode, grounded_answer_chain
from groundlock.stores import DeltaAuditStore, QueryRow, ValidationRow
from groundlock.stores.arrow import arrow_schema, to_arrow
from tests.builders import make_bundle
from tests.fakes.s3 import ACCESS_KEY, SECRET_KEY, S3Server
from tests.stores.places import Place
from tests.stores.rows import validation_row


def _store(s3: tuple[S3Server, str], tmp_path: Path, **options: str) -> DeltaAuditStore:
    server, bucket = s3
    return DeltaAuditStore(
        f"s3://{bucket}/audit", server.storage_options(**options),
        spool_dir=tmp_path / "spool", flush_interval_seconds=30,
    )  # fmt: skip


def test_one_request_and_a_batch_land_in_the_bucket(s3, tmp_path: Path) -> None:
    store = _store(s3, tmp_path)
    chain = grounded_answer_chain(store=store)
    assert chain.invoke(make_bundle(request_id="one")).status is GenerationStatus.OK
    batch = [make_bundle(request_id=f"b{i}") for i in range(5)]
    assert {r.status for r in chain.batch(batch)} == {GenerationStatus.OK}
    store.close()
    rows = store.select(ValidationRow)
    assert sorted(r.request_id for r in rows) == ["b0", "b1", "b2", "b3", "b4", "one"]
    assert len(store.select(QueryRow)) == 6
    # The same rows through a second store (another process would open it like this).
    again = _store(s3, tmp_path / "other")
    assert len(again.select(ValidationRow)) == 6
    assert again.executions([("one", "run-1")])


def test_a_request_recorded_twice_is_one_row_on_s3(s3, tmp_path: Path) -> None:
    store = _store(s3, tmp_path)
    chain = grounded_answer_chain(store=store)
    chain.invoke(make_bundle(request_id="twice"))
    store.flush()
    chain.invoke(make_bundle(request_id="twice"))
    store.close()
    assert [r.request_id for r in store.select(ValidationRow)] == ["twice"]


def test_the_server_refuses_a_second_commit_of_one_version(object_place: Place) -> None:
    # What the trail's safety on an object store rests on: delta-rs creates a version file
    # with a conditional write (S3's conditional put, Azure's If-None-Match: *), and the
    # server refuses the second writer of that version, who commits the next one instead.
    # Were the write not conditional, version 1 would be overwritten and the first
    # writer's rows lost.
    uri = object_place.root.rsplit("/", 1)[0] + "/race"
    options = object_place.options
    DeltaTable.create(uri, arrow_schema(ValidationRow), storage_options=options)
    first = DeltaTable(uri, storage_options=options)
    second = DeltaTable(uri, storage_options=options)  # both at version 0
    write_deltalake(first, to_arrow(ValidationRow, [validation_row(request_id="a")]), mode="append")
    write_deltalake(
        second, to_arrow(ValidationRow, [validation_row(request_id="b")]), mode="append"
    )
    table = DeltaTable(uri, storage_options=options)
    assert table.version() == 2
    assert sorted(table.to_pyarrow_table().column("request_id").to_pylist()) == ["a", "b"]


@pytest.mark.parametrize(
    ("option", "value"),
    [("AWS_S3_ALLOW_UNSAFE_RENAME", "true"), ("aws_s3_allow_unsafe_rename", "TRUE"),
     ("AWS_CONDITIONAL_PUT", "disabled"), ("conditional_put", "disabled")],
)  # fmt: skip
def test_an_unsafe_commit_setting_is_refused_at_start(
    s3, tmp_path: Path, option: str, value: str
) -> None:
    with pytest.raises(ValueError, match=option.upper().removeprefix("AWS_")) as refused:
        _store(s3, tmp_path, **{option: value})
    assert SECRET_KEY not in str(refused.value)
    assert ACCESS_KEY not in str(refused.value)


def test_an_unsafe_setting_in_the_environment_is_refused_too(
    s3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_S3_ALLOW_UNSAFE_RENAME", "true")
    with pytest.raises(ValueError, match="AWS_S3_ALLOW_UNSAFE_RENAME"):
        _store(s3, tmp_path)


def test_a_lock_provider_makes_unsafe_rename_acceptable(s3, tmp_path: Path) -> None:
    store = _store(
        s3, tmp_path, AWS_S3_ALLOW_UNSAFE_RENAME="true", AWS_S3_LOCKING_PROVIDER="dynamodb"
    )
    assert store.uri.endswith("/audit")


def test_a_local_store_ignores_s3_settings(tmp_path: Path) -> None:
    DeltaAuditStore(tmp_path / "audit", {"AWS_S3_ALLOW_UNSAFE_RENAME": "true"})


def _failed_with(store: DeltaAuditStore, caplog: pytest.LogCaptureFixture) -> str:
    with caplog.at_level(logging.INFO):
        response = grounded_answer_chain(store=store).invoke(make_bundle())
    assert response.status is GenerationStatus.FAILED
    assert response.failure_reason is ReasonCode.AUDIT_WRITE_FAILED
    shown = response.model_dump_json() + caplog.text
    assert ACCESS_KEY not in shown
    assert SECRET_KEY not in shown
    return caplog.text


def test_a_missing_bucket_is_named_as_the_cause(
    s3, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server, _ = s3
    store = DeltaAuditStore(
        "s3://no-such-bucket-5c1/audit", server.storage_options(), spool_dir=tmp_path / "spool"
    )
    log = _failed_with(store, caplog)
    assert "the bucket does not exist" in log
    assert "OSError" in log
    assert "no-such-bucket-5c1" not in log


def test_plain_http_without_allow_http_is_named_as_the_cause(
    s3, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server, bucket = s3
    options = {k: v for k, v in server.storage_options().items() if k != "AWS_ALLOW_HTTP"}
    store = DeltaAuditStore(f"s3://{bucket}/audit", options, spool_dir=tmp_path / "spool")
    assert "AWS_ALLOW_HTTP" in _failed_with(store, caplog)


def test_an_unreachable_endpoint_is_named_as_the_cause(
    s3, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server, bucket = s3
    options = server.storage_options(
        AWS_ENDPOINT_URL="http://127.0.0.1:9", max_retries="0", timeout="2s",
        connect_timeout="1s",
    )  # fmt: skip
    store = DeltaAuditStore(f"s3://{bucket}/audit", options, spool_dir=tmp_path / "spool")
    log = _failed_with(store, caplog)
    assert "the endpoint cannot be reached" in log
    assert bucket not in log

"""The audit trail on Azure Blob Storage, against Azurite, written and read by delta-rs.

What is Azure's own: the URI forms, the storage options and the environment delta-rs reads
them from, the conditional write a commit's safety rests on, and the causes a failure is
named by. The trail's behaviour (recording, dedup, recovery, upgrades) runs on Azurite too,
through the ``location`` fixture (``tests/stores/test_store.py`` and its neighbours).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from groundlock import GenerationStatus, ReasonCode, grounded_answer_chain
from groundlock.stores import DeltaAuditStore, QueryRow, ValidationRow
from tests.builders import make_bundle
from tests.fakes.azurite import ACCOUNT_KEY, AzuriteServer

WRONG_KEY = "d3Jvbmcta2V5LWNhbmFyeS0wMDQyLWF6dXJl"
"""A well-formed account key Azurite does not hold: the canary no message may show."""


def _store(
    azure: tuple[AzuriteServer, str], tmp_path: Path, scheme: str = "az", **options: str
) -> DeltaAuditStore:
    server, container = azure
    return DeltaAuditStore(
        f"{scheme}://{container}/audit", server.storage_options(**options),
        spool_dir=tmp_path / "spool", flush_interval_seconds=30,
    )  # fmt: skip


def test_a_batch_written_as_az_reads_back_as_abfs_and_abfss(azure, tmp_path: Path) -> None:
    store = _store(azure, tmp_path)
    chain = grounded_answer_chain(store=store)
    assert chain.invoke(make_bundle(request_id="one")).status is GenerationStatus.OK
    batch = chain.batch([make_bundle(request_id=f"b{i}") for i in range(3)])
    assert {response.status for response in batch} == {GenerationStatus.OK}
    store.close()
    written = ["b0", "b1", "b2", "one"]
    for scheme in ("az", "abfs", "abfss"):  # delta-rs's names for one container's blobs
        again = _store(azure, tmp_path / scheme, scheme)
        assert sorted(r.request_id for r in again.select(ValidationRow)) == written
        assert len(again.select(QueryRow)) == 4
    assert "object store" in repr(store)


def test_the_options_can_come_from_the_environment(
    azure, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, container = azure
    for name, value in server.storage_options().items():
        monkeypatch.setenv(name, value)
    store = DeltaAuditStore(f"az://{container}/audit", spool_dir=tmp_path / "spool")
    grounded_answer_chain(store=store).invoke(make_bundle(request_id="from-env"))
    store.close()
    assert [r.request_id for r in store.select(ValidationRow)] == ["from-env"]


def test_s3_commit_settings_do_not_apply_to_azure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Azure's conditional write has no opt-out; S3's refused settings mean nothing here.
    monkeypatch.setenv("AWS_S3_ALLOW_UNSAFE_RENAME", "true")
    for scheme in ("az", "abfs", "abfss", "adl", "azure"):
        DeltaAuditStore(f"{scheme}://container/audit", {"AWS_CONDITIONAL_PUT": "disabled"})
    with pytest.raises(ValueError, match="AWS_S3_ALLOW_UNSAFE_RENAME"):
        DeltaAuditStore("s3://bucket/audit")


def _failed_with(store: DeltaAuditStore, caplog: pytest.LogCaptureFixture, container: str) -> str:
    """The log of a request the store could not take; no key and no container in it."""
    with caplog.at_level(logging.INFO):
        response = grounded_answer_chain(store=store).invoke(make_bundle())
    assert response.status is GenerationStatus.FAILED
    assert response.failure_reason is ReasonCode.AUDIT_WRITE_FAILED
    shown = response.model_dump_json() + caplog.text
    for secret in (ACCOUNT_KEY, WRONG_KEY, container):
        assert secret not in shown
    return caplog.text


@pytest.mark.parametrize(
    ("change", "cause"),
    [
        ({"container": "no-such-container-5c1"}, "the container does not exist"),
        ({"AZURE_STORAGE_ACCOUNT_KEY": WRONG_KEY}, "access denied (credentials or permissions)"),
        ({"AZURE_STORAGE_ACCOUNT_KEY": "not base64!"}, "the account key is not valid base64"),
        ({"AZURE_ALLOW_HTTP": None}, "plain http is refused (set AZURE_ALLOW_HTTP=true)"),
        ({"AZURE_STORAGE_ACCOUNT_NAME": None},
         "no storage account is named (set AZURE_STORAGE_ACCOUNT_NAME)"),
        ({"AZURE_STORAGE_ENDPOINT": "http://127.0.0.1:9/devstoreaccount1", "max_retries": "0",
          "connect_timeout": "1s"}, "the endpoint cannot be reached"),
    ],
    ids=["missing-container", "wrong-key", "malformed-key", "plain-http", "no-account",
         "unreachable"],
)  # fmt: skip
def test_a_failure_is_named_by_its_cause_and_never_shows_a_key(
    azure, tmp_path: Path, caplog: pytest.LogCaptureFixture, change: dict[str, str | None],
    cause: str,
) -> None:  # fmt: skip
    server, container = azure
    container = change.pop("container", None) or container
    options = {
        name: value
        for name, value in {**server.storage_options(), **change}.items()
        if value is not None
    }
    store = DeltaAuditStore(f"az://{container}/audit", options, spool_dir=tmp_path / "spool")
    log = _failed_with(store, caplog, container)
    assert f"the validations table cannot be opened (OSError: {cause})" in log

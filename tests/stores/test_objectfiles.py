"""A table's files read as bytes, locally or through delta-rs's object store.

The first test pins the one internal deltalake class groundlock relies on
(``deltalake._internal.DeltaFileSystemHandler``): a deltalake release that renames its
constructor keywords, ``open_input_file``, ``size``, ``read`` or stops raising
``FileNotFoundError`` for a missing object fails here, by name, and the fix is one module
(``groundlock/stores/objectfiles.py``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from groundlock.stores import objectfiles
from groundlock.stores.objectfiles import LocalFiles, ObjectStoreFiles, table_files
from groundlock.stores.sink import AuditUnavailable
from tests.fakes.s3 import ACCESS_KEY, ROOT, SECRET_KEY, S3Server
from tests.stores.places import S3Place
from tests.stores.rows import query_row, validation_row

BYTES = bytes(range(256)) * 40


def _handler_shape(table_uri: str, options: dict[str, str] | None) -> None:
    from deltalake._internal import DeltaFileSystemHandler  # noqa: PLC0415

    handler = DeltaFileSystemHandler(table_uri=table_uri, options=options)
    source = handler.open_input_file("_delta_log/x.bin")
    assert source.size() == len(BYTES)
    head = source.read(7)
    assert isinstance(head, bytes)
    assert head + source.read(len(BYTES)) == BYTES
    with pytest.raises(FileNotFoundError):
        handler.open_input_file("_delta_log/no-such.bin")


def test_delta_rs_file_handler_keeps_the_shape_groundlock_relies_on(tmp_path: Path) -> None:
    (tmp_path / "t" / "_delta_log").mkdir(parents=True)
    (tmp_path / "t" / "_delta_log" / "x.bin").write_bytes(BYTES)
    _handler_shape(str(tmp_path / "t"), None)


def test_delta_rs_file_handler_keeps_its_shape_on_s3(s3: tuple[S3Server, str]) -> None:
    server, bucket = s3
    S3Place(server, bucket, Path(), prefix="t").write("_delta_log/x.bin", BYTES)
    _handler_shape(f"s3://{bucket}/t", server.storage_options())


def test_a_location_picks_local_files_or_the_object_store(tmp_path: Path) -> None:
    assert isinstance(table_files(tmp_path, None, label="t"), LocalFiles)
    assert isinstance(table_files(f"file://{tmp_path}", None, label="t"), LocalFiles)
    assert isinstance(table_files("s3://b/t", {"AWS_REGION": "x"}, label="t"), ObjectStoreFiles)


@pytest.fixture
def on_s3(s3: tuple[S3Server, str]) -> ObjectStoreFiles:
    server, bucket = s3
    S3Place(server, bucket, Path(), prefix="t").write("part-0.parquet", BYTES)
    return ObjectStoreFiles(f"s3://{bucket}/t", server.storage_options(), label="validations")


def test_an_object_is_read_sized_or_missing(on_s3: ObjectStoreFiles) -> None:
    assert on_s3.read("part-0.parquet") == BYTES
    assert on_s3.size("part-0.parquet") == len(BYTES)
    assert on_s3.size("gone.parquet") is None
    with pytest.raises(FileNotFoundError) as missing:
        on_s3.read("gone.parquet")
    assert "s3" not in str(missing.value)  # delta-rs's message quotes the bucket and URL


def test_an_object_is_copied_in_bounded_reads_and_the_copy_removed(
    on_s3: ObjectStoreFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(objectfiles, "_CHUNK", 1000)  # BYTES takes 11 reads
    with on_s3.local_copy("part-0.parquet") as path:
        assert path.read_bytes() == BYTES
    assert not path.exists()
    with pytest.raises(RuntimeError), on_s3.local_copy("part-0.parquet") as path:
        raise RuntimeError
    assert not path.exists()
    with pytest.raises(FileNotFoundError), on_s3.local_copy("gone.parquet"):
        pass


def test_a_store_error_names_the_table_and_cause_never_the_uri(s3: tuple[S3Server, str]) -> None:
    server, bucket = s3
    options = server.storage_options(
        AWS_ENDPOINT_URL="http://127.0.0.1:9", max_retries="0", timeout="2s",
        connect_timeout="1s",
    )  # fmt: skip
    files = ObjectStoreFiles(f"s3://{bucket}/t", options, label="queries")
    with pytest.raises(AuditUnavailable) as failed:
        files.size("part-0.parquet")
    message = str(failed.value)
    assert message.startswith("the queries table's files cannot be read (OSError:")
    assert "the endpoint cannot be reached" in message
    for secret in (bucket, ACCESS_KEY, SECRET_KEY, "127.0.0.1"):
        assert secret not in message


_WITHOUT_PYARROW = """
import sys

class NoPyarrow:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "pyarrow":
            raise ImportError("pyarrow is not a groundlock dependency")

sys.meta_path.insert(0, NoPyarrow())
from groundlock.stores.verify import verify_table
report = verify_table(sys.argv[1], "validations", storage_options=dict(
    arg.split("=", 1) for arg in sys.argv[2:]))
print(report.summary())
"""


def test_verifying_an_s3_table_needs_no_pyarrow(s3: tuple[S3Server, str], tmp_path: Path) -> None:
    server, bucket = s3
    place = S3Place(server, bucket, tmp_path / "spool")
    store = place.store()
    store.record(validation_row(request_id="a"), query_row(request_id="a"))
    store.close()
    options = [f"{key}={value}" for key, value in place.options.items()]
    run = subprocess.run(
        [sys.executable, "-c", _WITHOUT_PYARROW, f"{place.root}/validations", *options],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert "1 linked commit(s), 1 row(s): verified" in run.stdout

"""Azure Blob Storage for the object-store tests: Azurite, Azure's own emulator, in a child.

Azurite is an npm package, installed with the project's other test tools, never at test
time: ``npm ci --prefix tests/azurite`` (the version is pinned in ``tests/azurite``'s lock
file; ``.ci/run`` and the README's test command run it). Where it is missing, the tests
that need it skip, unless ``GROUNDLOCK_REQUIRE_AZURITE=1`` (CI), which fails them.

The emulator listens on a free loopback port with its files in a temporary directory. It
runs in its own process (delta-rs keeps the GIL while it waits on the network, so nothing
serving it could run in the test process), and stops when its standard input closes:
``tests/azurite/exit-with-parent.cjs``, loaded before it, exits on that, so a test run that
dies cannot leave it behind. Each test gets its own container, made with one Blob REST call
signed with Shared Key: a handful of GETs, PUTs and DELETEs are all the tests need (a
container, and the blobs the tamper tests read, replace or delete), not an Azure SDK.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path
from urllib.parse import quote, urlsplit

ROOT = Path(__file__).parent.parent.parent
AZURITE_DIR = ROOT / "tests" / "azurite"
_BLOB_MAIN = AZURITE_DIR / "node_modules" / "azurite" / "dist" / "src" / "blob" / "main.js"
_EXIT_WITH_PARENT = AZURITE_DIR / "exit-with-parent.cjs"

ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
"""Azurite's one account and its published key (the emulator accepts no other)."""
_API_VERSION = "2021-08-06"


def azurite_missing() -> str | None:
    """Why Azurite cannot run here, or None."""
    if shutil.which("node") is None:
        return "no Node.js on PATH (Azurite runs on it; install nodejs and npm)"
    if not _BLOB_MAIN.is_file():
        return "Azurite is not installed (npm ci --prefix tests/azurite)"
    return None


@dataclass(frozen=True)
class AzuriteServer:
    """Where the emulator listens, and how to give delta-rs a container on it."""

    endpoint: str
    """``http://127.0.0.1:PORT``; the account's blob service is under ``/devstoreaccount1``."""

    def storage_options(self, **extra: str) -> dict[str, str]:
        """delta-rs storage options for this emulator: its account, key and endpoint.

        ``AZURE_STORAGE_USE_EMULATOR`` would also do, but it reads the endpoint from the
        process's environment (``AZURITE_BLOB_STORAGE_URL``, else port 10000), which a
        free port per test run cannot share; an explicit endpoint is what a real
        deployment behind a private endpoint or proxy sets too.
        """
        return {
            "AZURE_STORAGE_ACCOUNT_NAME": ACCOUNT,
            "AZURE_STORAGE_ACCOUNT_KEY": ACCOUNT_KEY,
            "AZURE_STORAGE_ENDPOINT": f"{self.endpoint}/{ACCOUNT}",
            "AZURE_ALLOW_HTTP": "true",
            **extra,
        }

    def new_container(self) -> str:
        """Create a container with a fresh name and return the name."""
        name = f"trail-{uuid.uuid4().hex[:12]}"
        self._request("PUT", name, {"restype": "container"}, expect=201)
        return name

    def delete_container(self, name: str) -> None:
        """Delete a container and every blob in it (gone already is fine)."""
        self._request("DELETE", name, {"restype": "container"}, expect=(202, 404))

    def delete_blob(self, uri: str) -> None:
        """Delete the blob ``az://container/path`` (as ``DeltaTable.file_uris`` names it)."""
        parts = urlsplit(uri)
        self._request("DELETE", f"{parts.hostname}{parts.path}", {}, expect=202)

    def read_blob(self, container: str, name: str) -> bytes:
        """The bytes of one blob."""
        return self._request("GET", f"{container}/{name}", {}, expect=200)

    def write_blob(self, container: str, name: str, data: bytes) -> None:
        """Put ``data`` in one blob, replacing what is there."""
        self._request(
            "PUT", f"{container}/{name}", {}, expect=201, body=data,
            headers={"x-ms-blob-type": "BlockBlob"},
        )  # fmt: skip

    def _request(
        self, method: str, path: str, query: Mapping[str, str], *,
        expect: int | tuple[int, ...], body: bytes = b"", headers: Mapping[str, str] = {},
    ) -> bytes:  # fmt: skip
        """One Blob REST call, signed with Shared Key (Azure's "authorize with Shared Key")."""
        headers = {
            **headers, "x-ms-date": formatdate(usegmt=True), "x-ms-version": _API_VERSION,
        }  # fmt: skip
        url_path = f"/{ACCOUNT}/{quote(path)}"
        # VERB, then 11 standard headers this call sends none of but Content-Length (empty
        # when 0), the x-ms- headers sorted, then the account and the resource.
        signed = "\n".join(
            [
                method,
                "",
                "",
                str(len(body)) if body else "",
                *[""] * 8,
                *(f"{name}:{value}" for name, value in sorted(headers.items())),
                f"/{ACCOUNT}{url_path}",
                *(f"{name}:{value}" for name, value in sorted(query.items())),
            ]
        )
        digest = hmac.new(base64.b64decode(ACCOUNT_KEY), signed.encode(), hashlib.sha256)
        signature = base64.b64encode(digest.digest()).decode()
        target = url_path + "".join(
            f"{'&' if i else '?'}{name}={value}" for i, (name, value) in enumerate(query.items())
        )
        address = urlsplit(self.endpoint)
        connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=30)
        try:
            connection.request(
                method, target,
                body=body,
                headers={
                    **headers, "Authorization": f"SharedKey {ACCOUNT}:{signature}",
                    "Content-Length": str(len(body)),
                },
            )  # fmt: skip
            response = connection.getresponse()
            answer = response.read()
        finally:
            connection.close()
        wanted = expect if isinstance(expect, tuple) else (expect,)
        if response.status not in wanted:
            raise RuntimeError(f"Azurite: {method} {path}: {response.status} {answer[:300]!r}")
        return answer


@contextmanager
def azurite(workspace: Path) -> Iterator[AzuriteServer]:
    """Start Azurite's blob service on a free loopback port, its files under ``workspace``."""
    node = shutil.which("node")
    if node is None or not _BLOB_MAIN.is_file():
        raise RuntimeError(azurite_missing())
    process = subprocess.Popen(
        [
            node, "--require", str(_EXIT_WITH_PARENT), str(_BLOB_MAIN),
            "--blobHost", "127.0.0.1", "--blobPort", "0", "--location", str(workspace),
            "--silent", "--disableTelemetry", "--skipApiVersionCheck",
        ],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    drain: threading.Thread | None = None
    try:
        assert process.stdout is not None
        said = []
        for line in process.stdout:  # until it says where it listens, or exits
            said.append(line.strip())
            if " listens on http://" in line:
                break
        else:
            raise RuntimeError(f"Azurite did not start: {' / '.join(said[-5:])}")
        # Whatever it prints later is read and dropped, so a full pipe never stalls it.
        drain = threading.Thread(target=process.stdout.read, daemon=True)
        drain.start()
        yield AzuriteServer(endpoint=said[-1].rsplit(" ", 1)[-1].rstrip("/"))
    finally:
        assert process.stdin is not None
        process.stdin.close()  # the emulator's signal to stop
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            if drain is not None:
                drain.join(10)  # the pipe's end came with the process's
            process.stdout.close()

"""Run moto's S3 server in this process and print ``host:port`` once it listens.

Started as a child process by :mod:`tests.fakes.s3`: delta-rs holds the GIL while it
waits on the network, so a server thread in the test process itself could never answer it
(each request would time out). The server stops when its standard input closes, so a test
run that dies cannot leave it behind.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from moto.s3.responses import S3Response
from moto.server import ThreadedMotoServer


def _atomic_put_object() -> None:
    """Make moto's conditional put atomic, as S3's is.

    moto checks ``If-None-Match: *`` and then stores the object, without a lock: two
    threads of its server can both pass the check and both "create" one key, which S3
    never allows. A Delta commit is exactly such a put (of the next log version), so under
    many concurrent writers the fake could let one commit overwrite another and a test
    would blame the store. One lock around moto's object PUT closes that window.
    """
    put_object = S3Response.put_object
    lock = threading.Lock()

    def locked(self: S3Response, *args: Any, **kwargs: Any) -> Any:
        with lock:
            return put_object(self, *args, **kwargs)

    S3Response.put_object = locked  # type: ignore[method-assign]


def main() -> None:
    """Serve on a free loopback port until stdin closes."""
    _atomic_put_object()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    sys.stdout.write(f"{host}:{port}\n")
    sys.stdout.flush()
    sys.stdin.read()  # until the parent closes the pipe (or dies)
    server.stop()


if __name__ == "__main__":
    main()

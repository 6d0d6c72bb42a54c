"""Run moto's S3 server in this process and print ``host:port`` once it listens.

Started as a child process by :mod:`tests.fakes.s3`: delta-rs holds the GIL while it
waits on the network, so a server thread in the test process itself could never answer it
(each request would time out). The server stops when its standard input closes, so a test
run that dies cannot leave it behind.
"""

from __future__ import annotations

import sys

from moto.server import ThreadedMotoServer


def main() -> None:
    """Serve on a free loopback port until stdin closes."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    sys.stdout.write(f"{host}:{port}\n")
    sys.stdout.flush()
    sys.stdin.read()  # until the parent closes the pipe (or dies)
    server.stop()


if __name__ == "__main__":
    main()

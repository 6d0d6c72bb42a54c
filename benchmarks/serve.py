"""The served chain over HTTP, beside a bare FastAPI endpoint, at 1, 8 and 64 clients.

    python benchmarks/serve.py [--requests N] [--abusers N]

Starts two uvicorn servers on loopback ports, one worker each: ``groundlock serve`` (the
offline model, no audit store) and a bare FastAPI app whose one route returns a fixed JSON
body of about the same size. Each is driven by N requests at each concurrency with httpx
(one async client, keep-alive), and requests/s, p50 and p99 are printed side by side.
The bare endpoint is the floor of HTTP, JSON and uvicorn on this machine; the difference is
the chain and LangServe. Figures come from one run; the machine is noisy.

Then the abuse scenarios: a third server (API keys on, the default :class:`ServeLimits`)
answers 64 well-behaved clients alone, then again beside one abusive client, once per kind
of abuse, for the whole run:

* ``batches``: ``--abusers`` connections busy with maximal batches (16 bundles each);
* ``string-batch``: ``--abusers`` connections sending ``{"inputs": "x" * 400}`` (a string
  that LangServe once ran 400 times);
* ``slow-bodies``: ``--slow`` connections (128 by default, the worker's in-flight slots) that
  send their headers and a few bytes of a body, then nothing, reconnecting when cut;
* ``slow-headers``: ``--slow`` connections that never finish their headers.

For each, the well-behaved clients' p50 and p99 beside the abuser, the ratio of the p99s
to their p99 alone (target: at most 3x), the slowest ``/health`` answer during the run
(target: under 1 s; probed every 0.2 s) and what the abuser got.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import httpx

BUNDLE = json.loads(
    (Path(__file__).parents[1] / "examples" / "data" / "hydraulic_pump_bundle.json").read_text()
)
BARE_APP = """
from fastapi import FastAPI
app = FastAPI()
BODY = {"output": {"status": "OK", "answer": "x" * 400, "citations": []}, "metadata": {}}

@app.post("/answer/invoke")
async def invoke(payload: dict) -> dict:
    return BODY
"""


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _start(
    command: list[str], url: str, environment: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(  # noqa: S603
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(environment or {})},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/health", timeout=5)
        except httpx.TransportError:
            time.sleep(0.2)
            continue
        return server
    server.kill()
    raise SystemExit(f"server at {url} did not start")


USER_KEY = "benchmark-user-key-0123456789"
ABUSER_KEY = "benchmark-abuser-key-0123456"


async def _abuse(url: str, connections: int, stop: asyncio.Event, outcomes: dict[str, int]) -> None:
    """Maximal batches on ``connections`` connections until ``stop``."""
    batch = {"inputs": [{**BUNDLE, "request_id": f"abuse-{i}"} for i in range(16)]}
    await _posting(url, connections, stop, outcomes, batch)


async def _string_batch(
    url: str, connections: int, stop: asyncio.Event, outcomes: dict[str, int]
) -> None:
    """A string as a batch's inputs, on ``connections`` connections until ``stop``."""
    await _posting(url, connections, stop, outcomes, {"inputs": "x" * 400})


async def _posting(
    url: str, connections: int, stop: asyncio.Event, outcomes: dict[str, int], body: object
) -> None:
    limits = httpx.Limits(max_connections=connections)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:

        async def loop() -> None:
            while not stop.is_set():
                response = await client.post(
                    "/answer/batch", json=body, headers={"X-API-Key": ABUSER_KEY}
                )
                code = f"HTTP {response.status_code}"
                outcomes[code] = outcomes.get(code, 0) + 1
                if response.status_code != 200:
                    await asyncio.sleep(0.05)  # (a refused abuser retries at once, nearly)

        await asyncio.gather(*(loop() for _ in range(connections)))


async def _slow(
    url: str, connections: int, stop: asyncio.Event, outcomes: dict[str, int], *, body: bool
) -> None:
    """``connections`` connections that stall in their body (or headers) until ``stop``."""
    host, port = url.removeprefix("http://").split(":")
    head = (
        f"POST /answer/invoke HTTP/1.1\r\nHost: {host}\r\nX-API-Key: {ABUSER_KEY}\r\n"
        'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"input": '
    ).encode()
    stalled = head if body else head[: head.index(b"X-API-Key")]

    async def loop() -> None:
        while not stop.is_set():
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(stalled)
            await writer.drain()
            reading = asyncio.ensure_future(reader.read())  # what the server says, at the cut
            stopping = asyncio.ensure_future(stop.wait())
            await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            if reading.done():
                said = reading.result()
                code = said.split(b" ", 2)[1].decode() if said.startswith(b"HTTP/") else ""
                key = f"cut {code or '(closed)'}"
                outcomes[key] = outcomes.get(key, 0) + 1
            else:
                reading.cancel()
            writer.close()

    await asyncio.gather(*(loop() for _ in range(connections)))


async def _health(url: str, stop: asyncio.Event, slowest: list[float]) -> None:
    """``/health`` every 0.2 s on a fresh connection; the slowest answer in ``slowest``."""
    while not stop.is_set():
        start = time.perf_counter()
        try:
            async with httpx.AsyncClient(base_url=url, timeout=10) as client:
                await client.get("/health")
            slowest[0] = max(slowest[0], time.perf_counter() - start)
        except httpx.TransportError:
            slowest[0] = max(slowest[0], 10.0)
        await asyncio.sleep(0.2)


async def _abused(
    url: str, requests: int, kind: str, connections: int
) -> tuple[list[float], dict[str, int], float]:
    stop = asyncio.Event()
    outcomes: dict[str, int] = {}
    slowest = [0.0]
    abusers: dict[str, Callable[[], Coroutine[Any, Any, None]]] = {
        "batches": lambda: _abuse(url, connections, stop, outcomes),
        "string-batch": lambda: _string_batch(url, connections, stop, outcomes),
        "slow-bodies": lambda: _slow(url, connections, stop, outcomes, body=True),
        "slow-headers": lambda: _slow(url, connections, stop, outcomes, body=False),
    }
    abuse = asyncio.ensure_future(abusers[kind]())
    health = asyncio.ensure_future(_health(url, stop, slowest))
    await asyncio.sleep(1.0)  # the abuser is at full strength before the clients start
    try:
        _, latencies = await _drive(url, requests, 64, key=USER_KEY)
    finally:
        stop.set()
        await asyncio.gather(abuse, health)
    return latencies, outcomes, slowest[0]


def _p99(latencies: list[float]) -> float:
    ordered = sorted(latencies)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def _abuse_scenario(requests: int, abusers: int, slow: int) -> None:
    port = _port()
    url = f"http://127.0.0.1:{port}"
    keys = f"users:clerk:{USER_KEY},abuser:clerk:{ABUSER_KEY}"
    server = _start(
        [str(Path(sys.executable).with_name("groundlock")), "serve", "--port", str(port),
         "--read-timeout-seconds", "5"],
        url,
        environment={"GROUNDLOCK_API_KEYS": keys},
    )  # fmt: skip
    kinds = [("batches", abusers), ("string-batch", abusers), ("slow-bodies", slow),
             ("slow-headers", slow)]  # fmt: skip
    try:
        _, alone = asyncio.run(_drive(url, requests, 64, key=USER_KEY))
        runs = [(kind, n, *asyncio.run(_abused(url, requests, kind, n))) for kind, n in kinds]
    finally:
        server.terminate()
        server.wait(30)
    print()
    print(f"abuse: 64 clients, {requests} requests, beside one other client (ms; read")
    print("timeout 5 s; targets: p99 at most 3x alone, /health under 1 s)")
    print(" abuser                     p50       p99   p99 ratio   slowest /health")
    print(f" (alone)               {statistics.median(alone):8.2f}  {_p99(alone):8.2f}")
    for kind, n, beside, outcomes, slowest in runs:
        ratio = _p99(beside) / _p99(alone)
        print(
            f" {kind:<13} x{n:<4}  {statistics.median(beside):8.2f}  {_p99(beside):8.2f}"
            f"   {ratio:7.2f}x   {slowest * 1e3:9.1f} ms"
        )
        got = ", ".join(f"{code}: {count}" for code, count in sorted(outcomes.items()))
        print(f"   the abuser got {got or 'nothing back'}")


async def _drive(
    url: str, requests: int, clients: int, *, key: str | None = None
) -> tuple[float, list[float]]:
    latencies: list[float] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for number in range(requests):
        queue.put_nowait(number)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:

        async def worker() -> None:
            while not queue.empty():
                number = queue.get_nowait()
                body: dict[str, Any] = {"input": {**BUNDLE, "request_id": f"bench-{number}"}}
                start = time.perf_counter()
                headers = {"X-API-Key": key} if key else None
                response = await client.post("/answer/invoke", json=body, headers=headers)
                latencies.append((time.perf_counter() - start) * 1e3)
                if response.status_code != 200:
                    raise SystemExit(f"{url}: HTTP {response.status_code}")

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        elapsed = time.perf_counter() - start
    return requests / elapsed, latencies


def main() -> None:
    """Start both servers, drive them, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--abusers", type=int, default=8, help="the abuser's connections")
    parser.add_argument("--slow", type=int, default=128, help="slow-client connections")
    args = parser.parse_args()
    groundlock_port, bare_port = _port(), _port()
    bare_file = Path(__file__).with_name("_bare_app.py")
    bare_file.write_text(BARE_APP, encoding="utf-8")
    servers = [
        _start(
            [str(Path(sys.executable).with_name("groundlock")), "serve", "--port",
             str(groundlock_port)],
            f"http://127.0.0.1:{groundlock_port}",
        ),
        _start(
            [sys.executable, "-m", "uvicorn", "_bare_app:app", "--port", str(bare_port),
             "--app-dir", str(bare_file.parent), "--log-level", "warning"],
            f"http://127.0.0.1:{bare_port}",
        ),
    ]  # fmt: skip
    try:
        print(f"{args.requests} requests per row, one uvicorn worker each (ms)")
        print(" clients   groundlock req/s  p50 / p99        bare FastAPI req/s  p50 / p99")
        for clients in (1, 8, 64):
            row = []
            for port in (groundlock_port, bare_port):
                rate, latencies = asyncio.run(
                    _drive(f"http://127.0.0.1:{port}", args.requests, clients)
                )
                ordered = sorted(latencies)
                p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
                row.append(f"{rate:9.1f}  {statistics.median(latencies):7.2f} / {p99:7.2f}")
            print(f" {clients:7d}   {row[0]}     {row[1]}")
    finally:
        for server in servers:
            server.terminate()
            server.wait(30)
        bare_file.unlink(missing_ok=True)
    _abuse_scenario(args.requests, args.abusers, args.slow)


if __name__ == "__main__":
    main()

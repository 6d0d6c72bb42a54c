"""The served chain over HTTP, beside a bare FastAPI endpoint, at 1, 8 and 64 clients.

    python benchmarks/serve.py [--requests N] [--abusers N]

Starts two uvicorn servers on loopback ports, one worker each: ``groundlock serve`` (the
offline model, no audit store) and a bare FastAPI app whose one route returns a fixed JSON
body of about the same size. Each is driven by N requests at each concurrency with httpx
(one async client, keep-alive), and requests/s, p50 and p99 are printed side by side.
The bare endpoint is the floor of HTTP, JSON and uvicorn on this machine; the difference is
the chain and LangServe. Figures come from one run; the machine is noisy.

Then the abuse scenario: a third server (API keys on, the default :class:`ServeLimits`)
answers 64 well-behaved clients alone, then again beside one abusive client that keeps
``--abusers`` connections busy with maximal batches (16 bundles each) for the whole run.
The well-behaved clients' p50 and p99 are printed for both runs, with the ratio of the
p99s (target: at most 3x), and what the abuser got (served, 429, 503).
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


async def _abuse(url: str, connections: int, stop: asyncio.Event, outcomes: dict[int, int]) -> None:
    """Maximal batches on ``connections`` connections until ``stop``."""
    batch = {"inputs": [{**BUNDLE, "request_id": f"abuse-{i}"} for i in range(16)]}
    limits = httpx.Limits(max_connections=connections)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:

        async def loop() -> None:
            while not stop.is_set():
                response = await client.post(
                    "/answer/batch", json=batch, headers={"X-API-Key": ABUSER_KEY}
                )
                outcomes[response.status_code] = outcomes.get(response.status_code, 0) + 1
                if response.status_code != 200:
                    await asyncio.sleep(0.05)  # (a refused abuser retries at once, nearly)

        await asyncio.gather(*(loop() for _ in range(connections)))


async def _abused(url: str, requests: int, abusers: int) -> tuple[list[float], dict[int, int]]:
    stop = asyncio.Event()
    outcomes: dict[int, int] = {}
    abuse = asyncio.create_task(_abuse(url, abusers, stop, outcomes))
    await asyncio.sleep(1.0)  # the abuser is at full strength before the clients start
    try:
        _, latencies = await _drive(url, requests, 64, key=USER_KEY)
    finally:
        stop.set()
        await abuse
    return latencies, outcomes


def _p99(latencies: list[float]) -> float:
    ordered = sorted(latencies)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def _abuse_scenario(requests: int, abusers: int) -> None:
    port = _port()
    url = f"http://127.0.0.1:{port}"
    keys = f"users:clerk:{USER_KEY},abuser:clerk:{ABUSER_KEY}"
    server = _start(
        [str(Path(sys.executable).with_name("groundlock")), "serve", "--port", str(port)],
        url,
        environment={"GROUNDLOCK_API_KEYS": keys},
    )
    try:
        _, alone = asyncio.run(_drive(url, requests, 64, key=USER_KEY))
        beside, outcomes = asyncio.run(_abused(url, requests, abusers))
    finally:
        server.terminate()
        server.wait(30)
    print()
    print(f"abuse: 64 clients, {requests} requests, beside {abusers} connections of maximal")
    print("batches from one other client (ms)")
    print("                      p50       p99")
    print(f" alone           {statistics.median(alone):8.2f}  {_p99(alone):8.2f}")
    print(f" beside abuser   {statistics.median(beside):8.2f}  {_p99(beside):8.2f}")
    print(f" p99 ratio       {_p99(beside) / _p99(alone):8.2f}x  (target at most 3x)")
    got = ", ".join(f"HTTP {code}: {count}" for code, count in sorted(outcomes.items()))
    print(f" the abuser's batches: {got}")


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
    _abuse_scenario(args.requests, args.abusers)


if __name__ == "__main__":
    main()

"""The served chain over HTTP, beside a bare FastAPI endpoint, at 1, 8 and 64 clients.

    python benchmarks/serve.py [--requests N]

Starts two uvicorn servers on loopback ports, one worker each: ``groundlock serve`` (the
offline model, no audit store) and a bare FastAPI app whose one route returns a fixed JSON
body of about the same size. Each is driven by N requests at each concurrency with httpx
(one async client, keep-alive), and requests/s, p50 and p99 are printed side by side.
The bare endpoint is the floor of HTTP, JSON and uvicorn on this machine; the difference is
the chain and LangServe. Figures come from one run; the machine is noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
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


def _start(command: list[str], url: str) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # noqa: S603
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.post(f"{url}/answer/invoke", json={"input": BUNDLE}, timeout=5)
        except httpx.TransportError:
            time.sleep(0.2)
            continue
        return server
    server.kill()
    raise SystemExit(f"server at {url} did not start")


async def _drive(url: str, requests: int, clients: int) -> tuple[float, list[float]]:
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
                response = await client.post("/answer/invoke", json=body)
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


if __name__ == "__main__":
    main()

"""Start-up cost: the CPU time of ``import groundlock`` and ``groundlock --help``.

    python benchmarks/imports.py [--runs N] [--root CHECKOUT]

``--root`` measures another checkout's groundlock (an older commit, for a before/after) with
the same interpreter and baselines.

Each command runs in a fresh interpreter; its CPU time (user + system) is read with
``resource.getrusage(RUSAGE_CHILDREN)`` around it, so the wall-clock noise of process
start-up and of other load does not count. The commands run interleaved (one of each per
round, N rounds) and the median of each is printed, with its ratio to two baselines:

* ``import langchain_core.runnables, pydantic``: the packages a chain is built from. In
  langchain-core 1.x this import is lazy (about 0.09 s): it loads the package's table of
  names, not the Runnable machinery, so a ratio against it is not what a chain costs.
* ``from langchain_core.runnables import Runnable``: the machinery itself (it pulls in
  langsmith's tracing), what any LCEL program pays before it builds a chain.

Target (issue 29): ``groundlock --help`` and ``import groundlock`` load neither baseline's
stack; their remaining cost is the interpreter, pydantic and the contracts.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

COMMANDS: dict[str, list[str]] = {
    "python (nothing)": [sys.executable, "-c", "pass"],
    "import groundlock": [sys.executable, "-c", "import groundlock"],
    "groundlock --help": [sys.executable, "-m", "groundlock", "--help"],
    "groundlock --version": [sys.executable, "-m", "groundlock", "--version"],
    "baseline: import langchain_core.runnables, pydantic": [
        sys.executable,
        "-c",
        "import langchain_core.runnables, pydantic",
    ],
    "baseline: from langchain_core.runnables import Runnable": [
        sys.executable,
        "-c",
        "from langchain_core.runnables import Runnable",
    ],
}
BASELINES = [name for name in COMMANDS if name.startswith("baseline")]


def _cpu_seconds(command: list[str], root: Path) -> float:
    """CPU time (user + system) of one run of ``command`` in a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(  # noqa: S603  (our own interpreter, fixed arguments)
        command,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        stdout=subprocess.DEVNULL,
        check=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="rounds (default 9)")
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="the checkout whose groundlock is measured"
    )
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for command in COMMANDS.values():  # one unmeasured run each: warm the disk cache
        _cpu_seconds(command, args.root)
    for _ in range(args.runs):
        for name, command in COMMANDS.items():
            times[name].append(_cpu_seconds(command, args.root))
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(
        f"CPU seconds, median of {args.runs} interleaved runs "
        f"(python {sys.version.split()[0]}, groundlock from {args.root})"
    )
    width = max(map(len, COMMANDS))
    header = "".join(f"  / {i + 1}" for i in range(len(BASELINES)))
    print(f"{'':{width}}  {'median':>7}  {'min':>6}{header}")
    for name, median in medians.items():
        ratios = "".join(f"  {median / medians[b]:4.1f}x" for b in BASELINES)
        print(f"{name:{width}}  {median:7.3f}  {min(times[name]):6.3f}{ratios}")
    for i, baseline in enumerate(BASELINES):
        print(f"/ {i + 1}: ratio to '{baseline.removeprefix('baseline: ')}'")


if __name__ == "__main__":
    main()

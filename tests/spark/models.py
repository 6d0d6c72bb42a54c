"""Chat models for the Spark tests: picklable by reference, built in each Spark worker.

Each wraps the offline extractive model (so answers pass the firewall) and leaves a trace
a test can read after the job: Spark workers are other processes, so the trace is a file.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult

from groundlock import load_policy
from groundlock.providers.extractive import ExtractiveChatModel

_POLICY = load_policy()


class TracedModel(ExtractiveChatModel):
    """The extractive model that appends ``pid start end in_flight`` per call to ``trace``.

    ``kill_after`` calls into its process, while ``marker`` does not exist, it writes the
    marker and kills its own process (``os._exit``): a Spark worker dying mid-task.
    """

    trace: str
    sleep_seconds: float = 0.0
    kill_after: int | None = None
    marker: str | None = None

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with _LOCK:
            _STATE["calls"] += 1
            _STATE["in_flight"] += 1
            calls, in_flight = _STATE["calls"], _STATE["in_flight"]
        marker = Path(self.marker) if self.marker is not None else None
        due = self.kill_after is not None and calls > self.kill_after
        if due and marker is not None and not marker.exists():
            marker.write_text(f"{os.getpid()} {calls}\n")
            os._exit(17)
        started = time.time()
        time.sleep(self.sleep_seconds)
        try:
            return super()._generate(messages, stop, run_manager, **kwargs)
        finally:
            with _LOCK:
                _STATE["in_flight"] -= 1
            with open(self.trace, "a", encoding="utf-8") as out:
                out.write(f"{os.getpid()} {started} {time.time()} {in_flight}\n")


_LOCK = threading.Lock()
_STATE = {"calls": 0, "in_flight": 0}


class Factory:
    """A picklable ``ChainSpec.model``: builds a :class:`TracedModel` in the worker."""

    def __init__(self, trace: Path, **options: Any) -> None:
        self.trace = str(trace)
        self.options = options

    def __call__(self) -> TracedModel:
        return TracedModel(
            refusal_text=_POLICY.refusal_text,
            firewall_ruleset=_POLICY.firewall_ruleset,
            trace=self.trace,
            **self.options,
        )


def read_trace(trace: Path) -> list[tuple[int, float, float, int]]:
    """The calls a trace file records: (pid, start, end, calls in flight at the start)."""
    if not trace.exists():
        return []
    rows = []
    for line in trace.read_text(encoding="utf-8").splitlines():
        pid, start, end, in_flight = line.split()
        rows.append((int(pid), float(start), float(end), int(in_flight)))
    return rows

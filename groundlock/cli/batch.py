"""``ask --batch FILE.jsonl``: a file of bundles answered in input order, streaming.

The file is read lazily and answered window by window through LangChain's own
``batch_as_completed`` (``max_concurrency`` requests at once), so memory is bounded by the
window, never by the file; each answer is written as soon as every line before it has
been. Every non-blank line is a request, with one output line and, with a store, one audit
record: a line that is not UTF-8 JSON, or JSON with no usable ``request_id`` (not an object,
say), or longer than ``--max-line-bytes`` (:data:`MAX_LINE_BYTES`; read past in pieces,
never held whole), goes through the chain as the intake's own refusal under the id
``<run_id>:line-<n>`` (never reaching the model), so its record and its output line agree
and a re-run under the same ``--run-id`` adds no second record. The progress bar (rich) is
drawn only on a terminal; the summary is a rich table on a terminal and plain lines in a log.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO
from uuid import UUID, uuid4

from langchain_core.callbacks import BaseCallbackHandler
from typing_extensions import override

from groundlock.cli._shared import UsageError, table_lines
from groundlock.serve.limits import ServeLimits

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableSequence
    from rich.console import Console
    from rich.progress import Progress, TaskID
    from rich.table import Table

    from groundlock.contracts.response import PublicResponse

__all__ = ["MAX_LINE_BYTES", "answer_file"]

MAX_LINE_BYTES = ServeLimits().max_body_bytes
"""Longest line ``ask --batch`` reads (``--max-line-bytes``): 4 MiB, the body a served
request may have. A longer line is never held whole: it is read past in pieces, answered
FAILED ``INPUT_LIMIT_EXCEEDED`` and recorded, like any other line the intake refuses."""

_SKIP_CHUNK = 2**16
"""Bytes read at a time past the end of an over-long line."""


_BATCH_WINDOW_MIN = 256
"""``ask --batch`` reads and answers its file in windows of at least this many lines."""


_NOTE_LIMIT = 100
"""Bad lines noted on stderr at most; each one has its FAILED record in the output anyway."""


def _batch_window(concurrency: int) -> int:
    """Lines held at once: a few rounds of the pool, so a slow request stalls little."""
    return max(_BATCH_WINDOW_MIN, 4 * concurrency)


@dataclasses.dataclass(slots=True)
class _BatchLine:
    """One non-blank input line of a batch, and what it came to."""

    number: int
    """The line number in the file, counted from 1 (blank lines count)."""
    end: int
    """The byte offset just after the line (for the progress bar)."""
    bundle: object = None
    """What the chain is given: the parsed line, or the intake's refusal of it."""
    response: PublicResponse | None = None
    """Set when the chain has answered."""


class _RequestTimer(BaseCallbackHandler):
    """Each request's wall time, keyed by the ``run_id`` its config gave the root run."""

    def __init__(self) -> None:
        self.started: dict[UUID, float] = {}
        self.seconds: dict[UUID, float] = {}

    @override
    def on_chain_start(
        self,
        serialized: dict[str, Any],
        inputs: dict[str, Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Note when a root run (one request) starts."""
        if parent_run_id is None:
            self.started[run_id] = time.perf_counter()

    @override
    def on_chain_end(
        self,
        outputs: dict[str, Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Note how long a root run took."""
        self._stop(run_id, parent_run_id)

    @override
    def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Note how long a root run took before it raised."""
        self._stop(run_id, parent_run_id)

    def _stop(self, run_id: UUID, parent_run_id: UUID | None) -> None:
        started = self.started.pop(run_id, None) if parent_run_id is None else None
        if started is not None:
            self.seconds[run_id] = time.perf_counter() - started


class _Latencies:
    """Latencies in buckets 1% wide: percentiles to within 1%, in memory that never grows.

    A batch may hold millions of requests; keeping every latency to sort at the end would
    make memory grow with the file. About 2,500 buckets span a microsecond to a day.
    """

    _RATIO = 1.01

    def __init__(self) -> None:
        self.buckets: dict[int, int] = {}
        self.count = 0
        self.max = 0.0

    def add(self, seconds: float) -> None:
        """Count one request's latency."""
        bucket = math.ceil(math.log(max(seconds, 1e-6), self._RATIO))
        self.buckets[bucket] = self.buckets.get(bucket, 0) + 1
        self.count += 1
        self.max = max(self.max, seconds)

    def percentile(self, percent: float) -> float:
        """The nearest-rank percentile (the bucket's upper edge, never above the maximum)."""
        rank = max(1, math.ceil(self.count * percent / 100))
        seen = 0
        for bucket in sorted(self.buckets):
            seen += self.buckets[bucket]
            if seen >= rank:
                return min(self._RATIO**bucket, self.max)
        return self.max


class _Batch:
    """One ``ask --batch`` run: reads lines lazily, answers them window by window, in order.

    Memory is bounded by the window (``_batch_window``), never by the file: a window's
    lines are parsed, the JSON ones answered through ``chain.batch_as_completed`` (LangChain
    runs them on a pool of ``max_concurrency`` threads), and each answer is written as soon
    as every line before it has been, so the output follows the input line for line.
    """

    def __init__(
        self, args: argparse.Namespace, chain: RunnableSequence[Any, PublicResponse]
    ) -> None:
        from groundlock.policies.loader import DEFAULT_POLICY, load_policy  # noqa: PLC0415

        self.path: Path = args.batch
        self.json: bool = args.json
        self.concurrency: int = args.concurrency
        self.run_id: str = args.run_id
        self.max_line: int = getattr(args, "max_line_bytes", MAX_LINE_BYTES)
        self.limits = load_policy(args.policy or DEFAULT_POLICY).input_limits
        self.chain = chain
        self.counts: dict[tuple[str, str], int] = {}
        self.latencies = _Latencies()
        self.timer = _RequestTimer()
        self.blank = 0
        self.notes = 0
        self.failed = False
        self.progress: Progress | None = None
        self.task: TaskID | None = None

    def run(self, source: BinaryIO) -> int:
        """Answer every line of ``source``; 1 if any request FAILED, else 0."""
        started = time.perf_counter()
        console = None
        if sys.stderr.isatty():
            console = self._start_progress(source)
        try:
            self._answer_all(source)
        finally:
            if self.progress is not None:
                self.progress.stop()
        self._summary(time.perf_counter() - started, console)
        return 1 if self.failed else 0

    def _start_progress(self, source: BinaryIO) -> Console:
        from rich.console import Console  # noqa: PLC0415  (only a terminal needs rich)
        from rich.progress import (  # noqa: PLC0415
            BarColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        console = Console(stderr=True)
        try:
            info = os.fstat(source.fileno())
            total = float(info.st_size) if stat.S_ISREG(info.st_mode) and info.st_size else None
        except (OSError, ValueError):
            total = None  # a pipe or a device: no size, so the bar pulses
        # The bar measures bytes of the file answered (the only total known without reading
        # the file twice); the count of requests is shown beside it. Answers go on to
        # stdout; only when stdout is this terminal too does rich print them above the bar.
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[requests]} requests"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
            redirect_stdout=sys.stdout.isatty(),
        )
        self.task = self.progress.add_task(str(self.path.name), total=total, requests=0)
        self.progress.start()
        return console

    def _answer_all(self, source: BinaryIO) -> None:
        window: list[_BatchLine] = []
        size = _batch_window(self.concurrency)
        offset = 0
        for number, raw, length in self._lines(source):
            offset += length
            if raw is None:  # longer than the limit: read past, never held
                window.append(self._too_long(number, offset))
            else:
                # Blank: JSON's own whitespace only (and a byte-order mark on the first line).
                text = raw.removeprefix(_BOM) if number == 1 else raw
                if not text.strip(_JSON_WHITESPACE):
                    self.blank += 1
                    continue
                window.append(self._parse(number, offset, raw))
            if len(window) >= size:
                self._answer_window(window)
                window = []
        self._answer_window(window)

    def _lines(self, source: BinaryIO) -> Iterator[tuple[int, bytes | None, int]]:
        """``(number, line, bytes)`` of each line, split at newlines only, read lazily.

        (A U+2028 in a string is no break.) A line longer than the limit comes as None, with
        its length: it is read past in pieces, so no more than the limit is ever held. A
        read error is a usage error (exit 2). This is a generator so that only errors of
        reading are caught here: one from writing the answers (a closed pipe) stays itself.
        """
        number = 0
        try:
            while raw := source.readline(self.max_line + 1):
                number += 1
                if len(raw) <= self.max_line or raw.endswith(b"\n"):
                    yield number, raw, len(raw)
                    continue
                length = len(raw)
                del raw
                while (rest := source.readline(_SKIP_CHUNK)) and not rest.endswith(b"\n"):
                    length += len(rest)
                yield number, None, length + len(rest)
        except OSError as exc:
            raise UsageError(f"cannot read {self.path}: {type(exc).__name__}") from None

    def _too_long(self, number: int, end: int) -> _BatchLine:
        """An over-long line as the chain takes it: the intake's refusal, under its line's id."""
        from groundlock.contracts.reasons import ReasonCode  # noqa: PLC0415
        from groundlock.core.intake import Rejection  # noqa: PLC0415

        request_id = self.line_request_id(number)
        problem = f"longer than the limit of {self.max_line:,} bytes"
        line = _BatchLine(number, end)
        line.bundle = Rejection(
            ReasonCode.INPUT_LIMIT_EXCEEDED, f"line {number}: {problem}", request_id, self.run_id
        )
        self._note(f"{self.path}:{number}: {problem}; FAILED as {request_id}, no model called")
        return line

    def _parse(self, number: int, end: int, raw: bytes) -> _BatchLine:
        """The line as the chain takes it: the bundle, or the intake's refusal of the line.

        A line that is not UTF-8 JSON, or whose JSON has no usable ``request_id``, is
        refused here under the line's own id (``<run_id>:line-<n>``): the chain passes the
        refusal through R2 to the audit record and R6 without calling the model, so the
        line is answered and recorded like any other.
        """
        from groundlock.contracts.reasons import ReasonCode  # noqa: PLC0415
        from groundlock.core.intake import Rejection, read_bundle, salvage_identity  # noqa: PLC0415

        line = _BatchLine(number, end)
        request_id = self.line_request_id(number)
        try:
            # (utf-8-sig on the first line: a byte-order mark is not part of the JSON)
            payload = json.loads(raw.decode("utf-8-sig" if number == 1 else "utf-8"))
        except UnicodeDecodeError:
            problem = "not UTF-8"
        except RecursionError:
            problem = "not JSON (nested too deep)"
        except ValueError:
            problem = "not JSON"
        else:
            if salvage_identity(payload)[0] is not None:
                line.bundle = payload
                return line
            # No usable request_id: the intake refuses it anyway (the field is required),
            # with the reason and message the chain would give; only the id is the line's.
            refused = read_bundle(payload, self.limits)
            line.bundle = (
                Rejection(refused.reason, refused.message, request_id, self.run_id)
                if isinstance(refused, Rejection)
                else payload
            )
            return line
        line.bundle = Rejection(
            ReasonCode.INPUT_SCHEMA_INVALID, f"line {number}: {problem}", request_id, self.run_id
        )
        self._note(f"{self.path}:{number}: {problem}; FAILED as {request_id}, no model called")
        return line

    def line_request_id(self, number: int) -> str:
        """The request id of a line that carries none: the run's, and the line number."""
        return f"{self.run_id}:line-{number}"

    def _answer_window(self, window: list[_BatchLine]) -> None:
        from langchain_core.runnables import RunnableConfig  # noqa: PLC0415

        run_ids = [uuid4() for _ in window]
        configs = [
            RunnableConfig(max_concurrency=self.concurrency, run_id=run_id, callbacks=[self.timer])
            for run_id in run_ids
        ]
        answers = self.chain.batch_as_completed(
            [line.bundle for line in window], configs, return_exceptions=True
        )
        written = 0
        for index, outcome in answers:
            line = window[index]
            seconds = self.timer.seconds.pop(run_ids[index], None)
            if seconds is not None:
                self.latencies.add(seconds)
            line.response = (
                self._raised(line, outcome) if isinstance(outcome, Exception) else outcome
            )
            written = self._write_ready(window, written)
        self._write_ready(window, written)

    def _raised(self, line: _BatchLine, error: Exception) -> PublicResponse:
        """The answer to a line the chain raised on: INTERNAL_ERROR, recorded if it can be.

        Stages fail closed, so this is a bug: the line fails and the run goes on. Its
        refusal is given to the chain once more, which records it (nothing of the line is
        worked on again); only the exception's type is shown (its text may quote evidence).
        """
        from groundlock.contracts.reasons import ReasonCode  # noqa: PLC0415
        from groundlock.core.intake import Rejection, salvage_identity  # noqa: PLC0415
        from groundlock.core.packaging import failed_response  # noqa: PLC0415

        kind = type(error).__name__
        request_id, run_id = salvage_identity(line.bundle)
        if request_id is None:
            request_id, run_id = self.line_request_id(line.number), self.run_id
        message = f"line {line.number}: the chain raised {kind}"
        try:
            again = self.chain.invoke(
                Rejection(ReasonCode.INTERNAL_ERROR, message, request_id, run_id)
            )
        except Exception as second:  # noqa: BLE001  (the run goes on; the note says so)
            self._note(
                f"{self.path}:{line.number}: the chain raised {kind}, and {type(second).__name__}"
                " when given the line's refusal: its FAILED answer has no record"
            )
            return failed_response(request_id, ReasonCode.INTERNAL_ERROR, None)
        self._note(f"{self.path}:{line.number}: the chain raised {kind}")
        return again

    def _write_ready(self, window: list[_BatchLine], written: int) -> int:
        """Write the answers from ``written`` on that have no unanswered line before them."""
        start = written
        while written < len(window) and (response := window[written].response) is not None:
            line = window[written]
            if self.json:
                # PublicResponse's own JSON with the input line number first, to join on.
                sys.stdout.write(f'{{"line":{line.number},{response.model_dump_json()[1:]}\n')
            else:
                sys.stdout.write(_batch_text(line.number, response) + "\n")
            self._count(response)
            line.bundle = line.response = None  # the window keeps nothing it has written
            written += 1
        if written > start:
            sys.stdout.flush()
            if self.progress is not None and self.task is not None:
                self.progress.update(
                    self.task, completed=window[written - 1].end, requests=self._requests
                )
        return written

    @property
    def _requests(self) -> int:
        return sum(self.counts.values())

    def _count(self, response: PublicResponse) -> None:
        status = response.status.value
        reason = response.failure_reason.value if response.failure_reason else "-"
        self.counts[status, reason] = self.counts.get((status, reason), 0) + 1
        self.failed = self.failed or status == "FAILED"

    def _note(self, message: str) -> None:
        """A note on stderr about one line; past ``_NOTE_LIMIT`` the output records suffice."""
        self.notes += 1
        if self.notes > _NOTE_LIMIT:
            return
        if self.notes == _NOTE_LIMIT:
            message += f" (no more notes like this: {_NOTE_LIMIT} so far; see the output)"
        if self.progress is not None:
            self.progress.console.print(f"groundlock: {message}", markup=False, highlight=False)
        else:
            sys.stderr.write(f"groundlock: {message}\n")

    def _summary(self, seconds: float, console: Console | None) -> None:
        """Counts by status and reason, latency percentiles, throughput: on stderr.

        On a terminal, a rich table; anywhere else (a pipe, a CI log) plain lines of text,
        one fact per line and no box drawing or colour codes, so that logs stay greppable
        (``grep FAILED``) and diffable.
        """
        rows = [[status, reason, str(n)] for (status, reason), n in sorted(self.counts.items())]
        requests = self._requests
        total = (
            f"{requests} requests in {seconds:.2f} s, {requests / max(seconds, 1e-9):.1f}"
            f" requests/s; blank lines skipped: {self.blank}"
        )
        latency = (
            [f"{self.latencies.percentile(p):.3f}" for p in (50, 90, 99)]
            + [f"{self.latencies.max:.3f}"]
            if self.latencies.count
            else None
        )
        if console is not None:
            console.print(_summary_table(rows, latency, f"run {self.run_id}: {total}"))
            return
        out = sys.stderr
        for line in table_lines(["status", "failure_reason", "requests"], rows):
            out.write(line + "\n")
        if latency is not None:
            out.write(
                f"latency (s): p50 {latency[0]}  p90 {latency[1]}  p99 {latency[2]}  "
                f"max {latency[3]}  ({self.latencies.count} requests)\n"
            )
        out.write(f"total: {total}\n")
        # The run names the records of lines with no request id of their own.
        out.write(f"run: {self.run_id}\n")


def _summary_table(rows: list[list[str]], latency: list[str] | None, total: str) -> Table:
    from rich.table import Table  # noqa: PLC0415

    table = Table(title="groundlock ask --batch", caption=total)
    for name in ("status", "failure_reason", "requests"):
        table.add_column(name, justify="right" if name == "requests" else "left")
    for row in rows:
        table.add_row(*row)
    if latency is not None:
        table.add_section()
        table.add_row(
            "latency (s)",
            f"p50 {latency[0]}  p90 {latency[1]}  p99 {latency[2]}  max {latency[3]}",
            "",
        )
    return table


def _batch_text(number: int, response: PublicResponse) -> str:
    """One compact line per request: ``line 3 req-7 OK high [C0,C2] <answer, cut at 120>``.

    A failure message can quote a field name the input chose: its control and line
    characters are escaped, so one request stays one line and cannot rewrite another.
    """
    head = f"line {number} {response.request_id or '-'} {response.status.value}"
    if response.status.value == "FAILED":
        reason = response.failure_reason.value if response.failure_reason else "-"
        message = response.failure_message
        detail = f": {_CONTROL.sub(_escaped, message)}" if message else ""
        return f"{head} {reason}{detail}"
    if response.status.value != "OK":
        return head
    answer = " ".join(response.answer.split())
    if len(answer) > 120:
        answer = answer[:117] + "..."
    confidence = response.confidence.value if response.confidence else "-"
    anchors = ",".join(citation.anchor for citation in response.citations)
    return f"{head} {confidence} [{anchors}] {answer}"


_BOM = b"\xef\xbb\xbf"
_JSON_WHITESPACE = b" \t\r\n"
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _escaped(found: re.Match[str]) -> str:
    return repr(found.group())[1:-1]


def answer_file(
    args: argparse.Namespace, chain: RunnableSequence[Any, PublicResponse], source: BinaryIO
) -> int:
    """Answer every line of ``source`` with ``chain``; 1 if any request FAILED, else 0.

    ``args`` carries ``batch`` (the file's path, for messages), ``json`` and ``concurrency``.
    """
    return _Batch(args, chain).run(source)

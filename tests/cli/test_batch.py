"""``groundlock ask --batch``: input order, bad lines, progress, summary, concurrency, windows."""

from __future__ import annotations

import json
import math
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable, RunnableConfig

from groundlock.cli import batch as batch_cli
from groundlock.cli import chain as chain_cli
from groundlock.cli import main
from groundlock.contracts.enums import GenerationStatus
from groundlock.contracts.response import PublicResponse, TokenUsage
from groundlock.providers.extractive import ExtractiveChatModel
from tests.builders import make_bundle, make_row

REFUSAL_BUNDLE = make_bundle([make_row(0, similarity=0.01)], request_id="refused")
QUESTION = "How often is the case drain filter replaced?"


class Tracker:
    """What a fake model or chain saw: calls, the peak of concurrent calls, finish order."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls = 0
        self.active = 0
        self.peak = 0
        self.finished: list[int] = []

    def enter(self) -> None:
        with self.lock:
            self.calls += 1
            self.active += 1
            self.peak = max(self.peak, self.active)

    def leave(self, tag: int) -> None:
        with self.lock:
            self.active -= 1
            self.finished.append(tag)


class SlowExtractiveModel(ExtractiveChatModel):
    """The offline model, but each call sleeps: ``delay <n>`` in the question, else ``pause``."""

    tracker: Any = None
    pause: float = 0.0
    unit: float = 0.04

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        found = re.search(r"delay (\d+)", " ".join(str(m.text) for m in messages))
        tag = int(found.group(1)) if found else -1
        self.tracker.enter()
        try:
            time.sleep(tag * self.unit if found else self.pause)
            return super()._generate(messages, stop, run_manager, **kwargs)
        finally:
            self.tracker.leave(tag)


def _use_model(monkeypatch: pytest.MonkeyPatch, model: ExtractiveChatModel) -> None:
    original = chain_cli._chain_for
    monkeypatch.setattr(chain_cli, "_chain_for", lambda args: original(args, model=model))


def _write_lines(tmp_path: Path, lines: list[str | bytes | dict[str, Any]]) -> str:
    def encoded(line: str | bytes | dict[str, Any]) -> bytes:
        if isinstance(line, bytes):
            return line
        return (line if isinstance(line, str) else json.dumps(line)).encode("utf-8")

    path = tmp_path / "batch.jsonl"
    path.write_bytes(b"".join(encoded(line) + b"\n" for line in lines))
    return str(path)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _records(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def _summary_rows(err: str) -> dict[tuple[str, str], int]:
    lines = err.splitlines()
    header = ["status", "failure_reason", "requests"]
    start = next(i for i, line in enumerate(lines) if line.split() == header)
    rows = {}
    for line in lines[start + 1 :]:
        cells = line.split()
        if len(cells) != 3 or not cells[2].isdigit():
            break
        rows[cells[0], cells[1]] = int(cells[2])
    return rows


def test_answers_come_out_in_input_order_when_later_lines_finish_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tracker = Tracker()
    _use_model(monkeypatch, SlowExtractiveModel(tracker=tracker))
    count = 6
    # the first line sleeps longest, the last not at all
    bundles = [
        make_bundle(request_id=f"r{i}", user_question=f"{QUESTION} delay {count - 1 - i}")
        for i in range(count)
    ]
    path = _write_lines(tmp_path, bundles)
    code, out, _ = _run(capsys, "ask", "--batch", path, "--json", "--concurrency", str(count))
    records = _records(out)
    assert code == 0
    assert tracker.finished[0] != count - 1  # the first line did not finish first ...
    assert tracker.finished != sorted(tracker.finished, reverse=True)  # ... nor in order
    assert [r["request_id"] for r in records] == [f"r{i}" for i in range(count)]  # ... yet
    assert [r["line"] for r in records] == list(range(1, count + 1))
    assert {r["status"] for r in records} == {"OK"}
    # each record is the PublicResponse's own JSON with the line number in front
    first = records[0]
    del first["line"]
    assert PublicResponse.model_validate(first).request_id == "r0"


def test_a_bad_line_fails_alone_never_reaches_the_model_and_is_noted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tracker = Tracker()
    _use_model(monkeypatch, SlowExtractiveModel(tracker=tracker))
    lines: list[str | bytes | dict[str, Any]] = [
        make_bundle(request_id="a"),
        "{not json",
        make_bundle(request_id="b"),
        "",
        "   ",
        b'{"request_id": "\xff\xfe"}',
        {"request_id": "schema"},  # JSON the chain refuses (no model call either)
        make_bundle(request_id="c"),
    ]
    path = _write_lines(tmp_path, lines)
    code, out, err = _run(capsys, "ask", "--batch", path, "--json", "--run-id", "job")
    records = _records(out)
    assert code == 1
    assert tracker.calls == 3  # a, b and c: no model call for any line that failed a gate
    assert [r["line"] for r in records] == [1, 2, 3, 6, 7, 8]  # blank lines skipped, counted
    # a line with no request id of its own is answered under its line's
    assert [r["request_id"] for r in records] == [
        "a",
        "job:line-2",
        "b",
        "job:line-6",
        "schema",
        "c",
    ]
    assert [r["status"] for r in records] == ["OK", "FAILED", "OK", "FAILED", "FAILED", "OK"]
    keys = ("line", "request_id", "status", "failure_reason", "failure_message")
    assert {key: records[1][key] for key in keys} == {
        "line": 2,
        "request_id": "job:line-2",
        "status": "FAILED",
        "failure_reason": "INPUT_SCHEMA_INVALID",
        "failure_message": "line 2: not JSON",
    }
    assert records[3]["failure_message"] == "line 6: not UTF-8"
    assert records[4]["failure_reason"] == "INPUT_SCHEMA_INVALID"
    assert re.search(r"batch\.jsonl:2: not JSON", err)
    assert re.search(r"batch\.jsonl:6: not UTF-8", err)
    assert "Traceback" not in err


def test_without_json_each_request_is_one_compact_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines: list[str | bytes | dict[str, Any]] = [
        make_bundle(request_id="a"),
        "",
        "[1, 2",
        REFUSAL_BUNDLE,
    ]
    code, out, _ = _run(capsys, "ask", "--batch", _write_lines(tmp_path, lines), "--run-id", "j")
    printed = out.splitlines()
    assert code == 1
    assert len(printed) == 3
    assert printed[0].startswith("line 1 a OK ")
    assert printed[1] == "line 3 j:line-3 FAILED INPUT_SCHEMA_INVALID: line 3: not JSON"
    assert printed[2] == "line 4 refused NO_EVIDENCE"


def test_the_summary_counts_every_status_and_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines: list[str | bytes | dict[str, Any]] = [
        *(make_bundle(request_id=f"ok{i}") for i in range(4)),
        REFUSAL_BUNDLE,
        REFUSAL_BUNDLE,
        {"request_id": "schema"},
        "nope",
        "",
    ]
    path = _write_lines(tmp_path, lines)
    code, out, err = _run(capsys, "ask", "--batch", path, "--json", "--run-id", "job")
    assert code == 1
    assert len(out.splitlines()) == 8
    assert _summary_rows(err) == {
        ("FAILED", "INPUT_SCHEMA_INVALID"): 2,
        ("NO_EVIDENCE", "-"): 2,
        ("OK", "-"): 4,
    }
    # the chain answered all 8 (the line that is not JSON as its refusal, with no model)
    assert re.search(r"^latency \(s\): p50 [\d.]+  p90 [\d.]+  p99 [\d.]+  max [\d.]+  "
                     r"\(8 requests\)$", err, re.MULTILINE)  # fmt: skip
    assert re.search(r"^total: 8 requests in [\d.]+ s, [\d.]+ requests/s; "
                     r"blank lines skipped: 1$", err, re.MULTILINE)  # fmt: skip
    assert re.search(r"^run: job$", err, re.MULTILINE)


def test_only_ok_and_no_evidence_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines: list[str | bytes | dict[str, Any]] = [make_bundle(request_id="a"), REFUSAL_BUNDLE]
    code, out, _ = _run(capsys, "ask", "--batch", _write_lines(tmp_path, lines), "--json")
    assert code == 0
    assert [r["status"] for r in _records(out)] == ["OK", "NO_EVIDENCE"]


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write_lines(tmp_path, [make_bundle()])
    for bad in ("0", "257"):
        code, out, err = _run(capsys, "ask", "--batch", path, "--concurrency", bad)
        assert (code, out) == (2, "")
        assert "--concurrency must be between 1 and 256" in err
    code, out, err = _run(capsys, "ask", "--batch", str(tmp_path / "missing.jsonl"))
    assert (code, out) == (2, "")
    assert "cannot read" in err


def test_no_progress_output_when_stderr_is_not_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines: list[str | bytes | dict[str, Any]] = [make_bundle(request_id=f"r{i}") for i in range(3)]
    code, out, err = _run(capsys, "ask", "--batch", _write_lines(tmp_path, lines), "--json")
    assert code == 0
    assert len(out.splitlines()) == 3
    assert "\r" not in err
    assert "\x1b" not in err
    assert "━" not in err
    # stderr is the plain summary and nothing else
    assert err.splitlines()[0].split() == ["status", "failure_reason", "requests"]
    assert len(err.splitlines()) == 5  # header, OK row, latency, total, run


def test_a_progress_bar_and_a_table_when_stderr_is_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLUMNS", "120")
    lines: list[str | bytes | dict[str, Any]] = [make_bundle(request_id=f"r{i}") for i in range(3)]
    path = _write_lines(tmp_path, lines)
    # capsys's stderr is a pipe-like buffer: make it claim a terminal (stdout does not)
    monkeypatch.setattr(batch_cli.sys.stderr, "isatty", lambda: True)
    code, out, err = _run(capsys, "ask", "--batch", path, "--json")
    assert code == 0
    assert "━" in err  # rich's bar
    assert "requests" in err
    assert "\x1b[" in err  # drawn with terminal control codes
    assert "│" in err or "┃" in err  # the summary is a rich table
    # the answers still go to stdout, one JSON line each, untouched by the display
    assert [r["request_id"] for r in _records(out)] == ["r0", "r1", "r2"]


@pytest.mark.parametrize("concurrency", [1, 3])
def test_max_concurrency_is_honoured(
    concurrency: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tracker = Tracker()
    _use_model(monkeypatch, SlowExtractiveModel(tracker=tracker, pause=0.05))
    lines: list[str | bytes | dict[str, Any]] = [make_bundle(request_id=f"r{i}") for i in range(9)]
    path = _write_lines(tmp_path, lines)
    code, out, _ = _run(capsys, "ask", "--batch", path, "--json", "--concurrency", str(concurrency))
    assert code == 0
    assert len(out.splitlines()) == 9
    assert tracker.calls == 9
    assert tracker.peak <= concurrency
    if concurrency > 1:
        assert tracker.peak > 1


class CannedChain(Runnable[Any, PublicResponse]):
    """Stands in for the chain: a NO_EVIDENCE answer at once, and a record of each batch."""

    def __init__(self, stdout: list[int], *, raise_for: str | None = None) -> None:
        self.stdout = stdout
        self.raise_for = raise_for
        self.tracker = Tracker()
        self.batches: list[int] = []
        self.written_before: list[int] = []

    def invoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> PublicResponse:
        return self._call_with_config(self._answer, input, config)

    def _answer(self, bundle: Any) -> PublicResponse:
        self.tracker.enter()
        try:
            if bundle["request_id"] == self.raise_for:
                raise RuntimeError("secret evidence text")
            return PublicResponse(
                request_id=bundle["request_id"],
                status=GenerationStatus.NO_EVIDENCE,
                answer="NO_EVIDENCE: none.",
                citations=(),
                token_usage=TokenUsage(prompt_tokens=0, completion_tokens=0, total_tokens=0),
                latency_ms=0.0,
                failure_reason=None,
                failure_message=None,
                confidence=None,
                model_used=None,
            )
        finally:
            self.tracker.leave(0)

    def batch_as_completed(self, inputs: Any, config: Any = None, **kwargs: Any) -> Any:
        self.batches.append(len(inputs))
        self.written_before.append(self.stdout[0])
        yield from super().batch_as_completed(inputs, config, **kwargs)


def _use_canned_chain(monkeypatch: pytest.MonkeyPatch, **options: Any) -> CannedChain:
    written = [0]
    canned = CannedChain(written, **options)
    monkeypatch.setattr(chain_cli, "_chain_for", lambda args: canned)
    real_write = batch_cli.sys.stdout.write

    def counting_write(text: str) -> int:
        written[0] += text.count("\n")
        return real_write(text)

    monkeypatch.setattr(batch_cli.sys.stdout, "write", counting_write)
    return canned


def test_a_large_file_is_answered_in_bounded_windows_and_streamed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    canned = _use_canned_chain(monkeypatch)
    total, concurrency = 2000, 8
    window = batch_cli._batch_window(concurrency)
    assert window == 256
    path = tmp_path / "big.jsonl"
    path.write_text(
        "".join(json.dumps({"request_id": f"r{i}"}) + "\n" for i in range(total)), "utf-8"
    )
    code, out, err = _run(
        capsys, "ask", "--batch", str(path), "--json", "--concurrency", str(concurrency)
    )
    records = _records(out)
    assert code == 0
    assert [r["line"] for r in records] == list(range(1, total + 1))
    assert records[-1]["request_id"] == f"r{total - 1}"
    # never more than a window of inputs held at once, and every line answered once
    assert max(canned.batches) <= window
    assert sum(canned.batches) == total
    assert len(canned.batches) == math.ceil(total / window)
    # each window was written out before the next one was read
    assert canned.written_before == [i * window for i in range(len(canned.batches))]
    assert canned.tracker.peak <= concurrency
    assert _summary_rows(err) == {("NO_EVIDENCE", "-"): total}


def test_an_exception_from_the_chain_fails_only_its_line_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_canned_chain(monkeypatch, raise_for="boom")
    lines: list[str | bytes | dict[str, Any]] = [
        {"request_id": "a"},
        {"request_id": "boom"},
        {"request_id": "c"},
    ]
    code, out, err = _run(capsys, "ask", "--batch", _write_lines(tmp_path, lines), "--json")
    records = _records(out)
    assert code == 1
    assert [(r["line"], r["request_id"], r["status"]) for r in records] == [
        (1, "a", "NO_EVIDENCE"),
        (2, "boom", "FAILED"),
        (3, "c", "NO_EVIDENCE"),
    ]
    assert records[1]["failure_reason"] == "INTERNAL_ERROR"
    assert records[1]["failure_message"] is None
    assert re.search(r"batch\.jsonl:2: the chain raised RuntimeError", err)
    assert "Traceback" not in err
    assert "secret evidence" not in err + out
    assert _summary_rows(err) == {("FAILED", "INTERNAL_ERROR"): 1, ("NO_EVIDENCE", "-"): 2}


def test_latency_percentiles_are_within_one_percent() -> None:
    latencies = batch_cli._Latencies()
    for millis in range(1, 1001):
        latencies.add(millis / 1000)
    assert latencies.count == 1000
    assert latencies.max == 1.0
    for percent, exact in ((50, 0.5), (90, 0.9), (99, 0.99)):
        assert exact <= latencies.percentile(percent) <= exact * 1.0101
    assert latencies.percentile(100) == 1.0


def test_a_line_nested_too_deep_fails_alone_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    lines: list[str | bytes | dict[str, Any]] = [deep, make_bundle(request_id="after")]
    code, out, err = _run(capsys, "ask", "--batch", _write_lines(tmp_path, lines), "--json")
    records = _records(out)
    assert code == 1
    assert [(r["line"], r["status"]) for r in records] == [(1, "FAILED"), (2, "OK")]
    assert records[0]["failure_message"] == "line 1: not JSON (nested too deep)"
    assert "Traceback" not in err


def test_a_bom_alone_is_blank_and_control_characters_stay_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_key = make_bundle(request_id="ctl")
    bad_key["results"][0]["bogus\u2028key\rZ"] = 1
    path = _write_lines(tmp_path, [b"\xef\xbb\xbf", bad_key, b"\x0c"])
    code, out, err = _run(capsys, "ask", "--batch", path, "--run-id", "job")
    lines = out.splitlines()
    assert code == 1
    assert len(lines) == 2  # the BOM-only line is blank; the form feed is not JSON
    assert lines[0].startswith("line 2 ctl FAILED INPUT_SCHEMA_INVALID: results[0].bogus")
    assert "\\u2028key\\rZ" in lines[0]
    assert "\r" not in out
    assert lines[1] == "line 3 job:line-3 FAILED INPUT_SCHEMA_INVALID: line 3: not JSON"
    assert "blank lines skipped: 1" in err

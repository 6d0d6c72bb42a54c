"""The firewall benchmark runs the sets it names and reports per rule, with or without a judge.

It prints figures (``benchmarks/``), so this only checks that what it reports is there and
consistent with R5's own verdicts on a small set, not any speed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    sys.path.insert(0, str(ROOT))
    from benchmarks import firewall  # noqa: PLC0415  (a script, imported as a module)

    monkeypatch.setattr(sys, "argv", ["firewall.py", *args])
    firewall.main()
    return capsys.readouterr().out


@pytest.mark.slow
def test_the_benchmark_reports_rates_rules_and_on_target_per_set(monkeypatch, capsys):
    out = _run(
        monkeypatch, capsys, "--set", "broad", "--policy", "R2_POLICY_V3", "--repeat", "0",
        "--real-dev", str(ROOT / "no-such-file.jsonl"),
    )  # fmt: skip
    assert "== R2_POLICY_V3 (ruleset firewall_v3), broad ==" in out
    assert re.search(r"correct answers accepted:\s+\d+\.\d %", out)
    assert "per rule" in out
    assert "if enforced" in out
    assert re.search(r"on target:\s+\d+\.\d % \(\d+/\d+\)", out)
    # The rule table names what rejected answers, with each rule's mode.
    assert re.search(r"weak_support\s+enforce", out)
    assert re.search(r"unsupported_entity\s+flag", out)


def test_a_missing_real_dev_file_is_skipped_with_a_note(monkeypatch, capsys):
    out = _run(
        monkeypatch, capsys, "--set", "real-dev", "--policy", "R2_POLICY_V3", "--repeat", "0",
        "--real-dev", str(ROOT / "no-such-file.jsonl"),
    )  # fmt: skip
    assert "not found; skipped" in out


def test_a_judge_given_by_module_and_callable_runs_under_the_judged_policy(monkeypatch, capsys):
    out = _run(
        monkeypatch, capsys, "--set", "broad", "--repeat", "0",
        "--judge", "tests.fakes.judges:word_overlap_judge",
    )  # fmt: skip
    assert "== R2_POLICY_V3_JUDGED (ruleset firewall_v3), broad ==" in out
    # The word-overlap judge rejects paraphrases the rules passed: its row is in the table.
    assert re.search(r"support_judge\s+enforce\s+\|\s+[1-9]", out)


def test_the_numbers_set_reports_what_rebound_value_would_reject(monkeypatch, capsys):
    out = _run(
        monkeypatch, capsys, "--set", "numbers", "--policy", "R2_POLICY_V3_STRICT",
        "--repeat", "0", "--real-dev", str(ROOT / "no-such-file.jsonl"),
    )  # fmt: skip
    assert "== R2_POLICY_V3_STRICT (ruleset firewall_v3), numbers ==" in out
    assert re.search(r"rebound_value\s+\d+\.\d % \(\d+/\d+\)", out)  # per kind of defect
    # Enforced under the strict policy, the binding rule rejects some of the set's answers.
    assert re.search(r"rebound_value\s+enforce\s+\|\s+[1-9]", out)


def test_the_stream_benchmark_reports_both_modes_against_the_model(monkeypatch, capsys):
    sys.path.insert(0, str(ROOT))
    from benchmarks import stream  # noqa: PLC0415  (a script, imported as a module)

    monkeypatch.setattr(
        sys, "argv", ["stream.py", "--rate", "2000", "--repeat", "1", "--sentences", "2"]
    )
    stream.main()  # it asserts every stream joins back into the answer and ends OK
    out = capsys.readouterr().out
    assert re.search(r"progressive: first validated sentence at \d+\.\d+x", out)
    assert re.search(r"buffered: response [\d.]+ ms after the model's last token", out)
    assert "R5 alone on the whole answer" in out


@pytest.mark.slow
@pytest.mark.objectstore
def test_the_audit_benchmark_reports_concurrent_writers_per_backend(monkeypatch, capsys):
    # At a tiny size: two writer processes on a local directory and on moto's S3; the
    # benchmark itself fails if a row is lost or duplicated, so a printed line is a clean run.
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # its own imports (chain.py)
    from benchmarks import audit  # noqa: PLC0415  (a script, imported as a module)

    monkeypatch.setattr(
        sys, "argv",
        ["audit.py", "--requests", "5", "--rows", "50", "--backend", "local", "--backend", "s3",
         "--writers", "2", "--per-writer", "10", "--flush-rows", "4"],
    )  # fmt: skip
    audit.main()
    out = capsys.readouterr().out
    assert "RecordValidation alone, 5 requests" in out  # the first two sections still run
    assert re.search(r"flusher: 50 validation rows", out)
    for backend in ("local", "s3"):
        line = re.search(
            rf"{backend}\s+2 writers\s+(\d+) rows in .* rows/s\s+(\d+) commits\s+(\d+) conflicts",
            out,
        )
        assert line, out
        rows, commits, _ = (int(group) for group in line.groups())
        assert rows == 20
        assert commits >= 2  # both tables, at least one commit each


@pytest.mark.slow
def test_the_audit_benchmark_reads_a_day_of_a_trail_from_that_days_files(monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # its own imports (chain.py)
    from benchmarks import audit  # noqa: PLC0415  (a script, imported as a module)

    monkeypatch.setattr(
        sys, "argv",
        ["audit.py", "--section", "4", "--trail-rows", "3000", "--trail-days", "3",
         "--commit-rows", "500"],
    )  # fmt: skip
    audit.main()
    out = capsys.readouterr().out
    assert "trail at scale: 3,000 validation rows over 3 days, by UTC day, chained" in out
    # Six commits of 500 over three days: two files a day, and a day's reads open those;
    # after compaction one file a day (and one more: the store's commit of today).
    day = re.findall(r"records list --since \S+ --until \S+: .*files read (\d+) of (\d+)", out)
    assert [tuple(map(int, pair)) for pair in day] == [(2, 6), (1, 4)]
    report = re.findall(r"report --since .* \(validations, feedback\) (\d+) of (\d+)", out)
    assert [tuple(map(int, pair)) for pair in report] == [(2, 6), (1, 4)]
    assert out.count("trail integrity: verified") == 2  # the trail is whole, and chained
    assert re.search(r"verify of the whole trail [\d.]+ s \([\d.]+ s per million rows\)", out)
    assert re.search(r"executions of 1,000 keys: [\d.]+ s, 1,000 found; files read 6 of 6", out)
    assert re.search(r"compact: \d+ s, 6 files into 3 \(3 partition\(s\), a commit each\)", out)

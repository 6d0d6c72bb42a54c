"""The report as a browser lays it out at 1280x800: what an auditor sees, measured.

Markup checks cannot see a layout: whether a 248-character request id widens the page,
whether ``UNCITED_FACTUAL_STATEMENT`` wraps to ``UNCITED_FACTUA`` / ``L_STATEMENT`` in a
narrow column, or whether a median bar is hidden by its maximum is decided by the layout
engine. So the report of a real Delta audit store, holding the trail an auditor meets (long
reason codes, policies such as ``SOURCE_PAGE_POLICY_V1``, 46-character deployment names,
model errors, deadlines and refused inputs with their messages), is opened in headless
Chromium at 1280x800, and a script (added to a copy of the page, never to the report
itself, which stays script-free) writes its measurements into the DOM, which
``--dump-dom`` prints. The same page is also photographed at 1280x800, a section per
shot, for a person to look at: the shots land in the test's temporary directory and,
when ``GROUNDLOCK_SCREENSHOT_DIR`` names a directory, are copied there. Only a system
Chromium is driven: nothing is downloaded.

Without a Chromium the tests skip, unless ``GROUNDLOCK_REQUIRE_BROWSER`` is set (as
``.ci/run`` sets it, after installing one), where a missing browser fails instead.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult

from groundlock import grounded_answer_chain
from groundlock.cli import main
from groundlock.cli.report import render_report
from groundlock.contracts.audit_rows import ValidationRow
from groundlock.stores import DeltaAuditStore
from groundlock.stores.readers import read_rows
from tests.builders import make_bundle, make_row
from tests.fakes.chat import ScriptedChatModel
from tests.stores.rows import query_row, validation_row

_WIDTH, _HEIGHT = 1280, 800
_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_LONG_ID = "request-" + "0123456789abcdef" * 15  # 248 characters (of 256), no break
_MODELS = (
    "gpt-4o-mini-2024-07-18",
    "claude-3-5-sonnet-20241022",
    "mistral-large-instruct-2411-eu-west-deployment",
)
_POLICIES = ("R2_POLICY_V3_STRICT", "SOURCE_PAGE_POLICY_V1")

# Runs in the page once it is parsed: measures, then writes JSON into <pre id=measure>.
# __IDENTIFIERS__ is replaced by the JSON list of the trail's identifiers.
_MEASURE = """
<pre id="groundlock-measure"></pre>
<script>
(function () {
  const root = document.documentElement;
  const limit = window.innerWidth;
  const identifiers = __IDENTIFIERS__;

  // A box that scrolls sideways keeps what passes its edge inside it: that content is
  // hidden behind a scroll bar, not pushing the page wider.
  const scroller = (element) => {
    for (let up = element.parentElement; up && up !== document.body; up = up.parentElement) {
      const style = getComputedStyle(up).overflowX;
      if (style === "auto" || style === "scroll" || style === "hidden") return up;
    }
    return null;
  };
  const overflowing = [];
  const scrolled = [];
  for (const element of document.body.querySelectorAll("*")) {
    if (element.closest("#groundlock-measure")) continue;
    const box = element.getBoundingClientRect();
    if (box.width > 0 && box.right > limit + 0.5) {
      const label = element.tagName + " right=" + box.right.toFixed(1) + " "
        + (element.textContent || "").slice(0, 60);
      const box_ = scroller(element);
      if (box_ && box_.getBoundingClientRect().right <= limit + 0.5) {
        const names = identifiers.filter((name) => box_.textContent.includes(name));
        scrolled.push({ label: label, names: names });
      } else {
        overflowing.push(label);
      }
    }
  }
  const spilling = [];
  for (const cell of document.querySelectorAll("td, th")) {
    if (cell.scrollWidth > cell.clientWidth + 1) {
      spilling.push(cell.textContent.slice(0, 80));
    }
  }

  // Every text node outside the charts, joined: an identifier cut by <wbr> is whole again.
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const nodes = [];
  let text = "";
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (node.parentElement.closest("svg, script, #groundlock-measure")) continue;
    nodes.push({ node: node, start: text.length });
    text += node.data;
  }
  const at = (position) => {
    let low = 0, high = nodes.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (nodes[middle].start <= position) low = middle; else high = middle - 1;
    }
    return { node: nodes[low].node, offset: position - nodes[low].start };
  };
  const range = document.createRange();
  const charBox = (position) => {
    const place = at(position);
    range.setStart(place.node, place.offset);
    range.setEnd(place.node, place.offset + 1);
    const rects = range.getClientRects();
    return rects.length ? rects[0] : range.getBoundingClientRect();
  };
  const blockOf = (position) =>
    at(position).node.parentElement.closest("td, th, li, p, h1, h2, h3, figcaption");
  const occurrences = [];
  for (const identifier of identifiers) {
    for (let from = text.indexOf(identifier); from >= 0;
         from = text.indexOf(identifier, from + 1)) {
      const block = blockOf(from);
      if (!block || block !== blockOf(from + identifier.length - 1)) continue;
      const breaks = [];
      let previous = charBox(from);
      for (let position = from + 1; position < from + identifier.length; position++) {
        const box = charBox(position);
        if (box.top > previous.top + previous.height / 2) {
          breaks.push(identifier.slice(0, position - from) + " / "
            + identifier.slice(position - from));
        }
        previous = box;
      }
      occurrences.push({
        identifier: identifier,
        tag: block.tagName,
        breaks: breaks,
        afterUnderscore: breaks.every((b) => b.split(" / ")[0].endsWith("_")),
      });
    }
  }

  const charts = [];
  for (const svg of document.querySelectorAll("svg")) {
    const frame = svg.getBoundingClientRect();
    const axis = (name) => {
      const group = svg.querySelector("g." + name);
      if (!group) return null;
      const ticks = [...group.querySelectorAll("text.tick")];
      const outside = ticks.filter((t) => {
        const b = t.getBoundingClientRect();
        return b.left < frame.left - 0.5 || b.right > frame.right + 0.5;
      }).length;
      const unit = group.querySelector("text.unit");
      return {
        ticks: ticks.map((t) => t.textContent.trim()),
        outside: outside,
        unit: unit ? unit.textContent.trim() : null,
      };
    };
    const title = svg.querySelector("title");
    const heading = svg.querySelector("text.chart-title");
    charts.push({
      title: title ? title.textContent.trim() : null,
      heading: heading ? heading.textContent.trim() : null,
      x: axis("x-axis"),
      y: axis("y-axis"),
    });
  }

  // Each period of a latency or token chart: its median and maximum bars and labels.
  // In page coordinates: the hit test scrolls each bar into view, and boxes taken before
  // and after a scroll must still compare.
  const plain = (box) => ({
    left: box.left + window.scrollX, right: box.right + window.scrollX,
    top: box.top + window.scrollY, bottom: box.bottom + window.scrollY,
    width: box.width, height: box.height });
  const hits = (shape) => {
    shape.scrollIntoView({ block: "center", inline: "center" });
    const box = shape.getBoundingClientRect();
    const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
    return hit === shape;
  };
  const periods = [];
  for (const svg of document.querySelectorAll("svg")) {
    const heading = svg.querySelector("text.chart-title");
    if (!svg.querySelector("title").textContent.match(/latency|tokens/i)) continue;
    const groups = [...svg.querySelectorAll("g")].filter((g) => {
      const tip = g.querySelector(":scope > title");
      return tip && tip.textContent.includes("median");
    });
    for (const group of groups) {
      const shape = (name) => group.querySelector("rect." + name);
      const label = (name) => group.querySelector("text.value." + name);
      const median = shape("median"), maximum = shape("maximum");
      const medianLabel = label("median"), maximumLabel = label("maximum");
      periods.push({
        chart: svg.querySelector("title").textContent,
        tooltip: group.querySelector(":scope > title").textContent,
        median: median ? plain(median.getBoundingClientRect()) : null,
        maximum: maximum ? plain(maximum.getBoundingClientRect()) : null,
        medianSeen: median ? hits(median) : false,
        maximumSeen: maximum ? hits(maximum) : false,
        medianLabel: medianLabel ? {
          text: medianLabel.textContent, box: plain(medianLabel.getBoundingClientRect()) }
          : null,
        maximumLabel: maximumLabel ? {
          text: maximumLabel.textContent, box: plain(maximumLabel.getBoundingClientRect()) }
          : null,
        frame: plain(svg.getBoundingClientRect()),
        heading: plain(heading.getBoundingClientRect()),
      });
    }
  }
  window.scrollTo(0, 0);

  document.getElementById("groundlock-measure").textContent = JSON.stringify({
    innerWidth: window.innerWidth,
    clientWidth: root.clientWidth,
    scrollWidth: root.scrollWidth,
    scrollHeight: root.scrollHeight,
    bodyScrollWidth: document.body.scrollWidth,
    overflowing: overflowing,
    scrolled: scrolled,
    spilling: spilling,
    occurrences: occurrences,
    charts: charts,
    periods: periods,
  });
})();
</script>
"""


def _chromium() -> str | None:
    override = os.environ.get("GROUNDLOCK_CHROMIUM")
    if override:
        return override
    return next((found for name in _BROWSERS if (found := shutil.which(name))), None)


@pytest.fixture(scope="module")
def browser() -> str:
    binary = _chromium()
    if binary is None:
        if os.environ.get("GROUNDLOCK_REQUIRE_BROWSER"):
            pytest.fail("GROUNDLOCK_REQUIRE_BROWSER is set but no Chromium binary was found")
        pytest.skip(
            "no Chromium binary (chromium, chromium-browser, google-chrome) on PATH; "
            "install one (apt-get install -y chromium) or set GROUNDLOCK_CHROMIUM"
        )
    return binary


class _BrokenModel(ScriptedChatModel):
    """A provider whose every call fails: the request ends MODEL_ERROR, with a message."""

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        raise RuntimeError("the provider closed the connection")


@dataclass(frozen=True)
class _Trail:
    store: str
    since: datetime
    until: datetime
    identifiers: tuple[str, ...]
    """Every reason code, policy, ruleset, model and rule name the trail holds."""


def _recorded(store: DeltaAuditStore, **fields: Any) -> None:
    """Both rows of one request, as the chain or the server would have written them."""
    store.record(
        validation_row(**fields),
        query_row(
            request_id=fields["request_id"],
            timestamp_utc=fields["timestamp_utc"],
            status=fields.get("status", "OK"),
            failure_reason=fields.get("failure_reason"),
        ),
    )


def _failure(reason: str, message: str, **fields: Any) -> dict[str, Any]:
    return {
        "status": "FAILED",
        "validation_status": "FAILED",
        "generation_status": "FAILED",
        "failure_reason": reason,
        "message": message,
        **fields,
    }


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> _Trail:
    """A week of an auditor's trail: the chain's own rows today, six earlier days written
    as the chain and the server write them (spread over days, so charts have periods)."""
    root = tmp_path_factory.mktemp("browser") / "audit"
    store = DeltaAuditStore(root)
    strict = grounded_answer_chain(store=store, policy=_POLICIES[0])
    for number in range(3):
        strict.invoke(make_bundle(request_id=f"ok-{number}"))
    strict.invoke(make_bundle(request_id=_LONG_ID + "-ok"))
    strict.invoke(make_bundle(request_id="refused", results=[make_row(0, similarity=0.01)]))
    for request_id, text in ((_LONG_ID, "Fine [C7]."), ("uncited", "The pump is fine.")):
        model = ScriptedChatModel(text=text, model_name=_MODELS[1])
        grounded_answer_chain(store=store, model=model, policy=_POLICIES[0]).invoke(
            make_bundle(request_id=request_id)
        )
    # A source-page policy refuses a bundle without source files: a refused input.
    grounded_answer_chain(store=store, policy=_POLICIES[1]).invoke(
        make_bundle(request_id="no-source-file")
    )
    broken = _BrokenModel(text="", model_name=_MODELS[2])
    grounded_answer_chain(store=store, model=broken, policy=_POLICIES[0]).invoke(
        make_bundle(request_id="model-error")
    )
    # The range is taken after the chain ran: its rows are in today's bucket even when
    # midnight passed while it ran (they are then in the range's last but one).
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    since, until = today - timedelta(days=6), today + timedelta(days=1)
    earlier = [
        _failure("MODEL_DEADLINE_EXCEEDED", "model: APITimeoutError after 3 attempt(s)",
                 attempts=3, latency_ms=30000.0, total_tokens=None),
        _failure("DEADLINE_EXCEEDED", "serving: the request ran past the server's deadline",
                 latency_ms=24500.0, total_tokens=None),
        _failure("PROVIDER_QUOTA_EXHAUSTED", "model: RateLimitError after 1 attempt(s)",
                 latency_ms=212.0, total_tokens=None),
        _failure("UNCITED_FACTUAL_STATEMENT", "answer: sentence 2 of 3 has no anchor",
                 firewall_ruleset="firewall_v3",
                 firewall_findings=("uncited_statement:UNCITED_FACTUAL_STATEMENT:enforce:2",
                                    "unsupported_entity:UNSUPPORTED_ENTITY:flag:1")),
        _failure("MISATTRIBUTED_CITATION", "answer: sentence 1 states what only [C2] holds",
                 firewall_ruleset="firewall_v3",
                 firewall_findings=("misattributed:MISATTRIBUTED_CITATION:enforce:1",)),
        _failure("CONTEXT_LENGTH_EXCEEDED", "model: BadRequestError after 1 attempt(s)",
                 latency_ms=95.0, total_tokens=None),
    ]  # fmt: skip
    for day, failed in enumerate(earlier):
        moment = since + timedelta(days=day)
        for number in range(5):
            _recorded(
                store,
                request_id=f"day{day}-ok-{number}",
                timestamp_utc=moment + timedelta(hours=2 * number + 1),
                policy_version=_POLICIES[number % 2],
                model_name=_MODELS[(day + number) % 3],
                firewall_ruleset="firewall_v3",
                latency_ms=420.0 + 37.0 * ((day * 5 + number) % 7),
                total_tokens=900 + 40 * number + 25 * day,
            )
        _recorded(
            store,
            request_id=f"day{day}-{failed['failure_reason'].lower()}-4f1c9a2e7b3d",
            timestamp_utc=moment + timedelta(hours=15),
            policy_version=_POLICIES[day % 2],
            model_name=_MODELS[day % 3],
            **failed,
        )
    store.close()
    rows = [
        row
        for row in read_rows(DeltaAuditStore(root), ValidationRow, "")
        if isinstance(row, ValidationRow)
    ]
    names: set[str | None] = {"NO_EVIDENCE"}
    for row in rows:
        names.update((row.failure_reason, row.policy_version, row.model_name))
        names.add(row.firewall_ruleset)
        names.update(finding.split(":")[0] for finding in row.firewall_findings or ())
        names.update(finding.split(":")[1] for finding in row.firewall_findings or ())
    identifiers = tuple(sorted(name for name in names if name and len(name) >= 6))
    return _Trail(str(root), since, until, identifiers)


def _command(browser: str, profile: Path, *options: str) -> list[str]:
    return [
        browser,
        "--headless=new",
        "--disable-gpu",
        "--no-sandbox",  # CI containers run as root, where the sandbox will not start
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={profile}",
        *options,
    ]


def _measure(
    browser: str, page: Path, profile: Path, identifiers: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The measurements the script took in ``page``, opened at 1280x800."""
    measured_page = page.with_name(page.stem + "-measured.html")
    script = _MEASURE.replace("__IDENTIFIERS__", json.dumps(list(identifiers)))
    text = page.read_text(encoding="utf-8")
    measured_page.write_text(text.replace("</body>", script + "</body>"), encoding="utf-8")
    command = _command(
        browser,
        profile,
        f"--window-size={_WIDTH},{_HEIGHT}",
        "--virtual-time-budget=10000",
        "--dump-dom",
        measured_page.as_uri(),
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    found = re.search(r'<pre id="groundlock-measure">(.*?)</pre>', done.stdout, re.DOTALL)
    failure = f"Chromium wrote no measurements (exit {done.returncode}): {done.stderr[-2000:]}"
    assert found, failure
    assert found.group(1), failure
    measured: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return measured


@dataclass(frozen=True)
class _Report:
    page: Path
    measured: dict[str, Any]
    identifiers: tuple[str, ...]


@pytest.fixture(scope="module")
def report(browser: str, trail: _Trail, tmp_path_factory: pytest.TempPathFactory) -> _Report:
    """``groundlock report`` of the trail, as written by the command, and as measured."""
    folder = tmp_path_factory.mktemp("report")
    page = folder / "report.html"
    since, until = trail.since.isoformat(), trail.until.isoformat()
    argv = ["report", "--store", trail.store, "--since", since, "--until", until]
    assert main([*argv, "--out", str(page)]) == 0
    measured = _measure(browser, page, folder / "profile", trail.identifiers)
    return _Report(page, measured, trail.identifiers)


def test_the_report_fits_1280_px_and_every_chart_has_axes(report: _Report) -> None:
    page = report.page.read_text(encoding="utf-8")
    assert _LONG_ID in page  # the long id is listed among the failed requests
    measured = report.measured

    assert measured["innerWidth"] == _WIDTH
    assert measured["scrollWidth"] <= _WIDTH
    assert measured["scrollWidth"] <= measured["clientWidth"]
    assert measured["bodyScrollWidth"] <= measured["clientWidth"]
    assert measured["overflowing"] == []
    assert measured["scrolled"] == []  # no table of this trail hides a column sideways
    assert measured["spilling"] == []  # no cell's text runs past its border
    charts = measured["charts"]
    assert len(charts) >= 3  # status over time, latency, tokens
    for chart in charts:
        assert chart["title"], chart
        assert chart["heading"] == chart["title"], chart
        x, y = chart["x"], chart["y"]
        assert x is not None, chart
        assert y is not None, chart
        assert len(x["ticks"]) >= 2, chart
        assert x["outside"] == 0, chart
        assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}( \d{2}:\d{2})?", t) for t in x["ticks"])
        assert "UTC" in x["unit"], chart
        assert len(y["ticks"]) >= 2, chart
        assert y["outside"] == 0, chart
        assert all(re.fullmatch(r"\d+(\.\d+)?(e[+-]?\d+)?", t) for t in y["ticks"]), chart
        assert y["unit"] in {"requests", "ms", "tokens"}, chart
    assert {chart["y"]["unit"] for chart in charts} == {"requests", "ms", "tokens"}


def test_no_reason_code_policy_or_model_name_breaks_inside_a_word(report: _Report) -> None:
    occurrences = report.measured["occurrences"]
    seen = {item["identifier"] for item in occurrences}
    assert seen == set(report.identifiers)  # each was found on the page, and measured
    assert {"UNCITED_FACTUAL_STATEMENT", "SOURCE_PAGE_POLICY_V1", _MODELS[2]} <= seen
    # A heading may break after an underscore (UNCITED_ / FACTUAL_ / STATEMENT), never
    # inside a word; a cell never breaks its identifier at all.
    inside_a_word = [item for item in occurrences if not item["afterUnderscore"]]
    assert inside_a_word == []
    broken_cells = [item for item in occurrences if item["tag"] == "TD" and item["breaks"]]
    assert broken_cells == []


def _overlap(a: dict[str, float], b: dict[str, float]) -> float:
    width = min(a["right"], b["right"]) - max(a["left"], b["left"])
    height = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
    return max(width, 0.0) * max(height, 0.0)


def test_each_period_shows_its_median_beside_its_maximum_both_labelled(
    report: _Report,
) -> None:
    periods = report.measured["periods"]
    charts = {period["chart"] for period in periods}
    assert any("latency" in chart for chart in charts)
    assert any("tokens" in chart for chart in charts)
    # The 30 s deadline's day: a median of about 0.5 s beside a maximum sixty times taller.
    assert any("max 30000.0 ms" in period["tooltip"] for period in periods)
    for period in periods:
        median, maximum = period["median"], period["maximum"]
        assert median is not None, period
        assert maximum is not None, period
        assert median["height"] >= 1.5, period  # a median far below its maximum still shows
        assert maximum["height"] >= 1.5, period
        assert _overlap(median, maximum) == 0, period  # side by side, neither hides the other
        assert median["right"] <= maximum["left"], period  # the median on the left
        assert period["medianSeen"], period  # nothing is painted over either bar
        assert period["maximumSeen"], period
        labels = (period["medianLabel"], period["maximumLabel"])
        assert all(label is not None for label in labels), period
        stated = re.search(r"median ([\d.]+) \w+, max ([\d.]+)", period["tooltip"])
        assert stated, period
        for label, value in zip(labels, stated.groups(), strict=True):
            assert float(label["text"]) == pytest.approx(float(value), abs=0.5), period
        median_label, maximum_label = (label["box"] for label in labels)
        assert _overlap(median_label, maximum_label) == 0, period
        assert _overlap(median_label, maximum) == 0, period
        assert _overlap(maximum_label, median) == 0, period
        assert _overlap(maximum_label, period["heading"]) == 0, period  # under the title
        for box in (median_label, maximum_label):
            assert box["left"] >= period["frame"]["left"], period
            assert box["right"] <= period["frame"]["right"], period
            assert box["top"] >= period["frame"]["top"], period


def test_a_model_name_too_long_for_the_screen_scrolls_its_table_not_the_page(
    browser: str, tmp_path: Path
) -> None:
    since = datetime(2026, 3, 1, tzinfo=UTC)
    endless = "azure-openai/deployments/" + "gpt-4o-eu-west-ptu-" * 12  # 253 characters
    rows = [
        validation_row(request_id="long-model", timestamp_utc=since + timedelta(hours=5),
                       model_name=endless),
        validation_row(request_id="failed", timestamp_utc=since + timedelta(hours=6),
                       **_failure("MODEL_ERROR", "model: RuntimeError after 1 attempt(s)",
                                  model_name=endless)),
    ]  # fmt: skip
    page = tmp_path / "report.html"
    report = render_report(rows, [], since=since, until=since + timedelta(days=2))
    page.write_text(report, encoding="utf-8")
    measured = _measure(browser, page, tmp_path / "profile", (endless,))

    assert measured["scrollWidth"] <= measured["clientWidth"]  # the page keeps its width
    assert measured["overflowing"] == []
    assert measured["scrolled"]  # the tables naming the model scroll inside their box...
    assert all(item["names"] == [endless] for item in measured["scrolled"])
    occurrences = measured["occurrences"]
    assert len(occurrences) >= 2  # ...and the name is whole in each: by model, failed
    assert all(item["breaks"] == [] for item in occurrences)


# A section of the report per shot: hiding what comes before the section's heading puts
# it at the top of the 1280x800 window without changing a width (nothing is scrolled).
_SHOTS = {
    "summary": "summary",
    "breakdowns": "breakdowns",
    "policy-status": "policy-0",
    "policy-latency": "policy-0-latency",
    "failed-requests": "failed-requests",
}


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _distinct_rows(data: bytes) -> int:
    """How many different pixel rows an 8-bit PNG holds, as stored (filtered).

    A blank page is one row repeated (two or three as stored, as filters differ); a page
    with text and charts has hundreds. Telling them apart needs no image library.
    """
    chunks, position = [], 8
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        if data[position + 4 : position + 8] == b"IDAT":
            chunks.append(data[position + 8 : position + 8 + length])
        position += 12 + length
    pixels = zlib.decompress(b"".join(chunks))
    _, height = _png_size(data)
    stride = len(pixels) // height
    return len({pixels[row * stride + 1 : (row + 1) * stride] for row in range(height)})


def test_screenshots_at_1280x800_show_each_section_for_review(
    browser: str, report: _Report, tmp_path: Path
) -> None:
    text = report.page.read_text(encoding="utf-8")
    shots = tmp_path / "screenshots"
    shots.mkdir()
    taken = []
    for name, anchor in _SHOTS.items():
        assert f"id='{anchor}'" in text, anchor
        section = tmp_path / f"{name}.html"
        hide = f"<style>body > :has(~ #{anchor}){{display:none}}</style></head>"
        section.write_text(text.replace("</head>", hide, 1), encoding="utf-8")
        taken.append((shots / f"{name}.png", section, (_WIDTH, _HEIGHT)))
    full_height = min(report.measured["scrollHeight"], 16_000)
    taken.append((shots / "whole-page.png", report.page, (_WIDTH, full_height)))
    for png, source, (width, height) in taken:
        command = _command(
            browser,
            tmp_path / "profile",
            f"--window-size={width},{height}",
            f"--screenshot={png}",
            source.as_uri(),
        )
        done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
        assert png.is_file(), f"no screenshot (exit {done.returncode}): {done.stderr[-2000:]}"
        data = png.read_bytes()
        assert _png_size(data) == (width, height), png.name
        assert _distinct_rows(data) > 50, png.name  # something is drawn
    target = os.environ.get("GROUNDLOCK_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        for png, _, _ in taken:
            shutil.copy2(png, Path(target) / png.name)

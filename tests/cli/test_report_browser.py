"""The report as a browser lays it out: fits 1280 px, every chart has its axes.

Markup checks cannot see an overflow: whether a 250-character request id widens the page
is decided by the layout engine. So the report of a real Delta audit store is opened in
headless Chromium at 1280x800, and a script (added to a copy of the page, never to the
report itself, which stays script-free) writes its measurements into the DOM, which
``--dump-dom`` prints. Only a system Chromium is driven: nothing is downloaded.

Without a Chromium the test skips, unless ``GROUNDLOCK_REQUIRE_BROWSER`` is set (as
``.ci/run`` sets it, after installing one), where a missing browser fails instead.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from groundlock import grounded_answer_chain
from groundlock.cli import main
from groundlock.stores import DeltaAuditStore
from tests.builders import make_bundle, make_row
from tests.fakes.chat import ScriptedChatModel

_WIDTH, _HEIGHT = 1280, 800
_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_LONG_ID = "request-" + "0123456789abcdef" * 15  # 248 characters (of 256), no break

# Runs in the page once it is parsed: measures, then writes JSON into <pre id=measure>.
_MEASURE = """
<pre id="groundlock-measure"></pre>
<script>
(function () {
  const root = document.documentElement;
  const limit = window.innerWidth;
  const overflowing = [];
  for (const element of document.body.querySelectorAll("*")) {
    if (element.id === "groundlock-measure") continue;
    const box = element.getBoundingClientRect();
    if (box.width > 0 && box.right > limit + 0.5) {
      overflowing.push(element.tagName + " right=" + box.right.toFixed(1) + " "
        + (element.textContent || "").slice(0, 60));
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
  document.getElementById("groundlock-measure").textContent = JSON.stringify({
    innerWidth: window.innerWidth,
    clientWidth: root.clientWidth,
    scrollWidth: root.scrollWidth,
    bodyScrollWidth: document.body.scrollWidth,
    overflowing: overflowing,
    charts: charts,
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


@pytest.fixture(scope="module")
def long_id_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A real audit store, as in ``conftest.py``, plus a failure under a 248-character id."""
    root = tmp_path_factory.mktemp("browser") / "audit"
    store = DeltaAuditStore(root)
    chain = grounded_answer_chain(store=store)
    for number in range(5):
        chain.invoke(make_bundle(request_id=f"ok-{number}"))
    chain.invoke(make_bundle(request_id=_LONG_ID + "-ok"))
    chain.invoke(make_bundle(request_id="refused", results=[make_row(0, similarity=0.01)]))
    rejected = grounded_answer_chain(store=store, model=ScriptedChatModel(text="Fine [C7]."))
    rejected.invoke(make_bundle(request_id="rejected"))
    rejected.invoke(make_bundle(request_id=_LONG_ID))
    store.close()
    return str(root)


def _measure(browser: str, page: Path, profile: Path) -> dict[str, Any]:
    command = [
        browser,
        "--headless=new",
        "--disable-gpu",
        "--no-sandbox",  # CI containers run as root, where the sandbox will not start
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={profile}",
        f"--window-size={_WIDTH},{_HEIGHT}",
        "--virtual-time-budget=10000",
        "--dump-dom",
        page.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    found = re.search(r'<pre id="groundlock-measure">(.*?)</pre>', done.stdout, re.DOTALL)
    failure = f"Chromium wrote no measurements (exit {done.returncode}): {done.stderr[-2000:]}"
    assert found, failure
    assert found.group(1), failure
    measured: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return measured


def test_the_report_fits_1280_px_and_every_chart_has_axes(
    browser: str, long_id_store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.html"
    assert main(["report", "--store", long_id_store, "--out", str(report)]) == 0
    capsys.readouterr()
    page = report.read_text(encoding="utf-8")
    assert _LONG_ID in page  # the long id is listed among the failed requests
    measured_page = tmp_path / "measured.html"
    measured_page.write_text(page.replace("</body>", _MEASURE + "</body>"), encoding="utf-8")

    measured = _measure(browser, measured_page, tmp_path / "profile")

    assert measured["innerWidth"] == _WIDTH
    assert measured["scrollWidth"] <= _WIDTH
    assert measured["scrollWidth"] <= measured["clientWidth"]
    assert measured["bodyScrollWidth"] <= measured["clientWidth"]
    assert measured["overflowing"] == []
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

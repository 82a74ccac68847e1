"""The report: figures and the HTML page from real small simulations (one
run, a directory of runs, a table of runs, the CLI); the page checked for
network references, then opened in a real browser: headless Chromium
(Debian's ``chromium``, installed by .ci/run) renders it without script
errors, every figure's image loads, a table sorts on a click, and a
screenshot shows the figures."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

import cachesched
from cachesched import report

TASKS = [
    {"name": "zipf", "count": 2,
     "workload": {"kind": "zipf", "params": {"accesses": 16_000, "working_set_bytes": "64KiB"}}},
    {"name": "stream", "workload": {"kind": "stream", "params": {"accesses": 16_000, "working_set_bytes": "16KiB"}}},
]
BASE = {"seed": 1, "machine": {"preset": "teaching"}, "tasks": TASKS,
        "stats": {"interval": "1K instr", "window": "4K instr"}, "run": {"switch_cycles": 500}}
ROUND_ROBIN = {**BASE, "scheduler": {"kind": "round-robin", "params": {"quantum": "20us"}}}
FORCED = {**BASE, "scheduler": {"kind": "forced", "params": {"every": "10K instr", "destination": "local",
                                                            "quantum": "20us"}}}


@pytest.fixture(scope="session")
def saved_runs(tmp_path_factory) -> Path:
    """Two saved runs of three tasks on the teaching machine's two cores
    (about 100k accesses in all): round-robin, and forced local migrations."""
    root = tmp_path_factory.mktemp("runs")
    cachesched.simulate(ROUND_ROBIN).save(root / "round-robin")
    cachesched.simulate(FORCED).save(root / "forced")
    return root


@pytest.fixture(scope="session")
def one_report(saved_runs, tmp_path_factory) -> list[Path]:
    """The report of the round-robin run alone."""
    return report.build(saved_runs / "round-robin", tmp_path_factory.mktemp("report"))


def assert_png(path: Path) -> None:
    """A PNG that decodes, with a real drawing in it (not one flat colour)."""
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", path
    with Image.open(path) as im:
        pixels = np.asarray(im.convert("RGB"))
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100, path
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 20, f"{path} is nearly blank"
    assert (pixels.min(axis=2) < 200).mean() > 0.01, f"{path} has almost nothing drawn"


def assert_svg(path: Path) -> None:
    """An SVG that parses, with many drawn elements."""
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg", path
    assert len(root.findall(".//{http://www.w3.org/2000/svg}path")) > 20, path


def external_references(page: str) -> list[str]:
    """Every URL the page would fetch or link to outside itself: any src,
    href or CSS url() that is not a data URI or an in-page anchor, and any
    http(s) or protocol-relative address left after removing data URIs."""
    text = re.sub(r"data:[a-z/+]+;base64,[A-Za-z0-9+/=]+", "data:", page)
    refs = re.findall(r"""(?:src|href|action|srcset)\s*=\s*["']?([^"'\s>]+)""", text, flags=re.IGNORECASE)
    refs += re.findall(r"url\(\s*['\"]?([^'\")]+)", text, flags=re.IGNORECASE)
    bad = [r for r in refs if not r.startswith(("data:", "#"))]
    return bad + re.findall(r"(?:https?:|ftp:)?//[\w.-]+\.[a-z]{2,}", text, flags=re.IGNORECASE)


def test_one_run_gives_every_figure_with_data_in_png_and_svg(one_report):
    names = {p.stem for p in one_report if p.suffix == ".png"}
    # round-robin: no migrations, so no post-migration windows; one run: no comparison
    assert names == {"miss_ratio", "cpi", "timeline", "around_events", "distributions"}
    for path in one_report[:-1]:
        assert path.suffix in (".png", ".svg") and path.is_file()
        (assert_png if path.suffix == ".png" else assert_svg)(path)
    assert {p.suffix for p in one_report[:-1]} == {".png", ".svg"}


def test_the_page_is_self_contained(one_report):
    page = one_report[-1]
    assert page.name == "report.html"
    text = page.read_text()
    assert external_references(text) == []
    assert text.count('src="data:image/png;base64,') == 5
    assert "<script>" in text and 'class="sortable"' in text
    for name in ("zipf.0", "zipf.1", "stream"):
        assert f">{name}<" in text, "the task table names every task"


def test_the_report_is_an_attribute_of_the_package_loaded_on_use():
    assert cachesched.report.build is report.build
    with pytest.raises(AttributeError, match="nope"):
        cachesched.nope  # noqa: B018


def test_the_reference_check_catches_network_urls():
    assert external_references('<img src="https://cdn.example.com/x.png">')
    assert external_references('<script src="//cdn.example.com/x.js"></script>')
    assert external_references("<style>a { background: url(x.png) }</style>")
    assert not external_references('<img src="data:image/png;base64,aGk="><a href="#fig-cpi">x</a>')


def test_switches_are_counted_in_the_event_aligned_means(saved_runs):
    r = report.read_run(saved_runs / "round-robin")
    curve = report.figures.around(r.intervals, r.events, "cpi")
    switches = curve[(curve.event == "switch") & (curve.offset == 0)]
    resumptions = (r.events.event == "switch_in").sum() - len(r.tasks)  # each task's first start is not one
    assert 0 < int(switches["count"].iloc[0]) <= resumptions
    assert set(curve.offset) <= set(range(*report.figures.AROUND))


@pytest.fixture(scope="session")
def both_report(saved_runs, tmp_path_factory) -> list[Path]:
    """The report of the directory holding both runs (PNG only: the SVGs
    are checked above)."""
    return report.build(saved_runs, tmp_path_factory.mktemp("both"), formats=["png"])


def test_a_directory_of_runs_is_compared(saved_runs, both_report):
    runs = report.load(saved_runs)
    assert [r.label for r in runs.runs] == ["forced", "round-robin"], "4 keys differ: labelled by name"
    assert runs.variants == ["scheduler.kind", "scheduler.params.destination", "scheduler.params.every",
                             "scheduler.params.timing"]
    assert runs.runs[0].metrics["migrations"] > 0 and runs.runs[1].metrics["migrations"] == 0
    names = [p.stem for p in both_report[:-1]]
    assert names == [name for name, *_ in report.figures.FIGURES], "every figure, in order"
    for path in both_report[:-1]:
        assert_png(path)
    assert external_references(both_report[-1].read_text()) == []


def test_runs_differing_in_one_key_are_labelled_by_it(saved_runs):
    rr = report.read_run(saved_runs / "round-robin")
    small = cachesched.simulate({**ROUND_ROBIN, "machine": {"preset": "teaching", "l2": {"size_bytes": "16KiB"}}})
    runs = report.load({"a": rr, "b": small})
    assert runs.variants == ["machine.l2.size_bytes"]
    assert [r.label for r in runs.runs] == [f"size_bytes={rr.config['machine']['l2']['size_bytes']}",
                                           f"size_bytes={small.config['machine']['l2']['size_bytes']}"]


def test_a_table_of_runs_with_paths_and_variant_columns(saved_runs, tmp_path):
    table = pd.DataFrame({"policy": ["round-robin", "forced"], "status": ["done", "done"],
                          "path": ["round-robin", "forced"]})
    table.to_csv(tmp_path / "runs.csv", index=False)
    (tmp_path / "round-robin").symlink_to(saved_runs / "round-robin")
    (tmp_path / "forced").symlink_to(saved_runs / "forced")
    runs = report.load(tmp_path / "runs.csv")
    assert runs.variants == ["policy"], "status and path are bookkeeping"
    assert [r.label for r in runs.runs] == ["policy=round-robin", "policy=forced"]
    assert all(r.results is not None for r in runs.runs), "relative paths are read from beside the table"
    assert list(runs.table().columns[:2]) == ["run", "policy"]


def test_the_sweep_stores_table_shape(saved_runs, tmp_path):
    """The columns `cachesched.store.load` gives for a sweep store: axes
    and a named variant, bookkeeping, the detail folder, the summary."""
    done = [report.read_run(saved_runs / name).summary for name in ("round-robin", "forced")]
    table = pd.DataFrame([
        {"sweep": "s", "position": 0, "variant": "rr", "machine.l2.size_bytes": "32KiB", "seed": 1,
         "status": "done", "key": "ab", "error": None, "detail": str(saved_runs / "round-robin"), **done[0]},
        {"sweep": "s", "position": 1, "variant": "forced", "machine.l2.size_bytes": "32KiB", "seed": 1,
         "status": "done", "key": "cd", "error": None, "detail": str(saved_runs / "forced"), **done[1]},
        {"sweep": "s", "position": 2, "variant": "forced", "machine.l2.size_bytes": "64KiB", "seed": 1,
         "status": "failed", "key": "ef", "error": "SimulationError: ...", "detail": None},
    ])
    runs = report.load(table)
    assert runs.variants == ["variant", "machine.l2.size_bytes", "seed"]
    assert [r.label for r in runs.runs] == ["rr / 32KiB / 1", "forced / 32KiB / 1", "forced / 64KiB / 1"]
    assert [r.results is not None for r in runs.runs] == [True, True, False]
    assert list(runs.table().status) == ["done", "done", "failed"]
    x, hue = report.figures.comparison(runs)
    assert hue == "variant" and list(x.x) == ["32KiB / 1", "32KiB / 1", "64KiB / 1"]
    assert report.figures.fig_runs(runs) is not None


def test_a_table_of_metrics_alone_gives_the_comparison(tmp_path):
    table = pd.DataFrame({"l2_size": ["16KiB", "32KiB", "64KiB"], "cpi": [3.1, 2.5, 2.2],
                          "l1d_miss_ratio": [0.3, 0.3, 0.3], "l2_miss_ratio": [0.6, 0.4, 0.2]})
    paths = report.build(table, tmp_path, formats=["svg"])
    assert sorted(p.name for p in paths) == ["report.html", "runs.png", "runs.svg"]
    assert_png(tmp_path / "runs.png")
    assert "l2_size=64KiB" in paths[-1].read_text()


def test_the_cli_writes_the_report(run_cli, saved_runs, tmp_path):
    proc = run_cli("report", str(saved_runs / "forced"), "-o", str(tmp_path / "out"), "--title", "forced",
                   "--format", "svg")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "windows.svg").is_file() and (tmp_path / "out" / "windows.png").is_file()
    assert "<title>forced</title>" in (tmp_path / "out" / "report.html").read_text()
    missing = run_cli("report", str(tmp_path / "nothing"), "-o", str(tmp_path / "x"))
    assert missing.returncode != 0 and "nothing" in missing.stderr


# The browser
# Put first in <head>: records script errors, then on load whether each image
# decoded, and what sorting the task table by its CPI column did.
PROBE = """<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message || e)); });
window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.images).map(function (img) {
    return {alt: img.alt, complete: img.complete, width: img.naturalWidth, height: img.naturalHeight};
  });
  var sorted = null, tables = document.querySelectorAll("table.sortable");
  var tasks = tables[tables.length - 1], col = -1;
  tasks.querySelectorAll("th").forEach(function (th, i) { if (th.textContent === "cpi") col = i; });
  if (col >= 0) {
    var read = function () {
      return Array.prototype.map.call(tasks.tBodies[0].rows, function (r) {
        return parseFloat(r.cells[col].dataset.value);
      });
    };
    tasks.querySelectorAll("th")[col].click();
    var up = read();
    tasks.querySelectorAll("th")[col].click();
    sorted = {up: up, down: read()};
  }
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({errors: window.__errors, images: imgs, sorted: sorted});
  document.body.appendChild(out);
});
</script>"""


def chromium() -> str:
    """The browser, or a failure that says how to install it (never a skip:
    the check is part of the suite)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("chromium is not installed: run `cachesched suite install --browser` (the README's test "
                    "command does)")
    return found


def run_browser(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    """Headless Chromium on a local file, with nothing that could reach the network."""
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", "--disable-extensions", "--disable-background-networking",
           f"--user-data-dir={profile}", "--virtual-time-budget=10000", "--window-size=1280,2000",
           *args, page.as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def built(both_report) -> Path:
    """The page of both runs: every figure is drawn."""
    return both_report[-1]


def test_every_figure_loads_without_script_errors_and_tables_sort(built, tmp_path):
    probed = tmp_path / "probed.html"
    probed.write_text(built.read_text().replace("<head>", "<head>" + PROBE, 1))
    proc = run_browser(probed, tmp_path / "profile", "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout, flags=re.DOTALL)
    assert found, f"the probe did not run; chromium said:\n{proc.stderr[-2000:]}"
    result = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert result["errors"] == []
    images = result["images"]
    assert len(images) == 7, "all seven figures: comparison, bars, time series, events, windows, distributions"
    for img in images:
        assert img["complete"] and img["width"] > 200 and img["height"] > 100, img
    up, down = result["sorted"]["up"], result["sorted"]["down"]
    assert up == sorted(up) and down == sorted(down, reverse=True) and len(up) == 6


def test_a_screenshot_shows_the_figures(built, tmp_path):
    shot = tmp_path / "shot.png"
    proc = run_browser(built, tmp_path / "profile", f"--screenshot={shot}")
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    with Image.open(shot) as im:
        pixels = np.asarray(im.convert("RGB")).astype(int)
    assert pixels.shape[:2] == (2000, 1280)
    # The figures' bars and lines are coloured (text and rules are grey):
    # matplotlib's default blue and orange must both be on screen.
    colourful = (pixels.max(axis=2) - pixels.min(axis=2)) > 80
    assert colourful.mean() > 0.005, "no figure visible in the screenshot"
    blue = (abs(pixels - [31, 119, 180]).sum(axis=2) < 40).sum()
    orange = (abs(pixels - [255, 127, 14]).sum(axis=2) < 40).sum()
    assert blue > 500 and orange > 500, (blue, orange)

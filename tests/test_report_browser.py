"""The demo's reports opened in a browser (issues 29 and 27): headless
Chromium (Debian's ``chromium``, installed by ``scripts/setup.sh``) loads
``report.html`` of a small ``iosched demo`` (the arena) and of a small
``iosched demo --bb`` (the burst-buffer showcase); the test fails when a
figure or a table is missing, when an embedded image is not a PNG the
browser decodes, or when the page renders blank.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from matplotlib.image import imread

from conftest import REPO
from iosched.demo import ARENA_SCHEDULERS

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (scripts/setup.sh "
                                                          "installs Debian's chromium)")
#: The burst-buffer showcase's runs (the demo's RUNS).
LABELS = ("fcfs-easy", "sjf-bb", "plan-2")
PNG = b"\x89PNG\r\n\x1a\n"
#: Marks the page once the browser has loaded it: the number of decoded images.
PROBE = ("<script>window.addEventListener('load',()=>{document.body.setAttribute('data-decoded',"
         "[...document.images].filter(i=>i.complete&&i.naturalWidth>0).length);});</script>")


class _Report(HTMLParser):
    """The ``img`` elements (attributes) and tables (rows of cell texts) of a page."""

    def __init__(self):
        super().__init__()
        self.images, self.tables = [], []
        self._cell = None

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs))
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def _check_embedded(page: _Report, folder) -> None:
    """Every image of the page is a PNG embedded as data, the same bytes as its file."""
    for img in page.images:
        head, _, data = img["src"].partition(",")
        assert head == "data:image/png;base64", img["data-file"]
        png = base64.b64decode(data, validate=True)
        assert png.startswith(PNG) and png == (folder / img["data-file"]).read_bytes()


def _chromium(*args, timeout=180):
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                           "--hide-scrollbars", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """A 20-job ``iosched demo --bb`` (the command line: the paper's own draws
    where the shared inputs hold them, else iosched's generator)."""
    out = tmp_path_factory.mktemp("demo")
    res = subprocess.run([sys.executable, "-m", "iosched.cli", "demo", "--bb", "--jobs", "20",
                          "--output", str(out)], cwd=REPO, capture_output=True, text=True,
                         timeout=900)
    assert res.returncode == 0, res.stderr
    return out


def test_demo_report_has_every_io_figure_and_table(demo):
    page = _Report()
    page.feed((demo / "report.html").read_text(encoding="utf-8"))
    files = [img.get("data-file") for img in page.images]
    expected = ["figures/ecdf_waiting_time.png", "figures/io_tiers.png",
                *(f"figures/{kind}_{label}.png" for label in LABELS
                  for kind in ("io_timeline", "utilization", "gantt"))]
    assert sorted(files) == sorted(expected)
    _check_embedded(page, demo)
    headers = {tuple(t[0]) for t in page.tables if t}
    tiers = next(t for t in page.tables if t and t[0][:2] == ["run", "tier"])
    assert ("run", "kind", "capacity", "peak", "mean", "peak / capacity") in headers
    # every run moved bytes through the PFS and the burst buffers, all timed by phase
    for label in LABELS:
        rows = {r[1]: r for r in tiers[1:] if r[0] == label}
        assert {"PFS", "burst buffers"} <= set(rows)
        assert all(r[-1] == "phase" and not r[3].startswith("0 ") for r in rows.values())
    holds = next(t for t in page.tables if t and t[0][:2] == ["run", "kind"])
    assert {r[0] for r in holds[1:] if r[1] == "burst_buffer"} == set(LABELS)


def _renders(demo, tmp_path, least: int):
    """Chromium exits 0, decodes every image of the page, and the screenshot
    of its first 1280 x 4000 pixels (the comparison and the I/O section) is
    not blank."""
    html = (demo / "report.html").read_text(encoding="utf-8")
    n = html.count("<img ")
    probe = demo / "probe.html"
    probe.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    res = _chromium("--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
    assert res.returncode == 0, res.stderr[-2000:]
    assert f'data-decoded="{n}"' in res.stdout and n >= least
    assert res.stdout.count("<table") == html.count("<table")
    shot = tmp_path / "report.png"
    res = _chromium(f"--screenshot={shot}", "--window-size=1280,4000",
                    (demo / "report.html").as_uri())
    assert res.returncode == 0, res.stderr[-2000:]
    pixels = imread(shot)
    assert pixels.shape[:2] == (4000, 1280)
    rgb = pixels[..., :3].reshape(-1, 3)
    assert rgb.std(axis=0).max() > 0.05          # not one colour
    assert len(np.unique((rgb[::97] * 255).astype(int), axis=0)) > 50   # figures, not text only



def test_chromium_renders_the_demo_report(demo, tmp_path):
    _renders(demo, tmp_path, 11)


@pytest.fixture(scope="module")
def arena_demo(tmp_path_factory):
    """A 40-job ``iosched demo`` (the arena: six schedulers, the mixed regime)."""
    out = tmp_path_factory.mktemp("arena_demo")
    res = subprocess.run([sys.executable, "-m", "iosched.cli", "demo", "--jobs", "40", "--output",
                          str(out)], cwd=REPO, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr
    assert "rank" in res.stdout and "io-aware" in res.stdout   # the leaderboard is printed
    return out


def test_arena_demo_report_has_the_leaderboard_and_the_io_views(arena_demo):
    board = pd.read_csv(arena_demo / "n100" / "leaderboard" / "leaderboard.csv")
    assert sorted(board["scheduler"]) == sorted(ARENA_SCHEDULERS)
    page = _Report()
    page.feed((arena_demo / "report.html").read_text(encoding="utf-8"))
    files = [img.get("data-file") for img in page.images]
    prefix = "figures/io_arena100-dragonfly_mixed"
    expected = ["n100/leaderboard/figures/leaderboard_bounded_slowdown_mean.png",
                f"{prefix}_all_tiers.png", f"{prefix}_tiers.png", f"{prefix}_inputs.png",
                *(f"{prefix}_timeline_{s}.png" for s in ARENA_SCHEDULERS)]
    assert sorted(files) == sorted(expected)
    _check_embedded(page, arena_demo)
    # the leaderboard: one row per scheduler, with the rejected jobs
    ranked = next(t for t in page.tables if t and t[0][:2] == ["rank", "scheduler"])
    assert sorted(r[1] for r in ranked[1:]) == sorted(ARENA_SCHEDULERS)
    assert "jobs rejected" in ranked[0]
    # bytes per tier of the representative runs (one scheduler per family: every
    # one here), and what they held: burst-buffer occupancy under sjf-bb
    tiers = next(t for t in page.tables if t and t[0][:2] == ["run", "tier"])
    assert "PFS" in {r[1] for r in tiers[1:] if r[0] == "easy"}
    assert {"PFS", "burst buffers"} <= {r[1] for r in tiers[1:] if r[0] == "sjf-bb"}
    holds = next(t for t in page.tables if t and t[0][:2] == ["run", "kind"])
    assert ("sjf-bb", "burst_buffer") in {(r[0], r[1]) for r in holds[1:]}


def test_chromium_renders_the_arena_demo_report(arena_demo, tmp_path):
    _renders(arena_demo, tmp_path, 10)

"""Tests of iosched.analysis.report on a real tiny campaign (2 schedulers x 2 workloads x 1 seed,
plus a crashing scheduler)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from iosched.campaign.execute import run_campaign
from iosched.campaign.schema import load_campaign
from iosched.analysis.report import build_report, render_markdown

REPO = Path(__file__).resolve().parent.parent
MISBEHAVING = REPO / "tests" / "schedulers" / "misbehaving.py"


@pytest.fixture(scope="module")
def campaign_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("camp")
    spec = {
        "name": "rep",
        "output": "out",
        "platforms": [{"cluster": {"nb_nodes": 4}}],
        "workloads": [{"synthetic": {"nb_jobs": 12, "runtime": [5, 60], "interarrival": 4},
                       "label": "a"},
                      {"synthetic": {"nb_jobs": 12, "runtime": [30, 90], "interarrival": 2},
                       "label": "b"}],
        "schedulers": ["fcfs", "easy",
                       {"name": str(MISBEHAVING), "options": {"mode": "crash"}, "label": "crashy"}],
        "seeds": [7],
        "baseline": "fcfs",
        "timeout": 60,
    }
    path = tmp / "c.yaml"
    path.write_text(yaml.safe_dump(spec))
    res = run_campaign(load_campaign(path), workers=2, progress=False)
    assert res.nb_done == 4 and len(res.failed) == 2
    return tmp / "out"


def test_report_contents(campaign_dir, tmp_path):
    paths = build_report(campaign_dir, tmp_path / "r")
    md = paths["markdown"].read_text()
    for text in ("# Campaign rep", "6 runs: 4 finished, 2 failed", "## Failed runs",
                 "## Metrics per scheduler", "## Ratios to the baseline (fcfs)",
                 "figures/ratios_box.png", "figures/ecdf_waiting_time.png",
                 "figures/tail_waiting_time.png", "figures/gantt_easy.png",
                 "figures/utilization_fcfs.png", "## I/O", "I/O records are empty",
                 "evalys 4.0.7"):
        assert text in md, text
    assert md.count("crashes on purpose") + md.count("scheduler") >= 2
    html = paths["html"].read_text()
    assert html.count("data:image/png;base64,") == md.count("![")
    assert "<table>" in html and 'src="figures/' not in html
    for f in paths["figures"]:
        assert Path(f).is_file()
    assert (tmp_path / "r" / "runs.csv").is_file() and (tmp_path / "r" / "runs.parquet").is_file()
    # one metrics table per workload; the ratio table leaves the baseline out
    assert "### a on " in md and "### b on " in md
    ratios = md[md.index("## Ratios to the baseline"):]
    ratios = ratios[:ratios.index("![")]
    assert "| easy | " in ratios and "| fcfs | " not in ratios
    assert "| scheduler | mean wait | max wait | mean turnaround |" in ratios


def test_report_is_byte_identical(campaign_dir, tmp_path):
    a = build_report(campaign_dir, tmp_path / "a")
    b = build_report(campaign_dir, tmp_path / "b")
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert files_a == files_b and len(files_a) >= 10
    for rel in files_a:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    assert a["markdown"].name == "report.md"


def test_report_cli(campaign_dir, tmp_path):
    r = subprocess.run([sys.executable, "-m", "iosched.cli", "report", str(campaign_dir)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "results" / "reports" / "rep" / "report.html").is_file()
    r = subprocess.run([sys.executable, "-m", "iosched.cli", "report", str(tmp_path / "nothing")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "nothing" in r.stderr


def test_render_markdown_tables():
    text = render_markdown([("h2", "T"), ("table", ["a", "b"], [[1, "x|y"]]), ("p", "end")])
    assert text == "## T\n\n| a | b |\n|---|---|\n| 1 | x\\|y |\n\nend\n"

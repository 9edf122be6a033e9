"""Tests of iosched.procmem (a process's own peak memory) and of the
runner's per-process CPU times (RunResult.rusage)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from iosched.procmem import PeakSampler, peak_rss_kb


def test_peak_rss_is_the_process_own(tmp_path):
    """A child's VmHWM does not include its parent's peak (ru_maxrss does)."""
    code = "from iosched.procmem import peak_rss_kb; print(peak_rss_kb())"
    ballast = bytearray(200 * 1024 * 1024)  # touched: resident in this process
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    del ballast
    assert int(out.stdout) < 150 * 1024
    assert peak_rss_kb() > 200 * 1024
    assert peak_rss_kb(2 ** 30) is None


def test_peak_sampler_reads_matching_children():
    with PeakSampler({"sleeper": ["peak-sampler-test"]}, interval=0.01, scan=0.01) as s:
        subprocess.run([sys.executable, "-c", "import time; time.sleep(0.5)  # peak-sampler-test"], check=True)
    assert s.peaks.get("sleeper", 0) > 1000
    with pytest.raises(ValueError):
        PeakSampler({}, interval=0)


def test_runner_reports_each_process_cpu_times(tmp_path):
    from iosched.experiments.platforms import cluster_xml
    from iosched.run.simulation import run_simulation

    plat = tmp_path / "p.xml"
    plat.write_text(cluster_xml(4))
    wl = tmp_path / "w.json"
    wl.write_text('{"nb_res": 4, "jobs": [{"id": 1, "subtime": 0, "res": 2, "profile": "d"}], '
                  '"profiles": {"d": {"type": "delay", "delay": 5}}}')
    res = run_simulation(plat, wl, "easy", tmp_path / "two", timeout=120)
    assert set(res.rusage) == {"scheduler", "engine"}
    assert all(set(r) == {"user_s", "sys_s"} and r["user_s"] > 0 for r in res.rusage.values())
    res = run_simulation(plat, wl, "easy", tmp_path / "one", timeout=120, in_process=True)
    assert set(res.rusage) == {"engine"}

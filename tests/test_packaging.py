"""A regular (non-editable) install carries every scheduler: the package
installed into a fresh folder, with this source tree out of the way, runs a
baseline and a burst-buffer scheduler by name and ``python -m iosched``."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iosched.experiments.platforms import cluster_xml
from iosched.schedulers.registry import SCHEDULERS

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """``pip install --no-deps --target SITE .`` (the dependencies are those
    of this environment)."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    "--no-deps", "--no-build-isolation", "--target", str(target), str(REPO)],
                   check=True, capture_output=True)
    return target


def _python(site, cwd, *args):
    env = dict(os.environ, PYTHONPATH=str(site))
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_every_registered_scheduler_ships_in_the_package(site, tmp_path):
    code = ("import json, iosched.schedulers.registry as r; "
            "print(json.dumps({n: str(r.resolve(n)[0]) for n in r.SCHEDULERS}))")
    out = _python(site, tmp_path, "-c", code)
    assert out.returncode == 0, out.stderr
    files = json.loads(out.stdout)
    assert set(files) == set(SCHEDULERS)
    for name, path in files.items():
        assert Path(path).is_file() and Path(path).is_relative_to(site), name


def test_installed_package_runs_a_baseline_and_a_burst_buffer_scheduler(site, tmp_path):
    plat = tmp_path / "p.xml"
    plat.write_text(cluster_xml(5, bw=1e15, bb_bw=1e15, lat="1us", bb_lat="1us",
                                pfs={"bw": 1e15, "lat": "1us"}))
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 4, "profiles": {"1": {"type": "delay", "delay": 5}},
                              "jobs": [{"id": i, "subtime": i, "res": 1 + i % 2, "walltime": 100,
                                        "profile": "1", "bb": 1e6, "flops": 1e9, "com": 0}
                                       for i in range(4)]}))
    for sched, extra in (("easy", []), ("sjf-bb", ["--engine-arg=-r", "--engine-arg=node_4:storage",
                                                   "--options", '{"bb_capacity": 1e9}'])):
        out = _python(site, tmp_path, "-m", "iosched", "run", "-p", str(plat), "-w", str(wl),
                      "-s", sched, "-o", str(tmp_path / sched), "--no-metrics", *extra)
        assert out.returncode == 0, out.stderr
        record = json.loads((tmp_path / sched / "command.json").read_text())
        assert Path(record["scheduler"]["file"]).is_relative_to(site)
        rows = (tmp_path / sched / "out_jobs.csv").read_text().splitlines()
        # sjf-bb: each job and its run, one row per phase (stage-in, compute, stage-out)
        assert len(rows) == 1 + (4 if sched == "easy" else 4 + 4 * 3)

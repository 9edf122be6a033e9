"""The main job from a plain pip install (issue 29): the wheel carries the
package data (the shipped platforms, the KTH-SP2 trace with its
acknowledgement, the scheduler launcher files), and once installed into a
clean virtualenv it runs, from an empty folder with no ``../shared`` beside
it, ``iosched demo`` at a small size and one scheduler of each family (plus
EASY) on small generated workloads; every job of every run ran and ended
in a terminal state.

The virtualenv is made from the system Python with its site packages
(Debian's python3-simgrid), as ``scripts/setup.sh`` does; the wheel's
dependencies come from the package index (pip's cache makes it fast), and
pybatsim is installed after it with ``--no-deps`` (its pyzmq pin, see
``pyproject.toml``), at the version of the environment running this test.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from iosched.analysis.jobs import load_jobs
from iosched.batsim.jobs import FINAL_STATES, REJECTED

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
SYSTEM_PYTHON = Path("/usr/bin/python3")
#: the terminal states of a job that ran (Batsim's ``final_state``; REJECTED,
#: a job that never ran, is refused here)
TERMINAL = set(FINAL_STATES) - {REJECTED}
#: what the wheel must hold beside the modules
PACKAGE_DATA = {
    "iosched/data/KTH-SP2-1996-2.1-cln.swf.gz", "iosched/data/README.md",
    "iosched/platforms/cluster16_pfs.xml", "iosched/platforms/dragonfly96.xml",
    "iosched/platforms/locality_uppmax.xml", "iosched/platforms/pfsbw15.xml",
    "iosched/sched/io_job.schema.json",
    *(f"iosched/schedulers/launchers/{f}.py" for f in
      ("baseline", "burstbuffer", "dad", "listpack", "locality", "pfsbw")),
}
#: one scheduler of each family and EASY: label -> (platform command or
#: None, workload command, platform file, workload file, scheduler); the
#: SWF-based workloads read the default trace (none is given)
FAMILY_RUNS = {
    "easy": (["platform", "cluster", "c.xml", "--nb-nodes", "100"],
             ["workload", "swf", "easy.json", "--first", "100"], "c.xml", "easy.json", "easy"),
    "bb": (["platform", "dragonfly96", "df.xml"],
           ["workload", "bb", "bb.json", "--first", "40"], "df.xml", "bb.json", "sjf-bb"),
    "locality": (["platform", "locality", "loc.xml", "--nodes", "10", "--cores", "20"],
                 ["workload", "locality", "swf", "loc.json", "--first", "60", "--nb-res", "200"],
                 "loc.xml", "loc.json", "loc-lea"),
    "listpack": (None, ["workload", "listpack", "M-BN", "0.5", "lp.json", "--n-jobs", "10",
                        "--platform", "lp.xml"], "lp.xml", "lp.json", "io-pack-max"),
    "pfsbw": (["platform", "pfsbw", "pf.xml"], ["workload", "pfsbw", "w1", "pf.json", "--waves", "2"],
              "pf.xml", "pf.json", "io-aware"),
    "dad": (["platform", "dad", "dad.xml"], ["workload", "dad", "kth", "dad.json", "--first", "60"],
            "dad.xml", "dad.json", "dad"),
}


def _run(cmd, cwd, env, timeout=1200):
    """Run ``cmd``; fail the test with its output unless it exits 0."""
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r.stdout


def _final_states(out_dir: Path) -> list[str]:
    """The final state of each workload job of a run (``out_jobs.csv`` read
    by :func:`iosched.analysis.jobs.load_jobs`, which merges the dynamic
    jobs that run a workload job into it)."""
    return list(load_jobs(out_dir)["final_state"])


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a clean copy of the source tree (no stale
    ``build/`` or ``*.egg-info`` of the checkout can leak into it)."""
    base = tmp_path_factory.mktemp("wheel")
    tree = base / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, tree / name)
    shutil.copytree(REPO / "src" / "iosched", tree / "src" / "iosched",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
          "--disable-pip-version-check", "-w", base / "dist", tree], base, env)
    wheels = sorted((base / "dist").glob("iosched-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A clean virtualenv (system Python and site packages) with the wheel
    and pybatsim installed; returns its ``bin`` folder."""
    if not SYSTEM_PYTHON.is_file():
        pytest.skip(f"{SYSTEM_PYTHON} is missing (the virtualenv is made from the system Python)")
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import simgrid, venv, ensurepip"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"{SYSTEM_PYTHON} lacks simgrid or venv (Debian's python3-simgrid, python3-venv)")
    root = tmp_path_factory.mktemp("venv") / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    _run([SYSTEM_PYTHON, "-m", "venv", "--system-site-packages", root], root.parent, env)
    py = root / "bin" / "python"
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    _run([*pip, wheel], root.parent, env)
    _run([*pip, "--no-deps", f"pybatsim=={importlib.metadata.version('pybatsim')}"], root.parent, env)
    return root / "bin"


@pytest.fixture(scope="module")
def empty_dir(venv, tmp_path_factory):
    """``(folder, env)``: an empty working folder whose parent holds no
    ``shared/``, and the environment of the installed ``iosched`` (no
    PYTHONPATH, its own user cache)."""
    outer = tmp_path_factory.mktemp("outer")
    cwd = outer / "empty"
    cwd.mkdir()
    assert not (cwd.parent / "shared").exists() and not any(cwd.iterdir())
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv}{os.pathsep}{env.get('PATH', '')}"
    env["XDG_CACHE_HOME"] = str(outer / "cache")
    return cwd, env


def test_the_wheel_holds_the_package_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert PACKAGE_DATA <= names, sorted(PACKAGE_DATA - names)
    assert not any(n.startswith(("tests/", "platforms/", "schedulers/", "results/")) for n in names)


def test_the_installed_package_is_the_wheel_not_the_source_tree(venv, empty_dir):
    cwd, env = empty_dir
    out = _run([venv / "python", "-c", "import json, iosched, iosched.paths as p; print(json.dumps("
                "[iosched.__file__, p.IN_SOURCE_TREE, str(p.RESULTS_DIR)]))"], cwd, env)
    where, in_tree, results = json.loads(out)
    assert Path(where).is_relative_to(venv.parent) and not in_tree and results == "results"


def test_the_demo_runs_from_an_empty_folder(venv, empty_dir):
    cwd, env = empty_dir
    out = _run([venv / "iosched", "demo", "--jobs", "30", "--output", "demo"], cwd, env)
    assert "rank" in out  # the arena's leaderboard
    runs = sorted((cwd / "demo" / "n100" / "runs").iterdir())
    assert len(runs) == 6  # easy and one scheduler of each family, one regime, one seed
    for run in runs:  # a job a scheduler cannot serve is rejected (counted by the leaderboard)
        states = _final_states(run)
        assert len(states) == 30 and set(states) <= TERMINAL | {"REJECTED"}, (run.name, states)
    assert (cwd / "demo" / "report.html").is_file()
    assert (cwd / "demo" / "n100" / "leaderboard" / "leaderboard.csv").is_file()
    out = _run([venv / "iosched", "demo", "--bb", "--jobs", "30", "--output", "bb"], cwd, env)
    assert "using iosched's generator" in out  # no bb-artifact without ../shared
    for label in ("fcfs-easy", "sjf-bb", "plan-2"):
        states = _final_states(cwd / "bb" / label)
        assert len(states) == 30 and set(states) <= TERMINAL, (label, states)
    assert (cwd / "bb" / "report.html").is_file() and (cwd / "bb" / "comparison.csv").is_file()
    # the trace came from the package, unpacked into the user cache
    assert (Path(env["XDG_CACHE_HOME"]) / "iosched" / "KTH-SP2-1996-2.1-cln.swf").is_file()


@pytest.mark.parametrize("family", sorted(FAMILY_RUNS))
def test_one_scheduler_of_each_family_runs_from_an_empty_folder(family, venv, empty_dir):
    cwd, env = empty_dir
    platform_cmd, workload_cmd, platform, workload, scheduler = FAMILY_RUNS[family]
    iosched = venv / "iosched"
    if platform_cmd is not None:
        _run([iosched, *platform_cmd], cwd, env)
    _run([iosched, *workload_cmd], cwd, env)
    out_dir = cwd / f"out_{family}"
    _run([iosched, "run", "-p", platform, "-w", workload, "-s", scheduler, "-o", out_dir], cwd, env)
    nb_jobs = len(json.loads((cwd / workload).read_text(encoding="utf-8"))["jobs"])
    states = _final_states(out_dir)
    assert nb_jobs > 0 and len(states) == nb_jobs and set(states) <= TERMINAL, (family, states)

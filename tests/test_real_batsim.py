"""The embedded engine against the real Batsim 4.2.x (marker ``real_batsim``).

Skipped, with the reason, when no ``batsim`` is on PATH. They run inside
``nix-shell nix/`` and in the Docker image of ``Dockerfile`` (CI workflow
``.github/workflows/real-batsim.yml``); see docs/real-batsim.md.

* every shipped scheduler (``schedulers/baseline.py``, all policies) on a
  small synthetic workload: the same jobs, final states, allocations, and
  start/finish times on both engines;
* the golden cases: the real Batsim on this machine reproduces the golden
  run, and agrees with the embedded engine;
* ``iosched run --engine batsim`` end to end;
* the scheduler side of every golden transcript played against the real
  Batsim (as tests/test_protocol_transcripts.py does against ours).

Tolerance: the foundation issue's, 0.005 s + 1e-6 x t (tests/test_golden.py).
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from protocol_replay import load_exchanges, play_scheduler_side
from test_golden import CASES, ORDER_DEPENDENT, assert_same_run, pybatsim_scheduler, read_jobs

from iosched.run.simulation import run_simulation

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BATSIM = shutil.which("batsim")

pytestmark = [
    pytest.mark.real_batsim,
    pytest.mark.skipif(BATSIM is None, reason="no 'batsim' on PATH (real Batsim 4.2.x: "
                       "nix-shell nix/, or the Docker image, see docs/real-batsim.md)"),
]

POLICIES = ("fcfs", "easy", "easy-sjf", "conservative", "filler")


def small_workload(path: Path, nb_res: int) -> Path:
    """40 jobs, delay and parallel_homogeneous profiles, walltimes (some
    reached), sizes 1..nb_res: enough contention for backfilling to matter."""
    jobs, t = [], 0.0
    for i in range(40):
        res = 1 + (i * 7) % nb_res
        prof = ("d%d" % (i % 5)) if i % 3 else "ph"
        wall = [30, 60, 120, 45, 200][i % 5] + (0 if i % 11 else -100)
        jobs.append({"id": str(i), "subtime": t, "res": res, "profile": prof,
                     "walltime": max(wall, 5)})
        t += [0, 3, 7, 1, 15][i % 5]
    profiles = {f"d{k}": {"type": "delay", "delay": 10 + 17 * k} for k in range(5)}
    profiles["ph"] = {"type": "parallel_homogeneous", "cpu": 2e10, "com": 1e7}
    path.write_text(json.dumps({"nb_res": nb_res, "jobs": jobs, "profiles": profiles}))
    return path


@pytest.fixture(scope="module")
def small_inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    plat = d / "cluster16.xml"
    subprocess.run([sys.executable, "-m", "iosched.cli", "platform", "cluster", str(plat),
                    "--nb-nodes", "16"], check=True)
    return plat, small_workload(d / "small.json", 16)


@pytest.mark.parametrize("policy", POLICIES)
def test_shipped_scheduler_same_on_both_engines(small_inputs, policy, tmp_path):
    plat, wl = small_inputs
    runs = {}
    for engine in ("embedded", "batsim"):
        out = tmp_path / engine
        run_simulation(plat, wl, REPO / "schedulers" / "baseline.py", out,
                       options={"policy": policy}, engine_cmd=engine, timeout=120)
        runs[engine] = read_jobs(out / "out_jobs.csv")
    assert len(runs["batsim"]) == 40
    assert_same_run(runs["embedded"], runs["batsim"])


@pytest.mark.parametrize("case", sorted(set(CASES) - ORDER_DEPENDENT))
def test_golden_case_real_vs_embedded(shared, case, tmp_path):
    plat, wl, sched = CASES[case]
    inputs = shared / "golden" / "inputs"
    runs = {}
    for engine in ("embedded", "batsim"):
        out = tmp_path / engine
        run_simulation(inputs / plat, inputs / wl, pybatsim_scheduler(sched), out,
                       engine_cmd=engine, timeout=600)
        runs[engine] = read_jobs(out / "out_jobs.csv")
    assert_same_run(runs["batsim"], read_jobs(shared / "golden" / case / "out_jobs.csv"))
    assert_same_run(runs["embedded"], runs["batsim"])


@pytest.mark.parametrize("case", sorted(ORDER_DEPENDENT))
def test_golden_filler_cases_real_vs_embedded(shared, case, tmp_path):
    """FillerSched with the golden tie-break order (see tests/test_golden.py)."""
    plat, wl, _ = CASES[case]
    inputs = shared / "golden" / "inputs"
    gold = read_jobs(shared / "golden" / case / "out_jobs.csv")
    order = [f"{g['workload_name']}!{g['job_id']}"
             for g in sorted(gold.values(), key=lambda r: float(r["starting_time"]))]
    runs = {}
    for engine in ("embedded", "batsim"):
        out = tmp_path / engine
        run_simulation(inputs / plat, inputs / wl, HERE / "schedulers" / "orderedFiller.py", out,
                       options={"order": order}, engine_cmd=engine, timeout=600)
        runs[engine] = read_jobs(out / "out_jobs.csv")
    assert_same_run(runs["batsim"], gold)
    assert_same_run(runs["embedded"], runs["batsim"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_real_batsim_sends_golden_events(shared, case, tmp_path):
    """The real Batsim, answered with the golden replies, sends the golden
    events (the transcript machinery of tests/protocol_replay.py)."""
    plat, wl, _ = CASES[case]
    inputs = shared / "golden" / "inputs"
    rep = play_scheduler_side(load_exchanges(shared / "golden" / case / "transcript.jsonl"),
                              [BATSIM], inputs / plat, [inputs / wl], tmp_path)
    assert not rep.differences, "; ".join(rep.differences[:5]) + "\n" + rep.engine_log
    assert rep.engine_returncode == 0


def test_iosched_run_engine_batsim(small_inputs, tmp_path):
    plat, wl = small_inputs
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "iosched.cli", "run", "-p", str(plat),
                           "-w", str(wl), "-s", "easy", "-o", str(out), "--engine", "batsim",
                           "--timeout", "120"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    cmd = json.loads((out / "command.json").read_text())
    assert cmd["engine"]["argv"][0] == BATSIM
    assert len(read_jobs(out / "out_jobs.csv")) == 40

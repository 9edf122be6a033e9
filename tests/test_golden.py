"""The embedded engine against the real Batsim 4.2.1 (``shared/golden``).

Each golden run is replayed with the same inputs and the same unmodified
pybatsim 3.2.1 scheduler on ``iosched-batsim``; the jobs, their final states,
their allocations and their start and finish times must agree.

Tolerance on times: |ours - golden| <= ABS_TOL + REL_TOL * |golden| with
ABS_TOL = 0.005 s and REL_TOL = 1e-6 (the project's bar is 0.05 s + 0.1 %).
Why it can be that tight: SimGrid computes the same durations for the same
parallel tasks, and the engine reproduces Batsim's message latencies (see
``iosched.engine.server``); the residual difference is one master-to-master
latency (0.6 ms on the cluster platforms) on a few submissions.

FillerSched with contention (g1, g4): pybatsim's FillerSched considers open
jobs in the iteration order of a set of objects hashed by ``id()``, which
changes from run to run (with the real Batsim too), so its decisions cannot
be reproduced. For these cases the unmodified scheduler is checked on what
does not depend on that order (jobs, final states, durations), and the full
comparison uses ``tests/schedulers/orderedFiller.py``: FillerSched's rule with
the tie-break order observed in the golden run.
"""

import csv
import gzip
import json
import shutil
from pathlib import Path

import pytest
from procset import ProcSet

from iosched.run.simulation import run_simulation

ABS_TOL = 0.005
REL_TOL = 1e-6

HERE = Path(__file__).resolve().parent

CASES = {
    "g1_various_filler": ("small_platform.xml", "test_various_profile_types.json", "fillerSched"),
    "g2_hpc250_easy": ("cluster512.xml", "example_workload_hpc_seed1_jobs250.json", "easyBackfill"),
    "g3_pfs_filler": ("cluster512_pfs.xml", "pfs_jobs.json", "fillerSched"),
    "g4_walltime_filler": ("small_platform.xml", "test_walltime.json", "fillerSched"),
    "g5_seqdelay_filler": ("small_platform.xml", "test_sequence_delay.json", "fillerSched"),
    "g6_kth1000_easy": ("cluster100.xml", "kth1000_delay.json", "easyBackfill"),
}
ORDER_DEPENDENT = {"g1_various_filler", "g4_walltime_filler"}

#: golden runs recorded with ``shared/golden/schedulers/fcfsIo.py`` (a
#: deterministic FCFS): platform, workload, the scheduler's options and the
#: engine's extra arguments (as on the real Batsim's command line)
FCFSIO_CASES = {
    "g7_kill_pfs_fcfsio": ("cluster16_pfs.xml", "io3_kill_midtransfer.json",
                           {"kill": {"w0!killed_by_sched": 15.0}, "backfill": True}, []),
    "g9_io1_pfs_contention_fcfsio": ("cluster16_pfs.xml", "io1_pfs_contention.json",
                                     {"storage_mapping": {"pfs": "pfs"}, "backfill": True}, []),
    "g10_io2_staging_composed_fcfsio": ("cluster16_pfs.xml", "io2_staging_composed.json",
                                        {"storage_mapping": {"pfs": "pfs", "bb": "node_15"},
                                         "backfill": True},
                                        ["-r", "node_15:storage"]),
    "g11_io4_ptask_mix_fcfsio": ("cluster16_pfs.xml", "io4_ptask_mix.json", {"backfill": True}, []),
}

#: the full KTH-SP2 trace as parallel_homogeneous profiles under easyBackfill
#: (28,467 jobs; gzipped workload and out_jobs.csv)
G8 = "g8_kthfull_ph_easy"
G8_CASE = ("cluster100.xml", "kthfull_ph.json.gz", "easyBackfill")


def pybatsim_scheduler(name: str) -> Path:
    import schedulers  # pybatsim's package of example schedulers

    return Path(schedulers.__file__).parent / f"{name}.py"


def read_jobs(path) -> dict:
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", newline="") as f:
        return {r["job_id"]: r for r in csv.DictReader(f)}


def golden_jobs(shared, case) -> dict:
    d = shared / "golden" / case
    return read_jobs(d / "out_jobs.csv" if (d / "out_jobs.csv").is_file() else d / "out_jobs.csv.gz")


def fcfsio_scheduler(shared) -> Path:
    return shared / "golden" / "schedulers" / "fcfsIo.py"


def case_inputs(shared, case, tmp_path):
    """``(platform, workload, scheduler file, options, engine args)`` of a
    golden case; a gzipped workload is decompressed into *tmp_path* (the
    real Batsim reads plain JSON too)."""
    inputs = shared / "golden" / "inputs"
    if case in FCFSIO_CASES:
        plat, wl, options, eargs = FCFSIO_CASES[case]
        return inputs / plat, inputs / wl, fcfsio_scheduler(shared), options, eargs
    plat, wl, sched = G8_CASE if case == G8 else CASES[case]
    wl_path = inputs / wl
    if wl_path.suffix == ".gz":
        plain = tmp_path / wl_path.stem
        with gzip.open(wl_path, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
        wl_path = plain
    return inputs / plat, wl_path, pybatsim_scheduler(sched), None, []


def run_case(shared, case, tmp_path, scheduler=None, options=None, timeout=300):
    out = tmp_path / case
    out.mkdir(parents=True, exist_ok=True)
    plat, wl, sched, opts, eargs = case_inputs(shared, case, out)
    run_simulation(plat, wl, scheduler or sched, out, options=options or opts,
                   engine_args=eargs, timeout=timeout)
    return read_jobs(out / "out_jobs.csv"), golden_jobs(shared, case)


def differences(ours: dict, gold: dict) -> list[str]:
    """Job-by-job differences: final state, allocation, start and finish
    beyond the tolerance."""
    bad = []
    for jid, g in gold.items():
        o = ours[jid]
        if o["final_state"] != g["final_state"]:
            bad.append(f"{jid}: state {o['final_state']} != {g['final_state']}")
        if o["allocated_resources"] != g["allocated_resources"]:
            bad.append(f"{jid}: alloc {o['allocated_resources']} != {g['allocated_resources']}")
        for col in ("starting_time", "finish_time"):
            if not close(o[col], g[col]):
                bad.append(f"{jid}: {col} {o[col]} != {g[col]}")
    return bad


def close(a: str, b: str) -> bool:
    if a == b:  # also two empty fields (a rejected job has no times)
        return True
    if not a or not b:
        return False
    x, y = float(a), float(b)
    return abs(x - y) <= ABS_TOL + REL_TOL * abs(y)


def assert_same_run(ours: dict, gold: dict):
    assert sorted(ours) == sorted(gold), "not the same jobs"
    bad = differences(ours, gold)
    assert not bad, f"{len(bad)} differences, first: " + "; ".join(bad[:5])


@pytest.mark.parametrize("case", sorted(set(CASES) - ORDER_DEPENDENT))
def test_golden_run_reproduced(shared, case, tmp_path):
    ours, gold = run_case(shared, case, tmp_path)
    assert_same_run(ours, gold)


@pytest.mark.parametrize("case", sorted(FCFSIO_CASES))
def test_golden_fcfsio_run_reproduced(shared, case, tmp_path):
    """g7, g9-g11: PFS contention, kills (walltime, scheduler's KILL_JOB)
    during transfers, data staging, composed profiles, mixed parallel
    tasks, under the deterministic ``fcfsIo.py``."""
    ours, gold = run_case(shared, case, tmp_path)
    assert_same_run(ours, gold)


#: g8's known differences (docs/engine.md, "Known differences"), measured with this
#: engine: jobs whose work takes exactly their walltime and that the real
#: Batsim ended by walltime (SimGrid's float residue, see
#: ``ExecutionMixin._ends_now``), and allocations that depend on the order
#: in which simultaneous ends reach the scheduler
G8_WALLTIME_TIES = 26
G8_ALLOCATIONS = 15


@pytest.mark.slow
def test_golden_kth_full_parallel_homogeneous(shared, tmp_path):
    """g8: the whole KTH-SP2 trace (28,467 jobs) as parallel_homogeneous
    tasks under easyBackfill: every job's start and finish within the
    tolerance; the only other differences are the known ones, bounded
    (before the tie and ordering fixes: 72 states, 11,977 jobs, 954,778 s)."""
    ours, gold = run_case(shared, G8, tmp_path, timeout=3600)
    assert sorted(ours) == sorted(gold)
    times = [j for j, g in gold.items()
             if not (close(ours[j]["starting_time"], g["starting_time"])
                     and close(ours[j]["finish_time"], g["finish_time"]))]
    assert not times, f"{len(times)} jobs at other times, first: {times[:5]}"
    states = [j for j, g in gold.items() if ours[j]["final_state"] != g["final_state"]]
    for j in states:  # all exact walltime ties that the real Batsim's timeout won
        g = gold[j]
        assert (g["final_state"], ours[j]["final_state"]) == ("COMPLETED_WALLTIME_REACHED",
                                                              "COMPLETED_SUCCESSFULLY"), j
        assert abs(float(g["execution_time"]) - float(g["requested_time"])) <= 1e-5, j  # CSV: 6 decimals
    assert len(states) <= G8_WALLTIME_TIES, f"{len(states)} walltime ties decided otherwise"
    allocs = [j for j, g in gold.items() if ours[j]["allocated_resources"] != g["allocated_resources"]]
    assert len(allocs) <= G8_ALLOCATIONS, f"{len(allocs)} allocations differ, first: {allocs[:5]}"


@pytest.mark.parametrize("case", sorted(ORDER_DEPENDENT))
def test_golden_filler_order_independent_facts(shared, case, tmp_path):
    """Unmodified FillerSched: same jobs, same final states, and the same
    execution time for every job whose duration does not depend on where it
    ran (delay profiles, or the same host speed as in the golden run)."""
    ours, gold = run_case(shared, case, tmp_path)
    assert sorted(ours) == sorted(gold)
    assert {j: r["final_state"] for j, r in ours.items()} == {j: r["final_state"] for j, r in gold.items()}
    prof = json.loads((shared / "golden" / "inputs" / CASES[case][1]).read_text())["profiles"]
    checked = 0
    for jid, g in gold.items():
        o = ours[jid]
        same_place = o["allocated_resources"] == g["allocated_resources"]
        if prof[g["profile"]]["type"] == "delay" or same_place or case == "g1_various_filler":
            assert close(o["execution_time"], g["execution_time"]), jid
            checked += 1
    assert checked >= len(gold) // 2


@pytest.mark.parametrize("case", sorted(ORDER_DEPENDENT))
def test_golden_filler_with_golden_tie_break(shared, case, tmp_path):
    gold = read_jobs(shared / "golden" / case / "out_jobs.csv")
    order = [f"{g['workload_name']}!{g['job_id']}"
             for g in sorted(gold.values(), key=lambda r: float(r["starting_time"]))]
    ours, gold = run_case(shared, case, tmp_path, scheduler=HERE / "schedulers" / "orderedFiller.py",
                          options={"order": order})
    assert_same_run(ours, gold)


def test_golden_transcript_events_in_same_order(shared, tmp_path):
    """g6: the engine sends the same sequence of event types and job ids as
    the real Batsim (EASY is deterministic)."""
    plat, wl, sched = CASES["g6_kth1000_easy"]
    inputs = shared / "golden" / "inputs"
    out = tmp_path / "g6"
    run_simulation(inputs / plat, inputs / wl, pybatsim_scheduler(sched), out, timeout=300,
                   engine_args=["--transcript", str(out / "transcript.jsonl")])

    def events(path):
        seq = []
        with open(path) as f:
            for line in f:
                rec = json.loads(line)
                if rec["dir"] != "engine->sched":
                    continue
                for ev in rec["msg"]["events"]:
                    seq.append((ev["type"], ev.get("data", {}).get("job_id")))
        return seq

    ours = events(out / "transcript.jsonl")
    gold = events(shared / "golden" / "g6_kth1000_easy" / "transcript.jsonl")
    assert ours[1:] == gold[1:]  # [0] is SIMULATION_BEGINS (absolute paths differ)


def read_schedule(path) -> dict:
    with open(path, newline="") as f:
        return next(csv.DictReader(f))


#: ``_schedule.csv`` columns compared with the golden run (machine-seconds
#: for the times; see :func:`test_golden_schedule_times`)
SCHEDULE_COLUMNS = ("makespan", "nb_jobs", "nb_jobs_killed", "nb_jobs_success", "time_computing", "time_idle")


@pytest.mark.parametrize("case", ["g2_hpc250_easy", "g3_pfs_filler", "g5_seqdelay_filler", "g6_kth1000_easy",
                                  *sorted(FCFSIO_CASES)])
def test_golden_schedule_times(shared, case, tmp_path):
    """``_schedule.csv``: the same counts, makespan, time_computing and
    time_idle (Batsim closes a machine's idle period only when it starts a
    job, see ``ExportMixin._state_times``). Times in machine-seconds within
    2 ABS_TOL per job and machine: each job's start and finish are within
    ABS_TOL of the golden ones (measured: at most 0.0027 machine-s, g7's
    time_computing; g6's time_idle 1.5e-5 off 40,723,729.17)."""
    ours, gold = run_case(shared, case, tmp_path)
    o = read_schedule(tmp_path / case / "out_schedule.csv")
    g = read_schedule(shared / "golden" / case / "out_schedule.csv")
    # each job's machines: its start and finish are each within ABS_TOL
    machine_jobs = sum(len(ProcSet.from_str(r["allocated_resources"])) for r in gold.values())
    for col in SCHEDULE_COLUMNS:
        if col.startswith("nb_"):
            assert o[col] == g[col], col
        else:
            tol = 2 * ABS_TOL * machine_jobs if col.startswith("time_") else ABS_TOL
            assert abs(float(o[col]) - float(g[col])) <= tol + REL_TOL * abs(float(g[col])), \
                f"{col}: {o[col]} != {g[col]}"


def _event_times(path, etype) -> dict:
    times = {}
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if rec["dir"] == "engine->sched":
                for ev in rec["msg"]["events"]:
                    if ev["type"] == etype:
                        times[ev["data"].get("job_id")] = ev["timestamp"]
    return times


def test_golden_submission_times_exact(shared, tmp_path):
    """g7: every JOB_SUBMITTED at the real Batsim's very instant (1e-9 s):
    Batsim's submitter sleeps for (next subtime - the clock read before its
    previous put), so w0!wall_composed (subtime 1) is announced at 1.0018,
    three latencies after, the previous put having waited for the server."""
    case = "g7_kill_pfs_fcfsio"
    plat, wl, sched, opts, eargs = case_inputs(shared, case, tmp_path)
    out = tmp_path / case
    run_simulation(plat, wl, sched, out, options=opts, timeout=120,
                   engine_args=[*eargs, "--transcript", str(out / "transcript.jsonl")])
    ours = _event_times(out / "transcript.jsonl", "JOB_SUBMITTED")
    gold = _event_times(shared / "golden" / case / "transcript.jsonl", "JOB_SUBMITTED")
    assert sorted(ours) == sorted(gold)
    assert all(abs(ours[j] - gold[j]) <= 1e-9 for j in gold), (ours, gold)

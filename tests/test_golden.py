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
import json
from pathlib import Path

import pytest

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


def pybatsim_scheduler(name: str) -> Path:
    import schedulers  # pybatsim's package of example schedulers

    return Path(schedulers.__file__).parent / f"{name}.py"


def read_jobs(path) -> dict:
    with open(path, newline="") as f:
        return {r["job_id"]: r for r in csv.DictReader(f)}


def run_case(shared, case, tmp_path, scheduler=None, options=None):
    plat, wl, sched = CASES[case]
    inputs = shared / "golden" / "inputs"
    out = tmp_path / case
    run_simulation(inputs / plat, inputs / wl, scheduler or pybatsim_scheduler(sched), out,
                   options=options, timeout=300)
    return read_jobs(out / "out_jobs.csv"), read_jobs(shared / "golden" / case / "out_jobs.csv")


def close(a: str, b: str) -> bool:
    x, y = float(a), float(b)
    return abs(x - y) <= ABS_TOL + REL_TOL * abs(y)


def assert_same_run(ours: dict, gold: dict):
    assert sorted(ours) == sorted(gold), "not the same jobs"
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
    assert not bad, f"{len(bad)} differences, first: " + "; ".join(bad[:5])


@pytest.mark.parametrize("case", sorted(set(CASES) - ORDER_DEPENDENT))
def test_golden_run_reproduced(shared, case, tmp_path):
    ours, gold = run_case(shared, case, tmp_path)
    assert_same_run(ours, gold)


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

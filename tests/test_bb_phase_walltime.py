"""A per-phase run that reaches its workload job's walltime at the end of a
phase while phases remain ends as a walltime kill, in the scheduler and in
the merged ``_jobs.csv`` row (issue 13; Batsim's ``_jobs.csv`` semantics:
``COMPLETED_WALLTIME_REACHED``, ``success`` 0)."""

from types import SimpleNamespace

import pandas as pd
from procset import ProcSet

from iosched.analysis.jobs import merge_runs
from iosched.batsim.dynamic import phase_count, phase_profile_name
from iosched.batsim.jobs import COMPLETED_SUCCESSFULLY, COMPLETED_WALLTIME_REACHED
from iosched.bb.model import GB, JobRequest
from iosched.sched.bbrun import build_run, phase_jobs
from iosched.sched.executor import DEADLINE, Phase, Plan
from iosched.schedulers.burstbuffer import Burstbuffer


def test_phase_profile_names_carry_the_number_of_phases():
    assert phase_profile_name("12", 3, 7) == "12:3/7"
    assert phase_count("12:3/7") == 7
    assert phase_count("12:3") is None          # names written before the count
    assert phase_count("12") is None and phase_count("a/b") is None
    assert phase_count("12:0/x") is None
    req = JobRequest(nodes=2, bb=1 * GB, flops=3e15, com=0.0, walltime=36000.0)
    run = build_run("w0!12", req, [0, 1], {0: 9, 1: 9}, 20)
    phases = phase_jobs("w0!12", run)
    n = len(run.sequence)
    assert n > 3       # stage-in, compute, (checkpoint, compute+drain)..., stage-out
    assert [p[0] for p in phases] == [f"bb!12:{k}" for k in range(n)]
    assert [p[1] for p in phases] == [f"12:{k}/{n}" for k in range(n)]


class _Bs:
    """The pybatsim calls the scheduler makes when it runs a phase."""

    def __init__(self, now):
        self.now, self.registered = now, []

    def time(self):
        return self.now

    def reject_jobs(self, jobs):
        pass

    def register_profiles(self, workload, profiles):
        pass

    def register_job(self, jid, res, walltime, profile):
        self.registered.append((jid, walltime, profile))
        return SimpleNamespace(id=jid)

    def execute_job(self, job):
        pass


def _scheduler_with_run(now):
    """A burst-buffer scheduler whose job ``w0!7`` (3 phases, walltime 100 s)
    started at 0 and runs its phase 0."""
    s = Burstbuffer({"policy": "sjf-bb"})
    s.bs = _Bs(0.0)
    phases = [Phase({"type": "parallel", "cpu": [0], "com": [0]}, ProcSet(0)) for _ in range(3)]
    running = SimpleNamespace(job=SimpleNamespace(id="w0!7", batsim=SimpleNamespace(id="w0!7")),
                              start=0.0)
    s.executor.start(running, Plan(phases, 100.0, DEADLINE, counted=True))
    assert s.bs.registered == [("bb!7:0", 100.0, "7:0/3")]
    s.bs.now, s.bs.registered = now, []
    done = SimpleNamespace(id="bb!7:0", workload="bb",
                           job_state=SimpleNamespace(name=COMPLETED_SUCCESSFULLY))
    return s, done


def _rows(last_k, names=True):
    """A workload job's static row and its phases 0..last_k (of 3), each of 45 s."""
    def prof(k):
        return f"7:{k}/3" if names else f"7:{k}"
    rows = [{"job_id": "7", "workload_name": "w0", "profile": "7", "final_state": "REJECTED",
             "success": 0, "submission_time": 0.0, "starting_time": float("nan"),
             "finish_time": float("nan"), "execution_time": float("nan"), "waiting_time": float("nan"),
             "turnaround_time": float("nan"), "stretch": float("nan"), "allocated_resources": "",
             "requested_number_of_resources": 1, "requested_time": 100.0, "consumed_energy": 0.0,
             "metadata": ""}]
    for k in range(last_k + 1):
        rows.append({"job_id": f"7:{k}", "workload_name": "bb",
                     "profile": prof(k),
                     "final_state": COMPLETED_SUCCESSFULLY, "success": 1, "submission_time": 10.0 + 45 * k,
                     "starting_time": 10.0 + 45 * k, "finish_time": 55.0 + 45 * k, "execution_time": 45.0,
                     "waiting_time": 0.0, "turnaround_time": 45.0, "stretch": 1.0,
                     "allocated_resources": "0 9 20", "requested_number_of_resources": 3,
                     "requested_time": 100.0 - 45 * k, "consumed_energy": 1.0, "metadata": ""})
    return pd.DataFrame(rows)


def test_merged_row_of_a_run_ended_before_its_last_phase_is_a_walltime_kill():
    # phases 0 and 1 of 3 completed, the second exactly at the walltime
    # (10 + 2 x 45 = 100): the job was not run to its end
    out = merge_runs(_rows(1))
    assert len(out) == 1
    row = out.iloc[0]
    assert row["job_id"] == "7" and row["final_state"] == COMPLETED_WALLTIME_REACHED
    assert row["success"] == 0
    assert (row["starting_time"], row["finish_time"]) == (10.0, 100.0)


def test_merged_row_of_a_complete_run_stays_a_success():
    out = merge_runs(_rows(2))
    row = out.iloc[0]
    assert row["final_state"] == COMPLETED_SUCCESSFULLY and row["success"] == 1
    # outputs written before the phase count: the final state is the last phase's
    out = merge_runs(_rows(1, names=False))
    assert out.iloc[0]["final_state"] == COMPLETED_SUCCESSFULLY

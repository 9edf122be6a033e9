"""iosched's own schedulers against the real Batsim 4.2.1: the golden runs
g12 onwards of ``../shared/golden`` (``BATSIM_NOTES.md``; each folder's
``case.json`` gives the platform, workloads, scheduler, options, Batsim
flags, and how each run was made).

Three checks per case, each on one side at a time where a transcript exists
(machinery and tolerance: ``tests/protocol_replay.py``):

* outputs: the case's scheduler on the embedded engine gives the golden
  ``out_jobs.csv`` job by job (same jobs, final states and allocations,
  start and finish within 0.005 s + 1e-6 x t, the tolerance of
  ``tests/test_golden.py``; the project's bar is 0.05 s + 0.1 %);
* engine side: our scheduler answers every golden request with the golden
  reply;
* scheduler side: our engine, answered with the golden replies, sends every
  golden event.

Where the golden input is one that the real Batsim 4.2.1 refuses (g17: an
EXECUTE_JOB with both ``mapping`` and ``storage_mapping``, Batsim aborts) or
reads otherwise than the embedded engine would (g18, g19: read profiles with
``generation_strategy``, a key Batsim 4.2.1 ignores), the embedded engine
refuses it in one line naming the event or the profile, and the Batsim-valid
encoding of the same decisions (g17b, g18b, g19b) is checked as above.

g16 (concurrent PFS writes under max-min sharing) was recorded as the
chaotic case to compare by aggregates; with Batsim's 6-decimal times on the
wire and its 1-byte message cost the embedded engine gives it job by job,
so it is checked like the others.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from protocol_replay import (
    compare_replies,
    load_exchanges,
    LAUNCHERS,
    play_engine_side,
    play_scheduler_side,
)
from test_golden import assert_same_run, read_jobs

from iosched.run.result import RunError
from iosched.run.simulation import run_simulation
from iosched.schedulers.registry import resolve

#: cases whose inputs the real Batsim 4.2.1 reads as the embedded engine does
AGREEING = ("g12_bb200_plan3", "g13_bb200_sjfbb", "g14_loc_uppmax_lea",
            "g15_lp_mbn_exclusive_charbf", "g16_lp_mbn_shared_iolist",
            "g17b_pfsbw_w1_adaptive_nosm", "g18b_dad_blast_nospread_torquefifo",
            "g19b_dad_blast_nospread_dad", "g20_kth1000_easy_dragonfly96")
#: cases whose inputs the real Batsim refuses or reads otherwise -> what the
#: embedded engine's one-line refusal names
REFUSED = {
    "g18_dad_blast_torquefifo": "generation_strategy",
    "g19_dad_blast_dad": "generation_strategy",
}
#: the case whose recorded scheduler sent what the real Batsim aborts on
#: (the shipped pfsbw scheduler now sends the Batsim-valid encoding of g17b)
ABORTED = "g17_pfsbw_w1_adaptive"


def case(shared, name) -> dict:
    return json.loads((shared / "golden" / name / "case.json").read_text())


def scheduler_and_options(shared, c: dict) -> tuple[Path, dict]:
    """The launcher file and the options it was given (``-o``), with paths
    relative to the golden folder made absolute."""
    golden = shared / "golden"
    if c["scheduler"].endswith("(golden folder)"):
        path = golden / c["scheduler"].split()[0]
    else:
        path, _ = resolve(c["scheduler"])
    options = dict(c["launcher_options"])
    for k, v in options.items():
        if isinstance(v, str) and v.startswith("inputs/"):
            options[k] = str(golden / v)
    return path, options


def engine_flags(c: dict) -> list[str]:
    return [f for f in c["batsim_flags"] if f != "-q"]


def exchanges(shared, name):
    d = shared / "golden" / name
    plain = d / "transcript.jsonl"
    if plain.is_file():
        return load_exchanges(plain)
    return load_exchanges(d / "transcript.jsonl.gz")


def run_golden_inputs(shared, c, out, **kw):
    inputs = shared / "golden"
    sched, options = scheduler_and_options(shared, c)
    return run_simulation(inputs / c["platform"], [inputs / w for w in c["workloads"]], sched, out,
                          options=options, engine_args=engine_flags(c), timeout=600, **kw)


@pytest.mark.parametrize("name", AGREEING)
def test_outputs_job_by_job(shared, name, tmp_path):
    c = case(shared, name)
    run_golden_inputs(shared, c, tmp_path / "out")
    ours = read_jobs(tmp_path / "out" / "out_jobs.csv")
    gold = read_jobs(shared / "golden" / name / "out_jobs.csv")
    assert_same_run(ours, gold)


@pytest.mark.parametrize("launcher", LAUNCHERS)
@pytest.mark.parametrize("name", AGREEING)
def test_our_scheduler_replies_as_golden(shared, name, launcher, tmp_path):
    """The golden engine messages sent to our scheduler, under pybatsim's
    launcher and under the direct layer's: the golden replies."""
    c = case(shared, name)
    ex = exchanges(shared, name)
    sched, options = scheduler_and_options(shared, c)
    res = play_engine_side(ex, sched, tmp_path, shared / "golden" / "inputs", options=options,
                           timeout=120, launcher=launcher)
    assert len(res.replies) == len(ex)
    diffs = compare_replies(res)
    assert not diffs, f"{len(diffs)} differences, first: " + "; ".join(diffs[:5])
    assert res.scheduler_returncode == 0


#: Measured bounds of the order differences of simultaneous events (see
#: :func:`test_our_engine_sends_golden_events`): case -> (events announced
#: in another order among simultaneous ones, messages grouped otherwise).
SIMULTANEOUS = {"g12_bb200_plan3": (1, 0), "g13_bb200_sjfbb": (1, 0), "g14_loc_uppmax_lea": (9, 36)}


@pytest.mark.parametrize("name", AGREEING)
def test_our_engine_sends_golden_events(shared, name, tmp_path):
    """Every golden event, with its payload, at its golden time (within the
    tolerance). Jobs that end at the same instant may be announced in
    another order (within 1 ms of each other) or grouped into messages
    otherwise: which of two tasks ends first in one SimGrid step, or whether
    they end one step apart, is decided by the last bits of float sums over
    the model's updates, and the real Batsim steps SimGrid at other dates
    than the embedded engine (every internal message is a SimGrid
    communication there). The numbers of such permutations and regroupings
    are bounded per case (:data:`SIMULTANEOUS`, measured); the outputs are
    the same job by job (:func:`test_outputs_job_by_job`)."""
    c = case(shared, name)
    ex = exchanges(shared, name)
    golden = shared / "golden"
    rep = play_scheduler_side(ex, [sys.executable, "-m", "iosched.engine.cli", *engine_flags(c)],
                              golden / c["platform"], [golden / w for w in c["workloads"]], tmp_path,
                              timeout=120, reorder_window=1e-3)
    assert not rep.differences, (f"{len(rep.differences)} differences, first: "
                                 + "; ".join(rep.differences[:5]) + "\n" + rep.engine_log)
    assert rep.events == sum(len(req["events"]) for req, _ in ex)
    assert rep.engine_returncode == 0, rep.engine_log
    reorders, regroupings = SIMULTANEOUS.get(name, (0, 0))
    assert len(rep.reorders) <= reorders, rep.reorders[:5]
    assert len(rep.regroupings) <= regroupings, rep.regroupings[:3]
    for _, ours, gold in rep.reorders:  # only simultaneous completions, wake-ups and submissions
        assert {ours[0], gold[0]} <= {"JOB_COMPLETED", "REQUESTED_CALL", "JOB_SUBMITTED"}
    if not regroupings:
        assert rep.messages == len(ex)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_batsim_refuses_is_refused_in_one_line(shared, name, tmp_path):
    """The golden run's inputs and scheduler on the embedded engine: a
    one-line error naming what the real Batsim 4.2.1 aborts on or ignores,
    never a run that computes something else."""
    c = case(shared, name)
    with pytest.raises(RunError) as ei:
        run_golden_inputs(shared, c, tmp_path / "out")
    msg = str(ei.value)
    assert "\n" not in msg and REFUSED[name] in msg, msg
    assert not (tmp_path / "out" / "out_jobs.csv").is_file() or \
        len((tmp_path / "out" / "out_jobs.csv").read_text().splitlines()) <= 1


def test_g17_the_real_batsim_aborted_on_the_four_field_execute_job(shared, tmp_path):
    """g17's transcript ends at the scheduler reply the real Batsim aborted
    on; our engine, answered with that reply, refuses the same event."""
    c = case(shared, ABORTED)
    ex = exchanges(shared, ABORTED)
    bad = [e for e in ex[-1][1]["events"] if e["type"] == "EXECUTE_JOB" and len(e["data"]) == 4][0]
    assert {"mapping", "storage_mapping"} <= set(bad["data"])
    assert "size in {2,3} (size=4)" in (shared / "golden" / ABORTED / "batsim_error.txt").read_text()
    golden = shared / "golden"
    rep = play_scheduler_side(ex, [sys.executable, "-m", "iosched.engine.cli", *engine_flags(c)],
                              golden / c["platform"], [golden / w for w in c["workloads"]], tmp_path,
                              timeout=60)
    assert rep.engine_returncode not in (0, None)
    assert "EXECUTE_JOB" in rep.engine_log and bad["data"]["job_id"] in rep.engine_log, rep.engine_log


def test_g17_inputs_give_the_schedule_of_g17b(shared, tmp_path):
    """The shipped pfsbw scheduler on g17's inputs: the real Batsim's
    schedule of the Batsim-valid encoding (g17b), job by job."""
    run_golden_inputs(shared, case(shared, ABORTED), tmp_path / "out")
    assert_same_run(read_jobs(tmp_path / "out" / "out_jobs.csv"),
                    read_jobs(shared / "golden" / "g17b_pfsbw_w1_adaptive_nosm" / "out_jobs.csv"))


def test_g17_our_scheduler_sends_the_batsim_valid_encoding(shared, tmp_path):
    """The shipped pfsbw scheduler, given g17's requests, answers what the
    real Batsim accepted in g17b: the same decisions without
    ``storage_mapping`` (the platform has one storage host)."""
    c = case(shared, ABORTED)
    ex = exchanges(shared, ABORTED)
    expected = []
    for req, rep in ex:
        rep = json.loads(json.dumps(rep))
        for e in rep["events"]:
            e["data"].pop("storage_mapping", None)
        expected.append((req, rep))
    sched, options = scheduler_and_options(shared, c)
    res = play_engine_side(expected, sched, tmp_path, shared / "golden" / "inputs", options=options)
    assert len(res.replies) == len(expected)
    diffs = compare_replies(res)
    assert not diffs, f"{len(diffs)} differences, first: " + "; ".join(diffs[:5])


@pytest.mark.parametrize("name", ("g18_dad_blast_torquefifo", "g19_dad_blast_dad"))
def test_dad_scheduler_replies_as_golden_on_the_generated_workload(shared, name, tmp_path):
    """The dad schedulers' decisions do not depend on how the engine reads
    the profiles: given the real Batsim's requests (whole bytes per
    executor), they answer the golden replies."""
    c = case(shared, name)
    ex = exchanges(shared, name)
    sched, options = scheduler_and_options(shared, c)
    res = play_engine_side(ex, sched, tmp_path, shared / "golden" / "inputs", options=options)
    assert len(res.replies) == len(ex)
    diffs = compare_replies(res)
    assert not diffs, f"{len(diffs)} differences, first: " + "; ".join(diffs[:5])


def test_every_case_is_covered(shared):
    names = {p.name for p in (shared / "golden").glob("g*") if (p / "case.json").is_file()}
    assert names == set(AGREEING) | set(REFUSED) | {ABORTED}


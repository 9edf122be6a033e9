"""Protocol tests from the golden transcripts (no real Batsim needed).

Each golden run (``../shared/golden/*/transcript.jsonl``: real Batsim 4.2.1
and unmodified pybatsim 3.2.1) is replayed against one side at a time, with
the machinery of ``tests/protocol_replay.py`` (its docstring gives the
tolerance, the time shift and the message-regrouping rule):

* engine side: a fake engine sends the transcript's requests to pybatsim's
  own schedulers and to ours, and checks the replies;
* scheduler side: a fake scheduler answers our engine with the transcript's
  replies, and checks every event the engine sends.

FillerSched (g1, g4): pybatsim's FillerSched picks among open jobs in the
iteration order of a set hashed by ``id()``, so its decisions change from
run to run. The full comparison uses ``tests/schedulers/orderedFiller.py``
(FillerSched's rule with the golden run's tie-break order); the unmodified
scheduler is replayed until its first decision that differs from the golden
one, and only the replies before it plus protocol-shape properties are
checked.

Our ``schedulers/baseline.py`` is not pybatsim's code: it consumes no
simulated time (its replies' ``now`` is the request's) and picks nodes its
own way. On g3 and g5 every policy provably makes the golden decisions (a
single free choice at each step), so the decisions (type, job, allocation)
are compared for the whole transcript; elsewhere it is replayed up to its
first different decision and checked for protocol shape (one reply per
request, ``now`` >= the request's, events sorted, every EXECUTE_JOB names a
submitted job).
"""

import sys
from pathlib import Path

import pytest

from protocol_replay import (
    check_shapes,
    compare_replies,
    decisions,
    load_exchanges,
    play_engine_side,
    play_scheduler_side,
)

from test_golden import CASES, FCFSIO_CASES, ORDER_DEPENDENT, fcfsio_scheduler, pybatsim_scheduler

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

#: fcfsIo.py golden runs recorded with their transcript
FCFSIO_TRANSCRIPTS = ("g7_kill_pfs_fcfsio",)
BASELINE_SAME_DECISIONS = {"g3_pfs_filler", "g5_seqdelay_filler"}
POLICIES = ("fcfs", "easy", "conservative", "filler")


def exchanges(shared, case):
    return load_exchanges(shared / "golden" / case / "transcript.jsonl")


def golden_order(shared, case) -> list[str]:
    import csv

    with open(shared / "golden" / case / "out_jobs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    rows.sort(key=lambda r: float(r["starting_time"]) if r["starting_time"] else float("inf"))
    return [f"{r['workload_name']}!{r['job_id']}" for r in rows]


def first_divergence(log: list):
    def stop(i, gold, reply):
        if decisions(gold) != decisions(reply):
            log.append((i, decisions(gold), decisions(reply)))
            return True
        return False

    return stop


# --------------------------------------------------------------------------
# scheduler side: the transcript's replies against our engine


@pytest.mark.parametrize("case", sorted(CASES) + list(FCFSIO_TRANSCRIPTS))
def test_engine_sends_golden_events(shared, case, tmp_path):
    """Our engine, answered with the golden replies, sends the golden events
    (types, job ids, payloads) in the golden order, at the golden times
    within tolerance, in the golden messages (same grouping: each internal
    message costs Batsim's 1 byte over its route, see
    iosched.engine.server)."""
    plat, wl = (CASES[case] if case in CASES else FCFSIO_CASES[case])[:2]
    inputs = shared / "golden" / "inputs"
    ex = exchanges(shared, case)
    rep = play_scheduler_side(ex, [sys.executable, "-m", "iosched.engine.cli"],
                              inputs / plat, [inputs / wl], tmp_path)
    assert not rep.differences, (f"{len(rep.differences)} differences, first: "
                                 + "; ".join(rep.differences[:5]) + "\n" + rep.engine_log)
    assert rep.events == sum(len(req["events"]) for req, _ in ex)
    assert rep.engine_returncode == 0, rep.engine_log
    assert not rep.regroupings, rep.regroupings[:3]
    assert rep.messages == len(ex)


# --------------------------------------------------------------------------
# engine side: the transcript's requests against pybatsim's schedulers


@pytest.mark.parametrize("case", sorted(set(CASES) - ORDER_DEPENDENT))
def test_pybatsim_scheduler_replies_as_golden(shared, case, tmp_path):
    """Unmodified easyBackfill / fillerSched answer every golden request with
    the golden reply (same events, order, payloads; times within tolerance)."""
    ex = exchanges(shared, case)
    res = play_engine_side(ex, pybatsim_scheduler(CASES[case][2]), tmp_path,
                           shared / "golden" / "inputs")
    assert len(res.replies) == len(ex)
    diffs = compare_replies(res)
    assert not diffs, f"{len(diffs)} differences, first: " + "; ".join(diffs[:5])
    assert res.scheduler_returncode == 0


@pytest.mark.parametrize("case", FCFSIO_TRANSCRIPTS)
def test_fcfsio_replies_as_golden(shared, case, tmp_path):
    """g7: fcfsIo.py (CALL_ME_LATER, KILL_JOB, then frees the killed job's
    nodes on its JOB_COMPLETED) answers every golden request with the
    golden reply."""
    ex = exchanges(shared, case)
    res = play_engine_side(ex, fcfsio_scheduler(shared), tmp_path, shared / "golden" / "inputs",
                           options=FCFSIO_CASES[case][2])
    assert len(res.replies) == len(ex)
    diffs = compare_replies(res)
    assert not diffs, f"{len(diffs)} differences, first: " + "; ".join(diffs[:5])
    assert res.scheduler_returncode == 0


@pytest.mark.parametrize("case", sorted(ORDER_DEPENDENT))
def test_ordered_filler_replies_as_golden(shared, case, tmp_path):
    """FillerSched's rule with the golden tie-break order (orderedFiller)
    reproduces every golden reply."""
    ex = exchanges(shared, case)
    res = play_engine_side(ex, HERE / "schedulers" / "orderedFiller.py", tmp_path,
                           shared / "golden" / "inputs", options={"order": golden_order(shared, case)})
    assert len(res.replies) == len(ex)
    diffs = compare_replies(res)
    assert not diffs, f"{len(diffs)} differences, first: " + "; ".join(diffs[:5])
    assert res.scheduler_returncode == 0


@pytest.mark.parametrize("case", sorted(ORDER_DEPENDENT))
def test_unmodified_filler_until_first_tie_break(shared, case, tmp_path):
    """Unmodified FillerSched: every reply before its first decision that
    differs from the golden one (set-order tie-break) is the golden reply,
    and every reply has the protocol's shape."""
    ex = exchanges(shared, case)
    div: list = []
    res = play_engine_side(ex, pybatsim_scheduler("fillerSched"), tmp_path,
                           shared / "golden" / "inputs", stop=first_divergence(div))
    n = div[0][0] if div else len(res.replies)
    assert n >= 1
    diffs = compare_replies(res)
    assert not [d for d in diffs if int(d.split()[1]) < n], diffs[:5]
    assert not check_shapes(res)
    if div:  # a different tie-break still executes a job the golden run ran
        assert all(d[0] == "EXECUTE_JOB" for d in div[0][2])


# --------------------------------------------------------------------------
# engine side: the transcript's requests against our schedulers


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", sorted(BASELINE_SAME_DECISIONS))
def test_baseline_makes_golden_decisions(shared, case, policy, tmp_path):
    ex = exchanges(shared, case)
    res = play_engine_side(ex, REPO / "schedulers" / "baseline.py", tmp_path,
                           shared / "golden" / "inputs", options={"policy": policy})
    assert len(res.replies) == len(ex)
    assert not check_shapes(res)
    bad = [(i, decisions(g), decisions(r)) for i, (g, r) in enumerate(zip(res.golden, res.replies))
           if decisions(g) != decisions(r)]
    assert not bad, bad[:3]
    assert res.scheduler_returncode == 0


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", sorted(set(CASES) - BASELINE_SAME_DECISIONS))
def test_baseline_protocol_shape(shared, case, policy, tmp_path):
    """Up to its first decision that differs from pybatsim's, our scheduler
    answers every request once, with a well-formed reply."""
    ex = exchanges(shared, case)
    div: list = []
    res = play_engine_side(ex, REPO / "schedulers" / "baseline.py", tmp_path,
                           shared / "golden" / "inputs", options={"policy": policy},
                           stop=first_divergence(div))
    assert res.replies, "no reply"
    assert not check_shapes(res)
    if div and case not in ORDER_DEPENDENT and div[0][2]:
        # a deterministic golden scheduler (easyBackfill): when both start
        # jobs, they start the same ones (node placement may differ)
        assert {d[1] for d in div[0][1]} == {d[1] for d in div[0][2]}, div[0]

"""The compiled list scheduling of plan-alpha's search
(:mod:`iosched.bb.compiled`, issue 13 "Speed") gives the Python path's
numbers: the same costs (bit for bit) and stopping points as
:class:`~iosched.sched.listschedule.ListPlan` on random queues of a
dragonfly96-shaped machine, the same search results and random draws, and
the same schedule end to end."""

import math
import random

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosched.bb import compiled, plan
from iosched.bb import workload as W
from iosched.bb.placement import BurstBufferPlacer, Topology, pool_name
from iosched.errors import InputError
from iosched.run.simulation import run_simulation
from iosched.schedulers.burstbuffer import Burstbuffer
from iosched.sched.listschedule import ListPlan, waiting_cost
from iosched.sched.registry import REPO_ROOT, SCHEDULERS_DIR

from test_bb_speed import COMPUTE, NOW, PLACER, REQUESTS, STORAGE, _profile, _queue

busy_st = st.lists(st.sampled_from(range(len(REQUESTS))), max_size=7)
queue_st = st.lists(st.tuples(st.sampled_from(range(len(REQUESTS))),
                              st.sampled_from([0.0, 50.0, 900.0, 7300.0])), min_size=2, max_size=13)
limits_st = st.lists(st.tuples(st.randoms(use_true_random=False),
                               st.sampled_from([math.inf, 0, 1e4, 1e6, 1e8, 1e10])),
                     min_size=1, max_size=12)


@settings(max_examples=80, deadline=None)
@given(busy_st, queue_st, limits_st, st.sampled_from([1.0, 2.0, 3.0]), st.integers(0, 2))
def test_compiled_evaluations_equal_the_list_plans(busy, queue, evals, alpha, depth):
    """A sequence of evaluations of random orders with random limits, after a
    reserved prefix of ``depth`` jobs: each gives the (cost, complete) of the
    same call on a ListPlan (which also reuses the placed prefix), and a
    complete one the cost of list-scheduling prefix + order from scratch."""
    prof = _profile([REQUESTS[k] for k in busy])
    jobs = _queue([k for k, _ in queue], [w for _, w in queue])
    prefix, rest = jobs[:depth], jobs[depth:]
    lplan = ListPlan(prof, PLACER, NOW, waiting_cost(alpha))
    base = lplan.evaluate(prefix)
    if math.isinf(base) or len(rest) < 1:
        return
    cplan = compiled.CompiledListPlan(lplan, rest, alpha)
    until = plan.limit_until(lambda o, stop: lplan.evaluate_until(prefix + o, stop), base)
    for rnd, limit in evals:
        order = list(rest)
        rnd.shuffle(order)
        got = cplan.evaluate_until(order, limit)
        want = until(order, limit)
        assert got == want or (math.isinf(got[0]) and math.isinf(want[0]) and got[1] == want[1])
        if got[1]:
            fresh = ListPlan(prof, PLACER, NOW, waiting_cost(alpha))
            c = fresh.evaluate(prefix + order) - base
            assert c == got[0] or (math.isinf(c) and math.isinf(got[0]))


@settings(max_examples=30, deadline=None)
@given(busy_st, st.lists(st.tuples(st.sampled_from(range(len(REQUESTS))),
                                   st.sampled_from([0.0, 50.0, 900.0])), min_size=6, max_size=14),
       st.integers(0, 2 ** 16))
def test_artifact_search_same_with_the_compiled_evaluator(busy, queue, seed):
    """The artifact's search returns the same order, score and number of
    evaluations and leaves the random generator in the same state with the
    Python evaluator (early rejection, kept reference) and the compiled one."""
    prof = _profile([REQUESTS[k] for k in busy])
    jobs = _queue([k for k, _ in queue], [w for _, w in queue])
    results = []
    for use_compiled in (False, True):
        lplan = ListPlan(prof, PLACER, NOW, waiting_cost(2.0))
        rng = random.Random(seed)
        if use_compiled:
            cplan = compiled.CompiledListPlan(lplan, jobs, 2.0)
            res = plan.artifact_order(jobs, cplan.evaluate, rng, cost_until=cplan.evaluate_until)
        else:
            res = plan.artifact_order(jobs, lplan.evaluate, rng,
                                      cost_until=plan.limit_until(lplan.evaluate_until),
                                      keep=lplan.keep)
        results.append(([j.seq for j in res.order], res.cost, res.evaluations, rng.random()))
    assert results[0] == results[1]


def test_supports_only_the_default_choices():
    jobs = _queue([0, 1], [0.0, 0.0])
    tl = _profile([]).snapshot(NOW)
    assert compiled.supports(PLACER, tl, jobs)
    for nodes, storage in (("consecutive", "first"), ("first", "most-free")):
        other = BurstBufferPlacer(40e9, nodes=nodes, storage=storage)
        other.topology = Topology(COMPUTE, STORAGE, nodes=nodes, storage_choice=storage)
        other.totals = {pool_name(s): 40e9 for s in STORAGE}
        assert not compiled.supports(other, tl, jobs)
        with pytest.raises(ValueError, match="only nodes='first'"):
            compiled.CompiledListPlan(ListPlan(_profile([]), other, NOW), jobs, 2.0)


def test_plan2_schedule_is_the_same_with_both_evaluators(shared, tmp_path):
    """plan-2 on the first 150 jobs of the KTH-SP2 workload (dragonfly96,
    per-phase encoding): the compiled and the Python evaluator give the
    same jobs, starts, ends and allocations."""
    w = W.generate(shared / "data" / "KTH-SP2-1996-2.1-cln.swf", seed=1, first=150)
    wl = tmp_path / "w.json"
    W.write_workload(w, wl)
    tables = {}
    for ev in ("python", "compiled"):
        out = tmp_path / ev
        run_simulation(REPO_ROOT / "platforms" / "dragonfly96.xml", wl,
                       SCHEDULERS_DIR / "burstbuffer.py", out, timeout=600,
                       options={"policy": "plan-2", "seed": 1, "evaluator": ev},
                       engine_args=["--enable-dynamic-jobs"])
        tables[ev] = pd.read_csv(out / "out_jobs.csv")
    a, b = tables["python"], tables["compiled"]
    assert len(a) > 150 and (a["final_state"] == "COMPLETED_SUCCESSFULLY").sum() > 100
    pd.testing.assert_frame_equal(a, b)


def test_unknown_evaluator_is_refused():
    with pytest.raises(InputError, match="evaluator='fast' is unknown"):
        Burstbuffer({"policy": "plan-2", "evaluator": "fast"})

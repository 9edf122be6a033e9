"""The compiled list scheduling of plan-alpha's search
(:mod:`iosched.bb.compiled`, issue 13 "Speed") gives the Python path's
numbers: the same costs (bit for bit) and stopping points as
:class:`~iosched.sched.listschedule.ListPlan` on random queues of a
dragonfly96-shaped machine, the same search results and random draws, and
the same schedule end to end."""

import math
import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosched.bb import compiled, plan, search
from iosched.bb.placement import BurstBufferPlacer, Topology, pool_name
from iosched.errors import InputError
from iosched.experiments.bb import workload as W
from iosched.paths import REPO_ROOT
from iosched.run.simulation import run_simulation
from iosched.sched.listschedule import ListPlan, waiting_cost
from iosched.schedulers.burstbuffer import Burstbuffer
from iosched.schedulers.registry import SCHEDULERS_DIR

from test_bb_speed import COMPUTE, NOW, PLACER, STORAGE, _Job, _profile

#: requests whose burst buffers bind: a 40 GB node holds 2 x 15 GB, 4 x 10 GB,
#: 2 x 20 GB or 1 x 39 GB, so nodes share pools and pools run out; and
#: requests of no burst buffer (foreign jobs: nodes only)
BINDING = [(4, 15e9, 1800.0), (12, 10e9, 900.0), (9, 20e9, 3600.0), (2, 39e9, 600.0),
           (30, 2e9, 7200.0), (1, 5e9, 300.0), (60, 1e9, 1200.0),
           (16, 0.0, 2400.0), (70, 0.0, 600.0)]   # no burst buffer: compute nodes only
WAITS = [0.0, 50.0, 900.0, 7300.0]

busy_st = st.lists(st.sampled_from([k for k, r in enumerate(BINDING) if r[1] > 0]), max_size=7)
queue_st = st.lists(st.tuples(st.sampled_from(range(len(BINDING))), st.sampled_from(WAITS)),
                    min_size=2, max_size=13)
#: (shuffle, position of the limit, offset): the limit is the rounded
#: partial cost of the order at that position plus the offset (exact hits
#: of the ``>=`` test), or none
evals_st = st.lists(st.tuples(st.randoms(use_true_random=False), st.integers(0, 12),
                              st.sampled_from([None, -1, 0, 1])), min_size=1, max_size=12)


def _jobs(picks):
    return [_Job(i, *BINDING[k], NOW - w) for i, (k, w) in enumerate(picks)]


@settings(max_examples=120, deadline=None)
@given(busy_st, queue_st, evals_st, st.sampled_from([1.0, 2.0, 3.0]), st.integers(0, 2))
def test_compiled_evaluations_equal_the_list_plans(busy, queue, evals, alpha, depth):
    """A sequence of evaluations of random orders with limits at the orders'
    own rounded partial costs, after a reserved prefix of ``depth`` jobs:
    each gives the (cost, complete) of the same call on a ListPlan (which
    also reuses the placed prefix), and a complete one the cost of
    list-scheduling prefix + order from scratch, bit for bit."""
    prof = _profile([BINDING[k] for k in busy])
    jobs = _jobs(queue)
    prefix, rest = jobs[:depth], jobs[depth:]
    lplan = ListPlan(prof, PLACER, NOW, waiting_cost(alpha))
    base = lplan.evaluate(prefix)
    if math.isinf(base) or len(rest) < 1:
        return
    cplan = compiled.CompiledListPlan(lplan, rest, alpha)
    until = plan.limit_until(lambda o, stop: lplan.evaluate_until(prefix + o, stop), base)
    for rnd, at, offset in evals:
        order = list(rest)
        rnd.shuffle(order)
        fresh = ListPlan(prof, PLACER, NOW, waiting_cost(alpha))
        full = fresh.evaluate(prefix + order) - base
        part = fresh.cum[depth + min(at, len(order) - 1)] - base
        limit = math.inf if offset is None or math.isinf(part) else round(part) + offset
        got = cplan.evaluate_until(order, limit)
        want = until(order, limit)
        assert got == want or (math.isinf(got[0]) and math.isinf(want[0]) and got[1] == want[1])
        if got[1]:
            assert got[0] == full or (math.isinf(full) and math.isinf(got[0]))
        # the start of every job, as the plan's own placements give it (both
        # plans then hold the whole order: later calls resume from it alike)
        assert cplan.starts(order) == [t for _, t, _ in fresh.out[depth:]]
        lplan.evaluate(prefix + order)


@settings(max_examples=30, deadline=None)
@given(busy_st, st.lists(st.tuples(st.sampled_from(range(len(BINDING))), st.sampled_from(WAITS)),
                        min_size=6, max_size=14),
       st.integers(0, 2 ** 16))
def test_artifact_search_same_with_the_compiled_evaluator(busy, queue, seed):
    """The artifact's search returns the same order, score and number of
    evaluations and leaves the random generator in the same state with the
    Python evaluator (early rejection, kept reference) and the compiled one."""
    prof = _profile([BINDING[k] for k in busy])
    jobs = _jobs(queue)
    results = []
    for way in ("python", "compiled", "compiled-anneal"):
        lplan = ListPlan(prof, PLACER, NOW, waiting_cost(2.0))
        rng = random.Random(seed)
        if way == "python":
            res = plan.artifact_order(jobs, lplan.evaluate, rng,
                                      cost_until=plan.limit_until(lplan.evaluate_until),
                                      keep=lplan.keep)
        else:
            cplan = compiled.CompiledListPlan(lplan, jobs, 2.0)
            res = plan.artifact_order(jobs, cplan.evaluate, rng, cost_until=cplan.evaluate_until,
                                      anneal=cplan.anneal if way == "compiled-anneal" else None)
        results.append(([j.seq for j in res.order], res.cost, type(res.cost), res.evaluations,
                         res.annealed, rng.getstate()))
    assert results[0] == results[1] == results[2]


@settings(max_examples=60, deadline=None)
@given(st.randoms(use_true_random=False),
       st.lists(st.integers(0, 2 ** 31 - 1), min_size=1, max_size=700))
def test_kernels_draw_what_random_draws(start, spec):
    """The kernels' generator (``_mt_draws``: ``randint(0, n - 1)`` for n >
    0, ``random()`` for 0) gives a ``random.Random``'s draws from any state,
    through regenerations of its 624 words, and leaves the same state."""
    rng = random.Random(start.random())
    for _ in range(start.randrange(700)):
        rng.random()
    words, pos = compiled.mt_state(rng)
    got = compiled._mt_draws(words, pos, np.array(spec, dtype=np.int64)).tolist()
    want = [float(rng.randint(0, n - 1)) if n > 0 else rng.random() for n in spec]
    assert got == want
    other = random.Random(0)
    compiled.set_mt_state(other, words, pos)
    assert other.getstate() == rng.getstate()
    assert compiled.anneals()


def test_a_wrong_generator_is_detected():
    """The emulation check fails for a generator whose draws differ (here:
    a subclass whose randint is not the emulated one), so the compiled
    annealing is then not used."""
    class Other(random.Random):
        def randint(self, a, b):
            return a

    assert compiled._mt_check(random.Random(5))
    assert not compiled._mt_check(Other(5))


@settings(max_examples=80, deadline=None)
@given(busy_st, queue_st, st.sampled_from([NOW - 1.0, NOW, NOW + 600.0, NOW + 1e5]),
       st.integers(0, 2))
def test_fits_now_is_the_python_test(busy, queue, now, depth):
    """:meth:`CompiledListPlan.fits_now` is the Python path's test (some job
    alone, placed after the prefix, starts at or before ``now``) and leaves
    the evaluations as they were."""
    prof = _profile([BINDING[k] for k in busy])
    jobs = _jobs(queue)
    prefix, rest = jobs[:depth], jobs[depth:]
    lplan = ListPlan(prof, PLACER, NOW, waiting_cost(2.0))
    lplan.evaluate(prefix)
    cplan = compiled.CompiledListPlan(lplan, rest, 2.0)
    assert cplan.fits_now(now) == search.fits_now(lplan, prefix, rest, now)
    lplan.evaluate(prefix + rest)
    assert cplan.starts(rest) == [t for _, t, _ in lplan.out[depth:]]


def test_supports_only_the_default_choices():
    jobs = _jobs([(0, 0.0), (1, 0.0)])
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


def test_compiled_evaluator_falls_back_to_python_without_numba(monkeypatch, caplog):
    """numba is an optional extra: when it cannot be imported, ``evaluator:
    compiled`` takes the Python evaluator with one logged warning (no
    ImportError) and the search gives the same orders and random draws as
    the compiled evaluator."""
    import importlib
    import logging
    import sys

    from iosched.bb.search import PlanOrder

    prof = _profile([BINDING[k] for k in (0, 2, 4)])
    jobs = _jobs([(k % len(BINDING), WAITS[k % len(WAITS)]) for k in range(10)])
    for j in jobs:
        j.id = f"w0!{j.seq}"

    def run():
        po = PlanOrder(PLACER, 2.0, evaluator="compiled", seed=5, depth=1)
        passes = []
        for _ in range(3):   # the generator carries over between passes
            lplan = ListPlan(prof, PLACER, NOW, waiting_cost(2.0))
            po(None, lplan, jobs, NOW)
            now = [job.seq for job, t, alloc in lplan.out if alloc is not None and t <= NOW]
            rec = po.searches[-1]
            passes.append((rec["order"], rec["cost"], rec["evaluations"], now))
        assert all(not r["skipped"] and r["annealed"] for r in po.searches)
        return passes, po.rng.random()

    assert compiled.AVAILABLE
    want = run()
    monkeypatch.setitem(sys.modules, "numba", None)     # import numba fails
    try:
        importlib.reload(compiled)
        assert not compiled.AVAILABLE
        assert not compiled.supports(PLACER, prof.snapshot(NOW), jobs)
        with caplog.at_level(logging.WARNING, logger="iosched.bb.search"):
            got = run()
    finally:
        monkeypatch.undo()
        importlib.reload(compiled)
    assert compiled.AVAILABLE
    assert got == want
    warnings = [r for r in caplog.records if r.name == "iosched.bb.search"]
    assert len(warnings) == 1 and "numba is not installed" in warnings[0].getMessage()

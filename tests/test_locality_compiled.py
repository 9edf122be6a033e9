"""The locality planner's compiled node choice (:mod:`iosched.locality.compiled`,
issue 28) makes the Python path's decisions: the same plans on random
clusters, queues and passes for every policy (arrays grown from one slot,
one interval and one file row), the same answer as scoring every node, the
arrays the Cluster keeps equal to its live records after random changes;
and the Python path runs without numba."""

import functools
import importlib
import logging
import random
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosched.errors import InputError
from iosched.locality import compiled
from iosched.locality.cluster import Cluster, Data, LiveArrays, eviction_time, f32, load_time, score
from iosched.locality.planner import POLICIES, LJob, Planner

from test_locality import _scenario, random_cluster

needs_numba = pytest.mark.skipif(not compiled.AVAILABLE, reason="numba is not installed")

PYTHON = functools.partial(Planner, evaluator="python")


def tiny(c, policy, **kw):
    """A compiled planner whose arrays start with one slot a node, one
    interval a record, one file row and one hole entry a node (every growth
    path runs)."""
    c.arrays = LiveArrays(len(c.nodes), K=1, J=1, F=1)
    p = Planner(c, policy, evaluator="compiled", **kw)
    assert p.compiled
    if p.compiled and p.bf:      # one hole entry a node
        p.HS, p.HC = p.HS[:, :1].copy(), p.HC[:, :1].copy()
    return p


CASES = [(p, "artifact") for p in POLICIES] + [("leo", "paper"), ("leo-bf", "paper")]


@needs_numba
@pytest.mark.parametrize("policy,leo_rule", CASES)
def test_compiled_plans_equal_the_python_path(policy, leo_rule):
    """Three passes (a re-plan, new jobs only, a re-plan after ends) on a
    random cluster with running jobs, ended files and a queue whose times
    tie often: the same starts, nodes, cores and planned loads."""

    @settings(max_examples=60, deadline=None, derandomize=True)
    @given(st.integers(0, 10**6))
    def check(seed):
        assert _scenario(seed, policy, tiny, leo_rule) == _scenario(seed, policy, PYTHON, leo_rule)

    check()


def _state_after_passes(seed, policy, factory, leo_rule):
    """Like ``test_locality._scenario``, but the whole state after each pass:
    the plans, every node's cores (``avail``, ``order``, matrix row), its
    records' planning intervals, the planner's holes, biggest hole, cores
    taken at ``t`` and decisions."""
    rnd = random.Random(seed)
    s0 = Data._count     # records' seq from here (a global count)
    c, p, sizes, _, t = random_cluster(rnd, factory, policy, leo_rule)
    P, m = len(c.nodes), c.m
    out = []
    jobs = []
    for step in range(4):
        new = [LJob(f"{step}.{i}", t, 1, rnd.choice([1, 5, 20, 60]), rnd.randint(1, m), f, sizes.get(f, 0.0))
               for i, f in enumerate(rnd.randint(0, 4) for _ in range(rnd.randint(1, 12)))]
        if step in (0, 2):
            p.reset(t)
            jobs = jobs + new
            p.plan(jobs, t)
        else:
            p.plan(new, t)
            jobs = jobs + new
        out.append(([(j.id, j.start, j.node.index if j.start >= 0 else None, list(j.cores_used),
                      j.planned_load) for j in jobs],
                    [(list(n.avail), list(n.order), n.row.tolist(),
                      sorted((f, d.seq - s0, float(d.size), tuple(d.iv)) for f, d in n.data.items()))
                     for n in c.nodes],
                    [list(h) for h in p.holes] if p.bf else None, p.biggest, p.biggest_id, p.now_busy,
                    p.decisions, sorted(d.seq - s0 for d in c.live), sorted(d.seq - s0 for d in c._touched),
                    sorted(c.dirty)))
        if c.arrays is not None:     # the arrays hold the live records, O the cores' order
            assert _rows(c.arrays, c) == [{(d.id, d.seq, float(d.size), tuple(d.iv)) for d in n.live.values()}
                                          for n in c.nodes]
            assert c.O is None or c.O.tolist() == [n.order for n in c.nodes]
        t += rnd.choice([0, 1, 7])
    return out


@needs_numba
@pytest.mark.parametrize("policy,leo_rule", CASES)
def test_compiled_state_equals_the_python_path(policy, leo_rule):
    """Four passes (re-plans and plans of new jobs only, the holes kept
    between them): after each, the same plans and the same cluster and
    planner state (cores, records and intervals, holes, biggest hole,
    decisions) as the Python path."""

    @settings(max_examples=40, deadline=None, derandomize=True)
    @given(st.integers(0, 10**6))
    def check(seed):
        assert _state_after_passes(seed, policy, tiny, leo_rule) == \
            _state_after_passes(seed, policy, PYTHON, leo_rule)

    check()


@needs_numba
@pytest.mark.parametrize("policy,kernel,e_arg", [("lea", "plan_pass", 14), ("lea-bf", "plan_pass_bf", 17)])
def test_the_comparison_sees_a_wrong_kernel(monkeypatch, policy, kernel, e_arg):
    """The comparison above can fail: a kernel that ignores the eviction
    term (E = 0) gives other LEA plans on some of the same scenarios (whole
    passes: ``plan_pass``; with backfilling: ``plan_pass_bf``)."""
    real = getattr(compiled, kernel)

    def no_eviction(*a):
        a = list(a)
        a[e_arg] = 0.0
        return real(*a)

    monkeypatch.setattr(compiled, kernel, no_eviction)
    differ = sum(_scenario(seed, policy, tiny, "artifact") != _scenario(seed, policy, PYTHON, "artifact")
                 for seed in range(60))
    assert differ > 0


def _state(seed):
    """A random cluster (with its arrays kept from the start) after random
    starts, ends, resets and planned intervals; times from a small set."""
    rnd = random.Random(seed)
    P, m = rnd.choice([(3, 2), (5, 4), (7, 4)])
    c = Cluster(P, m, rnd.choice([0.1, 0.5]), 128, cache_rule=rnd.choice(["artifact", "paper"]))
    c.arrays = LiveArrays(P, K=1, J=1, F=1)
    sizes = {f: rnd.choice([1.6, 3.2, 6.4, 12.8]) for f in range(1, 6)}
    running = []
    t = 0
    for step in range(rnd.randint(1, 8)):
        t += rnd.choice([0, 1, 3, 10])
        for r in [r for r in running if r[3] <= t]:
            c.end(r[0], r[1], r[2], t)
            running.remove(r)
        for _ in range(rnd.randint(0, 3)):
            n = c.nodes[rnd.randrange(P)]
            free = [k for k in range(m) if n.running_end[k] is None]
            if not free:
                continue
            ids = free[: rnd.randint(1, len(free))]
            f = rnd.randint(0, 5)
            end = t + rnd.choice([1, 5, 30])
            for k in ids:
                n.avail[k] = end
            n.resort()
            c.start(n, ids, f, sizes.get(f, 0.0), t, end)
            running.append((n, ids, f, end))
        c.reset_cores(t)
        c.reset_intervals(t)
        for _ in range(rnd.randint(0, 6)):
            n = c.nodes[rnd.randrange(P)]
            s = t + rnd.choice([0, 2, 8])
            f = rnd.randint(1, 5)
            c.plan_interval(n, f, sizes[f], s, rnd.choice([0, 4, 16]), s + rnd.choice([3, 9, 40]))
    return c, t, sizes, rnd


def _rows(arr, c):
    """Per node: the set of (file, seq, size, intervals) the arrays hold,
    checking the file rows (fs) point at the right slots."""
    out = []
    for i in range(len(c.nodes)):
        got = set()
        for s in range(int(arr.n[i])):
            fid, seq, niv, last = (int(x) for x in arr.meta[i, s])
            ivs = tuple(tuple(int(x) for x in arr.iv[i, s, q]) for q in range(niv))
            assert last == ivs[-1][2]
            assert arr.fs[arr.frow[fid], i] == s + 1
            assert arr.recs[i][s].id == fid and arr.recs[i][s].slot == s
            got.add((fid, seq, float(arr.size[i, s]), ivs))
        held = {f for f, r in arr.frow.items() if arr.fs[r, i]}
        assert held == {g[0] for g in got}
        out.append(got)
    return out


@settings(max_examples=80, deadline=None, derandomize=True)
@given(st.integers(0, 10**6))
def test_arrays_follow_the_live_records(seed):
    """After random changes, the arrays kept incrementally (grown from one
    slot, interval and file row) hold exactly each node's live records and
    their intervals, as arrays built afresh from the same state."""
    c, _, _, _ = _state(seed)
    want = [{(d.id, d.seq, float(d.size), tuple(d.iv)) for d in n.live.values()} for n in c.nodes]
    assert _rows(c.arrays, c) == want
    kept = c.arrays
    c.arrays = None
    assert _rows(c.keep_arrays(), c) == want
    c.arrays = kept


@needs_numba
@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.integers(0, 10**6), st.sampled_from([(500, 1), (1, 0), (3, 2), (1, 1)]),
       st.sampled_from([compiled.LEO_NONE, compiled.LEO_ARTIFACT, compiled.LEO_PAPER]))
def test_kernel_equals_scoring_every_node(seed, weights, leo):
    """:func:`compiled.best` on a random state: the first node of smallest
    :func:`~iosched.locality.cluster.score` (with ``load_time`` and
    ``eviction_time``; LEO's EFT weights from the first node with ``t_k ==
    t`` on, or on exactly those nodes), its ``t_k``, score and load."""
    c, t, sizes, rnd = _state(seed)
    W, E = weights
    arr = c.arrays
    for _ in range(4):
        cores = rnd.randint(1, c.m)
        fid = rnd.randint(0, 5)
        size = f32(sizes.get(fid, 0.0))
        pt = [max(n.eat(cores), t) for n in c.nodes]
        free = [k for k in range(len(c.nodes)) if pt[k] == t]
        cands = []
        for k, n in enumerate(c.nodes):
            eft = (leo == compiled.LEO_ARTIFACT and free and k >= free[0]) or \
                (leo == compiled.LEO_PAPER and k in free)
            w, e = (1, 0) if eft else (W, E)
            ld = load_time(n, fid, size, pt[k], t) if fid else f32(size) / n.bandwidth
            ev = eviction_time(n, fid, pt[k], cores, c.m)
            cands.append((score(pt[k], w, ld, e, ev), k, pt[k], ld))
        want = min(cands, key=lambda x: (x[0], x[1]))
        got = compiled.best(c.A, cores, t, fid, arr.frow.get(fid, -1) if fid else -1, float(size),
                            float(c.nodes[0].bandwidth), float(W), float(E), leo, arr.meta, arr.size,
                            arr.iv, arr.n, arr.fs, c.m)
        assert (got[2], got[0], got[1], f32(got[3])) == want


def _day_plan(policy, evaluator):
    rnd = random.Random(7)
    c = Cluster(6, 4, 0.5, 128)
    p = Planner(c, policy, evaluator=evaluator)
    jobs = [LJob(str(i), 0, 1, rnd.choice([5, 20, 60]), rnd.randint(1, 4), rnd.randint(0, 3), 3.2)
            for i in range(30)]
    p.reset(0)
    p.plan(jobs, 0)
    return p, [(j.start, j.node.index if j.node else None, list(j.cores_used), j.planned_load) for j in jobs]


def test_python_path_runs_when_compiled_is_off(monkeypatch, caplog):
    """``evaluator="python"``, and ``"compiled"`` without numba (its import
    fails: the module still imports, :data:`compiled.AVAILABLE` is False,
    one warning is logged): the Python node choice runs (no arrays kept,
    the kernel never called) and plans as the compiled path."""
    from iosched.locality import planner as planner_mod

    want = {pol: _day_plan(pol, "compiled")[1] for pol in ("lea", "leo-bf", "fcfs")}
    p, got = _day_plan("lea", "python")
    assert not p.compiled and p.c.arrays is None and got == want["lea"]

    def boom(*a):
        raise AssertionError("the kernel ran")

    monkeypatch.setitem(sys.modules, "numba", None)     # import numba fails
    monkeypatch.setattr(planner_mod, "_warned", [])
    try:
        importlib.reload(compiled)
        assert not compiled.AVAILABLE
        monkeypatch.setattr(compiled, "best", boom)
        with caplog.at_level(logging.WARNING, logger="iosched.locality.planner"):
            for pol in want:
                p, got = _day_plan(pol, "compiled")
                assert not p.compiled and p.c.arrays is None
                assert got == want[pol]
    finally:
        monkeypatch.undo()
        importlib.reload(compiled)
    assert compiled.AVAILABLE == (importlib.util.find_spec("numba") is not None)
    warnings = [r for r in caplog.records if r.name == "iosched.locality.planner"]
    assert len(warnings) == 1 and "numba is not installed" in warnings[0].getMessage()


def test_unknown_evaluator_is_an_input_error():
    with pytest.raises(InputError, match="evaluator='fast' is unknown"):
        Planner(Cluster(2, 2), "lea", evaluator="fast")


@needs_numba
def test_compiled_pass_refuses_a_job_wider_than_a_node():
    """The kernels index the core matrices by a job's cores: a job of more
    cores than a node has is an InputError, not a read out of bounds."""
    p = Planner(Cluster(2, 4), "lea-bf")
    with pytest.raises(InputError, match="job x asks 5 cores; a node has 4"):
        p.plan([LJob("ok", 0, 1, 5, 2, 1, 1.6), LJob("x", 0, 1, 5, 5, 1, 1.6)], 0)


def test_scheduler_option_evaluator(tmp_path):
    """The Batsim scheduler's option ``evaluator``: ``python`` and the
    default give the same schedule on the embedded engine (lea-bf: holes,
    loads and waits); an unknown value is an InputError at the start."""
    import csv

    from iosched.api import simulate
    from iosched.experiments.locality.workload import to_batsim
    from iosched.experiments.platforms import locality_xml
    from iosched.schedulers.locality import Locality

    from test_locality import _engine_vs_loop_jobs

    (tmp_path / "p.xml").write_text(locality_xml(3, 4, 1e9, 128e9, "paper"))
    to_batsim(_engine_vs_loop_jobs(11), tmp_path / "w.json", nb_res=12)
    got = {}
    for ev in (None, "python"):
        opts = {"out": str(tmp_path / f"r{ev}"), "bandwidth": 1e9}
        if ev:
            opts["evaluator"] = ev
        simulate(tmp_path / "p.xml", tmp_path / "w.json", "loc-lea-bf", opts, output_dir=tmp_path / f"o{ev}")
        got[ev] = [(r["id"], r["node"], r["start"], r["end"], r["transfer"], r["waiting"])
                   for r in csv.DictReader(open(tmp_path / f"r{ev}_jobs.csv"))]
    assert len(got[None]) == 32 and got[None] == got["python"]
    with pytest.raises(InputError, match="evaluator='fast' is unknown"):
        Locality.make_core(Locality.__new__(Locality), {"policy": "lea", "evaluator": "fast"})

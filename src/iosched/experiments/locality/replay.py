"""The artifact's event loop on the locality model, without the engine.

Gonthier et al.'s simulator (``src/main.c``) advances one second at a time;
at each second ``t``: jobs ending at ``t`` end (``end_jobs``), jobs planned
at ``t`` start (``start_jobs``), jobs submitted by ``t`` arrive; if a job
ended at ``t`` every waiting job is re-planned (``reset_cores`` then the
policy on the whole queue, new jobs at its tail), otherwise only the new
jobs are planned after the existing plan; jobs planned at ``t`` start. A
started job ends at ``start + min(delay + load overhead, walltime)`` (the
overhead is its own transfer or its wait for another job's transfer).
History jobs (role -2) start at day 0 on their historical node
(``(node - 1) mod P``) with their remaining delay and walltime. The run
stops once every evaluated job (role 1) has started (their ends are then
known).

:func:`replay` runs exactly this loop, jumping from one event second to the
next (nothing happens at the other seconds), so its results are the
artifact's up to the binary32 sums of its final means. It is the reference
the engine runs (:mod:`iosched.schedulers.locality`) are compared with.
"""

from __future__ import annotations

import heapq
import time

from iosched.errors import InputError
from iosched.experiments.locality.workload import day0
from iosched.locality.cluster import Cluster
from iosched.locality.planner import Planner
from iosched.locality.policy import history_order

__all__ = ["replay"]


def replay(jobs: list, planner: Planner, *, until_evaluated: bool = True, trace=None,
           start: int = None) -> dict:
    """Run the artifact's loop (module doc) on ``jobs`` (fresh
    :class:`~iosched.locality.planner.LJob` objects, file order).

    :param planner: a :class:`~iosched.locality.planner.Planner` on a fresh cluster.
    :param start: day 0 (s); default :func:`~iosched.experiments.locality.workload.day0`.
    :param until_evaluated: stop when every role-1 job started (the
        artifact); False runs until every job ended.
    :param trace: optional callable ``trace(t, cluster, queue, loads,
        started)`` called after every event second (``loads``: heap of
        ``(end of load, cores, role)`` of the loads and load waits in
        progress; ``started``: the started jobs so far).
    :returns: dict ``jobs`` (the started jobs, with ``start``, ``end``,
        ``transfer``, ``waiting``, ``node``), ``reuses`` (evaluated jobs that
        made no transfer or waited for another's), ``decisions`` (planned
        jobs), ``passes`` and ``seconds`` (wall time of the planning passes),
        ``pass_times`` (list of (queue length, s, decisions of the pass)).
    :raises InputError: a job that can never start (the loop would not end).
    """
    c: Cluster = planner.c
    P = len(c.nodes)
    t = day0(jobs) if start is None else int(start)
    hist = history_order([j for j in jobs if j.role == -2])
    pending = [j for j in jobs if j.role != -2]
    pending.sort(key=lambda j: j.subtime)   # stable: file order on ties
    n_eval = sum(1 for j in pending if j.role == 1)
    queue: list = []
    starts: list = []    # heap of (time, version)
    version = 0
    ends: list = []      # heap of (end, seq, job)
    started: list = []
    reuses = 0
    n_eval_started = 0
    pass_times: list = []
    load_ends: list = []   # heap of (end of load, cores) for the usage trace

    for j in hist:
        since = t - j.hist_start
        j.delay = max(1, j.delay - since)
        j.walltime = max(1, j.walltime - since)
        node = c.nodes[(j.hist_node - 1) % P]
        eat = max(node.eat(j.cores), t)
        ids, _ = c.place(node, eat, j.walltime, j.cores, t)
        j.start, j.node, j.cores_used = eat, node, ids
        queue.append(j)
        heapq.heappush(starts, (eat, version))

    def start_jobs(now):
        nonlocal queue, reuses, n_eval_started
        keep = []
        for j in queue:
            if j.start != now:
                keep.append(j)
                continue
            tr, wt = c.start(j.node, j.cores_used, j.file, j.size, now, now + j.walltime)
            j.transfer, j.waiting = tr, wt
            if j.role == 1:
                n_eval_started += 1
                if tr == 0 or wt != 0:
                    reuses += 1
            over = wt if tr == 0 else tr
            j.end = now + (j.delay + over if j.delay + over < j.walltime else j.walltime)
            heapq.heappush(ends, (j.end, j.seq, j))
            if over:
                heapq.heappush(load_ends, (now + over, j.cores, j.role))
            started.append(j)
        queue = keep

    def run_pass(jobs_to_plan, now):
        nonlocal version
        t1 = time.perf_counter()
        d0 = planner.decisions
        planner.plan(jobs_to_plan, now)
        pass_times.append((len(jobs_to_plan), time.perf_counter() - t1, planner.decisions - d0))
        sts = {j.start for j in jobs_to_plan if j.start >= 0}   # the next event seconds
        if starts:
            for st in sts:
                heapq.heappush(starts, (st, version))
        else:
            starts.extend((st, version) for st in sts)
            heapq.heapify(starts)

    start_jobs(t)
    i = 0
    while True:
        if until_evaluated and n_eval_started == n_eval:
            break
        if not until_evaluated and not ends and not queue and i == len(pending):
            break
        # the next second where something happens
        cands = []
        if ends:
            cands.append(ends[0][0])
        while starts and starts[0][1] != version:
            heapq.heappop(starts)
        if starts:
            cands.append(starts[0][0])
        if i < len(pending):
            cands.append(max(pending[i].subtime, t))
        if not cands:
            raise InputError(f"locality replay: {len(queue)} jobs can never start at t={t}")
        t = min(cands)
        finished = False
        while ends and ends[0][0] == t:
            _, _, j = heapq.heappop(ends)
            c.end(j.node, j.cores_used, j.file, t)
            finished = True
        if starts and starts[0][0] == t:
            start_jobs(t)
        new = []
        while i < len(pending) and pending[i].subtime <= t:
            new.append(pending[i])
            i += 1
        if finished and (queue or new):
            queue.extend(new)
            version += 1
            starts.clear()     # every entry is of an older version: none would be used
            planner.reset(t)
            run_pass(queue, t)
            start_jobs(t)
        elif new:
            run_pass(new, t)
            queue.extend(new)
            start_jobs(t)
        if trace is not None:
            while load_ends and load_ends[0][0] <= t:
                heapq.heappop(load_ends)
            trace(t, c, queue, load_ends, started)
        while starts and starts[0][0] <= t:
            heapq.heappop(starts)
        if t > 2_000_000_000:
            raise InputError("locality replay: time passed 2e9 s")
    return {"jobs": started, "reuses": reuses, "decisions": planner.decisions,
            "passes": len(pass_times), "seconds": sum(p[1] for p in pass_times),
            "pass_times": pass_times}

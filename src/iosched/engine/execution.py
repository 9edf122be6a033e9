"""Jobs on the platform (Batsim's ``src/jobs_execution.cpp``): starting a
job, its physics in SimGrid, its walltime, a kill, its completion.

Design (one SimGrid actor for the whole engine, no actor per job):

* Every job whose profile does physics (``parallel``, ``parallel_homogeneous``,
  ``parallel_homogeneous_total``, ``parallel_homogeneous_pfs``,
  ``data_staging``, ``composed`` containing one of those) runs as SimGrid
  parallel tasks (``ptask_L07``), so SimGrid decides when each transfer ends,
  with contention on every shared link. A job of one parallel task is a
  *direct* job: the server actor starts the task itself and, while no other
  kind of physics runs, waits on the task whose lower bound (flops / host
  speed) is the earliest, with a timeout at the next heap action or the next
  lower bound; no other task can end first, so the first completion is seen
  at the instant SimGrid decides. Other physics jobs (several steps, sleeps
  between tasks) run on reused *worker* actors that report through a
  semaphore the server waits on with a timeout; so do direct jobs the server
  cannot order (two past their lower bound, unfinished) or cannot await
  (past their lower bound while workers run): they are handed over. A direct job costs
  about half the thread switches of a worker-run one (SimGrid 3.32's Python
  actors are threads; its API has no wait-any on parallel tasks). Waiting on
  the task with the walltime timer as timeout is what Batsim 4.2.1 does
  (``src/jobs_execution.cpp``, ``execute_parallel_task``:
  ``ptask->wait_for(*remaining_time)``): a task ending exactly at its
  walltime completes; ``ExecutionMixin._ends_now`` applies that rule to
  direct and worker-run jobs alike.
* A job that does no physics (only ``delay`` steps) is a timer of the
  server's heap: it costs a heap push and pop, not a SimGrid actor.
* While no physics is in flight the server's clock jumps from action to
  action without waking SimGrid (:meth:`ExecutionMixin._advance`); SimGrid's
  clock is brought up to date before the next physics job starts.

A job that ends on first host ``h`` is announced to the server
``L_hm(h)`` later (the latency of the route h -> master).
"""

from __future__ import annotations

import heapq
import math
from collections import deque

from iosched.batsim.jobs import COMPLETED_FAILED, COMPLETED_SUCCESSFULLY, COMPLETED_WALLTIME_REACHED
from iosched.engine.ipp import P_COMPLETED, T_END, T_WALLTIME
from iosched.engine.jobs import RUNNING, mask_of
from iosched.engine.tasks import Delay, PTask, build_steps, merge_ptasks, total_delay
from iosched.engine.workload import validate_profile
from iosched.errors import ProtocolError

__all__ = ["ExecutionMixin"]

INF = math.inf

#: ``Job.actor`` of a *direct* job: its single parallel task was started by
#: the server actor itself, which also waits for it (see ``_wait_direct``).
_DIRECT = "direct"

#: ties (s): a task that its current rate would end within this time is float
#: residue of SimGrid's updates: it ends now (walltime ties,
#: ``ExecutionMixin._ends_now``; simultaneous ends, ``_collect_due``)
TIE_RESIDUE = 1e-6


def _exec_order(j):
    return j.exec_seq


class _Worker:
    """A SimGrid actor that runs the steps of one physics job at a time."""

    __slots__ = ("sim", "actor", "job", "token", "wake", "adopt")

    def __init__(self, sim):
        self.sim = sim
        self.actor = None
        self.job = None
        self.token = 0
        self.adopt = False
        self.wake = sim.sg.Semaphore(0)

    def run(self):
        sim = self.sim
        sg = sim.sg
        hosts = sim.hosts
        while True:
            self.wake.acquire()
            j, token = self.job, self.token
            if self.adopt:  # a direct job handed over: its one task already runs
                self.adopt = False
                j.exec.wait()
                sim._load_off(j)
                j.exec = None
            else:
                for k, s in enumerate(j.steps):
                    j.step_index = k
                    j.step_started = sg.Engine.clock
                    if k:
                        sim._push_bound(j, k, j.step_started)
                    if isinstance(s, Delay):
                        sg.this_actor.sleep_for(s.seconds)
                    else:
                        ex = sg.this_actor.exec_init([hosts[h] for h in s.hosts], s.cpu, s.com)
                        j.exec = ex
                        j.exec_seq = next(sim._seq)
                        sim._load_on(j, s)
                        ex.start()
                        ex.wait()
                        sim._load_off(j)
                        j.exec = None
            self.job = None
            sim.idle_workers.append(self)
            sim.done.append((j, token))
            sim.sem.release()


class ExecutionMixin:
    """The execution part of a :class:`~iosched.engine.server.Simulation`.

    Owns the physics in flight: ``n_physics`` (running physics jobs), the
    direct jobs (``direct_jobs``, ``direct_done``, their lower bounds
    ``dbounds``), the worker actors (``workers``, ``idle_workers``, their
    reports ``done`` and the semaphore ``sem``; lower bounds ``bounds``),
    ``busy_mask`` (int bit mask of the compute resources in use) and
    ``running_masks`` (running job id -> its compute resources' mask: masks
    and not per-resource dicts, so that a job's start and end cost
    ``O(intervals)``, not ``O(resources)``, on large machines). Uses the server's
    ``now``, ``sg``, ``hosts``, ``speeds``, ``L_hm``, ``_timer``, ``_post``,
    ``_seq``, the protocol's ``_parse_alloc``, ``_release_profile`` and the
    export's ``_row``, ``_machine_state``.
    """

    def _init_execution(self):
        self.done = deque()
        self._acquired = 0
        self._processed = 0
        self.n_physics = 0
        # direct jobs (single parallel task, started and awaited by the
        # server; handed over to a worker when it cannot be awaited)
        self.direct_jobs: dict = {}
        self.direct_done = deque()
        self.n_handovers = 0  # direct jobs handed over to a worker
        self.n_direct_started = 0
        self.bounds: list = []  # (bound, seq, job, token, step) of worker-owned steps
        self.dbounds: list = []  # the same for direct jobs
        self.workers: list = []
        self.idle_workers: list = []
        self.busy_mask = 0
        self.running_masks: dict[str, int] = {}
        # --link-overload: the links whose capacity follows a curve of their
        # transfers (iosched.engine.overload.LinkOverload; set up with SimGrid)
        self.overloads: list = []

    # ------------------------------------------------- overloaded links
    def _load_on(self, j, s):
        """Job *j*'s parallel task *s* starts now: count it on every
        overloaded link it crosses (``--link-overload``)."""
        if self.overloads:
            load = tuple((ov, w) for ov in self.overloads if (w := ov.weight(s.hosts, s.com)))
            for ov, w in load:
                ov.add(w)
            j.load = load or None

    def _load_off(self, j):
        """Job *j*'s current parallel task ended (or was cancelled) now:
        its transfers leave the overloaded links. Idempotent."""
        if j.load is not None:
            for ov, w in j.load:
                ov.add(-w)
            j.load = None

    # -------------------------------------------------------------- clock
    def _sync_simgrid(self):
        clock = self.sg.Engine.clock
        if clock < self.now:
            self.sg.this_actor.sleep_until(self.now)

    def _physics_bound(self):
        """A time before which no physics job can end a step: the minimum,
        over running physics jobs, of (start of the current step + its
        minimal duration). Entries of jobs that moved on are dropped lazily."""
        return min(self._top_bound(self.bounds), self._top_bound(self.dbounds))

    def _top_bound(self, heap):
        """Smallest valid bound of one heap (``bounds``: worker-owned steps;
        ``dbounds``: direct jobs), dropping stale entries on top; INF if
        none."""
        while heap:
            if self._valid_bound(heap[0], heap is self.dbounds):
                return heap[0][0]
            heapq.heappop(heap)
        return INF

    def _push_bound(self, j, k, t0, heap=None):
        b = t0 + j.step_min[k] if j.step_min is not None else t0
        # margin: SimGrid's own sum may round a hair below ours
        heapq.heappush(self.bounds if heap is None else heap,
                       (b - 1e-9 - 1e-12 * abs(b), next(self._seq), j, j.token, k))

    def _advance(self, target):
        """Move time forward to ``target`` or to the first physics completion."""
        if self.n_physics == 0:
            if target != INF and target > self.now:
                self.now = target
            return
        if target < self._physics_bound() and not self.done and not self.direct_done:
            # no physics step can end before target: keep SimGrid's clock
            # behind (each wake-up of SimGrid costs thread switches)
            if target > self.now:
                self.now = target
            return
        # SimGrid's clock at now first: a wait's timeout then ends exactly at
        # target, so a task ending exactly at a timer's time (runtime equal
        # to the walltime) ends before the timer fires, as in Batsim
        self._sync_simgrid()
        while self._acquired < self._processed:
            self.sem.acquire()
            self._acquired += 1
        if self.done or self.direct_done:
            return
        if self.direct_jobs:
            if self.n_physics == len(self.direct_jobs):  # no worker-owned physics
                self._wait_direct(target)
                return
            # mixed: wait for the workers, at most until a direct job's bound
            target = min(target, self._top_bound(self.dbounds))
        self._wait_workers(target)
        if self.direct_jobs:
            late = self._collect_due()
            if late:
                self._handover(late)

    def _wait_workers(self, target):
        """Wait on the semaphore the worker actors release, at most until
        ``target``."""
        if target == INF:
            self.sem.acquire()
            self._acquired += 1
            self.now = max(self.now, self.sg.Engine.clock)
            return
        dt = target - self.sg.Engine.clock
        timed_out = self.sem.acquire_timeout(dt) if dt > 0 else True
        if timed_out:
            self.now = max(self.now, target)
        else:
            self._acquired += 1
            self.now = max(self.now, self.sg.Engine.clock)

    @staticmethod
    def _valid_bound(entry, direct):
        """Whether a bound entry still describes the job's running step (and,
        in ``dbounds``, a job that is still direct)."""
        _, _, j, token, k = entry
        if j.state != RUNNING or j.token != token or j.step_index != k:
            return False
        return j.actor is _DIRECT if direct else (j.actor is not None and j.actor is not _DIRECT)

    def _wait_direct(self, target):
        """Every running physics job is direct: wait on the one whose lower
        bound is the earliest (``e*``), at most until ``target`` or the
        second earliest bound. No other task can end before that, so the
        first completion is ``e*``'s, at the instant SimGrid decides. Tasks
        whose bound has passed are then tested (they may end at this very
        instant). When two or more have passed their bound unfinished, the
        server cannot tell which ends first: they are handed over to worker
        actors (``_handover``)."""
        heap = self.dbounds
        self._top_bound(heap)  # drops stale entries at the top
        first = heapq.heappop(heap)
        b2 = self._top_bound(heap)
        heapq.heappush(heap, first)
        t_out = min(target, b2)
        late = self._await_direct(first, INF if t_out == INF
                                  else max(0.0, t_out - self.sg.Engine.clock))
        if len(late) >= 2:
            self._handover(late)

    def _await_direct(self, entry, timeout):
        """Wait up to *timeout* s (INF: no limit) on the task of the direct
        job of bound entry *entry*; then test the others past their bound
        (``_collect_due``). Returns the direct jobs past their bound and
        still running."""
        j, token = entry[2], entry[3]
        sg = self.sg
        finished = True
        try:
            if timeout == INF:
                j.exec.wait()
            else:
                j.exec.wait_for(timeout)
        except sg.TimeoutException:
            finished = False
        self.now = max(self.now, sg.Engine.clock)
        if finished:
            self._load_off(j)
            self.direct_done.append((j, token))
        return self._collect_due(j if finished else None)

    def _collect_due(self, skip=None):
        """Test the direct jobs whose lower bound is <= now (except *skip*,
        known finished): the finished ones go to ``direct_done``. Returns
        the unfinished ones (their entries stay in the heap). A task left
        with float residue only (``_residue_only``) is cancelled and counts
        as finished: it ends at this instant, as in Batsim where SimGrid's
        other update history ends it in the same step as the others (g8:
        jobs 5988 and 5989, started 18 s apart, end at 6,905,681.0542)."""
        heap = self.dbounds
        due = []
        while heap and heap[0][0] <= self.now:
            entry = heapq.heappop(heap)
            if self._valid_bound(entry, True) and entry[2] is not skip:
                due.append(entry)
        late = []
        for entry in due:
            j = entry[2]
            if j.exec.test():
                self._load_off(j)
                self.direct_done.append((j, entry[3]))
            elif self._residue_only(j):
                j.exec.cancel()
                self._load_off(j)
                self.direct_done.append((j, entry[3]))
            else:
                late.append(j)
                heapq.heappush(heap, entry)
        return late

    def _settle_direct(self):
        """Let SimGrid finish the direct tasks that end at this very instant
        (a zero-duration task needs one model step): wait on the earliest
        due one with a zero timeout, then test the others."""
        self._top_bound(self.dbounds)
        self._await_direct(self.dbounds[0], 0.0)

    def _handover(self, jobs):
        """Give these running direct jobs to worker actors, which wait for
        their (already started) tasks and report through the semaphore like
        any worker-owned job."""
        self.n_handovers += len(jobs)
        for j in jobs:
            w = self._worker()
            del self.direct_jobs[j.id]
            j.actor = w
            w.job = j
            w.token = j.token
            w.adopt = True
            self._push_bound(j, 0, j.step_started)
            w.wake.release()

    def _process_physics(self):
        """Complete the physics jobs that reported their end; returns whether
        there was any report.

        Jobs that end at the same instant are completed (and announced) in
        the order their current SimGrid tasks were started: SimGrid 3.32's
        ptask_L07 model finishes the actions of one step in the order of its
        started-action list, and Batsim's executors wake in that order and
        send JOB_COMPLETED to the server in that order."""
        if not self.direct_done and not self.done:
            return False
        ended = []
        if self.done:
            due = self._workers_due()
            if due:
                self.sg.this_actor.yield_()  # the other workers woken now report too
                reported = {id(j) for j, _ in self.done}
                for j in due:
                    if id(j) not in reported and j.step_index == len(j.steps) - 1 \
                            and self._residue_only(j):
                        self._stop_physics(j)  # float residue: it ends now (see _collect_due)
                        ended.append(j)
        while self.direct_done:
            job, token = self.direct_done.popleft()
            if job.state == RUNNING and job.token == token and job.actor is _DIRECT:
                self.n_physics -= 1
                del self.direct_jobs[job.id]
                job.actor = None
                job.exec = None
                ended.append(job)
        while self.done:
            job, token = self.done.popleft()
            self._processed += 1
            if job.state == RUNNING and job.token == token:
                self.n_physics -= 1
                job.actor = None
                ended.append(job)
        if len(ended) > 1:
            ended.sort(key=_exec_order)
        for job in ended:
            self._complete(job, self._success_state(job), None)
        return True

    def _workers_due(self):
        """The worker-run jobs that have not reported and may end at this
        instant (their step's lower bound has passed)."""
        now = self.now
        reported = {id(j) for j, _ in self.done}
        return [e[2] for e in self.bounds
                if e[0] <= now and id(e[2]) not in reported and self._valid_bound(e, False)]

    # --------------------------------------------------------- job's end
    def _success_state(self, j):
        ret = self.profiles[j.workload][j.profile].get("ret", 0)
        j.return_code = ret
        return COMPLETED_SUCCESSFULLY if ret == 0 else COMPLETED_FAILED

    def _ends_now(self, j):
        """Walltime tie rule: whether physics job *j*, whose walltime timer
        fires now, ends at this very instant. If so its success is reported
        (``direct_done``, the worker's ``done``, or completed here) and the
        walltime is not applied.

        Batsim 4.2.1 runs ``ptask->start(); ptask->wait_for(remaining_time)``
        (src/task_execution.cpp): a task that ends at its timeout date
        completes. Which of the two SimGrid ends first when the work takes
        exactly the walltime is decided by the rounding of the task's
        remaining work over SimGrid's model updates, and the embedded engine
        makes fewer updates than the real Batsim (it does not wake SimGrid
        for bookkeeping), so the residue differs. The rule, the same for
        direct jobs and worker-run ones: the task wins if SimGrid finished it
        at this instant (direct: tested; worker: woken at this instant, it
        runs first, one yield), or if what remains of its last step is
        float residue (``_residue_only``); then its task is cancelled and
        the job succeeds now. Measured on g8 (KTH-SP2,
        parallel_homogeneous): 26 exact ties that the real Batsim's timeout
        won succeed here (72 jobs ended in another state before this rule);
        docs/engine.md, "Known differences".
        """
        if j.actor is None:
            return False  # no physics: a delay job's timers decide
        self._sync_simgrid()
        token = j.token
        if j.actor is _DIRECT:
            if j.exec.test():
                self._load_off(j)
                self.direct_done.append((j, token))
                return True
        else:
            if not any(d is j and t == token for d, t in self.done):
                self.sg.this_actor.yield_()
            if any(d is j and t == token for d, t in self.done):
                return True
        if j.step_index != len(j.steps) - 1 or not self._residue_only(j):
            return False
        self._stop_physics(j)
        self._complete(j, self._success_state(j), None)
        return True

    def _residue_only(self, j):
        """Whether what remains of *j*'s running task is float residue of
        SimGrid's updates: at its current rate, it would end within
        :data:`TIE_RESIDUE` s.

        A task started at this very instant has no rate yet and is never
        residue: SimGrid's model may already count a hair of its work done
        (``remaining_ratio`` 0.999999999999981 was seen for a 1,280 s read
        handed to a worker at its start while another worker's job ended
        at that instant), and the rate estimate ``(1 - left) / 0 s`` would
        end the whole task at once."""
        ex = j.exec
        if ex is None:
            return False
        try:
            left = float(ex.remaining_ratio)
        except Exception:  # the task ended meanwhile: SimGrid freed it
            return False
        elapsed = self.now - j.step_started
        if left >= 1.0 or elapsed <= 0.0:
            return False
        return left * elapsed / (1.0 - left) <= TIE_RESIDUE

    def _walltime_reached(self, j):
        """The job's walltime timer fired while it runs: stop it."""
        self._stop_physics(j)
        self._complete(j, COMPLETED_WALLTIME_REACHED, -1)

    def _stop_physics(self, j):
        if j.actor is _DIRECT:
            j.actor = None
            del self.direct_jobs[j.id]
            self.n_physics -= 1
            self._sync_simgrid()
            j.exec.cancel()
            self._load_off(j)
        elif j.actor is not None:
            worker, j.actor = j.actor, None
            self.n_physics -= 1
            self._sync_simgrid()
            ex = j.exec
            worker.actor.kill()  # cancels the task it started; the worker is not reused
            if ex is not None:
                # a handed-over direct job's task was started by the server:
                # killing the actor that waits on it leaves it running
                ex.cancel()
            self._load_off(j)

    def _progress(self, j, now):
        """The ``job_progress`` entry of a running job killed at *now*
        (JOB_KILLED): ``{"profile_name", "progress"}`` (a ratio in [0, 1]),
        for a composed profile ``{"profile_name", "current_task_index",
        "current_task": {...}}``, as Batsim 4.2.1's ``generate_task_tree``
        (src/protocol.cpp)."""
        prof = self.profiles[j.workload][j.profile]
        steps = j.steps or []
        k = j.step_index
        frac = 0.0
        if steps and k < len(steps):
            s = steps[k]
            if isinstance(s, Delay):
                frac = (now - j.step_started) / s.seconds if s.seconds > 0 else 1.0
            elif j.exec is not None:
                try:
                    frac = 1.0 - float(j.exec.remaining_ratio)
                except Exception:
                    frac = 0.0
        frac = min(max(frac, 0.0), 1.0)
        if prof["type"] == "composed" and steps:
            seq = prof["seq"]
            per = max(1, len(steps) // (len(seq) * int(prof.get("repeat", 1))))
            idx = (k // per) % len(seq)
            return {"profile_name": j.profile, "current_task_index": idx,
                    "current_task": {"profile_name": seq[idx], "progress": frac}}
        if total_delay(steps) is not None and steps:
            tot = sum(s.seconds for s in steps)
            frac = min(1.0, (now - j.start) / tot) if tot > 0 else 1.0
        return {"profile_name": j.profile, "progress": frac}

    def _complete(self, j, state, ret, notify=True):
        """The job ends now; its executor tells the server (route latency)."""
        t = self.now
        j.state = state
        j.finish = t
        if ret is not None:
            j.return_code = ret
        self.busy_mask &= ~self.running_masks.pop(j.id, 0)
        self._machine_state(t)
        self.n_unterminated -= 1
        self._row(j)
        self._release(j)
        if notify:
            data = {"job_id": j.id, "job_state": state, "return_code": j.return_code,
                    "alloc": j.alloc_str}
            self._post(t, self.L_hm[j.first_host], P_COMPLETED, data)

    def _release(self, j):
        """Free what a terminated job no longer needs: its resource list and
        intervals (its row is written; ``alloc_str`` stays), its parallel tasks and
        (``_release_profile``) its dynamic profile."""
        j.alloc = None
        j.alloc_itv = ()
        j.steps = None
        j.step_min = None
        j.exec = None
        self._load_off(j)
        self._release_profile(j)

    # ---------------------------------------------------------- job's start
    def _start(self, j, alloc, executors, io_job, storage_mapping):
        """Apply EXECUTE_JOB (when Batsim's server receives it)."""
        now = self.now
        mask = mask_of(j.alloc_itv) & ((1 << self.nb_compute) - 1)
        clash = mask & self.busy_mask
        if clash:
            r = (clash & -clash).bit_length() - 1  # the first such resource of the allocation
            other = next(jid for jid, m in self.running_masks.items() if m >> r & 1)
            raise ProtocolError(
                f"EXECUTE_JOB {j.id} at t={now:.6f}: resource {r} is already used by running job "
                f"{other}"
            )
        try:
            steps = build_steps(j.id, j.profile, self.profiles[j.workload], executors,
                                storage_mapping, self.storage_ids)
            if io_job is not None:
                steps = self._merge_io(j, steps, io_job, storage_mapping)
        except RecursionError:
            raise ProtocolError(f"EXECUTE_JOB {j.id}: profile '{j.profile}' is nested too deeply") from None
        self.busy_mask |= mask
        self.running_masks[j.id] = mask
        self._machine_state(now)
        j.state = RUNNING
        j.start = now
        j.token += 1
        j.steps = steps
        j.step_index = 0
        j.step_started = now
        j.first_host = alloc[0]
        dur = total_delay(steps)
        if dur is not None:
            if j.walltime is not None and j.walltime <= dur:
                self._timer(now + j.walltime, T_WALLTIME, (j, j.token))
            else:
                self._timer(now + dur, T_END, (j, j.token))
            return
        self._sync_simgrid()
        self.n_physics += 1
        if self.cfg.direct_tasks and len(steps) == 1 and isinstance(steps[0], PTask):
            self._start_direct(j)
        else:
            self._assign_worker(j)
        if j.walltime is not None:
            self._timer(now + j.walltime, T_WALLTIME, (j, j.token))

    def _merge_io(self, j, steps, io_job, storage_mapping):
        wl = j.workload
        if "profile" in io_job and isinstance(io_job["profile"], dict):
            pname = io_job.get("profile_name", f"__io_{j.local_id}")
            validate_profile(pname, io_job["profile"], f"EXECUTE_JOB {j.id}: additional_io_job")
            profiles = dict(self.profiles[wl])
            profiles[pname] = io_job["profile"]
        else:
            pname = io_job.get("profile_name", io_job.get("profile"))
            profiles = self.profiles[wl]
            if pname not in profiles:
                raise ProtocolError(f"EXECUTE_JOB {j.id}: additional_io_job names unknown profile '{pname}'")
        io_alloc, _, _ = self._parse_alloc(io_job.get("alloc"), f"EXECUTE_JOB {j.id}: additional_io_job")
        io_steps = build_steps(j.id, pname, profiles, list(io_alloc), storage_mapping, self.storage_ids)
        if not all(isinstance(s, PTask) for s in steps + io_steps) or len(io_steps) != 1:
            raise ProtocolError(
                f"EXECUTE_JOB {j.id}: additional_io_job needs parallel-task profiles for both the job and the I/O job"
            )
        return [merge_ptasks(s, io_steps[0]) for s in steps]

    def _worker(self):
        """An idle worker actor (one is created when none is idle). Reusing
        actors is cheaper than creating one per job (SimGrid's Python actors
        are threads)."""
        if self.idle_workers:
            return self.idle_workers.pop()
        w = _Worker(self)
        w.actor = self.sg.Actor.create(f"worker {len(self.workers)}", self.master, w.run)
        w.actor.daemonize()
        self.workers.append(w)
        return w

    def _set_step_min(self, j, heap=None):
        speeds = self.speeds
        j.step_min = [s.seconds if isinstance(s, Delay)
                      else max((c / speeds[h] for c, h in zip(s.cpu, s.hosts) if c > 0 and speeds[h] > 0),
                               default=0.0)
                      for s in j.steps]
        self._push_bound(j, 0, self.now, heap)

    def _assign_worker(self, j):
        """Run the job's steps on a worker actor."""
        w = self._worker()
        j.actor = w
        w.job = j
        w.token = j.token
        self._set_step_min(j)
        w.wake.release()

    def _start_direct(self, j):
        """Start the job's single parallel task from the server actor itself
        (no worker: about half the thread switches of a worker-run job); the
        server waits for it in ``_wait_direct`` while no worker-owned physics
        runs, and hands it over to a worker (``_handover``) when its lower
        bound passes while workers run."""
        s = j.steps[0]
        hosts = self.hosts
        ex = self.sg.this_actor.exec_init([hosts[h] for h in s.hosts], s.cpu, s.com)
        self._load_on(j, s)
        ex.start()
        j.exec = ex
        j.exec_seq = next(self._seq)
        j.actor = _DIRECT
        self.direct_jobs[j.id] = j
        self.n_direct_started += 1
        self._set_step_min(j, self.dbounds)

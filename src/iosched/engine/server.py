"""The embedded engine: Batsim 4.2.1's protocol over ZeroMQ, SimGrid physics.

Design (one SimGrid actor for the whole engine, no actor per job):

* A single *server* actor on the master host owns simulated time and talks to
  the scheduler (REQ socket, Batsim's role). Everything that is pure
  bookkeeping (submissions, ``delay`` profiles, walltimes, CALL_ME_LATER,
  message latencies) is an action in a time-ordered heap: it costs a heap
  push and pop, not a SimGrid actor.
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
  walltime completes.
* While no physics is in flight the server's clock jumps from action to
  action without waking SimGrid; SimGrid's clock is brought up to date before
  the next physics job starts.

Timing model (Batsim 4.2.1, measured on ``shared/golden``): Batsim's internal
messages travel through the platform. With ``L_mm`` the latency of the route
master -> master and ``L_hm(h)`` that of the route h -> master:
a job submitted at ``s`` is announced at ``s + 2 L_mm``; EXECUTE_JOB at
``t`` starts the job at ``t + L_mm``; a job ending at ``c`` on first host h is
announced at ``c + L_hm(h)``; the next message is not sent before the
scheduler's reply ``now`` + ``L_mm``.

Sources: Batsim 4.2.1 ``docs/protocol.rst``, ``docs/input-workload.rst``.
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import re
import time
from collections import ChainMap, deque

from procset import ProcSet

from iosched.engine import output
from iosched.engine.platform import build_resources
from iosched.engine.tasks import Delay, PTask, build_steps, merge_ptasks, total_delay
from iosched.engine.workload import (
    _JOB_VALIDATOR,
    _first_error,
    load_workload,
    validate_profile,
)
from iosched.errors import InputError, ProtocolError

INF = math.inf

SUBMITTED = "SUBMITTED"
SCHEDULED = "SCHEDULED"  # EXECUTE_JOB received, start pending (latency)
RUNNING = "RUNNING"
TERMINAL_STATES = (
    "COMPLETED_SUCCESSFULLY",
    "COMPLETED_FAILED",
    "COMPLETED_WALLTIME_REACHED",
    "COMPLETED_KILLED",
    "REJECTED",
)

# timer kinds (things that happen on the platform)
T_SUBMIT, T_END, T_WALLTIME, T_CALL = range(4)
# kinds of messages received by Batsim's server
P_SUBMIT, P_BYE, P_COMPLETED, P_DECISION, P_READY, P_CALL, P_HELLO = range(7)


#: ``Job.actor`` of a *direct* job: its single parallel task was started by
#: the server actor itself, which also waits for it (see ``_wait_direct``).
_DIRECT = "direct"


class SchedulerTimeout(RuntimeError):
    """The scheduler did not answer within the configured time."""


class EngineConfig:
    """Options of one engine run (the ``batsim`` command-line flags).

    :param platform: SimGrid platform XML path.
    :param workloads: workload JSON paths (named ``w0``, ``w1``... in order).
    :param export_prefix: output prefix (``PREFIX_jobs.csv``...).
    :param socket_endpoint: ZeroMQ endpoint the engine connects to.
    :param sched_timeout: seconds (wall clock) to wait for each reply.
    :param direct_tasks: run single-task physics jobs as direct tasks of the
        server actor (False: every physics job on a worker actor; same
        results, used to verify that).
    """

    def __init__(self, platform, workloads, export_prefix="out", socket_endpoint="tcp://localhost:28000",
                 master_host="master_host", role_maps=(), mmax=0, mmax_workload=False,
                 dynamic_jobs=False, ack_dynamic_jobs=False, profile_reuse=False,
                 forward_profiles=False, sched_config="", sg_cfg=(), sg_log=(),
                 machine_state_tracing=True, quiet=True, sched_timeout=600.0, transcript=None,
                 direct_tasks=True):
        self.platform = platform
        self.workloads = list(workloads)
        self.export_prefix = export_prefix
        self.socket_endpoint = socket_endpoint
        self.master_host = master_host
        self.role_maps = list(role_maps)
        self.mmax = mmax
        self.mmax_workload = mmax_workload
        self.dynamic_jobs = dynamic_jobs
        self.ack_dynamic_jobs = ack_dynamic_jobs
        self.profile_reuse = profile_reuse
        self.forward_profiles = forward_profiles
        self.sched_config = sched_config
        self.sg_cfg = list(sg_cfg)
        self.sg_log = list(sg_log)
        self.machine_state_tracing = machine_state_tracing
        self.quiet = quiet
        self.sched_timeout = sched_timeout
        self.transcript = transcript
        self.direct_tasks = direct_tasks


class Job:
    """Engine-side state of one job (static or dynamically registered)."""

    __slots__ = (
        "id", "workload", "local_id", "subtime", "res", "profile", "walltime", "json",
        "state", "start", "finish", "alloc", "alloc_str", "metadata", "return_code",
        "actor", "token", "steps", "step_index", "step_started", "exec", "first_host", "step_min",
        "static",
    )

    def __init__(self, spec, static=True):
        self.id = spec.id
        self.workload = spec.workload
        self.local_id = spec.local_id
        self.subtime = spec.subtime
        self.res = spec.res
        self.profile = spec.profile
        self.walltime = spec.walltime
        self.json = spec.json
        self.state = None
        self.start = None
        self.finish = None
        self.alloc = None
        self.alloc_str = ""
        self.metadata = ""
        self.return_code = None
        self.actor = None
        self.token = 0
        self.steps = None
        self.step_index = 0
        self.step_started = 0.0
        self.exec = None
        self.step_min = None
        self.first_host = 0
        self.static = static


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
                        ex.start()
                        ex.wait()
                        j.exec = None
            self.job = None
            sim.idle_workers.append(self)
            sim.done.append((j, token))
            sim.sem.release()


class _Spec:
    """Minimal job description for dynamically registered jobs."""

    def __init__(self, full_id, workload, local_id, subtime, res, profile, walltime, js):
        self.id, self.workload, self.local_id = full_id, workload, local_id
        self.subtime, self.res, self.profile = subtime, res, profile
        self.walltime, self.json = walltime, js


_CANONICAL_ALLOC = re.compile(r"\d+(?:-\d+)?(?: \d+(?:-\d+)?)*\Z")


def import_simgrid():
    """Import SimGrid's Python bindings without the INFO line they print on
    stderr at import time (``Configuration change: Set 'contexts/factory'``).

    :raises InputError: the bindings are not installed.
    """
    import os
    import sys

    if "simgrid" in sys.modules:
        return sys.modules["simgrid"]
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
        try:
            import simgrid
        except ImportError as exc:
            raise InputError(
                f"SimGrid's Python bindings (>= 3.32) are not installed: {exc} "
                "(Debian: apt-get install python3-simgrid)"
            ) from None
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    return simgrid


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


class Simulation:
    """One run of the embedded engine. Use :meth:`run`.

    :raises InputError: bad platform, workload or option (before any message).
    :raises ProtocolError: the scheduler broke the protocol (the message names
        the event and the job).
    :raises SchedulerTimeout: no reply within ``sched_timeout``.
    """

    def __init__(self, cfg: EngineConfig):
        self.cfg = cfg
        self.workloads = [load_workload(p, f"w{i}") for i, p in enumerate(cfg.workloads)]
        self.profiles = {w.name: dict(w.profiles) for w in self.workloads}
        self.jobs: dict[str, Job] = {}
        self.static_jobs: list[Job] = []
        for w in self.workloads:
            for spec in w.jobs:
                j = Job(spec)
                self.jobs[j.id] = j
                self.static_jobs.append(j)
        # Batsim submits by subtime, ties in job-id string order
        self.static_jobs.sort(key=lambda j: (j.subtime, j.id))
        self._error = None
        self.rows: list[dict] = []
        self.now = 0.0
        self.heap: list = []
        self._seq = itertools.count()
        self.pending: list = []
        self.inbox: list = []
        self.server_free = 0.0
        self.sched_busy = True
        self.submitter_done = False
        self._reply_now = 0.0
        self.done = deque()
        self._acquired = 0
        self._processed = 0
        self.n_physics = 0
        # direct jobs (single parallel task, started and awaited by the
        # server; handed over to a worker when it cannot be awaited)
        self.direct_jobs: dict[str, Job] = {}
        self.direct_done = deque()
        self.n_handovers = 0  # direct jobs handed over to a worker
        self.n_direct_started = 0
        self.bounds: list = []  # (bound, seq, job, token, step) of worker-owned steps
        self.dbounds: list = []  # the same for direct jobs
        self.workers: list = []
        self.idle_workers: list = []
        self.busy: dict[int, str] = {}
        self.n_unterminated = 0
        self.static_left = len(self.static_jobs)
        self.registration_open = cfg.dynamic_jobs
        # garbage collection of dynamic profiles (see _release)
        self.dyn_profiles: set = set()
        self.live_refs: dict = {}
        self.seq_refs: dict = {}
        self.pending_calls = 0
        self.ms_rows: list[tuple] = []
        self.sched_wall = 0.0
        self._expect_send = False

    # ------------------------------------------------------------------ setup
    def _setup_simgrid(self):
        simgrid = import_simgrid()

        self.sg = simgrid
        args = ["iosched-batsim", "--cfg=host/model:ptask_L07"]
        for c in self.cfg.sg_cfg:
            args.append(f"--cfg={c}")
        if self.cfg.quiet and not self.cfg.sg_log:
            args.append("--log=root.thres:critical")
        for lg in self.cfg.sg_log:
            args.append(f"--log={lg}")
        e = simgrid.Engine(args)
        try:
            e.load_platform(self.cfg.platform)
        except Exception as exc:  # SimGrid raises a generic error on bad XML
            msg = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            raise InputError(f"{self.cfg.platform}: SimGrid cannot load the platform: {msg}") from None
        self.engine = e
        hosts = list(e.all_hosts)
        mmax = self.cfg.mmax
        if self.cfg.mmax_workload:
            nbs = [w.nb_res for w in self.workloads if w.nb_res]
            if nbs:
                mmax = max(nbs)
        self.res = build_resources(self.cfg.platform, [h.name for h in hosts], self.cfg.master_host,
                                   self.cfg.role_maps, mmax)
        by_name = {h.name: h for h in hosts}
        self.master = by_name[self.res.master]
        self.hosts = [by_name[r.name] for r in self.res.by_id]
        self.nb_res = len(self.hosts)
        self.nb_compute = len(self.res.compute)
        self.storage_ids = [r.id for r in self.res.storage]

        def lat(a, b):
            try:
                return float(a.route_to(b)[1])
            except Exception:
                return 0.0

        self.L_mm = lat(self.master, self.master)
        self.L_hm = [lat(h, self.master) for h in self.hosts]
        self.speeds = [float(h.speed) for h in self.hosts]

    # ------------------------------------------------------------ main entry
    def run(self) -> dict:
        """Run the simulation and write the outputs; returns summary counts.

        :raises InputError, ProtocolError, SchedulerTimeout: see class doc.
        """
        t0 = time.perf_counter()
        self._setup_simgrid()
        try:
            output.prepare_prefix(self.cfg.export_prefix)
        except OSError as exc:
            raise InputError(f"-e {self.cfg.export_prefix}: cannot create the output directory: {exc.strerror}") from None
        import zmq

        self.zctx = zmq.Context()
        self.sock = self.zctx.socket(zmq.REQ)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.RCVTIMEO = int(self.cfg.sched_timeout * 1000)
        self.sock.SNDTIMEO = int(self.cfg.sched_timeout * 1000)
        try:
            self.sock.connect(self.cfg.socket_endpoint)
        except zmq.ZMQError as exc:
            raise InputError(f"-s {self.cfg.socket_endpoint}: invalid socket endpoint: {exc}") from None
        self._transcript = None
        if self.cfg.transcript:
            try:
                self._transcript = open(self.cfg.transcript, "w")
            except OSError as exc:
                raise InputError(f"--transcript {self.cfg.transcript}: {exc.strerror}") from None
        self.sem = self.sg.Semaphore(0)
        self.sg.Actor.create("server", self.master, self._server_actor)
        try:
            self.engine.run()
        finally:
            self.sock.close(0)
            self.zctx.term()
            if self._transcript is not None:
                self._transcript.close()
        if self._error is not None:
            raise self._error
        self.wall = time.perf_counter() - t0
        self._write_outputs()
        return {
            "nb_jobs": len(self.rows),
            "makespan": max((r["_finish"] for r in self.rows if r["_finish"] is not None), default=0.0),
            "direct_jobs": self.n_direct_started,
            "handovers": self.n_handovers,
        }

    def _server_actor(self):
        try:
            self._loop()
        except (InputError, ProtocolError, SchedulerTimeout) as exc:
            self._error = exc
            self._abort_scheduler()
            self.sg.Actor.kill_all()
        except Exception as exc:  # an engine bug: still one line, still no orphan
            self._error = ProtocolError(f"internal engine error: {type(exc).__name__}: {exc}")
            self._abort_scheduler()
            self.sg.Actor.kill_all()

    def _abort_scheduler(self):
        """Tell the scheduler the simulation ends so that it exits, if it is
        waiting for our request (best effort, short timeout)."""
        import zmq

        if not self._expect_send:
            return
        try:
            self.sock.SNDTIMEO = 1000
            self.sock.RCVTIMEO = 1000
            self.sock.send_string(json.dumps({"now": self.now, "events": [
                {"timestamp": self.now, "type": "SIMULATION_ENDS", "data": {}}]}))
            self.sock.recv_string()
        except zmq.ZMQError:
            pass

    # ---------------------------------------------------------------- timing
    def _timer(self, t, kind, data=None):
        heapq.heappush(self.heap, (t, next(self._seq), kind, data))

    def _post(self, t, latency, kind, data=None):
        """A message to Batsim's server, posted at ``t``; it is received after
        the messages posted before it, ``latency`` s after the server is free."""
        heapq.heappush(self.inbox, (t, next(self._seq), latency, kind, data))

    def _emit(self, etype, data):
        self.pending.append({"timestamp": self.now, "type": etype, "data": data})

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
            self.direct_done.append((j, token))
        return self._collect_due(j if finished else None)

    def _collect_due(self, skip=None):
        """Test the direct jobs whose lower bound is <= now (except *skip*,
        known finished): the finished ones go to ``direct_done``. Returns
        the unfinished ones (their entries stay in the heap)."""
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

    def _next_delivery(self):
        if not self.inbox:
            return INF
        t, _, lat, _, _ = self.inbox[0]
        return max(t, self.server_free) + lat

    # ------------------------------------------------------------- main loop
    def _loop(self):
        Lmm = self.L_mm
        self._emit("SIMULATION_BEGINS", self._begins_data())
        self.sched_busy = True
        self._post(0.0, Lmm, P_HELLO)
        self._exchange()
        # the static submitter: one message per group of jobs with equal subtime
        groups = []
        for j in self.static_jobs:
            if groups and groups[-1][0] == j.subtime:
                groups[-1][1].append(j)
            else:
                groups.append((j.subtime, [j]))
        self.groups = groups
        if groups:
            self._timer(groups[0][0] + Lmm, T_SUBMIT, 0)
        else:
            self._post(0.0, Lmm, P_BYE)
        while True:
            self._drop_stale()
            t_timer = self.heap[0][0] if self.heap else INF
            t_deliv = self._next_delivery()
            target = min(t_timer, t_deliv)
            if target == INF and self.n_physics == 0 and not self.done and not self.direct_done:
                if not self.sched_busy and not self.pending and self._can_end():
                    self._emit("SIMULATION_ENDS", {})
                    self._exchange(final=True)
                    return
                self._stall()
            self._advance(target)
            if self._process_physics():
                continue
            if self.heap and self.heap[0][0] <= self.now:
                t, _, kind, data = heapq.heappop(self.heap)
                self._do_timer(kind, data, t)
                continue
            if self.inbox and self._next_delivery() <= self.now + 1e-12:
                _, _, _, kind, data = heapq.heappop(self.inbox)
                self.server_free = self.now
                self._deliver(kind, data)
                if self._maybe_send():
                    return

    def _maybe_send(self):
        """After the server handled a message: talk to the scheduler if it is
        free and no other message is waiting for the server. Returns True when
        the simulation ended."""
        if self.sched_busy:
            return False
        if self.inbox and self.inbox[0][0] <= self.now:
            return False  # another sender is already waiting: Batsim receives it first
        if self.n_physics and self._physics_bound() <= self.now:
            # let the jobs that end at this very instant report first
            self._sync_simgrid()
            if self._top_bound(self.dbounds) <= self.now:
                self._settle_direct()  # a zero-time wait: workers run too
            else:
                self.sg.this_actor.yield_()
            if self.done or self.direct_done:
                return False
        if self.pending:
            self.sched_busy = True
            self._exchange()
            return False
        if self._can_end():
            self._emit("SIMULATION_ENDS", {})
            self._exchange(final=True)
            return True
        return False

    def _drop_stale(self):
        """Pop end/walltime timers of jobs that already ended (lazy deletion)."""
        heap = self.heap
        while heap:
            _, _, kind, data = heap[0]
            if kind in (T_END, T_WALLTIME):
                j, token = data
                if j.state == RUNNING and j.token == token:
                    return
                heapq.heappop(heap)
            else:
                return

    def _can_end(self):
        self._drop_stale()
        return (self.static_left == 0 and self.submitter_done and self.n_unterminated == 0
                and not self.registration_open and self.pending_calls == 0 and self.n_physics == 0
                and not self.heap and not self.inbox)

    def _stall(self):
        waiting = [j.id for j in self.jobs.values() if j.state == SUBMITTED]
        if waiting:
            raise ProtocolError(
                f"simulation stalled at t={self.now:.6f}: {len(waiting)} submitted job(s) were "
                f"neither executed nor rejected by the scheduler (first: {waiting[0]})"
            )
        if self.registration_open:
            raise ProtocolError(
                f"simulation stalled at t={self.now:.6f}: dynamic job registration is enabled and "
                "the scheduler never sent NOTIFY registration_finished"
            )
        raise ProtocolError(f"simulation stalled at t={self.now:.6f} with nothing left to simulate")

    def _process_physics(self):
        progressed = False
        while self.direct_done:
            job, token = self.direct_done.popleft()
            progressed = True
            if job.state == RUNNING and job.token == token and job.actor is _DIRECT:
                self.n_physics -= 1
                del self.direct_jobs[job.id]
                job.actor = None
                job.exec = None
                self._complete(job, self._success_state(job), None)
        while self.done:
            job, token = self.done.popleft()
            self._processed += 1
            progressed = True
            if job.state == RUNNING and job.token == token:
                self.n_physics -= 1
                job.actor = None
                self._complete(job, self._success_state(job), None)
        return progressed

    # ------------------------------------------------------------- actions
    def _do_timer(self, kind, data, t):
        Lmm = self.L_mm
        if kind == T_SUBMIT:
            self._post(t, Lmm, P_SUBMIT, data)
        elif kind == T_END:
            j, token = data
            if j.state == RUNNING and j.token == token:
                self._complete(j, self._success_state(j), None)
        elif kind == T_WALLTIME:
            j, token = data
            if j.state == RUNNING and j.token == token:
                self._stop_physics(j)
                self._complete(j, "COMPLETED_WALLTIME_REACHED", -1)
        elif kind == T_CALL:
            self._post(t, Lmm, P_CALL)

    def _deliver(self, kind, data):
        """Batsim's server handles one message (at ``self.now``)."""
        Lmm = self.L_mm
        if kind == P_SUBMIT:
            _, jobs = self.groups[data]
            for j in jobs:
                j.state = SUBMITTED
                self.n_unterminated += 1
                self.static_left -= 1
                self._emit("JOB_SUBMITTED", self._submitted_data(j))
            nxt = data + 1
            if nxt < len(self.groups):
                self._timer(max(self.groups[nxt][0] + Lmm, self.now), T_SUBMIT, nxt)
            else:
                self._post(self.now, Lmm, P_BYE)
        elif kind == P_BYE:
            self.submitter_done = True
            if self.workloads:  # a static submitter per workload, even an empty one
                self._emit("NOTIFY", {"type": "no_more_static_job_to_submit"})
        elif kind == P_COMPLETED:
            self._emit("JOB_COMPLETED", data)
        elif kind == P_DECISION:
            chain, k = data
            ts, fn, args = chain[k]
            fn(*args)
            if k + 1 < len(chain):
                self._post(max(chain[k + 1][0], self.now), Lmm, P_DECISION, (chain, k + 1))
            else:
                self._post(max(self._reply_now, self.now), Lmm, P_READY)
        elif kind == P_READY:
            self.sched_busy = False
        elif kind == P_CALL:
            self.pending_calls -= 1
            self._emit("REQUESTED_CALL", {})
        elif kind == P_HELLO:
            pass

    def _success_state(self, j):
        ret = self.profiles[j.workload][j.profile].get("ret", 0)
        j.return_code = ret
        return "COMPLETED_SUCCESSFULLY" if ret == 0 else "COMPLETED_FAILED"

    def _stop_physics(self, j):
        if j.actor is _DIRECT:
            j.actor = None
            del self.direct_jobs[j.id]
            self.n_physics -= 1
            self._sync_simgrid()
            j.exec.cancel()
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

    def _progress(self, j, now):
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
            return {"profile": j.profile, "current_task_index": idx,
                    "current_task": {"profile": seq[idx], "progress": frac}}
        if total_delay(steps) is not None and steps:
            tot = sum(s.seconds for s in steps)
            frac = min(1.0, (now - j.start) / tot) if tot > 0 else 1.0
        return {"profile": j.profile, "progress": frac}

    def _start(self, j, alloc, executors, io_job, storage_mapping):
        """Apply EXECUTE_JOB (when Batsim's server receives it)."""
        now = self.now
        for r in alloc:
            if r < self.nb_compute and r in self.busy:
                raise ProtocolError(
                    f"EXECUTE_JOB {j.id} at t={now:.6f}: resource {r} is already used by running job "
                    f"{self.busy[r]}"
                )
        try:
            steps = build_steps(j.id, j.profile, self.profiles[j.workload], executors,
                                storage_mapping, self.storage_ids)
            if io_job is not None:
                steps = self._merge_io(j, steps, io_job, storage_mapping)
        except RecursionError:
            raise ProtocolError(f"EXECUTE_JOB {j.id}: profile '{j.profile}' is nested too deeply") from None
        for r in alloc:
            if r < self.nb_compute:
                self.busy[r] = j.id
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
        io_alloc, _ = self._parse_alloc(io_job.get("alloc"), f"EXECUTE_JOB {j.id}: additional_io_job")
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
        ex.start()
        j.exec = ex
        j.actor = _DIRECT
        self.direct_jobs[j.id] = j
        self.n_direct_started += 1
        self._set_step_min(j, self.dbounds)

    def _complete(self, j, state, ret, notify=True):
        """The job ends now; its executor tells the server (route latency)."""
        t = self.now
        j.state = state
        j.finish = t
        if ret is not None:
            j.return_code = ret
        for r in j.alloc:
            if self.busy.get(r) == j.id:
                del self.busy[r]
        self._machine_state(t)
        self.n_unterminated -= 1
        self._row(j)
        self._release(j)
        if notify:
            data = {"job_id": j.id, "job_state": state, "return_code": j.return_code,
                    "alloc": j.alloc_str}
            self._post(t, self.L_hm[j.first_host], P_COMPLETED, data)

    def _release(self, j):
        """Free what a terminated job no longer needs: its parallel tasks and,
        for a dynamic job without ``--enable-profile-reuse``, its profile once
        no live dynamic job nor registered composed profile refers to it
        (Batsim >= 4.0 garbage-collects such profiles: registering a job with
        a collected profile is then an unknown-profile error, as in Batsim)."""
        j.steps = None
        j.step_min = None
        j.exec = None
        if j.static or self.cfg.profile_reuse:
            return
        key = (j.workload, j.profile)
        n = self.live_refs.get(key, 1) - 1
        if n > 0:
            self.live_refs[key] = n
            return
        self.live_refs.pop(key, None)
        self._collect(j.workload, j.profile)

    def _collect(self, wl, name):
        if (wl, name) not in self.dyn_profiles or self.live_refs.get((wl, name)) \
                or self.seq_refs.get((wl, name)):
            return
        self.dyn_profiles.discard((wl, name))
        prof = self.profiles.get(wl, {}).pop(name, None)
        if prof is not None and prof.get("type") == "composed":
            for sub in set(prof.get("seq", ())):
                k = (wl, sub)
                left = self.seq_refs.get(k, 1) - 1
                if left > 0:
                    self.seq_refs[k] = left
                else:
                    self.seq_refs.pop(k, None)
                    self._collect(wl, sub)

    def _machine_state(self, t):
        if not self.cfg.machine_state_tracing:
            return
        computing = len(self.busy)
        row = (t, self.nb_res - computing, computing)
        if self.ms_rows and self.ms_rows[-1][0] == t:
            self.ms_rows[-1] = row
        elif not self.ms_rows or self.ms_rows[-1][1:] != row[1:]:
            self.ms_rows.append(row)

    # ------------------------------------------------------------ messages
    def _begins_data(self):
        cfg = self.cfg
        return {
            "nb_resources": self.nb_res,
            "nb_compute_resources": self.nb_compute,
            "nb_storage_resources": len(self.storage_ids),
            "allow_compute_sharing": False,
            "allow_storage_sharing": True,
            "config": {
                "redis-enabled": False,
                "redis-hostname": "127.0.0.1",
                "redis-port": 6379,
                "redis-prefix": "default",
                "profiles-forwarded-on-submission": cfg.forward_profiles,
                "dynamic-jobs-enabled": cfg.dynamic_jobs,
                "dynamic-jobs-acknowledged": cfg.ack_dynamic_jobs,
                "profile-reuse-enabled": cfg.profile_reuse,
                "sched-config": cfg.sched_config,
                "forward-unknown-events": False,
            },
            "compute_resources": [r.to_json() for r in self.res.compute],
            "storage_resources": [r.to_json() for r in self.res.storage],
            "workloads": {w.name: w.path for w in self.workloads},
            "profiles": {w.name: w.profiles for w in self.workloads},
        }

    def _submitted_data(self, j):
        d = {"job_id": j.id, "job": j.json}
        if self.cfg.forward_profiles:
            d["profile"] = self.profiles[j.workload][j.profile]
        return d

    def _exchange(self, final=False):
        import zmq

        msg = {"now": self.now, "events": self.pending}
        self.pending = []
        t0 = time.perf_counter()
        try:
            self._expect_send = False
            out = json.dumps(msg)
            self.sock.send_string(out)
            raw = self.sock.recv_string()
            self._expect_send = True
            if self._transcript is not None:
                self._transcript.write('{"dir": "engine->sched", "msg": ' + out + "}\n")
                self._transcript.write('{"dir": "sched->engine", "msg": ' + raw + "}\n")
        except zmq.Again:
            raise SchedulerTimeout(
                f"no reply from the scheduler at {self.cfg.socket_endpoint} within "
                f"{self.cfg.sched_timeout:g} s (t={self.now:.6f}, "
                f"{len(msg['events'])} event(s) sent, first: {msg['events'][0]['type'] if msg['events'] else '-'})"
            ) from None
        self.sched_wall += time.perf_counter() - t0
        try:
            reply = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ProtocolError(f"scheduler reply at t={self.now:.6f} is not valid JSON: {exc}") from None
        if final:
            return
        self._apply_reply(reply)

    def _apply_reply(self, reply):
        now = self.now
        if not isinstance(reply, dict) or not _num(reply.get("now")) or not isinstance(reply.get("events"), list):
            raise ProtocolError(
                f"scheduler reply at t={now:.6f} must be an object with a numeric 'now' and an 'events' list"
            )
        rnow = float(reply["now"])
        if rnow < now - 1e-9:
            raise ProtocolError(f"scheduler reply 'now'={rnow} is earlier than the request's now={now}")
        self._reply_now = max(rnow, now)
        chain = []
        last_ts = -INF
        for k, ev in enumerate(reply["events"]):
            if not isinstance(ev, dict) or not isinstance(ev.get("type"), str) or not _num(ev.get("timestamp")):
                raise ProtocolError(
                    f"scheduler reply at t={now:.6f}: events[{k}] needs a string 'type' and a numeric 'timestamp'"
                )
            ts = float(ev["timestamp"])
            etype = ev["type"]
            if ts > rnow + 1e-9:
                raise ProtocolError(f"{etype} at t={ts}: timestamp is after the reply's now={rnow}")
            if ts < last_ts - 1e-9:
                raise ProtocolError(f"{etype} at t={ts}: events are not in ascending timestamp order")
            last_ts = ts
            ts = max(ts, now)
            data = ev.get("data", {})
            if not isinstance(data, dict):
                raise ProtocolError(f"{etype} at t={ts}: 'data' must be an object")
            handler = self._HANDLERS.get(etype)
            if handler is None:
                raise ProtocolError(f"{etype} at t={ts}: unknown event type")
            act = handler(self, ts, data)
            if act is not None:
                chain.append((ts, act[0], act[1:]))
        if chain:
            self._post(max(chain[0][0], now), self.L_mm, P_DECISION, (chain, 0))
        else:
            self._post(self._reply_now, self.L_mm, P_READY)

    def _job_for(self, etype, ts, data, key="job_id"):
        jid = data.get(key)
        if not isinstance(jid, str):
            raise ProtocolError(f"{etype} at t={ts:.6f}: missing or non-string '{key}'")
        j = self.jobs.get(jid)
        if j is None or j.state is None:
            raise ProtocolError(f"{etype} at t={ts:.6f}: unknown job '{jid}'")
        return j

    def _parse_alloc(self, s, where):
        """Parse an interval-set string (``"0-3 7"``).

        :returns: ``(sorted list of resource ids, canonical string)``.
        :raises ProtocolError: not a string, invalid, empty, or outside the machine.
        """
        if not isinstance(s, str):
            raise ProtocolError(f"{where}: 'alloc' must be an interval-set string such as \"0-3 7\"")
        ids = None
        if _CANONICAL_ALLOC.match(s):  # fast path: already canonical (what pybatsim sends)
            ids = []
            last = -2
            for part in s.split(" "):
                lo_s, _, hi_s = part.partition("-")
                lo = int(lo_s)
                hi = int(hi_s) if hi_s else lo
                if hi < lo or lo <= last + 1:
                    ids = None
                    break
                ids.extend(range(lo, hi + 1))
                last = hi
        if ids is None:
            try:
                ps = ProcSet.from_str(s)
            except Exception:
                raise ProtocolError(f"{where}: invalid allocation '{s}'") from None
            ids, s = list(ps), str(ps)
        if not ids:
            raise ProtocolError(f"{where}: empty allocation")
        if ids[-1] >= self.nb_res or ids[0] < 0:
            raise ProtocolError(
                f"{where}: allocation '{s}' is outside the machine (resources 0-{self.nb_res - 1})"
            )
        return ids, s

    def _h_execute(self, ts, data):
        j = self._job_for("EXECUTE_JOB", ts, data)
        where = f"EXECUTE_JOB {j.id} at t={ts:.6f}"
        if j.state != SUBMITTED:
            raise ProtocolError(f"{where}: the job is {j.state.lower()}, not waiting")
        alloc, alloc_str = self._parse_alloc(data.get("alloc"), where)
        mapping = data.get("mapping")
        if mapping is not None:
            if not isinstance(mapping, dict):
                raise ProtocolError(f"{where}: 'mapping' must be an object")
            try:
                executors = [alloc[int(mapping[str(i)])] for i in range(len(mapping))]
            except (KeyError, ValueError, IndexError, TypeError):
                raise ProtocolError(f"{where}: invalid 'mapping' {mapping}") from None
            if len(executors) != j.res:
                raise ProtocolError(f"{where}: mapping has {len(executors)} executors, the job requests {j.res}")
        else:
            if len(alloc) != j.res:
                raise ProtocolError(
                    f"{where}: allocation '{data.get('alloc')}' has {len(alloc)} resources, the job requests {j.res}"
                )
            executors = alloc
        smap = data.get("storage_mapping")
        if smap is not None:
            if not isinstance(smap, dict) or not all(_num(v) and 0 <= v < self.nb_res for v in smap.values()):
                raise ProtocolError(f"{where}: 'storage_mapping' must map labels to resource ids")
        io_job = data.get("additional_io_job")
        if io_job is not None and not isinstance(io_job, dict):
            raise ProtocolError(f"{where}: 'additional_io_job' must be an object")
        j.state = SCHEDULED
        j.alloc = alloc
        j.alloc_str = alloc_str
        return (self._start, j, alloc, executors, io_job, smap)

    def _h_reject(self, ts, data):
        j = self._job_for("REJECT_JOB", ts, data)
        if j.state != SUBMITTED:
            raise ProtocolError(f"REJECT_JOB {j.id} at t={ts:.6f}: the job is {j.state.lower()}, not waiting")
        j.state = "REJECTED"
        j.alloc = []
        return (self._apply_reject, j)

    def _apply_reject(self, j):
        self.n_unterminated -= 1
        self._row(j, self.now)

    def _h_kill(self, ts, data):
        ids = data.get("job_ids")
        if not isinstance(ids, list) or not ids:
            raise ProtocolError(f"KILL_JOB at t={ts:.6f}: 'job_ids' must be a non-empty list")
        for jid in ids:
            self._job_for("KILL_JOB", ts, {"job_id": jid})
        return (self._apply_kill, list(ids))

    def _apply_kill(self, ids):
        progress = {}
        for jid in ids:
            j = self.jobs[jid]
            if j.state == RUNNING:
                progress[jid] = self._progress(j, self.now)
                self._stop_physics(j)
                self._complete(j, "COMPLETED_KILLED", -2, notify=False)
            else:
                # it ended (or never started) before the kill: pybatsim 3.2.1
                # needs an entry for every id once the object is not empty
                progress[jid] = {"profile": j.profile,
                                 "progress": 1.0 if j.state in TERMINAL_STATES else 0.0}
        self._emit("JOB_KILLED", {"job_ids": list(ids), "job_progress": progress})

    def _h_call(self, ts, data):
        t = data.get("timestamp")
        if not _num(t):
            raise ProtocolError(f"CALL_ME_LATER at t={ts:.6f}: 'timestamp' must be a number")
        self.pending_calls += 1
        return (self._apply_call, float(t))

    def _apply_call(self, t):
        self._timer(max(t, self.now), T_CALL)

    def _require_dynamic(self, etype, ts):
        if not self.cfg.dynamic_jobs:
            raise ProtocolError(f"{etype} at t={ts:.6f}: dynamic jobs are disabled (use --enable-dynamic-jobs)")

    def _h_register_profile(self, ts, data):
        self._require_dynamic("REGISTER_PROFILE", ts)
        wl, name, prof = data.get("workload_name"), data.get("profile_name"), data.get("profile")
        if not isinstance(wl, str) or not isinstance(name, str):
            raise ProtocolError(f"REGISTER_PROFILE at t={ts:.6f}: needs string 'workload_name' and 'profile_name'")
        where = f"REGISTER_PROFILE {wl}!{name} at t={ts:.6f}"
        profiles = self.profiles.setdefault(wl, {})
        if name in profiles:
            if profiles[name] != prof:
                raise ProtocolError(f"{where}: a different profile with this name already exists")
            return
        try:
            validate_profile(name, prof, where, ChainMap({name: prof}, profiles))  # no copy
        except InputError as exc:
            raise ProtocolError(str(exc)) from None
        profiles[name] = prof
        self.dyn_profiles.add((wl, name))
        if prof.get("type") == "composed":
            for sub in set(prof.get("seq", ())):
                self.seq_refs[(wl, sub)] = self.seq_refs.get((wl, sub), 0) + 1

    def _h_register_job(self, ts, data):
        self._require_dynamic("REGISTER_JOB", ts)
        jid = data.get("job_id")
        job = data.get("job")
        if not isinstance(jid, str) or "!" not in jid:
            raise ProtocolError(f"REGISTER_JOB at t={ts:.6f}: 'job_id' must be a string WORKLOAD!JOB")
        where = f"REGISTER_JOB {jid} at t={ts:.6f}"
        if not self.registration_open:
            raise ProtocolError(f"{where}: registration was declared finished (NOTIFY registration_finished)")
        if jid in self.jobs:
            raise ProtocolError(f"{where}: duplicate job id")
        if not isinstance(job, dict):
            raise ProtocolError(f"{where}: 'job' must be an object")
        try:
            _first_error(_JOB_VALIDATOR, job, where)
        except InputError as exc:
            raise ProtocolError(str(exc)) from None
        wl, local = jid.split("!", 1)
        if job["profile"] not in self.profiles.get(wl, {}):
            raise ProtocolError(f"{where}: unknown profile '{job['profile']}' in workload '{wl}'")
        wt = job.get("walltime")
        if wt is not None and wt != -1 and wt <= 0:
            raise ProtocolError(f"{where}: walltime must be > 0 or -1")
        js = dict(job)
        js["id"] = jid
        j = Job(_Spec(jid, wl, local, ts, int(job["res"]), job["profile"],
                      None if wt in (None, -1) else float(wt), js), static=False)
        self.live_refs[(wl, j.profile)] = self.live_refs.get((wl, j.profile), 0) + 1
        j.state = SUBMITTED
        self.jobs[jid] = j
        self.n_unterminated += 1
        if self.cfg.ack_dynamic_jobs:
            return (self._emit, "JOB_SUBMITTED", self._submitted_data(j))

    def _h_notify(self, ts, data):
        t = data.get("type")
        if t == "registration_finished":
            self._require_dynamic("NOTIFY registration_finished", ts)
            self.registration_open = False
        elif t == "continue_registration":
            self._require_dynamic("NOTIFY continue_registration", ts)
            self.registration_open = True
        else:
            raise ProtocolError(f"NOTIFY at t={ts:.6f}: unknown notification type '{t}'")

    def _h_set_resource_state(self, ts, data):
        res, state = data.get("resources"), data.get("state")
        self._parse_alloc(res, f"SET_RESOURCE_STATE at t={ts:.6f}")
        return (self._emit, "RESOURCE_STATE_CHANGED", {"resources": res, "state": str(state)})

    def _h_set_metadata(self, ts, data):
        j = self._job_for("SET_JOB_METADATA", ts, data)
        md = data.get("metadata")
        if not isinstance(md, str):
            raise ProtocolError(f"SET_JOB_METADATA {j.id} at t={ts:.6f}: 'metadata' must be a string")
        j.metadata = md

    def _h_change_state(self, ts, data):
        j = self._job_for("CHANGE_JOB_STATE", ts, data)
        st = data.get("job_state")
        where = f"CHANGE_JOB_STATE {j.id} at t={ts:.6f}"
        if st not in TERMINAL_STATES:
            raise ProtocolError(f"{where}: unsupported job_state '{st}' (expected one of {', '.join(TERMINAL_STATES)})")
        if j.state in TERMINAL_STATES:
            # the job already ended: only its recorded final state changes
            j.state = st
            for r in self.rows:
                if r["job_id"] == j.local_id and r["workload_name"] == j.workload:
                    r["final_state"] = st
                    r["success"] = "1" if st == "COMPLETED_SUCCESSFULLY" else "0"
            return
        if j.state != SUBMITTED:
            raise ProtocolError(f"{where}: cannot change the state of a {j.state.lower()} job")
        j.state = st
        j.alloc = []
        self.n_unterminated -= 1
        self._row(j, ts)

    def _h_query(self, ts, data):
        reqs = data.get("requests")
        names = ", ".join(reqs) if isinstance(reqs, dict) else "?"
        raise ProtocolError(
            f"QUERY at t={ts:.6f}: request(s) '{names}' not supported by the embedded engine "
            "(energy is out of scope)"
        )

    def _h_answer(self, ts, data):
        return None

    _HANDLERS = {
        "EXECUTE_JOB": _h_execute,
        "REJECT_JOB": _h_reject,
        "KILL_JOB": _h_kill,
        "CALL_ME_LATER": _h_call,
        "REGISTER_JOB": _h_register_job,
        "REGISTER_PROFILE": _h_register_profile,
        "NOTIFY": _h_notify,
        "SET_RESOURCE_STATE": _h_set_resource_state,
        "SET_JOB_METADATA": _h_set_metadata,
        "CHANGE_JOB_STATE": _h_change_state,
        "QUERY": _h_query,
        "ANSWER": _h_answer,
    }

    # -------------------------------------------------------------- outputs
    def _row(self, j, t=None):
        f6 = output.f6
        wt = j.walltime if j.walltime is not None else -1.0
        ran = j.start is not None and j.finish is not None
        if ran:
            ex = j.finish - j.start
            wait = j.start - j.subtime
            tat = j.finish - j.subtime
            stretch = tat / ex if ex > 0 else 0.0
        self.rows.append({
            "job_id": j.local_id,
            "workload_name": j.workload,
            "profile": j.profile,
            "submission_time": f6(j.subtime),
            "requested_number_of_resources": str(j.res),
            "requested_time": f6(wt),
            "success": "1" if j.state == "COMPLETED_SUCCESSFULLY" else "0",
            "final_state": j.state,
            "starting_time": f6(j.start) if ran else "",
            "execution_time": f6(ex) if ran else "",
            "finish_time": f6(j.finish) if ran else "",
            "waiting_time": f6(wait) if ran else "",
            "turnaround_time": f6(tat) if ran else "",
            "stretch": f6(stretch) if ran else "",
            "allocated_resources": j.alloc_str if ran else "",
            "consumed_energy": f6(-1.0),
            "metadata": j.metadata,
            "_finish": j.finish if ran else None,
            "_wait": wait if ran else None,
            "_tat": tat if ran else None,
            "_slow": (tat / ex if ex > 0 else None) if ran else None,
            "_state": j.state,
            "_t": t if t is not None else j.finish,
        })

    def _write_outputs(self):
        prefix = self.cfg.export_prefix
        output.write_jobs(prefix, self.rows)
        fin = [r for r in self.rows if r["_finish"] is not None]
        waits = [r["_wait"] for r in fin]
        tats = [r["_tat"] for r in fin]
        slows = [r["_slow"] for r in fin if r["_slow"] is not None]
        n = len(self.rows)
        succ = sum(1 for r in self.rows if r["_state"] == "COMPLETED_SUCCESSFULLY")
        killed = sum(1 for r in self.rows if r["_state"] in ("COMPLETED_WALLTIME_REACHED", "COMPLETED_KILLED"))
        rej = sum(1 for r in self.rows if r["_state"] == "REJECTED")
        makespan = max((r["_finish"] for r in fin), default=0.0)
        t_comp, t_idle = self._state_times(makespan)
        f6 = output.f6
        mean = (lambda xs: sum(xs) / len(xs) if xs else 0.0)
        output.write_schedule(prefix, {
            "batsim_version": output.BATSIM_VERSION,
            "consumed_joules": f6(0.0),
            "makespan": f6(makespan),
            "max_slowdown": f6(max(slows, default=0.0)),
            "max_turnaround_time": f6(max(tats, default=0.0)),
            "max_waiting_time": f6(max(waits, default=0.0)),
            "mean_slowdown": f6(mean(slows)),
            "mean_turnaround_time": f6(mean(tats)),
            "mean_waiting_time": f6(mean(waits)),
            "nb_computing_machines": self.nb_res,
            "nb_grouped_switches": 0,
            "nb_jobs": n,
            "nb_jobs_finished": n - rej,
            "nb_jobs_killed": killed,
            "nb_jobs_rejected": rej,
            "nb_jobs_success": succ,
            "nb_machine_switches": 0,
            "scheduling_time": f6(self.sched_wall),
            "simulation_time": f6(self.wall),
            "success_rate": f6(succ / n if n else 0.0),
            "time_computing": f6(t_comp),
            "time_idle": f6(t_idle),
            "time_sleeping": f6(0.0),
            "time_switching_off": f6(0.0),
            "time_switching_on": f6(0.0),
            "time_unavailable": f6(0.0),
        })
        if self.cfg.machine_state_tracing:
            rows = self.ms_rows if self.ms_rows and self.ms_rows[0][0] == 0.0 else [(0.0, self.nb_res, 0)] + self.ms_rows
            output.write_machine_states(prefix, rows)

    def _state_times(self, end):
        rows = self.ms_rows if self.ms_rows and self.ms_rows[0][0] == 0.0 else [(0.0, self.nb_res, 0)] + self.ms_rows
        comp = idle = 0.0
        for (t, i, c), nxt in zip(rows, rows[1:] + [(end, 0, 0)]):
            dt = max(0.0, min(nxt[0], end) - t)
            comp += c * dt
            idle += i * dt
        return comp, idle

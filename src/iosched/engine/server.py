"""The engine's server (Batsim's ``src/server.cpp``): the main loop, the
clock and its time heap, and the exchange of messages with the scheduler.

One SimGrid actor, the *server*, runs on the master host for the whole
engine: it owns simulated time and talks to the scheduler over a ZeroMQ REQ
socket (Batsim's role). Everything that is pure bookkeeping (submissions,
``delay`` profiles, walltimes, CALL_ME_LATER, message latencies) is an entry
in a time-ordered heap (:mod:`iosched.engine.ipp`): it costs a heap push and
pop, not a SimGrid actor. Each turn of the loop moves time to the next timer
or message delivery, or to the first physics completion before it
(:mod:`iosched.engine.execution`), and handles what is due: completions
first, then timers, then one message to Batsim's server; after a message,
the server talks to the scheduler if it is free
(:mod:`iosched.engine.protocol` reads its reply). The outputs are written at
the end (:mod:`iosched.engine.export`).

:class:`Simulation` is composed of mixin classes, one per concern and module
(protocol, execution, export), sharing its attributes: a method of one calls
those of the others on ``self``, with no indirection on the hot paths.

Timing model (Batsim 4.2.1, measured on ``shared/golden`` and against the
real Batsim on a platform of 10 B/s links, where each message costs 0.1 s):
Batsim's internal messages travel through the platform as 1-byte
communications (``send_message``, src/ipp.cpp: ``mailbox->put(message, 1)``),
each taking the route's latency + 1 byte / its bottleneck bandwidth (a few
ns on real platforms, enough to order a job's end after a submission due at
the same instant: the job started a few message costs after its decision).
With ``L_mm`` that cost on the route master -> master and ``L_hm(h)`` on the
route h -> master:
a job submitted at ``s`` is announced at ``s`` + the duration of the
submitter's previous put + that of its own (``_submitter_wakes``; both
``L_mm`` when the server is free: ``s + 2 L_mm``); EXECUTE_JOB at
``t`` starts the job at ``t + L_mm``; a job ending at ``c`` on first host h is
announced at ``c + L_hm(h)``; the next message is not sent before the
scheduler's reply ``now`` + ``L_mm``. Every number sent to the scheduler is
rounded to 6 decimals as Batsim writes it (:mod:`iosched.batsim.wire`); a
reply's event applies at max(its timestamp, the clock), as Batsim's
``send_message_at_time`` (src/protocol.cpp) sleeps until a timestamp still
ahead.

Sources: Batsim 4.2.1 ``docs/protocol.rst``, ``docs/input-workload.rst``.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import json
import math
import os
import sys
import time

import zmq

from iosched.batsim.wire import batsim_numbers, parse_reply
from iosched.engine.execution import ExecutionMixin
from iosched.engine.export import ExportMixin, prepare_prefix
from iosched.engine.inproc import SchedulerError
from iosched.engine.ipp import (
    P_BYE,
    P_CALL,
    P_COMPLETED,
    P_DECISION,
    P_HELLO,
    P_KILLED,
    P_READY,
    P_SUBMIT,
    T_CALL,
    T_END,
    T_SUBMIT,
    T_WALLTIME,
)
from iosched.engine.jobs import RUNNING, SUBMITTED, Job
from iosched.engine.overload import OPTION as OVERLOAD_OPTION, LinkOverload
from iosched.engine.platform import build_resources, validate_platform
from iosched.engine.protocol import ProtocolMixin
from iosched.engine.workload import load_workload
from iosched.errors import InputError, ProtocolError

__all__ = ["EngineConfig", "SchedulerTimeout", "Simulation", "import_simgrid"]

INF = math.inf

#: Size (bytes) of every message between Batsim's actors (``send_message``,
#: src/ipp.cpp: ``mailbox->put(message, 1)``): each one travels the route
#: from its sender to the master host in latency + 1 byte / bandwidth.
MESSAGE_BYTES = 1.0


#: Allocations between two collections of the youngest generation during a
#: run (Python's default: 700); see :meth:`Simulation.run`.
GC_THRESHOLD = 10_000


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
    :param progress_file: iosched extension (embedded engine only): a file
        rewritten at most once per wall-clock second with one line
        ``<simulated time s> <jobs ended> <static jobs>`` (read by
        ``iosched run`` to show progress on a terminal); None: no file.
    :param embedded_extensions: serve what the real Batsim 4.2.1 refuses,
        ignores or crashes on (``--embedded-extensions``; the features are
        listed in docs/real-batsim.md). False (the default): every such
        input or request is refused in one line, as Batsim refuses it
        (:mod:`iosched.engine.protocol`, :mod:`iosched.engine.workload`).
    :param strict_batsim: accepted for the command line's
        ``--strict-batsim``, which is the default behaviour; no effect.
    :param link_overloads: embedded-only extension (``--link-overload``,
        needs ``embedded_extensions``): :class:`~iosched.engine.overload.OverloadCurve`
        objects, each giving a link's capacity (bytes/s) against its
        concurrent transfers (:mod:`iosched.engine.overload`). Empty (the
        default): every link keeps its bandwidth, as in Batsim 4.2.1.
    :param peer: iosched extension (the in-process path,
        :mod:`iosched.engine.inproc`): a scheduler loaded in this process
        (:class:`~iosched.engine.inproc.Peer`), called by the server actor
        with each message instead of the ZeroMQ socket (``socket_endpoint``
        is then unused). None (the default): the two-process path.
    """

    def __init__(self, platform, workloads, export_prefix="out", socket_endpoint="tcp://localhost:28000",
                 master_host="master_host", role_maps=(), mmax=0, mmax_workload=False,
                 dynamic_jobs=False, ack_dynamic_jobs=False, profile_reuse=False,
                 forward_profiles=False, sched_config="", sg_cfg=(), sg_log=(),
                 machine_state_tracing=True, quiet=True, sched_timeout=600.0, transcript=None,
                 direct_tasks=True, strict_batsim=True, progress_file=None, embedded_extensions=False,
                 peer=None, link_overloads=()):
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
        self.progress_file = progress_file
        self.direct_tasks = direct_tasks
        self.strict_batsim = strict_batsim
        self.embedded_extensions = embedded_extensions
        self.peer = peer
        self.link_overloads = tuple(link_overloads)


def import_simgrid():
    """Import SimGrid's Python bindings without the INFO line they print on
    stderr at import time (``Configuration change: Set 'contexts/factory'``).

    The one import inside a function of the engine, on purpose: SimGrid is
    an external module (Debian's ``python3-simgrid``) that only a run needs;
    without it, the command line and the analysis still work, and a run
    fails with one line.

    :raises InputError: the bindings are not installed.
    """
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


class Simulation(ProtocolMixin, ExecutionMixin, ExportMixin):
    """One run of the embedded engine. Use :meth:`run`.

    :raises InputError: bad platform, workload or option (before any message).
    :raises ProtocolError: the scheduler broke the protocol (the message names
        the event and the job).
    :raises SchedulerTimeout: no reply within ``sched_timeout``.
    """

    def __init__(self, cfg: EngineConfig):
        self.cfg = cfg
        if cfg.link_overloads and not cfg.embedded_extensions:
            raise InputError(f"{OVERLOAD_OPTION}: a link whose capacity depends on its load is an "
                             "embedded-only feature (the real Batsim 4.2.1 has no such option); "
                             "give --embedded-extensions to use it")
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
        self.now = 0.0
        self.heap: list = []
        self._seq = itertools.count()
        self.pending: list = []
        self.inbox: list = []
        self.server_free = 0.0
        self.sched_busy = True
        self.submitter_done = False
        self._reply_now = 0.0
        self.n_unterminated = 0
        self.static_left = len(self.static_jobs)
        self.sched_wall = 0.0
        self._expect_send = False
        self._progress_next = 0.0
        self._init_protocol(cfg)
        self._init_execution()
        self._init_export()

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
        validate_platform(self.cfg.platform)  # what SimGrid would abort on
        e = simgrid.Engine(args)
        try:
            e.load_platform(self.cfg.platform)
        except Exception as exc:  # SimGrid raises a generic error on bad XML
            msg = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            raise InputError(f"{self.cfg.platform}: SimGrid cannot load the platform: {msg}") from None
        # routes of Floyd and Dijkstra zones exist once the zones are sealed
        # (SimGrid seals at run; sealing twice is a no-op): the latencies below need them
        e.netzone_root.seal()
        self.engine = e
        hosts = list(e.all_hosts)
        # Batsim 4.2.1 (load_workloads_and_workflows, src/batsim.cpp): with
        # --mmax-workload the largest nb_res of the workloads, or the smaller
        # of it and --mmax when both are given
        mmax = self.cfg.mmax
        if self.cfg.mmax_workload:
            nbs = [w.nb_res for w in self.workloads if w.nb_res]
            if nbs:
                mmax = min(mmax, max(nbs)) if mmax > 0 else max(nbs)
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
                links, latency = a.route_to(b)
            except Exception:
                return 0.0
            size = MESSAGE_BYTES / min((float(ln.bandwidth) for ln in links), default=INF)
            return float(latency) + size

        self.L_mm = lat(self.master, self.master)
        self._setup_overloads(e)
        self.L_hm = [lat(h, self.master) for h in self.hosts]
        self.speeds = [float(h.speed) for h in self.hosts]

    def _setup_overloads(self, engine):
        """Attach each ``--link-overload`` curve to its SimGrid link.

        :raises InputError: the platform has no link of that name.
        """
        links = {ln.name: ln for ln in engine.all_links}
        hosts = self.hosts

        def route_links(a, b):
            try:
                route, _ = hosts[a].route_to(hosts[b])
            except Exception:
                return set()
            return {ln.name for ln in route}

        for curve in self.cfg.link_overloads:
            if curve.link not in links:
                raise InputError(f"{OVERLOAD_OPTION}: {self.cfg.platform} has no link {curve.link!r}")
            self.overloads.append(LinkOverload(curve, links[curve.link], route_links))

    # ------------------------------------------------------------ main entry
    def run(self) -> dict:
        """Run the simulation and write the outputs; returns summary counts.

        :raises InputError: bad input (see class doc).
        :raises ProtocolError: a bad scheduler request (see class doc).
        :raises SchedulerTimeout: no reply in time (see class doc).
        """
        t0 = time.perf_counter()
        self._setup_simgrid()
        try:
            prepare_prefix(self.cfg.export_prefix)
        except OSError as exc:
            raise InputError(f"-e {self.cfg.export_prefix}: cannot create the output directory: {exc.strerror}") from None
        self.peer = self.cfg.peer
        self.zctx = self.sock = None
        if self.peer is None:
            self.zctx = zmq.Context()
            self.sock = self.zctx.socket(zmq.REQ)
            self.sock.setsockopt(zmq.LINGER, 0)
            self.sock.RCVTIMEO = int(self.cfg.sched_timeout * 1000)
            self.sock.SNDTIMEO = int(self.cfg.sched_timeout * 1000)
            try:
                self.sock.connect(self.cfg.socket_endpoint)
            except zmq.ZMQError as exc:
                raise InputError(f"-s {self.cfg.socket_endpoint}: invalid socket endpoint: {exc}") from None
        else:
            from iosched.engine.inproc import Watchdog

            self._sent_events = []
            self.watchdog = Watchdog(self.cfg.sched_timeout, self._timeout_message)
        self._transcript = None
        if self.cfg.transcript:
            try:
                self._transcript = open(self.cfg.transcript, "w")
            except OSError as exc:
                raise InputError(f"--transcript {self.cfg.transcript}: {exc.strerror}") from None
        self.sem = self.sg.Semaphore(0)
        self.sg.Actor.create("server", self.master, self._server_actor)
        # Python's cyclic garbage collector: what is loaded by now (workload,
        # platform, an in-process scheduler) lives to the end, so later
        # collections skip it (gc.freeze); and a collection every 10,000
        # allocations instead of 700 (the loop allocates a few small dicts
        # per message, freed by reference counting). Measured on the full
        # KTH-SP2 trace in-process: 1.0 s -> 0.46 s of collections. Results
        # do not depend on it.
        threshold = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(GC_THRESHOLD, *threshold[1:])
        try:
            self.engine.run()
        finally:
            gc.set_threshold(*threshold)
            gc.unfreeze()
            if self.sock is not None:
                self.sock.close(0)
                self.zctx.term()
            if self._transcript is not None:
                self._transcript.close()
        if self._error is not None:
            raise self._error
        self.wall = time.perf_counter() - t0
        makespan = self._write_outputs()
        return {
            "nb_jobs": len(self.rows),
            "makespan": makespan,
            "direct_jobs": self.n_direct_started,
            "handovers": self.n_handovers,
        }

    def _server_actor(self):
        try:
            self._loop()
        except (InputError, ProtocolError, SchedulerTimeout, SchedulerError) as exc:
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
        if not self._expect_send or self.sock is None:
            return
        try:
            self.sock.SNDTIMEO = 1000
            self.sock.RCVTIMEO = 1000
            self.sock.send_string(json.dumps({"now": batsim_numbers(self.now), "events": [
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
        self.sub_next = 0  # the static submitter: next job to submit (see _submitter_wakes)
        self.sub_current = 0.0
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
        if self.inbox and self.inbox[0][0] < self.now:
            # another sender is already waiting: Batsim receives it first. A
            # message posted at this very instant (the submitter's BYE after
            # its last put) is still in flight: Batsim's server talks to the
            # scheduler before receiving it (g4: the last JOB_SUBMITTED alone
            # at 10.000045, the NOTIFY one latency later)
            return False
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

    # ------------------------------------------------------------- actions
    def _do_timer(self, kind, data, t):
        Lmm = self.L_mm
        if kind == T_SUBMIT:
            self._submitter_wakes()
        elif kind == T_END:
            j, token = data
            if j.state == RUNNING and j.token == token:
                self._complete(j, self._success_state(j), None)
        elif kind == T_WALLTIME:
            j, token = data
            if j.state == RUNNING and j.token == token and not self._ends_now(j):
                self._walltime_reached(j)
        elif kind == T_CALL:
            self._post(t, Lmm, P_CALL)

    def _submitter_wakes(self):
        """Batsim 4.2.1's static job submitter (``static_job_submitter_process``,
        src/job_submitter.cpp) resumes at ``now`` after its HELLO put or a
        sleep: it reads the clock (``sub_current``) and gathers every job
        whose subtime is not after it into one JOB_SUBMITTED message, sent
        with a blocking put (the server receives it in turn,
        ``_post``); when that put ends (``_deliver``) it sleeps for
        ``next subtime - sub_current``. A job is thus announced at its
        subtime + the duration of the previous put + the duration of its
        own, not always 2 master-to-master latencies after its subtime.
        After the last message, SUBMITTER_BYE."""
        cur = self.now
        jobs = self.static_jobs
        k = self.sub_next
        batch = []
        while k < len(jobs) and jobs[k].subtime <= cur:
            batch.append(jobs[k])
            k += 1
        self.sub_next = k
        self.sub_current = cur
        if batch:
            self._post(cur, self.L_mm, P_SUBMIT, batch)
        elif k < len(jobs):
            self._timer(cur + (jobs[k].subtime - cur), T_SUBMIT)
        else:
            self._post(cur, self.L_mm, P_BYE)

    def _deliver(self, kind, data):
        """Batsim's server handles one message (at ``self.now``)."""
        Lmm = self.L_mm
        if kind == P_SUBMIT:
            for j in data:
                j.state = SUBMITTED
                self.n_unterminated += 1
                self.static_left -= 1
                self._emit("JOB_SUBMITTED", self._submitted_data(j))
            # the submitter's put ends: it sleeps for (next subtime - the
            # clock it read before the put)
            if self.sub_next < len(self.static_jobs):
                self._timer(self.now + (self.static_jobs[self.sub_next].subtime - self.sub_current), T_SUBMIT)
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
        elif kind == P_KILLED:
            self._killing_done(*data)
        elif kind == P_HELLO:
            self._submitter_wakes()  # its put of SUBMITTER_HELLO ends

    # ----------------------------------------------------------- scheduler
    def _write_progress(self, wall: float) -> None:
        """Rewrite the progress file (``EngineConfig.progress_file``): simulated
        time (s), jobs that reached a final state, static jobs of the workloads."""
        self._progress_next = wall + 1.0
        try:
            with open(self.cfg.progress_file, "w") as f:
                f.write(f"{self.now:.6f} {len(self.rows)} {len(self.static_jobs)}\n")
        except OSError:
            self.cfg.progress_file = None  # progress is a convenience: never fail for it

    def _exchange(self, final=False):
        """Send the pending events to the scheduler, wait for its reply and
        apply it (``_apply_reply``; not after SIMULATION_ENDS)."""
        msg = {"now": self.now, "events": self.pending}
        self.pending = []
        if self.peer is not None:
            self._exchange_in_process(msg, final)
            return
        t0 = time.perf_counter()
        try:
            self._expect_send = False
            out = json.dumps(batsim_numbers(msg))
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
        if self.cfg.progress_file is not None and t0 >= self._progress_next:
            self._write_progress(t0)
        try:
            reply = parse_reply(raw)
        except (ValueError, RecursionError) as exc:  # RecursionError: nesting too deep
            raise ProtocolError(f"scheduler reply at t={self.now:.6f} is not valid JSON: "
                                f"{exc or 'nesting too deep'}") from None
        if final:
            return
        self._apply_reply(reply)

    def _exchange_in_process(self, msg, final):
        """:meth:`_exchange` by function call (the in-process path,
        :mod:`iosched.engine.inproc`): the scheduler gets the message as it
        would parse it from the wire and answers as the engine would parse
        it from the wire; the watchdog bounds its time."""
        t0 = time.perf_counter()
        wire = batsim_numbers(msg)
        self._sent_events = wire["events"]
        watchdog = self.watchdog
        watchdog.arm()
        try:
            reply = self.peer.exchange(wire)
        except SchedulerError as exc:
            raise SchedulerError(f"{exc} (t={self.now:.6f})", exc.details, exc.code) from None
        finally:
            watchdog.disarm()
        if self._transcript is not None:
            self._transcript.write('{"dir": "engine->sched", "msg": ' + json.dumps(wire) + "}\n")
            self._transcript.write('{"dir": "sched->engine", "msg": ' + json.dumps(reply) + "}\n")
        self.sched_wall += time.perf_counter() - t0
        if self.cfg.progress_file is not None and t0 >= self._progress_next:
            self._write_progress(t0)
        if final:
            return
        self._apply_reply(reply)

    def _timeout_message(self) -> str:
        """The watchdog's line (:class:`SchedulerTimeout`'s text)."""
        events = self._sent_events
        return (f"no reply from the in-process scheduler within {self.cfg.sched_timeout:g} s "
                f"(t={self.now:.6f}, {len(events)} event(s) sent, first: "
                f"{events[0]['type'] if events else '-'})")

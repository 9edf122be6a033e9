"""The in-process path: the scheduler runs inside the engine's process and
exchanges messages with it by function call (``iosched-batsim
--in-process-scheduler FILE``; ``iosched run --in-process``).

The two-process path (the default) is a ZeroMQ REQ/REP ping-pong: the
engine's server actor sends a message and blocks until the scheduler
answers. Here the server actor calls the scheduler instead
(:meth:`Peer.exchange`), synchronously, in its own thread (SimGrid's
Python actors are threads; only one of them runs at a time, and the
scheduler never calls SimGrid): what the scheduler computes and when is
what it computes over the socket, without the socket, the second process
and their system calls.

What the scheduler is given is what the wire gives it: the engine's message
with every number as Batsim writes it (:func:`iosched.batsim.wire.batsim_numbers`,
which builds new dicts and lists throughout, the structure
``json.loads(json.dumps(...))`` of it would give; the JSON text itself is
skipped). What the engine is given back is what the wire gives it: the
scheduler's reply serialized with ``json.dumps`` *when the scheduler sends
it* (pybatsim's ``NetworkHandler.send``) and parsed with ``json.loads``, so
a reply holding a value JSON cannot encode fails as it does over the socket
(a scheduler error), a tuple becomes a list, a numpy float a float, and
nothing the scheduler changes after sending reaches the engine.

Two layers load and drive the scheduler file (:func:`load_peer`):

* :class:`PybatsimPeer`, for any pybatsim scheduler file: the file is
  loaded as pybatsim's launcher loads it
  (``batsim.tools.launcher.instanciate_scheduler``), and pybatsim's own
  ``Batsim`` class runs it, unmodified, with a network object whose
  ``recv`` and ``send`` are function calls (:class:`_FunctionCallNetwork`)
  instead of its ZeroMQ ``NetworkHandler``;
* :class:`DirectPeer`, for iosched's own schedulers (subclasses of
  :class:`iosched.sched.adapter.PybatsimScheduler`): the engine's events go
  to the adapter's handlers through :class:`DirectBatsim`, pybatsim's
  ``Batsim`` API (the same methods, the same job objects and counters)
  without its message layer: no network object, no message text built for
  a log level that is off, and the reply's events handed back as objects
  normalized by :func:`wire_copy` instead of JSON text.

The exit status of the scheduler is kept: pybatsim's launcher exits with 1
when the jobs submitted are not all scheduled, rejected or changed
(``launch_scheduler``); so does the in-process run (:meth:`Peer.finish`),
after the outputs are written, as the two-process run fails after the
engine wrote them. A scheduler that raises, or calls ``sys.exit``, is a
:class:`SchedulerError` (one line; its traceback is printed before it).
A scheduler that does not answer within ``--sched-timeout`` is stopped by
:class:`Watchdog`, which ends the process with the engine's timeout message
and status.
"""

from __future__ import annotations

import io
import json
import logging
import os
import sys
import threading
import time
import traceback
from datetime import timedelta
from pathlib import Path

from iosched.batsim.wire import not_json, parse_reply
from iosched.checks import all_finite_numbers
from iosched.errors import InputError, ProtocolError, one_line

__all__ = ["DirectBatsim", "DirectPeer", "LAYERS", "Peer", "PybatsimPeer", "SchedulerError",
           "check_layer", "lean_log_records", "Watchdog", "load_peer", "wire_copy"]

#: The values of ``--in-process-layer``: ``auto`` (direct for iosched's own
#: schedulers, pybatsim for any other file), ``pybatsim``, ``direct``.
LAYERS = ("auto", "pybatsim", "direct")


def check_layer(layer, where: str = "--in-process-layer") -> None:
    """Check that *layer* is one of :data:`LAYERS`.

    :param where: names the option or argument in the message.
    :raises InputError: another value (one line).
    """
    if layer not in LAYERS:
        raise InputError(f"{where}: expected one of {', '.join(LAYERS)}, got {layer!r}")

#: pybatsim's launcher log format (``batsim.cmds.launcher.main``)
_LOG_FORMAT = "[pybatsim - %(asctime)s - %(name)s - %(levelname)s] %(message)s"


class SchedulerError(RuntimeError):
    """The in-process scheduler raised or exited: one line; ``details`` holds
    its traceback (printed before the line), ``code`` the status."""

    def __init__(self, message: str, details: str = "", code: int = 5):
        super().__init__(message)
        self.details = details
        self.code = code


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        code = exc.code
        if code is None or isinstance(code, int):
            return f"called sys.exit({code if code is not None else ''})"
        return f"called sys.exit({code!r})"
    text = one_line(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _failure(what: str, exc: BaseException) -> SchedulerError:
    details = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return SchedulerError(f"scheduler {what}: {_describe(exc)}", details)


class _NotPlain(Exception):
    """A value :func:`_plain_copy` leaves to JSON."""


#: nesting depth beyond which :func:`wire_copy` leaves the copy to JSON
#: (which also detects circular references)
_MAX_DEPTH = 64


def _plain_copy(obj, depth):
    """A copy of dicts with ``str`` keys, lists (a subclass of ``list``
    copied as the list its iteration gives, which is what ``json`` writes),
    and ``str``, ``int``, ``float``, ``bool`` or None values of exactly
    these types; anything else raises :class:`_NotPlain`. A list of finite
    ints and floats is copied whole, checked in C
    (:func:`iosched.checks.all_finite_numbers`: a burst-buffer job's
    matrices hold ``m ** 2`` numbers); other lists element by element.

    :raises ValueError: a NaN or an infinity (:func:`iosched.batsim.wire.not_json`).
    """
    t = type(obj)
    if t is dict:
        if depth > _MAX_DEPTH:
            raise _NotPlain
        out = {}
        for k, v in obj.items():
            if type(k) is not str:
                raise _NotPlain
            tv = type(v)
            if tv is float:
                if v - v != 0.0:    # NaN or an infinity: not JSON
                    raise not_json(v)
                out[k] = v
            elif tv is str or tv is int or tv is bool or v is None:
                out[k] = v
            else:
                out[k] = _plain_copy(v, depth + 1)
        return out
    if t is list or isinstance(obj, list):  # a subclass: the burst-buffer family's Numbers
        if depth > _MAX_DEPTH:
            raise _NotPlain
        out = list(obj)     # a subclass: what its iteration gives
        if all_finite_numbers(out):
            return out
        for i, v in enumerate(out):     # element by element (nested values, a NaN)
            tv = type(v)
            if tv is float:
                if v - v != 0.0:
                    raise not_json(v)
            elif not (tv is str or tv is int or tv is bool or v is None):
                out[i] = _plain_copy(v, depth + 1)
        return out
    if t is float:
        if obj - obj != 0.0:
            raise not_json(obj)
        return obj
    if t is str or t is int or t is bool or obj is None:
        return obj
    raise _NotPlain


def wire_copy(obj):
    """What the engine parses from a reply the scheduler sent:
    ``json.loads(json.dumps(obj))``.

    The common case (dicts with string keys, lists, strings, numbers,
    booleans and None of exactly these types, and subclasses of ``list``,
    which ``json`` writes as the list their iteration gives) is copied without the JSON
    text: the same values in new containers, which is what the text would
    give (a float's ``repr`` reads back as the same float). Anything else
    (a tuple, a numpy number, another subclass, a non-string key, a cycle)
    goes through the text, read as the engine reads a reply
    (:func:`iosched.batsim.wire.parse_reply`). NaN and the infinities are
    refused on both ways, as Batsim 4.2.1 refuses the text ``json.dumps``
    writes for them.

    :raises TypeError: as ``json.dumps`` (a value JSON cannot encode).
    :raises ValueError: as ``json.dumps`` (a circular reference), or a NaN
        or an infinity (:func:`iosched.batsim.wire.not_json`).
    """
    try:
        return _plain_copy(obj, 0)
    except (_NotPlain, RecursionError):
        return parse_reply(json.dumps(obj))


def configure_logging(verbosity: str) -> None:
    """pybatsim's launcher's logging set-up for ``-v verbosity``
    (``logging.basicConfig`` with its format and level).

    :raises InputError: an unknown level name.
    """
    level = logging.getLevelName(str(verbosity).upper())
    if not isinstance(level, int):
        raise InputError(f"--scheduler-verbosity: unknown level {verbosity!r} "
                         "(debug, info, warning, error, critical)")
    logging.basicConfig(format=_LOG_FORMAT, level=level)


def lean_log_records() -> None:
    """Stop the ``logging`` module from collecting, for every record, what
    pybatsim's log format (:data:`_LOG_FORMAT`: time, logger, level,
    message) never prints: the calling source line (``logging._srcfile =
    None``: no ``sys._getframe`` walk), the thread, the process and the
    multiprocessing process names (``logging.logThreads``,
    ``logProcesses``, ``logMultiprocessing``). These are the settings of
    the logging HOWTO's "Optimization" section; the lines written are the
    same. Process-wide: the processes that run iosched's own schedulers on
    the direct layer (``iosched-batsim --in-process-scheduler``, the
    direct launcher) call it, since their records use that format; a
    pybatsim scheduler on pybatsim's layer keeps the standard records, as
    under pybatsim's launcher. At pybatsim's default ``-v info`` (two log
    lines per message) it takes about 0.6 s of scheduler CPU off the full
    KTH-SP2 trace with ``easy`` (docs/benchmarks.md, 2026-11-28 (day)).
    Raises nothing. Source: Python 3.11's Logging HOWTO, "Optimization";
    pybatsim 3.2.1's format (``batsim/cmds/launcher.py``)."""
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


class PybatsimLines:
    """The direct layer's two INFO lines per message ("Message Received
    from Batsim: ...", "Message Sent to Batsim: ..."), written to the
    stream as ``logging`` would write them, without building a record.

    :meth:`info` writes the line itself only when the logging set-up is
    pybatsim's launcher's (:func:`configure_logging`: the root logger's one
    plain ``StreamHandler`` with the plain ``Formatter`` of
    :data:`_LOG_FORMAT` and the default time format; no handler, filter or
    cut of propagation on the way up from ``logger``): then the line is
    the one ``Logger.info`` writes there, the same text
    (``time.strftime("%Y-%m-%d %H:%M:%S")`` of ``time.localtime``, then
    ``,`` and the milliseconds as ``LogRecord`` computes them), one
    ``write`` of line and terminator and a flush under the handler's lock,
    as ``StreamHandler.emit``. Any other set-up (a handler or filter the
    scheduler added, another format, a level that drops INFO) goes through
    ``logger.info`` unchanged. On the full KTH-SP2 trace at ``-v info``
    (112,820 lines) ``Logger.info`` held a quarter of the in-process run's
    samples on its simulation thread; with this class the run takes 0.86
    of its time (docs/benchmarks.md, 2026-11-28 (noon)).

    Raises nothing of its own; what the stream raises sends the line
    through ``logger.info``, whose handler reports it as ``logging`` does.
    Source: Python 3.11's ``logging`` (``LogRecord.__init__``,
    ``Formatter.formatTime``, ``StreamHandler.emit``); pybatsim 3.2.1's
    format (``batsim/cmds/launcher.py``) and log calls (``batsim/batsim.py``).
    """

    _TIME_FORMAT = logging.Formatter.default_time_format
    _MSEC_FORMAT = logging.Formatter.default_msec_format

    def __init__(self, logger: logging.Logger):
        self.logger = logger
        self._second = None     # the second of the cached time text
        self._text = ""

    def _handler(self):
        """The root's ``StreamHandler`` when the set-up is pybatsim's, else None."""
        c = self.logger
        while c.parent is not None:     # up to the root
            if c.handlers or c.filters or c.disabled or not c.propagate:
                return None
            c = c.parent
        if c.filters or c.disabled or len(c.handlers) != 1:
            return None
        h = c.handlers[0]
        f = h.formatter
        if (type(h) is not logging.StreamHandler or h.filters or h.level > logging.INFO
                or type(f) is not logging.Formatter or f._fmt != _LOG_FORMAT or f.datefmt is not None
                or type(f._style) is not logging.PercentStyle or f.converter is not time.localtime
                or f.default_time_format != self._TIME_FORMAT
                or f.default_msec_format != self._MSEC_FORMAT):
            return None
        return h

    def info(self, message: str) -> None:
        """``self.logger.info(message)``, for a logger enabled for INFO."""
        h = self._handler()
        if h is None:
            self.logger.info(message)
            return
        ct = time.time()
        second = int(ct)
        if second != self._second:
            self._second = second
            self._text = time.strftime(self._TIME_FORMAT, time.localtime(ct))
        line = _LOG_FORMAT % {
            "asctime": self._MSEC_FORMAT % (self._text, int((ct - second) * 1000)),
            "name": self.logger.name, "levelname": "INFO", "message": message}
        try:
            with h.lock:
                h.stream.write(line + h.terminator)
                h.stream.flush()
        except Exception:  # noqa: BLE001 - logging's own handling reports it
            self.logger.info(message)


def instantiate(path, options: dict):
    """The scheduler object of a pybatsim scheduler file, built as pybatsim's
    launcher builds it (``instanciate_scheduler``: the class named after the
    file, called with the options).

    :raises SchedulerError: the file cannot be imported, has no such class,
        or its constructor raises (its traceback in ``details``).
    """
    from batsim.tools.launcher import instanciate_scheduler

    out = io.StringIO()
    try:
        real = sys.stdout
        tee = _Tee(real, out)  # the launcher prints its "No such scheduler" reasons
        sys.stdout = tee
        try:
            return instanciate_scheduler(str(path), options=options)
        finally:
            sys.stdout = real
            tee.streams = (real,)  # a stream kept by the scheduler's code stays plain stdout
    except BaseException as exc:  # noqa: BLE001 - import errors, SystemExit, anything
        if isinstance(exc, KeyboardInterrupt):
            raise
        err = _failure(f"{Path(path).name} could not be loaded", exc)
        printed = [ln for ln in out.getvalue().splitlines() if ln.strip()]
        if isinstance(exc, SystemExit) and printed:
            err = SchedulerError(f"{err} ({printed[-1].strip()})", err.details)
        raise err from None


class _Tee(io.TextIOBase):
    def __init__(self, *streams):
        self.streams = streams

    def write(self, s):
        for st in self.streams:
            st.write(s)
        return len(s)

    def flush(self):
        for st in self.streams:
            st.flush()


class Watchdog:
    """Stops the process when the scheduler does not answer in time.

    The server actor arms it before each call of the scheduler and disarms
    it after (two stores); a daemon thread checks it a few times a second
    and, past the deadline, writes ``message()`` on stderr and ends the
    process with status 4 (as the engine does on a ZeroMQ timeout). A
    scheduler stuck in Python code still lets that thread run (the
    interpreter switches threads every few ms).
    """

    def __init__(self, timeout: float, message, status: int = 4):
        self.timeout = float(timeout)
        self.message = message
        self.status = status
        self.deadline = None
        self._thread = threading.Thread(target=self._watch, name="iosched-watchdog", daemon=True)
        self._thread.start()

    def arm(self) -> None:
        self.deadline = time.monotonic() + self.timeout

    def disarm(self) -> None:
        self.deadline = None

    def _watch(self):
        step = min(0.25, max(self.timeout / 4, 0.01))
        while True:
            time.sleep(step)
            d = self.deadline
            if d is not None and time.monotonic() > d:
                try:
                    sys.stdout.flush()
                    sys.stderr.write(f"iosched-batsim: {self.message()}\n")
                    sys.stderr.flush()
                finally:
                    os._exit(self.status)


class Peer:
    """A scheduler inside the engine's process.

    :meth:`exchange` is called by the engine's server actor with each
    message (as the wire gives it) and returns the reply (as the wire gives
    it); :meth:`finish` after the last one returns the status pybatsim's
    launcher would exit with.
    """

    #: the layer's name (``pybatsim`` or ``direct``)
    layer = ""

    def __init__(self, scheduler, path):
        self.scheduler = scheduler
        self.path = Path(path)
        self.t0 = None

    def exchange(self, msg: dict) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def counts(self):
        """pybatsim's ``Batsim`` object (its job counters), or None before
        the first message."""
        return None

    def finish(self) -> int:
        """What pybatsim's ``launch_scheduler`` prints after the simulation,
        and its exit status: 1 when the jobs submitted are not all scheduled,
        rejected or changed, else 0."""
        bs = self.counts()
        if bs is None:
            return 0
        ran = str(timedelta(seconds=time.time() - (self.t0 or time.time())))
        print("Simulation ran for: " + ran)
        print("Job submitted:", bs.nb_jobs_submitted,
              ", scheduled:", bs.nb_jobs_scheduled,
              ", rejected:", bs.nb_jobs_rejected,
              ", killed:", bs.nb_jobs_killed,
              ", changed:", len(bs.jobs_manually_changed),
              ", timeout:", bs.nb_jobs_timeout,
              ", success", bs.nb_jobs_successful,
              ", complete:", bs.nb_jobs_completed)
        sys.stdout.flush()
        if bs.nb_jobs_submitted != (bs.nb_jobs_scheduled + bs.nb_jobs_rejected
                                    + len(bs.jobs_manually_changed)):
            return 1
        return 0

    def unbalanced_reason(self) -> str:
        bs = self.counts()
        return (f"scheduler {self.path.name} exited with code 1 (pybatsim's launcher: "
                f"{bs.nb_jobs_submitted} jobs submitted, {bs.nb_jobs_scheduled} scheduled, "
                f"{bs.nb_jobs_rejected} rejected, {len(bs.jobs_manually_changed)} changed)")


# --------------------------------------------------------------------------
# pybatsim's own Batsim class, with a network by function call


_PYBATSIM_LOGGER = logging.getLogger("batsim.batsim")


class _Message(dict):
    """The message handed to pybatsim's ``Batsim``: a plain dict to every
    reader, whose text is only built when pybatsim's log line that formats
    it is on (``_read_bat_msg`` formats every message it receives for
    ``logger.info``, whatever the level)."""

    __slots__ = ()

    def __format__(self, spec):
        if spec or _PYBATSIM_LOGGER.isEnabledFor(logging.INFO):
            return format(dict.__repr__(self), spec)
        return ""


class _FunctionCallNetwork:
    """pybatsim's ``NetworkHandler`` (batsim/network.py) by function call:
    ``recv`` returns the message the engine hands over, ``send`` keeps the
    reply as the engine would parse its JSON text (:func:`wire_copy`)."""

    def __init__(self, socket_endpoint=None, timeout=None, type=None):
        self.socket_endpoint = socket_endpoint
        self.timeout = timeout
        self.connection = self  # "open"
        self.inbox = None
        self.outbox = None

    def bind(self):
        pass

    def connect(self):
        pass

    def close(self):
        pass

    def subscribe(self, pattern=b""):
        pass

    def recv(self, blocking=False):
        msg, self.inbox = self.inbox, None
        return msg

    def recv_string(self, blocking=False):
        msg = self.recv(blocking)
        return None if msg is None else json.dumps(msg)

    def send(self, msg):
        # NetworkHandler.send is send_string(json.dumps(msg)): the reply as
        # the engine parses that text, taken now (the scheduler may change
        # its objects after sending)
        self.outbox = wire_copy(msg)

    def send_string(self, msg):
        self.outbox = msg  # text: parsed by PybatsimPeer.exchange


class PybatsimPeer(Peer):
    """Any pybatsim scheduler file, run by pybatsim's ``Batsim`` class."""

    layer = "pybatsim"

    def __init__(self, scheduler, path):
        super().__init__(scheduler, path)
        self.network = _FunctionCallNetwork()
        self.bs = None

    def counts(self):
        return self.bs

    def _start(self):
        """pybatsim's ``Batsim(...)`` as ``launch_scheduler`` builds it; its
        constructor reads and answers the first message."""
        import batsim.batsim as pb

        net = self.network
        saved = pb.NetworkHandler
        pb.NetworkHandler = lambda *a, **k: net
        try:
            self.bs = pb.Batsim(self.scheduler, "in-process", None, None, validatingmachine=None)
        finally:
            pb.NetworkHandler = saved

    def exchange(self, msg: dict) -> dict:
        net = self.network
        net.inbox = _Message(msg)
        try:
            if self.bs is None:
                self.t0 = time.time()
                self._start()
            else:
                self.bs.do_next_event()
        except BaseException as exc:  # noqa: BLE001 - the scheduler's own failure
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise _failure(f"{self.path.name} failed", exc) from None
        reply, net.outbox = net.outbox, None
        if reply is None:
            raise SchedulerError(f"scheduler {self.path.name} sent no reply")
        if type(reply) is str:
            try:
                return parse_reply(reply)
            except (ValueError, RecursionError) as exc:
                raise ProtocolError(f"scheduler reply is not valid JSON: {exc}") from None
        return reply


# --------------------------------------------------------------------------
# the direct layer for iosched's own schedulers


def _pybatsim_job_class():
    from batsim.batsim import Job

    return Job


class DirectBatsim:
    """pybatsim's ``Batsim`` for iosched's own schedulers, without its
    message layer: built by :func:`make_direct_batsim` (a subclass of
    pybatsim's class, so that every API method the schedulers call,
    ``execute_job``, ``reject_jobs``, ``register_job``... is pybatsim's own),
    fed one message at a time by :meth:`handle`."""


def make_direct_batsim(scheduler):
    """A :class:`DirectBatsim` (a subclass of pybatsim's ``Batsim``) around
    ``scheduler``: the attributes pybatsim's constructor sets, without its
    network and without reading a message (the first :meth:`handle` does)."""
    from batsim.batsim import Batsim

    cls = _direct_class(Batsim)
    bs = cls.__new__(cls)
    bs._setup(scheduler)
    return bs


_DIRECT_CLASS = None


def _direct_class(Batsim):
    global _DIRECT_CLASS
    if _DIRECT_CLASS is not None:
        return _DIRECT_CLASS
    Job = _pybatsim_job_class()
    from procset import ProcSet

    SUBMITTED = Job.State.SUBMITTED
    IN_SUBMISSON = Job.State.IN_SUBMISSON
    TIMEOUT = Job.State.COMPLETED_WALLTIME_REACHED
    FAILED = Job.State.COMPLETED_FAILED
    SUCCESS = Job.State.COMPLETED_SUCCESSFULLY
    KILLED = Job.State.COMPLETED_KILLED
    UNKNOWN = Job.State.UNKNOWN
    STATES = Job.State.__members__
    from_json_dict = Job.from_json_dict

    class _Direct(Batsim, DirectBatsim):
        """See :class:`DirectBatsim`. :meth:`handle` is pybatsim 3.2.1's
        ``Batsim._read_bat_msg`` (batsim/batsim.py) with the message handed
        over instead of received and the reply returned instead of sent;
        the log calls build their text only when their level is on."""

        def _setup(self, scheduler):
            # Batsim.__init__ (pybatsim 3.2.1) up to its first _read_bat_msg
            self.logger = logging.getLogger("batsim.batsim")
            self._lines = PybatsimLines(self.logger)
            self.running_simulation = False
            self.network = None
            self.event_publisher = None
            self.jobs = dict()
            sys.setrecursionlimit(10000)
            self.scheduler = scheduler
            self.nb_jobs_submitted_from_batsim = 0
            self.nb_jobs_submitted_from_scheduler = 0
            self.nb_jobs_submitted = 0
            self.nb_jobs_killed = 0
            self.nb_jobs_rejected = 0
            self.nb_jobs_scheduled = 0
            self.nb_jobs_in_submission = 0
            self.nb_jobs_completed = 0
            self.nb_jobs_successful = 0
            self.nb_jobs_failed = 0
            self.nb_jobs_timeout = 0
            self.jobs_manually_changed = set()
            self.no_more_static_jobs = False
            self.no_more_external_events = False
            self.use_storage_controller = False
            self.scheduler.bs = self
            self._started = False

        def handle(self, msg: dict):
            """One message in; returns ``(reply, finished)`` where reply is
            ``{"now", "events"}`` as pybatsim builds it (not yet copied)."""
            logger = self.logger
            info = logger.isEnabledFor(logging.INFO)
            if info:
                self._lines.info("Message Received from Batsim: {}".format(msg))
            self._current_time = msg["now"]
            self._events_to_send = []
            finished_received = False
            sched = self.scheduler
            sched.onBeforeEvents()
            for event in msg["events"]:
                event_type = event["type"]
                event_data = event.get("data", {})
                if event_type == "JOB_SUBMITTED":
                    job_id = event_data["job_id"]
                    json_dict = event_data["job"]
                    job = from_json_dict(json_dict)
                    profile = event_data["profile"] if "profile" in event_data else {}
                    job.job_state = SUBMITTED
                    self.nb_jobs_submitted += 1
                    if profile is not None:
                        if job.workload not in self.profiles:
                            self.profiles[job.workload] = {}
                        if job.profile not in self.profiles[job.workload]:
                            self.profiles[job.workload][job.profile] = profile
                    assert job.profile in self.profiles[job.workload]
                    job.profile_dict = self.profiles[job.workload][job.profile]
                    if job_id in self.jobs:
                        logger.warning(
                            "The job '{}' was alredy in the job list. "
                            "Probaly a dynamic job that was submitted "
                            "before: \nOld job: {}\nNew job: {}".format(
                                job_id, self.jobs[job_id], job))
                        if self.jobs[job_id].job_state == IN_SUBMISSON:
                            self.nb_jobs_in_submission = self.nb_jobs_in_submission - 1
                        job.metadata = self.jobs[job_id].metadata
                        self.nb_jobs_submitted_from_scheduler += 1
                    else:
                        self.nb_jobs_submitted_from_batsim += 1
                    self.jobs[job_id] = job
                    if self.use_storage_controller and job.workload == "dyn-storage-controller":
                        pass
                    else:
                        sched.onJobSubmission(job)
                elif event_type == "JOB_COMPLETED":
                    job_id = event_data["job_id"]
                    j = self.jobs[job_id]
                    j.finish_time = event["timestamp"]
                    state = event_data["job_state"]
                    j.job_state = STATES[state] if state in STATES else UNKNOWN
                    j.return_code = event_data["return_code"]
                    if j.job_state == TIMEOUT:
                        self.nb_jobs_timeout += 1
                    elif j.job_state == FAILED:
                        self.nb_jobs_failed += 1
                    elif j.job_state == SUCCESS:
                        self.nb_jobs_successful += 1
                    elif j.job_state == KILLED:
                        self.nb_jobs_killed += 1
                    self.nb_jobs_completed += 1
                    if self.use_storage_controller and j.workload == "dyn-storage-controller":
                        self.storage_controller.data_staging_completed(j)
                    else:
                        sched.onJobCompletion(j)
                elif event_type == "REQUESTED_CALL":
                    sched.onRequestedCall()
                elif event_type == "NOTIFY":
                    notify_type = event_data["type"]
                    if notify_type == "no_more_static_job_to_submit":
                        self.no_more_static_jobs = True
                        sched.onNoMoreJobsInWorkloads()
                    elif notify_type == "no_more_external_event_to_occur":
                        self.no_more_external_events = True
                        sched.onNoMoreExternalEvents()
                    elif notify_type == "event_machine_unavailable":
                        sched.onNotifyEventMachineUnavailable(ProcSet.from_str(event_data["resources"]))
                    elif notify_type == "event_machine_available":
                        sched.onNotifyEventMachineAvailable(ProcSet.from_str(event_data["resources"]))
                    elif self.forward_unknown_events:
                        sched.onNotifyGenericEvent(event_data)
                    else:
                        raise Exception("Unknown NOTIFY type {}".format(notify_type))
                elif event_type == "SIMULATION_BEGINS":
                    self._begins(event_data)
                elif event_type == "SIMULATION_ENDS":
                    assert self.running_simulation, "No simulation is currently running"
                    self.running_simulation = False
                    logger.info("All jobs have been submitted and completed!")
                    finished_received = True
                    sched.onSimulationEnds()
                elif event_type == "JOB_KILLED":
                    killed_jobs = []
                    for jid in event_data["job_ids"]:
                        j = self.jobs[jid]
                        if len(event_data["job_progress"]) != 0:
                            j.progress = event_data["job_progress"][jid]
                            killed_jobs.append(j)
                    if len(killed_jobs) != 0:
                        sched.onJobsKilled(killed_jobs)
                else:
                    self._rare_event(event, event_type, event_data)
            sched.onNoMoreEvents()
            if len(self._events_to_send) > 0:
                self._events_to_send = sorted(self._events_to_send, key=lambda event: event["timestamp"])
            new_msg = {"now": self._current_time, "events": self._events_to_send}
            if info:
                self._lines.info("Message Sent to Batsim: {}".format(new_msg))
            return new_msg, finished_received

        def _begins(self, event_data):
            assert not self.running_simulation, \
                "A simulation is already running (is more than one instance of Batsim active?!)"
            self.running_simulation = True
            self.nb_resources = event_data["nb_resources"]
            self.nb_compute_resources = event_data["nb_compute_resources"]
            self.nb_storage_resources = event_data["nb_storage_resources"]
            compute_resources = event_data["compute_resources"]
            storage_resources = event_data["storage_resources"]
            self.machines = {"compute": compute_resources, "storage": storage_resources}
            self.batconf = event_data["config"]
            self.allow_compute_sharing = event_data["allow_compute_sharing"]
            self.allow_storage_sharing = event_data["allow_storage_sharing"]
            self.profiles_forwarded_on_submission = self.batconf["profiles-forwarded-on-submission"]
            self.dynamic_job_registration_enabled = self.batconf["dynamic-jobs-enabled"]
            self.ack_of_dynamic_jobs = self.batconf["dynamic-jobs-acknowledged"]
            self.forward_unknown_events = self.batconf["forward-unknown-events"]
            if self.dynamic_job_registration_enabled:
                self.logger.warning(
                    "Dynamic registration of jobs is ENABLED. The scheduler must send a NOTIFY "
                    "event of type 'registration_finished' to let Batsim end the simulation.")
            res_key = "resources_data" if "resources_data" in event_data else "compute_resources"
            self.compute_resources = {res["id"]: res for res in event_data[res_key]}
            self.storage_resources = {res["id"]: res for res in event_data["storage_resources"]}
            self.profiles = event_data["profiles"]
            self.workloads = event_data["workloads"]
            self.scheduler.onSimulationBegins()

        def _rare_event(self, event, event_type, event_data):
            sched = self.scheduler
            if event_type == "FROM_JOB_MSG":
                j = self.jobs[event_data["job_id"]]
                sched.onJobMessage(event["timestamp"], j, event_data["msg"])
            elif event_type == "RESOURCE_STATE_CHANGED":
                for interval in event_data["resources"].split(" "):
                    nodes = interval.split("-")
                    if len(nodes) == 1:
                        node_interval = (int(nodes[0]), int(nodes[0]))
                    elif len(nodes) == 2:
                        node_interval = (int(nodes[0]), int(nodes[1]))
                    else:
                        raise Exception("Multiple intervals are not supported")
                    sched.onMachinePStateChanged(node_interval, event_data["state"])
            elif event_type == "ANSWER":
                if "consumed_energy" in event_data:
                    sched.onReportEnergyConsumed(event_data["consumed_energy"])
            elif event_type == "ADD_RESOURCES":
                sched.onAddResources(ProcSet.from_str(event_data["resources"]))
            elif event_type == "REMOVE_RESOURCES":
                sched.onRemoveResources(ProcSet.from_str(event_data["resources"]))
            else:
                raise Exception("Unknown event type {}".format(event_type))

    _DIRECT_CLASS = _Direct
    return _Direct


class DirectPeer(Peer):
    """iosched's own schedulers (adapter subclasses), driven by
    :class:`DirectBatsim`."""

    layer = "direct"

    def __init__(self, scheduler, path):
        super().__init__(scheduler, path)
        self.bs = None

    def counts(self):
        return self.bs

    def handle(self, msg: dict) -> tuple[dict, bool]:
        """One message in (as the wire gives it); returns ``(reply,
        finished)``: the reply as pybatsim builds it (not copied: serialize
        it before the scheduler runs again) and whether the message held
        SIMULATION_ENDS. The first message makes the :class:`DirectBatsim`;
        after its reply is sent, the caller calls
        ``self.scheduler.onAfterBatsimInit()``, as pybatsim's ``Batsim``
        does after its first exchange. Exceptions are the scheduler's own."""
        if self.bs is None:
            self.t0 = time.time()
            self.bs = make_direct_batsim(self.scheduler)
        return self.bs.handle(msg)

    def exchange(self, msg: dict) -> dict:
        try:
            first = self.bs is None
            reply, _ = self.handle(msg)
            reply = wire_copy(reply)  # sent before onAfterBatsimInit, as pybatsim does
            if first:
                self.scheduler.onAfterBatsimInit()
            return reply
        except BaseException as exc:  # noqa: BLE001 - the scheduler's own failure
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise _failure(f"{self.path.name} failed", exc) from None


def is_adapter_scheduler(scheduler) -> bool:
    """Whether ``scheduler`` is one of iosched's own schedulers (built on
    :class:`iosched.sched.adapter.PybatsimScheduler`)."""
    try:
        from iosched.sched.adapter import PybatsimScheduler
    except ImportError:  # pragma: no cover
        return False
    return isinstance(scheduler, PybatsimScheduler)


def load_peer(path, options: dict | None = None, layer: str = "auto",
              verbosity: str = "info") -> Peer:
    """Load a pybatsim scheduler file for the in-process path.

    :param path: the scheduler file (what ``pybatsim FILE`` takes).
    :param options: its options (pybatsim's ``-o``).
    :param layer: one of :data:`LAYERS`; ``direct`` needs one of iosched's
        own schedulers.
    :param verbosity: pybatsim's ``-v`` level (``info`` is its default).
    :raises InputError: a bad layer or verbosity, ``direct`` with another
        scheduler.
    :raises SchedulerError: the file cannot be loaded (as pybatsim's
        launcher would fail).
    """
    check_layer(layer)
    configure_logging(verbosity)
    path = Path(path)
    options = dict(options or {})
    scheduler = instantiate(path, options)
    print("Scheduler: {} ({})".format(scheduler.__class__.__name__, options))
    sys.stdout.flush()
    direct = is_adapter_scheduler(scheduler)
    if layer == "direct" and not direct:
        raise InputError(f"--in-process-layer direct: {path.name} is not one of iosched's own "
                         "schedulers (iosched.sched.adapter.PybatsimScheduler); use auto or pybatsim")
    if layer == "pybatsim" or not direct:
        return PybatsimPeer(scheduler, path)
    return DirectPeer(scheduler, path)

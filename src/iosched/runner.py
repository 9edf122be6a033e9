"""Run one Batsim simulation: a pybatsim scheduler and an engine, supervised.

Two entry points:

* :func:`run_simulation` -- start a pybatsim scheduler (``python -m
  batsim.cmds.launcher``) and an engine (the embedded ``iosched-batsim`` by
  default, or any Batsim 4.2-compatible command such as ``batsim``) on a free
  loopback port, wait for both, and clean up whatever happens.
* :func:`run_robin` -- execute a *robin* experiment file (the YAML format of
  batexpe's ``robin``: ``batcmd``, ``schedcmd``, ``output-dir`` and four
  timeouts) with robin's semantics, so that the same file can be replayed
  with the real Batsim and robin.

Process handling (both entry points):

* Each process is started in its own session (``setsid``), so that it and
  all its descendants form one process group and one session that the runner
  can find and kill without touching anything else.
* The runner never reaps a process leader before its session is cleaned
  (``waitid(..., WNOWAIT)`` peeks at exit statuses), so the session id cannot
  be reused by an unrelated process while the runner still uses it.
* On Linux the runner marks itself as a *child subreaper* while simulations
  run, so descendants orphaned by a dying scheduler or engine are re-parented
  to the runner, which kills and reaps them (this also keeps zombies away in
  containers whose PID 1 does not reap). The attribute is cleared when the
  last concurrent run ends. A descendant that calls ``setsid`` itself is
  only found if it was seen in a tree snapshot (taken every 0.2 s).
* Cleanup = SIGTERM to every process of both sessions and recorded trees,
  up to :data:`KILL_GRACE` s for them to exit, then SIGKILL to whatever is
  left (sessions re-scanned, so late forks are caught), then reap. It runs
  after success too (robin does the same), so no daemon outlives a run.
* The ``iosched run`` command also turns SIGTERM / SIGHUP / Ctrl-C into a
  clean exit (one line, status 128+signal or 130) after this cleanup.

Ready detection in :func:`run_simulation`: the scheduler is started first and
is *ready* when a process of its tree has a TCP socket in LISTEN state on the
chosen port (read with psutil; a connect attempt would prove nothing, since a
ZeroMQ REP socket accepts TCP connections before the application reads).
Only then is the engine started. This turns "the scheduler crashed while
importing" or "the scheduler never binds" into a precise one-line error
instead of an engine-side timeout. If the scheduler dies before binding
because the port was taken in the meantime (the unavoidable race of
:func:`free_port`), the run is retried on another port (3 attempts).

Timeouts (all in seconds) follow robin: *simulation* bounds the whole run;
when the first process ends successfully the other one has *success* s to
end, when it ends unsuccessfully the other one has *failure* s; a process
still running when its time is up is killed and the run fails.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import click
import psutil
import yaml

from iosched.affinity import claim_cpu, parse_cpu, spawning_on
from iosched.errors import InputError
from iosched.errors import one_line as _one_line

__all__ = [
    "RunError",
    "RunResult",
    "free_port",
    "run_simulation",
    "load_robin",
    "run_robin",
    "write_robin",
    "run_command",
    "ROBIN_FIELDS",
]

#: Robin's default simulation timeout (one week), used when none is given (s).
DEFAULT_SIMULATION_TIMEOUT = 604800.0
#: How long :func:`run_simulation` waits for the scheduler to listen (s).
DEFAULT_READY_TIMEOUT = 10.0
#: :func:`run_simulation`: time left to the second process after the first
#: one ended successfully (s). Robin's own default is 3600.
DEFAULT_SUCCESS_TIMEOUT = 60.0
#: :func:`run_simulation`: time left to the second process after the first
#: one failed (s). Robin's own default is 5.
DEFAULT_FAILURE_TIMEOUT = 1.0
#: Time between SIGTERM and SIGKILL when cleaning up (s).
KILL_GRACE = 2.0
#: ``-t`` given to the pybatsim launcher (ms): pybatsim's default of 2000 ms
#: aborts with "Batsim is not responding" whenever the engine computes for
#: more than 2 s between two messages. The runner bounds the run itself, so
#: this is only a large finite value that fits ZeroMQ's int32 RCVTIMEO
#: (about 23 days).
SCHEDULER_SOCKET_TIMEOUT_MS = 2_000_000_000
#: Robin fields, in the order robin writes them.
ROBIN_FIELDS = (
    "batcmd",
    "output-dir",
    "schedcmd",
    "simulation-timeout",
    "ready-timeout",
    "success-timeout",
    "failure-timeout",
)
#: Defaults of robin's command line, used for optional fields (s).
ROBIN_DEFAULTS = {
    "schedcmd": "",
    "simulation-timeout": 604800.0,
    "ready-timeout": 10.0,
    "success-timeout": 3600.0,
    "failure-timeout": 5.0,
}
_ROBIN_REQUIRED = ("batcmd", "output-dir")
_BATSIM_DEFAULT_SOCKET = "tcp://localhost:28000"
_BATSIM_DEFAULT_EXPORT = "out"
_POLL = 0.02  # s between two status checks
_TREE_EVERY = 0.2  # s between two snapshots of the process trees
_PORT_ATTEMPTS = 3
_MAX_REASON = 300  # characters of a log line quoted in an error message


class RunError(RuntimeError):
    """A simulation failed: a process exited non-zero, timed out or never got ready.

    The message is one line giving the reason. Attributes: ``returncodes``
    (process name -> exit code or None), ``pids`` (process name -> every pid
    seen in that process tree), ``logs`` (process name -> log path) and
    ``output_dir`` (Path or None).
    """

    def __init__(self, message, *, returncodes=None, pids=None, logs=None, output_dir=None):
        super().__init__(_one_line(message))
        self.returncodes = dict(returncodes or {})
        self.pids = {k: list(v) for k, v in (pids or {}).items()}
        self.logs = dict(logs or {})
        self.output_dir = output_dir


@dataclass
class RunResult:
    """Outcome of a successful run.

    ``jobs_csv``, ``schedule_csv`` and ``machine_states_csv`` are the paths of
    the engine's outputs for ``export_prefix`` (None when the engine did not
    write that file); ``wall_time`` is in s; return codes are None for a
    process that was not started (no scheduler in robin batexec mode);
    ``cpus`` is the CPU set both processes ran on (None: not pinned, see
    :mod:`iosched.affinity`).
    """

    output_dir: Path
    export_prefix: Path
    jobs_csv: Path | None
    schedule_csv: Path | None
    machine_states_csv: Path | None
    wall_time: float
    scheduler_returncode: int | None
    engine_returncode: int | None
    scheduler_cmd: list[str] | str | None
    engine_cmd: list[str] | str
    port: int | None
    logs: dict[str, Path] = field(default_factory=dict)
    pids: dict[str, list[int]] = field(default_factory=dict)
    cpus: list[int] | None = None


# --------------------------------------------------------------------------
# small helpers


def _fmt_s(seconds: float) -> str:
    """Format a duration in s for messages: 60 -> '60', 0.5 -> '0.5'."""
    return f"{seconds:g}"


def _last_line(*paths: Path | None, skip_xtrace: bool = False) -> str:
    """Last non-empty line of the first file of *paths* that has one ('' if none).

    With *skip_xtrace*, lines written by ``bash -x`` (``+ command``) are skipped.
    """
    for path in paths:
        if path is None:
            continue
        try:
            with open(path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - 65536))
                tail = f.read().decode("utf-8", errors="replace")
        except OSError:
            continue
        for line in reversed(tail.splitlines()):
            line = _one_line(line)
            if skip_xtrace and line.startswith("+") and line.lstrip("+").startswith(" "):
                continue
            if line:
                if len(line) > _MAX_REASON:
                    line = line[: _MAX_REASON - 3] + "..."
                return line
    return ""


def _check_seconds(value, what: str, *, positive: bool = False) -> float:
    """Validate a duration in s; raise InputError naming *what* if invalid."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{what}: expected a number of seconds, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        kind = "positive" if positive else "non-negative"
        raise InputError(f"{what}: expected a {kind} number of seconds, got {value:g}")
    return value


def free_port() -> int:
    """Return a TCP port that is free on 127.0.0.1 right now.

    The port is found by binding port 0 on the loopback interface and closing
    the socket, so another process may take it before the caller binds it
    (:func:`run_simulation` retries on another port in that case).
    Raises OSError if no socket can be bound.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------------
# subreaper (Linux): orphaned descendants come back to us, we reap them

_reaper_lock = threading.Lock()
_reaper_users = 0
_PR_SET_CHILD_SUBREAPER = 36


def _set_subreaper(flag: bool) -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, int(flag), 0, 0, 0)
    except Exception:  # pragma: no cover - best effort only
        pass


@contextmanager
def _subreaper():
    global _reaper_users
    with _reaper_lock:
        if _reaper_users == 0:
            _set_subreaper(True)
        _reaper_users += 1
    try:
        yield
    finally:
        with _reaper_lock:
            _reaper_users -= 1
            if _reaper_users == 0:
                _set_subreaper(False)


# --------------------------------------------------------------------------
# one supervised process


class _Child:
    """A process started in its own session, with its tree recorded."""

    def __init__(self, name: str, argv: list[str], out: Path, err: Path | None = None,
                 env: dict | None = None, cwd: str | None = None, xtrace: bool = False,
                 cpus: set[int] | None = None):
        self.name = name
        self.cpus = cpus
        self.xtrace = xtrace
        self.argv = argv
        self.out = out
        self.err = err
        self.env = env
        self.cwd = cwd
        self.popen: subprocess.Popen | None = None
        self.code: int | None = None
        self.seen: dict[int, psutil.Process] = {}

    @property
    def started(self) -> bool:
        return self.popen is not None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def start(self) -> None:
        """Start the process; raise RunError if it cannot be started."""
        out = err = None
        try:
            out = open(self.out, "wb")
            err = open(self.err, "wb") if self.err is not None else subprocess.STDOUT
            with spawning_on(self.cpus):
                self.popen = subprocess.Popen(
                    self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                    start_new_session=True, close_fds=True, env=self.env, cwd=self.cwd,
                )
        except OSError as e:
            raise RunError(f"cannot start {self.name} ({self.argv[0]}): "
                           f"{e.strerror or e}") from None
        finally:
            for f in (out, err):
                if f is not None and f is not subprocess.STDOUT:
                    f.close()
        try:
            self.seen[self.pid] = psutil.Process(self.pid)
        except psutil.Error:
            pass

    def status(self) -> int | None:
        """Exit code (negative signal number) if the process ended, else None.

        Does not reap the process (the session id stays reserved).
        """
        if self.code is not None or self.popen is None:
            return self.code
        code = None
        if hasattr(os, "waitid") and self.popen.returncode is None:
            try:
                r = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                r = None
                code = self.popen.poll()
            else:
                if r is not None and r.si_pid == self.pid:
                    code = r.si_status if r.si_code == os.CLD_EXITED else -r.si_status
        else:
            code = self.popen.poll()
        if code is not None:
            self.code = code
        return self.code

    def record_tree(self) -> None:
        """Remember every current descendant (for cleanup and reporting)."""
        root = self.seen.get(self.pid) if self.popen is not None else None
        if root is None:
            return
        try:
            for p in root.children(recursive=True):
                self.seen.setdefault(p.pid, p)
        except psutil.Error:
            pass

    def pids(self) -> list[int]:
        return sorted(self.seen)

    def last_line(self) -> str:
        paths = (self.err, self.out) if self.err else (self.out,)
        return _last_line(*paths, skip_xtrace=self.xtrace)

    def exit_reason(self) -> str:
        """One-line reason for a non-zero exit."""
        code = self.code
        if code is not None and code < 0:
            try:
                sig = signal.Signals(-code).name
            except ValueError:
                sig = str(-code)
            head = f"{self.name} was killed by signal {-code} ({sig})"
        else:
            head = f"{self.name} exited with code {code}"
        line = self.last_line()
        return f"{head}: {line}" if line else f"{head} (no output, see {self.out})"


def _is_alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _signal_all(procs: Iterable[psutil.Process], sig: int) -> None:
    for p in procs:
        try:
            p.send_signal(sig)
        except (psutil.Error, OSError):
            pass


def _wait_dead(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    alive = [p for p in procs if _is_alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(_POLL)
        alive = [p for p in alive if _is_alive(p)]
    return alive


def _cleanup(children: list[_Child], grace: float = KILL_GRACE) -> None:
    """Terminate, kill and reap every process of the children's sessions and trees."""
    started = [c for c in children if c.started]
    if not started:
        return
    me = os.getpid()
    sids = {c.pid for c in started}
    leaders = {c.pid for c in started}
    victims: dict[int, psutil.Process] = {}

    def collect() -> list[psutil.Process]:
        # recorded trees, current trees, and every process of the sessions
        for c in started:
            c.record_tree()
            for pid, p in c.seen.items():
                if pid != me:
                    victims.setdefault(pid, p)
        for p in psutil.process_iter():
            if p.pid == me or p.pid in victims:
                continue
            try:
                if os.getsid(p.pid) in sids:
                    victims[p.pid] = p
            except OSError:
                pass
        return [p for p in victims.values() if _is_alive(p)]

    _signal_all(collect(), signal.SIGTERM)
    _wait_dead(list(victims.values()), grace)
    for _ in range(3):  # SIGKILL whatever is left, including late forks
        alive = collect()
        if not alive:
            break
        _signal_all(alive, signal.SIGKILL)
        _wait_dead(alive, grace)
    # reap the leaders (Popen keeps their exit status)
    for c in started:
        try:
            c.popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (D state)
            continue
        if c.code is None:
            c.code = c.popen.returncode
    # reap orphans re-parented to us (subreaper), and only those of our sessions
    try:
        kids = psutil.Process(me).children()
    except psutil.Error:  # pragma: no cover
        kids = []
    for k in kids:
        if k.pid in leaders:
            continue
        ours = k.pid in victims and victims[k.pid].is_running()
        if not ours:
            try:
                ours = os.getsid(k.pid) in sids
            except OSError:
                ours = False
        if not ours:
            continue
        deadline = time.monotonic() + grace
        while True:
            try:
                pid, _ = os.waitpid(k.pid, os.WNOHANG)
            except ChildProcessError:
                break
            if pid or time.monotonic() >= deadline:
                break
            time.sleep(_POLL)


def _watch(children: list[_Child], deadline: float, timeout: float,
           success_timeout: float, failure_timeout: float) -> str | None:
    """Wait for every child; return None on success or the one-line failure reason.

    Robin's rules: *deadline* (monotonic s) bounds everything; once the first
    child ends, the others have *success_timeout* s (if it exited 0) or
    *failure_timeout* s (otherwise) to end.
    """
    reasons: dict[str, str] = {}
    first: _Child | None = None
    grace_end: float | None = None
    next_tree = 0.0
    done: set[str] = set()
    while True:
        now = time.monotonic()
        for c in children:
            if c.name in done or c.status() is None:
                continue
            done.add(c.name)
            if c.code != 0:
                reasons[c.name] = c.exit_reason()
            if first is None:
                first = c
                grace_end = now + (success_timeout if c.code == 0 else failure_timeout)
        # The engine's reason names the event at fault (a protocol error, a bad
        # input): prefer it to the scheduler's, which is often a consequence.
        reason = reasons.get("engine", reasons.get("batcmd"))
        if reason is None and reasons:
            reason = next(iter(reasons.values()))
        pending = [c for c in children if c.name not in done]
        if not pending:
            return reason
        if now >= deadline:
            return reason or f"simulation timed out after {_fmt_s(timeout)} s"
        if grace_end is not None and now >= grace_end:
            if reason is not None:
                return reason
            names = ", ".join(c.name for c in pending)
            return (f"{names} did not exit within {_fmt_s(success_timeout)} s "
                    f"(success timeout) after {first.name} ended successfully")
        if now >= next_tree:
            for c in pending:
                c.record_tree()
            next_tree = now + _TREE_EVERY
        time.sleep(_POLL)


def _error(reason: str, children: list[_Child], output_dir: Path | None) -> RunError:
    return RunError(
        reason,
        returncodes={c.name: c.code for c in children},
        pids={c.name: c.pids() for c in children if c.started},
        logs={c.name: c.out for c in children},
        output_dir=output_dir,
    )


# --------------------------------------------------------------------------
# run_simulation


def _resolve_scheduler(scheduler) -> tuple[Path, dict]:
    """Map a scheduler name or file to (absolute file, default options)."""
    text = str(scheduler)
    if not text:
        raise InputError("scheduler: empty name")
    path = Path(text).expanduser()
    if path.suffix == ".py" or os.sep in text or (os.altsep and os.altsep in text):
        if not path.is_file():
            raise InputError(f"scheduler: file not found: {text}")
        return path.resolve(), {}
    try:
        from iosched.sched.registry import resolve
    except ImportError as e:
        raise InputError(f"scheduler: unknown scheduler {text!r} "
                         f"(the scheduler registry is unavailable: {e})") from None
    try:
        resolved, defaults = resolve(text)
    except InputError:
        raise
    except (KeyError, ValueError, LookupError, OSError) as e:
        raise InputError(f"scheduler: unknown scheduler {text!r}: {_one_line(e)}") from None
    resolved = Path(resolved)
    if not resolved.is_file():
        raise InputError(f"scheduler: {text!r} maps to a missing file: {resolved}")
    return resolved.resolve(), dict(defaults or {})


#: Engine names accepted wherever an engine command is: ``embedded`` (this
#: package's ``iosched-batsim``, the default) and ``batsim`` (the real Batsim
#: 4.2.x found on PATH, e.g. in ``nix-shell nix/``).
ENGINES = ("embedded", "batsim")


def engine_command(engine) -> list[str]:
    """The argv prefix that starts an engine.

    :param engine: ``None`` or ``"embedded"`` (the embedded engine),
        ``"batsim"`` (the real Batsim on PATH), or any other command (string,
        split like a shell would, or argv list).
    :raises InputError: ``batsim`` is not on PATH; an empty or unsplittable
        command.
    """
    if engine is None or engine == "embedded":
        return [sys.executable, "-m", "iosched.engine.cli"]
    if engine == "batsim":
        found = shutil.which("batsim")
        if found is None:
            raise InputError("--engine batsim: no 'batsim' on PATH (use nix-shell nix/, or --engine embedded)")
        return [found]
    return _engine_prefix(engine)


def _engine_prefix(engine_cmd) -> list[str]:
    if engine_cmd is None or engine_cmd in ENGINES:
        return engine_command(engine_cmd)
    if isinstance(engine_cmd, (str, os.PathLike)):
        try:
            argv = shlex.split(os.fspath(engine_cmd))
        except ValueError as e:
            raise InputError(f"engine command: cannot split {engine_cmd!r}: {e}") from None
    else:
        argv = [os.fspath(a) for a in engine_cmd]
    if not argv:
        raise InputError("engine command: empty")
    return argv


def _input_file(path, what: str) -> Path:
    p = Path(os.fspath(path)).expanduser()
    if not p.is_file():
        raise InputError(f"{what}: file not found: {path}")
    return p.resolve()


def _listening(child: _Child, port: int) -> bool:
    """True if a process of *child*'s tree listens on TCP *port*."""
    child.record_tree()
    for p in list(child.seen.values()):
        try:
            conns = (p.net_connections(kind="tcp") if hasattr(p, "net_connections")
                     else p.connections(kind="tcp"))
        except psutil.Error:
            continue
        for c in conns:
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port:
                return True
    return False


def _wait_ready(sched: _Child, port: int, endpoint: str, ready_end: float,
                ready_timeout: float, deadline: float, timeout: float) -> tuple[str | None, bool]:
    """Wait until the scheduler listens; return (failure reason or None, retry?)."""
    while True:
        if _listening(sched, port):
            return None, False
        if sched.status() is not None:
            text = ""
            try:
                text = sched.out.read_text(errors="replace")
            except OSError:
                pass
            retry = "Address already in use" in text or "EADDRINUSE" in text
            line = sched.last_line()
            head = (f"scheduler exited with code {sched.code} before listening on {endpoint}"
                    if sched.code >= 0 else
                    f"scheduler was killed by signal {-sched.code} before listening on {endpoint}")
            return (f"{head}: {line}" if line else f"{head} (no output, see {sched.out})"), retry
        now = time.monotonic()
        if now >= deadline:
            return f"simulation timed out after {_fmt_s(timeout)} s", False
        if now >= ready_end:
            return (f"scheduler not ready after {_fmt_s(ready_timeout)} s: nothing listens "
                    f"on {endpoint} (see {sched.out})"), False
        time.sleep(_POLL)


def _write_json(path: Path, data) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _outputs(prefix: Path) -> tuple[Path | None, Path | None, Path | None]:
    def one(suffix):
        p = Path(f"{prefix}{suffix}")
        return p if p.is_file() else None

    return one("_jobs.csv"), one("_schedule.csv"), one("_machine_states.csv")


def run_simulation(platform, workload, scheduler, output_dir, options=None, engine_cmd=None,
                   engine_args=(), timeout=None, ready_timeout=DEFAULT_READY_TIMEOUT, quiet=True,
                   success_timeout=DEFAULT_SUCCESS_TIMEOUT,
                   failure_timeout=DEFAULT_FAILURE_TIMEOUT, cpu="auto") -> RunResult:
    """Run one simulation: a pybatsim scheduler and an engine on a loopback port.

    *platform* is a SimGrid platform XML, *workload* a Batsim workload JSON
    (or a list of them, passed as repeated ``-w``), *scheduler* a name known
    to :mod:`iosched.sched.registry` or the path of a pybatsim scheduler file,
    *options* a dict passed to the scheduler as JSON (``-o``; merged over the
    registry's defaults). *engine_cmd* is the engine command prefix (argv list
    or shell-like string; default: the embedded engine ``python -m
    iosched.engine.cli``; ``"batsim"`` runs the real Batsim); the runner adds
    ``-p -w -e OUTPUT_DIR/out -s tcp://127.0.0.1:PORT`` (and ``-q`` when
    *quiet*), then *engine_args*, then any flag the scheduler file needs and
    *engine_args* lacks (:func:`iosched.sched.registry.required_engine_args`:
    ``--enable-dynamic-jobs`` for ``schedulers/burstbuffer.py``).

    The output directory (and its parents) is created. It receives
    ``sched.log`` and ``engine.log`` (stdout and stderr of each process),
    ``command.json`` (exact command lines, environment additions, cwd, port
    and timeouts, for replay) and ``robin.yaml`` (the same run as a robin
    file, see :func:`write_robin`), then the engine's ``out_*.csv``.

    Timeouts in s: *timeout* bounds the whole run, from the scheduler's start
    (default one week, like robin); *ready_timeout* bounds the time until the
    scheduler listens on its port; *success_timeout* / *failure_timeout* are
    what the second process is given after the first one ended with code 0 /
    non-zero.

    *cpu* places both processes on one CPU (see :mod:`iosched.affinity`:
    the protocol is a ping-pong, and one CPU spares a cross-CPU wake-up per
    thread hand-over): ``"auto"`` claims a CPU no other run holds,
    ``"none"`` leaves placement to the OS, a number names the CPU. The
    simulated results never depend on it; ``command.json`` records the CPU.

    Returns a :class:`RunResult`. Raises :class:`InputError` for bad
    arguments (missing file, unknown scheduler, bad timeout, bad *cpu*, options not a
    JSON object, output directory that cannot be created) and
    :class:`RunError` when a process cannot start, never listens, exits
    non-zero, is killed or times out; in every case both process trees are
    gone when the function returns or raises.
    """
    timeout = DEFAULT_SIMULATION_TIMEOUT if timeout is None else timeout
    timeout = _check_seconds(timeout, "timeout", positive=True)
    ready_timeout = _check_seconds(ready_timeout, "ready timeout", positive=True)
    success_timeout = _check_seconds(success_timeout, "success timeout")
    failure_timeout = _check_seconds(failure_timeout, "failure timeout")
    cpu = parse_cpu(cpu)
    platform = _input_file(platform, "platform")
    if isinstance(workload, (str, os.PathLike)):
        workloads = [_input_file(workload, "workload")]
    else:
        workloads = [_input_file(w, "workload") for w in workload]
        if not workloads:
            raise InputError("workload: none given")
    if options is not None and not isinstance(options, dict):
        raise InputError(f"options: expected a JSON object, got {type(options).__name__}")
    sched_file, defaults = _resolve_scheduler(scheduler)
    merged = {**defaults, **(options or {})}
    try:
        options_json = json.dumps(merged, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InputError(f"options: not serialisable as JSON: {e}") from None
    engine_prefix = _engine_prefix(engine_cmd)
    engine_args = [os.fspath(a) for a in engine_args]
    from iosched.sched.registry import required_engine_args
    engine_args += [a for a in required_engine_args(sched_file) if a not in engine_args]

    out = Path(os.fspath(output_dir)).expanduser().resolve()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"output directory {output_dir}: cannot create: "
                         f"{e.strerror or e}") from None
    prefix = out / "out"
    env_add = {"PYTHONUNBUFFERED": "1"}
    env = dict(os.environ, **env_add)
    cwd = os.getcwd()

    t0 = time.monotonic()
    deadline = t0 + timeout
    ready_end = t0 + ready_timeout
    children: list[_Child] = []
    with _subreaper(), claim_cpu(cpu) as cpus:
        for attempt in range(_PORT_ATTEMPTS):
            port = free_port()
            endpoint = f"tcp://127.0.0.1:{port}"
            sched_argv = [sys.executable, "-m", "batsim.cmds.launcher", str(sched_file),
                          "-s", endpoint, "-t", str(SCHEDULER_SOCKET_TIMEOUT_MS),
                          "-o", options_json]
            if quiet:
                sched_argv += ["-v", "warning"]
            engine_argv = [*engine_prefix, "-p", str(platform)]
            for w in workloads:
                engine_argv += ["-w", str(w)]
            engine_argv += ["-e", str(prefix), "-s", endpoint]
            if quiet:
                engine_argv.append("-q")
            engine_argv += engine_args
            _write_json(out / "command.json", {
                "cwd": cwd,
                "port": port,
                "environment": env_add,
                "scheduler": {"file": str(sched_file), "options": merged,
                              "argv": sched_argv, "shell": shlex.join(sched_argv),
                              "log": "sched.log"},
                "engine": {"argv": engine_argv, "shell": shlex.join(engine_argv),
                           "log": "engine.log"},
                "timeouts_s": {"simulation": timeout, "ready": ready_timeout,
                               "success": success_timeout, "failure": failure_timeout},
                "start_order": ["scheduler", "engine"],
                "cpus": sorted(cpus) if cpus else None,
            })
            write_robin(out / "robin.yaml", engine_argv, sched_argv, out,
                        simulation_timeout=timeout, ready_timeout=ready_timeout,
                        success_timeout=success_timeout, failure_timeout=failure_timeout)
            sched = _Child("scheduler", sched_argv, out / "sched.log", env=env, cpus=cpus)
            engine = _Child("engine", engine_argv, out / "engine.log", env=env, cpus=cpus)
            children = [sched, engine]
            retry = False
            try:
                sched.start()
                reason, retry = _wait_ready(sched, port, endpoint, ready_end, ready_timeout,
                                            deadline, timeout)
                if reason is None:
                    engine.start()
                    reason = _watch(children, deadline, timeout, success_timeout,
                                    failure_timeout)
            except RunError as e:
                reason = str(e)
            finally:
                _cleanup(children)
            if reason is not None and retry and attempt + 1 < _PORT_ATTEMPTS:
                continue
            if reason is not None:
                raise _error(reason, children, out)
            break
    jobs, schedule, states = _outputs(prefix)
    return RunResult(
        output_dir=out, export_prefix=prefix, jobs_csv=jobs, schedule_csv=schedule,
        machine_states_csv=states, wall_time=time.monotonic() - t0,
        scheduler_returncode=sched.code, engine_returncode=engine.code,
        scheduler_cmd=sched_argv, engine_cmd=engine_argv, port=port,
        logs={"scheduler": sched.out, "engine": engine.out},
        pids={"scheduler": sched.pids(), "engine": engine.pids()},
        cpus=sorted(cpus) if cpus else None,
    )


# --------------------------------------------------------------------------
# robin files


def load_yaml_mapping(path, what: str, fields: str) -> tuple[Path, dict]:
    """Read a YAML file with ``yaml.safe_load`` and check that it is a mapping.

    :param path: the file (str or PathLike).
    :param what: its kind for messages (``"robin file"``, ``"campaign file"``).
    :param fields: the expected fields, for the message when it is not a mapping.
    :returns: ``(Path, dict)``.
    :raises InputError: one line naming the file: missing, unreadable, invalid
        YAML (with line and column) or not a mapping.
    """
    p = Path(os.fspath(path))
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{p}: {what} not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{p}: cannot read {what}: {getattr(e, 'strerror', None) or e}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise InputError(f"{p}: invalid YAML: {yaml_error_text(e)}") from None
    if not isinstance(data, dict):
        raise InputError(f"{p}: expected a mapping with {fields}")
    return p, data


def yaml_error_text(e: yaml.YAMLError) -> str:
    """One line describing a YAML parse error, with its line and column."""
    mark = getattr(e, "problem_mark", None)
    problem = getattr(e, "problem", None) or str(e)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return _one_line(f"{problem}{where}")


def _parse_batcmd(batcmd: str, where: str) -> dict:
    """Extract socket endpoint, export prefix and --batexec from a Batsim command."""
    try:
        tokens = shlex.split(batcmd, comments=True)
    except ValueError as e:
        raise InputError(f"{where}: field 'batcmd': cannot split the command: {e}") from None
    socket_ep = _BATSIM_DEFAULT_SOCKET
    export = _BATSIM_DEFAULT_EXPORT
    batexec = False
    i = 0
    while i < len(tokens):
        t = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if t in ("-s", "--socket-endpoint") and nxt is not None:
            socket_ep, i = nxt, i + 2
            continue
        if t in ("-e", "--export") and nxt is not None:
            export, i = nxt, i + 2
            continue
        if t.startswith("--socket-endpoint="):
            socket_ep = t.split("=", 1)[1]
        elif t.startswith("--export="):
            export = t.split("=", 1)[1]
        elif t.startswith("-s") and len(t) > 2 and not t.startswith("--"):
            socket_ep = t[2:]
        elif t.startswith("-e") and len(t) > 2 and not t.startswith("--"):
            export = t[2:]
        elif t == "--batexec":
            batexec = True
        i += 1
    port = None
    if socket_ep.startswith("tcp://"):
        tail = socket_ep.rsplit(":", 1)
        if len(tail) == 2 and tail[1].isdigit():
            port = int(tail[1])
            if not 0 < port < 65536:
                raise InputError(f"{where}: field 'batcmd': socket port out of range: "
                                 f"{socket_ep}")
    return {"socket": socket_ep, "port": port, "export": export, "batexec": batexec}


def load_robin(path) -> dict:
    """Read and validate a robin experiment file.

    Returns a dict with the seven robin fields (``batcmd``, ``output-dir``,
    ``schedcmd``, ``simulation-timeout``, ``ready-timeout``,
    ``success-timeout``, ``failure-timeout``; timeouts as floats in s) and,
    under ``"batsim"``, what was read from ``batcmd`` (socket endpoint, port,
    export prefix, batexec flag). ``batcmd`` and ``output-dir`` are required;
    the others default to robin's command-line defaults (robin itself
    requires all seven in a file, so :func:`write_robin` always writes
    them). A missing or null ``schedcmd`` means no scheduler (Batsim's
    ``--batexec`` mode, as in robin).

    The file is read with ``yaml.safe_load``. Raises :class:`InputError`
    naming the file and the field for: unreadable file, invalid YAML, not a
    mapping, unknown field, missing required field, non-string command,
    negative or non-numeric timeout, unsplittable ``batcmd``, ``schedcmd``
    empty without ``--batexec`` or set with it.
    """
    p, data = load_yaml_mapping(path, "robin file", f"the robin fields {', '.join(ROBIN_FIELDS)}")
    for key in data:
        if key not in ROBIN_FIELDS:
            raise InputError(f"{p}: unknown field {key!r} (robin fields: "
                             f"{', '.join(ROBIN_FIELDS)})")
    for key in _ROBIN_REQUIRED:
        if key not in data:
            raise InputError(f"{p}: missing required field {key!r}")
    spec: dict = {}
    for key in ("batcmd", "output-dir"):
        value = data[key]
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{p}: field {key!r}: expected a non-empty string, got {value!r}")
        spec[key] = value
    sched = data.get("schedcmd", ROBIN_DEFAULTS["schedcmd"])
    if sched is None:
        sched = ""
    if not isinstance(sched, str):
        raise InputError(f"{p}: field 'schedcmd': expected a string, got {sched!r}")
    spec["schedcmd"] = sched
    for key in ROBIN_FIELDS[3:]:
        value = data.get(key, ROBIN_DEFAULTS[key])
        spec[key] = _check_seconds(value, f"{p}: field {key!r}",
                                   positive=(key == "simulation-timeout"))
    bat = _parse_batcmd(spec["batcmd"], str(p))
    if not spec["schedcmd"].strip() and not bat["batexec"]:
        raise InputError(f"{p}: field 'schedcmd': empty or missing, but batcmd has no "
                         f"--batexec (a scheduler is needed)")
    if spec["schedcmd"].strip() and bat["batexec"]:
        raise InputError(f"{p}: field 'schedcmd': set, but batcmd uses --batexec "
                         f"(no scheduler may run)")
    spec["batsim"] = bat
    return spec


def write_robin(path, batcmd, schedcmd, output_dir, simulation_timeout=604800.0,
                ready_timeout=10.0, success_timeout=3600.0, failure_timeout=5.0) -> Path:
    """Write a robin experiment file replaying a run; return its path.

    *batcmd* and *schedcmd* are shell command strings or argv lists (joined
    with ``shlex.join``); *schedcmd* may be None or "" for Batsim's batexec
    mode. *output_dir* is written as an absolute path. Timeouts are in s
    (defaults: robin's). All seven robin fields are written, in robin's
    order, so ``robin FILE`` accepts the file as well as ``iosched run FILE``.
    To replay with the real Batsim, the engine command (first word(s) of
    ``batcmd``) can be replaced by ``batsim``: the rest of the line uses
    Batsim 4.2's options.

    Raises InputError for an empty command or a bad timeout, OSError if the
    file cannot be written.
    """
    def as_cmd(cmd, key):
        if cmd is None:
            return ""
        if not isinstance(cmd, str):
            cmd = shlex.join(os.fspath(a) for a in cmd)
        if key == "batcmd" and not cmd.strip():
            raise InputError(f"{path}: field 'batcmd': empty command")
        return cmd

    data = {
        "batcmd": as_cmd(batcmd, "batcmd"),
        "output-dir": str(Path(os.fspath(output_dir)).expanduser().resolve()),
        "schedcmd": as_cmd(schedcmd, "schedcmd"),
    }
    for key, value in zip(ROBIN_FIELDS[3:], (simulation_timeout, ready_timeout,
                                             success_timeout, failure_timeout)):
        v = _check_seconds(value, f"{path}: field {key!r}",
                           positive=(key == "simulation-timeout"))
        data[key] = int(v) if v.is_integer() else v
    text = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=1 << 20,
                          allow_unicode=True)
    target = Path(os.fspath(path))
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)
    return target


def _port_in_use(port: int) -> bool:
    """True if something listens on TCP *port* (any address)."""
    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.Error, OSError):
        conns = None
    if conns is not None:
        return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
                   for c in conns)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:  # pragma: no cover
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _engine_on_port(port: int) -> int | None:
    """Pid of a running Batsim-like engine whose socket endpoint uses *port*."""
    names = {"batsim", "iosched-batsim"}
    me = os.getpid()
    for p in psutil.process_iter(["cmdline"]):
        if p.pid == me:
            continue
        cmd = p.info.get("cmdline") or []
        if not cmd:
            continue
        is_engine = any(os.path.basename(t) in names for t in cmd[:2]) or \
            "iosched.engine.cli" in cmd[:3]
        if not is_engine:
            continue
        try:
            info = _parse_batcmd(shlex.join(cmd), "process")
        except InputError:
            continue
        if info["port"] == port:
            return p.pid
    return None


def _wait_context(port: int | None, ready_timeout: float) -> str | None:
    """Robin's ready check: port free and no other engine on it; reason if not."""
    if port is None:
        return None
    end = time.monotonic() + ready_timeout
    while True:
        busy = _port_in_use(port)
        other = None if busy else _engine_on_port(port)
        if not busy and other is None:
            return None
        if time.monotonic() >= end:
            what = (f"port {port} is still in use" if busy
                    else f"another engine (pid {other}) still uses port {port}")
            return f"context not ready after {_fmt_s(ready_timeout)} s (ready timeout): {what}"
        time.sleep(0.1)


def run_robin(path, cpu="auto") -> RunResult:
    """Execute a robin experiment file with robin's semantics; return a RunResult.

    Like robin: the output directory and its ``cmd/`` and ``log/``
    subdirectories are created; ``batcmd`` and ``schedcmd`` are written to
    ``cmd/batsim.bash`` and ``cmd/sched.bash`` and run as ``bash -eux FILE``
    (they are the user's own shell commands), each in its own session, with
    logs ``log/batsim.log`` (engine stderr; stdout goes to
    ``log/batsim.out.log``), ``log/sched.out.log`` and ``log/sched.err.log``.
    Before starting, the runner waits up to ``ready-timeout`` s for the
    Batsim socket port (from ``-s`` in ``batcmd``, default 28000) to be free
    and unused by another engine. ``simulation-timeout`` bounds the
    simulation; when one process ends with 0 the other has
    ``success-timeout`` s, when it ends non-zero ``failure-timeout`` s. The
    run succeeds only if both exit 0. Relative paths are relative to the
    current directory, as with robin. Unlike robin, both commands run on one
    CPU by default (*cpu*, as in :func:`run_simulation`).

    Raises :class:`InputError` for a bad file (see :func:`load_robin`) or an
    output directory that cannot be created, :class:`RunError` for a failed,
    killed or timed-out run or a context that never got ready.
    """
    cpu = parse_cpu(cpu)
    spec = load_robin(path)
    out = Path(spec["output-dir"]).expanduser()
    try:
        for d in (out, out / "cmd", out / "log"):
            d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{path}: field 'output-dir': cannot create {out}: "
                         f"{e.strerror or e}") from None
    out = out.resolve()
    bat = spec["batsim"]
    shell = shutil.which("bash") or "/bin/sh"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    timeout = spec["simulation-timeout"]
    with _subreaper(), claim_cpu(cpu) as cpus:
        reason = _wait_context(bat["port"], spec["ready-timeout"])
        if reason is not None:
            raise RunError(reason, output_dir=out)
        bat_file = out / "cmd" / "batsim.bash"
        bat_file.write_text(spec["batcmd"] + "\n", encoding="utf-8")
        bat_file.chmod(0o755)
        engine = _Child("batcmd", [shell, "-eux", str(bat_file)], out / "log" / "batsim.out.log",
                        out / "log" / "batsim.log", env=env, xtrace=True, cpus=cpus)
        children = [engine]
        sched = None
        if spec["schedcmd"].strip():
            sched_file = out / "cmd" / "sched.bash"
            sched_file.write_text(spec["schedcmd"] + "\n", encoding="utf-8")
            sched_file.chmod(0o755)
            sched = _Child("schedcmd", [shell, "-eux", str(sched_file)],
                           out / "log" / "sched.out.log", out / "log" / "sched.err.log", env=env,
                           xtrace=True, cpus=cpus)
            children = [sched, engine]
        t0 = time.monotonic()
        reason = None
        try:
            for c in children:
                c.start()
            reason = _watch(children, t0 + timeout, timeout, spec["success-timeout"],
                            spec["failure-timeout"])
        except RunError as e:
            reason = str(e)
        finally:
            _cleanup(children)
        if reason is not None:
            raise _error(reason, children, out)
    prefix = Path(bat["export"]).expanduser().resolve()
    jobs, schedule, states = _outputs(prefix)
    return RunResult(
        output_dir=out, export_prefix=prefix, jobs_csv=jobs, schedule_csv=schedule,
        machine_states_csv=states, wall_time=time.monotonic() - t0,
        scheduler_returncode=sched.code if sched else None, engine_returncode=engine.code,
        scheduler_cmd=spec["schedcmd"] or None, engine_cmd=spec["batcmd"], port=bat["port"],
        logs={c.name: (c.err or c.out) for c in children},
        pids={c.name: c.pids() for c in children},
        cpus=sorted(cpus) if cpus else None,
    )


# --------------------------------------------------------------------------
# command line: iosched run


class _OneLineCommand(click.Command):
    """A click command whose usage errors are one line on stderr (exit 2)."""

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:
            click.echo(f"iosched run: {_one_line(e.format_message())}", err=True)
            raise click.exceptions.Exit(2) from None


class _Terminated(BaseException):
    """Raised by the SIGTERM/SIGHUP handler of ``iosched run`` (args: signal number)."""


@contextmanager
def _signals_as_exit():
    """Turn SIGTERM/SIGHUP into _Terminated so that runs clean up their processes."""
    def handler(signum, frame):
        raise _Terminated(signum)

    old = {}
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is None:
            continue
        try:
            old[sig] = signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread
            pass
    try:
        yield
    finally:
        for sig, h in old.items():
            try:
                signal.signal(sig, h)
            except (ValueError, OSError):  # pragma: no cover
                pass


def _print_metrics(result: RunResult, no_metrics: bool) -> None:
    """Write and print the run's metrics; utilization counts the compute
    nodes of the engine command (storage and master hosts excluded, roles
    given with ``-r`` included; :func:`iosched.metrics.compute_hosts_of_argv`)
    when its platform is readable."""
    if no_metrics:
        return
    if result.jobs_csv is None:
        raise RunError(f"the engine wrote no {result.export_prefix.name}_jobs.csv in "
                       f"{result.export_prefix.parent}")
    try:
        from iosched.analysis.format import format_table
        from iosched.analysis.metrics_file import write_metrics
    except ImportError as e:
        click.echo(f"iosched run: metrics skipped (iosched.metrics unavailable: "
                   f"{_one_line(e)})", err=True)
        return
    from iosched.metrics import compute_hosts_of_argv

    # the engine command's compute hosts: its platform, -r roles, -m, --mmax
    argv = result.engine_cmd
    if isinstance(argv, str):  # a robin batcmd (a shell command)
        try:
            argv = shlex.split(argv)
        except ValueError:
            argv = []
    nb_res = compute_hosts_of_argv(argv)
    metrics = write_metrics(result.export_prefix.parent, prefix=result.export_prefix.name,
                            nb_resources=nb_res)
    click.echo(format_table(metrics))


@click.command("run", cls=_OneLineCommand)
@click.argument("robin_file", required=False, type=click.Path(dir_okay=False))
@click.option("-p", "--platform", help="SimGrid platform XML.")
@click.option("-w", "--workload", multiple=True, help="Batsim workload JSON (repeatable).")
@click.option("-s", "--scheduler", help="Scheduler name (fcfs, easy, ...) or pybatsim file.")
@click.option("--options", "options_json", help="Scheduler options as a JSON object.")
@click.option("-o", "--output", help="Output directory (created if needed).")
@click.option("--timeout", type=float, default=None,
              help="Simulation timeout in s (default: one week).")
@click.option("--ready-timeout", type=float, default=DEFAULT_READY_TIMEOUT, show_default=True,
              help="Time allowed to the scheduler to listen, in s.")
@click.option("--success-timeout", type=float, default=DEFAULT_SUCCESS_TIMEOUT,
              show_default=True, help="Time left to the second process after the first "
              "one succeeded, in s.")
@click.option("--failure-timeout", type=float, default=DEFAULT_FAILURE_TIMEOUT,
              show_default=True, help="Time left to the second process after the first "
              "one failed, in s.")
@click.option("--engine", "engine", default=None,
              help="Engine: 'embedded' (default), 'batsim' (the real Batsim on PATH) or a command.")
@click.option("--engine-arg", "engine_args", multiple=True,
              help="Extra engine argument (repeatable), e.g. --engine-arg=--enable-dynamic-jobs.")
@click.option("--verbose", is_flag=True, help="Do not pass -q to the engine.")
@click.option("--no-metrics", is_flag=True, help="Do not compute and print metrics.")
@click.option("--cpu", default="auto", show_default=True, metavar="auto|none|N",
              help="Run the engine and the scheduler on one CPU: auto claims a CPU no other "
                   "run holds, none leaves placement to the OS, N names the CPU.")
@click.pass_context
def run_command(ctx, robin_file, platform, workload, scheduler, options_json, output, timeout,
                ready_timeout, success_timeout, failure_timeout, engine, engine_args, verbose,
                no_metrics, cpu):
    """Run one simulation (scheduler + engine), or a robin experiment file.

    \b
    iosched run -p PLATFORM.xml -w WORKLOAD.json -s easy -o DIR [--timeout S]
    iosched run ROBIN.yaml
    """
    try:
        with _signals_as_exit():
            if robin_file is not None:
                given = [name for name, v in (("--platform", platform), ("--workload", workload),
                                               ("--scheduler", scheduler), ("--output", output),
                                               ("--options", options_json),
                                               ("--timeout", timeout), ("--engine", engine),
                                               ("--engine-arg", engine_args)) if v]
                if given:
                    raise InputError(f"{', '.join(given)} cannot be combined with a robin file "
                                     f"({robin_file})")
                result = run_robin(robin_file, cpu=cpu)
            else:
                for name, v in (("--platform", platform), ("--workload", workload),
                                ("--scheduler", scheduler), ("--output", output)):
                    if not v:
                        raise InputError(f"missing {name} (or give a robin file)")
                options = None
                if options_json is not None:
                    try:
                        options = json.loads(options_json)
                    except json.JSONDecodeError as e:
                        raise InputError(f"--options: invalid JSON: {e}") from None
                    if not isinstance(options, dict):
                        raise InputError("--options: expected a JSON object such as "
                                         "'{\"key\": 1}'")
                result = run_simulation(
                    platform, list(workload), scheduler, output, options=options,
                    engine_cmd=engine, engine_args=engine_args, timeout=timeout,
                    ready_timeout=ready_timeout, quiet=not verbose,
                    success_timeout=success_timeout, failure_timeout=failure_timeout, cpu=cpu)
            click.echo(f"iosched run: simulation done in {result.wall_time:.2f} s, "
                       f"outputs in {result.output_dir}")
            _print_metrics(result, no_metrics)
    except InputError as e:
        click.echo(f"iosched run: {_one_line(e)}", err=True)
        ctx.exit(2)
    except RunError as e:
        click.echo(f"iosched run: {_one_line(e)}", err=True)
        ctx.exit(1)
    except OSError as e:
        where = f" ({e.filename})" if getattr(e, "filename", None) else ""
        click.echo(f"iosched run: {e.strerror or _one_line(e)}{where}", err=True)
        ctx.exit(1)
    except click.exceptions.Exit:
        raise
    except KeyboardInterrupt:  # the processes were already cleaned up
        click.echo("iosched run: interrupted", err=True)
        ctx.exit(130)
    except _Terminated as e:
        signum = e.args[0]
        click.echo(f"iosched run: terminated by {signal.Signals(signum).name}", err=True)
        ctx.exit(128 + signum)
    except Exception as e:  # last resort: still one line, no traceback
        click.echo(f"iosched run: {type(e).__name__}: {_one_line(e)}", err=True)
        ctx.exit(1)

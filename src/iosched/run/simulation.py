"""Run one simulation: a pybatsim scheduler and an engine, supervised.

:func:`run_simulation` starts a pybatsim scheduler (``python -m
batsim.cmds.launcher``) and an engine (the embedded ``iosched-batsim`` by
default, or any Batsim 4.2-compatible command such as ``batsim``, see
:func:`engine_command`) on a free loopback port, waits for both, and cleans
up whatever happens (:mod:`iosched.run.supervise`). The output folder gets
the run record ``command.json`` (:mod:`iosched.record`, with the engine
command's compute hosts, :mod:`iosched.run.hosts`) and the same run as a
robin file (:func:`iosched.run.robin.write_robin`).

Ready detection: the scheduler is started first and is *ready* when a
process of its tree has a TCP socket in LISTEN state on the chosen port
(read with psutil; a connect attempt would prove nothing, since a ZeroMQ REP
socket accepts TCP connections before the application reads). Only then is
the engine started. This turns "the scheduler crashed while importing" or
"the scheduler never binds" into a precise one-line error instead of an
engine-side timeout. If the scheduler dies before binding because the port
was taken in the meantime (the unavoidable race of :func:`free_port`), the
run is retried on another port (3 attempts).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import socket
import sys
import time
from pathlib import Path

import psutil

from iosched.checks import check_finite
from iosched.engine.export import check_outputs_writable
from iosched.engine.inproc import LAYERS, check_layer
from iosched.errors import InputError, one_line
from iosched.record import write_record
from iosched.run.affinity import claim_cpu, parse_cpu
from iosched.run.hosts import compute_hosts_of_argv
from iosched.run.result import RunError, RunResult, engine_outputs
from iosched.run.robin import write_robin
from iosched.run.supervise import (
    POLL,
    Child,
    check_seconds,
    cleanup,
    fmt_s,
    run_children,
    run_error,
    subreaper,
    watch,
)
from iosched.sched.options import IO_RECORD
from iosched.schedulers.registry import (check_options, declared_options, required_engine_args,
                                         resolve, shipped)

__all__ = [
    "IN_PROCESS_FLAGS",
    "DEFAULT_SIMULATION_TIMEOUT",
    "DEFAULT_READY_TIMEOUT",
    "DEFAULT_SUCCESS_TIMEOUT",
    "DEFAULT_FAILURE_TIMEOUT",
    "ENGINES",
    "engine_command",
    "free_port",
    "resolve_scheduler",
    "run_simulation",
    "strip_in_process_flags",
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
#: ``-t`` given to the pybatsim launcher (ms): pybatsim's default of 2000 ms
#: aborts with "Batsim is not responding" whenever the engine computes for
#: more than 2 s between two messages. The runner bounds the run itself, so
#: this is only a large finite value that fits ZeroMQ's int32 RCVTIMEO
#: (about 23 days).
SCHEDULER_SOCKET_TIMEOUT_MS = 2_000_000_000
_PORT_ATTEMPTS = 3


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
# run_simulation


def resolve_scheduler(scheduler) -> tuple[Path, dict]:
    """Map a scheduler name or file to (absolute file, default options).

    :raises InputError: unknown name, missing file, or pybatsim (which runs
        every scheduler file) not installed.
    """
    if importlib.util.find_spec("batsim") is None:
        raise InputError("pybatsim is not installed: pip install --no-deps pybatsim==3.2.1 "
                         "(README, Installing with pip)")
    text = str(scheduler)
    if not text:
        raise InputError("scheduler: empty name")
    path = Path(text).expanduser()
    if path.suffix == ".py" or os.sep in text or (os.altsep and os.altsep in text):
        if not path.is_file():
            raise InputError(f"scheduler: file not found: {text}")
        return path.resolve(), {}
    try:
        resolved, defaults = resolve(text)
    except InputError:
        raise
    except (KeyError, ValueError, LookupError, OSError) as e:
        raise InputError(f"scheduler: unknown scheduler {text!r}: {one_line(e)}") from None
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


def _listening(child: Child, port: int) -> bool:
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


def _wait_ready(sched: Child, port: int, endpoint: str, ready_end: float,
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
            return f"simulation timed out after {fmt_s(timeout)} s", False
        if now >= ready_end:
            return (f"scheduler not ready after {fmt_s(ready_timeout)} s: nothing listens "
                    f"on {endpoint} (see {sched.out})"), False
        time.sleep(POLL)


def run_simulation(platform, workload, scheduler, output_dir, options=None, engine_cmd=None,
                   engine_args=(), timeout=None, ready_timeout=DEFAULT_READY_TIMEOUT, quiet=True,
                   success_timeout=DEFAULT_SUCCESS_TIMEOUT,
                   failure_timeout=DEFAULT_FAILURE_TIMEOUT, cpu="auto",
                   in_process=False, io_record=True, layer="auto") -> RunResult:
    """Run one simulation: a pybatsim scheduler and an engine on a loopback port.

    *platform* is a SimGrid platform XML, *workload* a Batsim workload JSON
    (or a list of them, passed as repeated ``-w``), *scheduler* a name known
    to :mod:`iosched.schedulers.registry` or the path of a pybatsim scheduler file,
    *options* a dict passed to the scheduler as JSON (``-o``; merged over the
    registry's defaults). *engine_cmd* is the engine command prefix (argv list
    or shell-like string; default: the embedded engine ``python -m
    iosched.engine.cli``; ``"batsim"`` runs the real Batsim); the runner adds
    ``-p -w -e OUTPUT_DIR/out -s tcp://127.0.0.1:PORT`` (and ``-q`` when
    *quiet*), then *engine_args*, then any flag the scheduler file needs and
    *engine_args* lacks (:func:`iosched.schedulers.registry.required_engine_args`:
    ``--enable-dynamic-jobs`` for ``schedulers/burstbuffer.py``).

    The output directory (and its parents) is created. It receives
    ``sched.log`` and ``engine.log`` (stdout and stderr of each process),
    ``command.json`` (the run record, :mod:`iosched.record`: exact
    command lines, environment additions, cwd, port and timeouts, for replay,
    and the engine command's compute hosts) and ``robin.yaml`` (the same run
    as a robin file, see :func:`iosched.run.robin.write_robin`), then the
    engine's ``out_*.csv``.

    Timeouts in s: *timeout* bounds the whole run, from the scheduler's start
    (default one week, like robin); *ready_timeout* bounds the time until the
    scheduler listens on its port; *success_timeout* / *failure_timeout* are
    what the second process is given after the first one ended with code 0 /
    non-zero.

    *cpu* places both processes on one CPU (see :mod:`iosched.run.affinity`:
    the protocol is a ping-pong, and one CPU spares a cross-CPU wake-up per
    thread hand-over): ``"auto"`` claims a CPU no other run holds,
    ``"none"`` leaves placement to the OS, a number names the CPU. The
    simulated results never depend on it; ``command.json`` records the CPU.

    *in_process* (embedded engine only): run the scheduler inside the
    engine's process, called by function (:mod:`iosched.engine.inproc`): one
    process (``engine``, its log ``engine.log`` holds the scheduler's output
    too), no socket, the same outputs byte for byte (the wall-clock columns
    of ``out_schedule.csv`` aside). *ready_timeout*, *success_timeout* and
    *failure_timeout* do not apply. ``command.json`` then has
    ``"in_process": true``, the engine command that ran, and under
    ``scheduler.argv`` the pybatsim launcher command the two-process run
    would use (not run); ``robin.yaml`` replays the run in robin's batexec
    mode (the engine command alone).

    *layer* (one of :data:`RUN_LAYERS`): how the scheduler handles the
    messages. ``auto`` (the default): iosched's shipped schedulers with the
    direct layer (:mod:`iosched.run.direct_launcher` on two processes;
    in-process, ``--in-process-layer auto``), any other file with
    pybatsim's own launcher (in-process: the direct layer for any file
    whose scheduler is one of iosched's, as the engine's ``auto``);
    ``pybatsim``: pybatsim's launcher (in-process: its ``Batsim`` class)
    for every file; ``direct``: the direct layer, refusing a file that is
    not one of iosched's schedulers. The outputs are the same byte for
    byte whatever the layer.

    *io_record*: a scheduler of the core (a shipped one, whose options
    :func:`iosched.schedulers.registry.declared_options` knows) gets the
    option ``io_record`` = the output directory, unless *options* give it
    (null: none), and writes its I/O record there at the end
    (``io_phases.csv``, ``io_holds.csv``, ``io_inputs.csv``:
    :mod:`iosched.sched.iorecord`, ``docs/outputs.md``); it changes no
    decision. False: no record.

    Returns a :class:`RunResult`. Raises :class:`InputError` for bad
    arguments (missing file, unknown scheduler, bad timeout, bad *cpu*, options not a
    JSON object or holding a non-finite number, output directory that cannot be
    created or an output path such as ``out_jobs.csv`` that cannot be
    written) and
    :class:`RunError` when a process cannot start, never listens, exits
    non-zero, is killed or times out; in every case both process trees are
    gone when the function returns or raises.
    """
    timeout = DEFAULT_SIMULATION_TIMEOUT if timeout is None else timeout
    timeout = check_seconds(timeout, "timeout", positive=True)
    ready_timeout = check_seconds(ready_timeout, "ready timeout", positive=True)
    success_timeout = check_seconds(success_timeout, "success timeout")
    failure_timeout = check_seconds(failure_timeout, "failure timeout")
    cpu = parse_cpu(cpu)
    check_layer(layer, "layer")
    platform = _input_file(platform, "platform")
    if isinstance(workload, (str, os.PathLike)):
        workloads = [_input_file(workload, "workload")]
    else:
        workloads = [_input_file(w, "workload") for w in workload]
        if not workloads:
            raise InputError("workload: none given")
    if options is not None and not isinstance(options, dict):
        raise InputError(f"options: expected a JSON object, got {type(options).__name__}")
    check_finite(options, "options")
    sched_file, defaults = resolve_scheduler(scheduler)
    merged = {**defaults, **(options or {})}
    check_options(sched_file, merged)  # a typo fails here, before anything starts
    out = Path(os.fspath(output_dir)).expanduser().resolve()
    if io_record and IO_RECORD not in merged and declared_options(sched_file) is not None:
        merged[IO_RECORD] = str(out)   # a core scheduler writes its I/O record there
    try:
        options_json = json.dumps(merged, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InputError(f"options: not serialisable as JSON: {e}") from None
    if in_process and engine_cmd not in (None, "embedded"):
        raise InputError(f"in-process: the scheduler runs inside the embedded engine only, "
                         f"not with engine {engine_cmd!r}")
    engine_prefix = _engine_prefix(engine_cmd)
    engine_args = [os.fspath(a) for a in engine_args]
    engine_args += [a for a in required_engine_args(sched_file) if a not in engine_args]

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"output directory {output_dir}: cannot create: "
                         f"{e.strerror or e}") from None
    prefix = out / "out"
    check_outputs_writable(str(prefix))
    env_add = {"PYTHONUNBUFFERED": "1"}
    env = dict(os.environ, **env_add)
    cwd = os.getcwd()

    if in_process:
        return _run_in_process(platform, workloads, sched_file, merged, options_json, out, prefix,
                               engine_prefix, engine_args, quiet, env, env_add, cwd, timeout,
                               ready_timeout, success_timeout, failure_timeout, cpu, layer)

    t0 = time.monotonic()
    deadline = t0 + timeout
    ready_end = t0 + ready_timeout
    children: list[Child] = []
    hosts = None
    with subreaper(), claim_cpu(cpu) as cpus:
        for attempt in range(_PORT_ATTEMPTS):
            port = free_port()
            sched_argv, engine_argv = _command_lines(port, sched_file, options_json, quiet,
                                                     engine_prefix, platform, workloads, prefix,
                                                     engine_args, layer)
            if attempt == 0:  # the port changes nothing to the compute hosts
                hosts = compute_hosts_of_argv(engine_argv)
            write_record(out, _record(cwd, port, env_add, False, sched_file, merged, sched_argv,
                                      "sched.log", engine_argv, (timeout, ready_timeout,
                                                                 success_timeout, failure_timeout),
                                      ["scheduler", "engine"], cpus, hosts))
            write_robin(out / "robin.yaml", engine_argv, sched_argv, out,
                        simulation_timeout=timeout, ready_timeout=ready_timeout,
                        success_timeout=success_timeout, failure_timeout=failure_timeout)
            sched = Child("scheduler", sched_argv, out / "sched.log", env=env, cpus=cpus)
            engine = Child("engine", engine_argv, out / "engine.log", env=env, cpus=cpus)
            children = [sched, engine]
            retry = False
            try:
                sched.start()
                reason, retry = _wait_ready(sched, port, endpoint_of(port), ready_end, ready_timeout,
                                            deadline, timeout)
                if reason is None:
                    engine.start()
                    reason = watch(children, deadline, timeout, success_timeout,
                                    failure_timeout)
            except RunError as e:
                reason = str(e)
            finally:
                cleanup(children)
            if reason is not None and retry and attempt + 1 < _PORT_ATTEMPTS:
                continue
            if reason is not None:
                raise run_error(reason, children, out)
            break
    jobs, schedule, states = engine_outputs(prefix)
    return RunResult(
        output_dir=out, export_prefix=prefix, jobs_csv=jobs, schedule_csv=schedule,
        machine_states_csv=states, wall_time=time.monotonic() - t0,
        scheduler_returncode=sched.code, engine_returncode=engine.code,
        scheduler_cmd=sched_argv, engine_cmd=engine_argv, port=port,
        logs={"scheduler": sched.out, "engine": engine.out},
        pids={"scheduler": sched.pids(), "engine": engine.pids()},
        cpus=sorted(cpus) if cpus else None, compute_hosts=hosts,
        rusage={c.name: c.rusage for c in children if c.rusage is not None},
    )



def endpoint_of(port: int) -> str:
    """The ZeroMQ endpoint of a run on loopback port *port*."""
    return f"tcp://127.0.0.1:{port}"


#: ``layer`` values of a run (:func:`run_simulation`): how the scheduler
#: handles the messages; the in-process path's (``--in-process-layer``)
RUN_LAYERS = LAYERS


def scheduler_argv(sched_file, endpoint: str, options_json: str, verbosity: str | None,
                   layer: str = "auto") -> list[str]:
    """The scheduler process's command line (argv list) for a two-process run.

    :param sched_file: the scheduler file (resolved).
    :param endpoint: the ZeroMQ endpoint it binds (``-s``).
    :param options_json: its options as JSON text (``-o``).
    :param verbosity: pybatsim's ``-v`` level, or None for its default.
    :param layer: one of :data:`RUN_LAYERS`. ``pybatsim``: pybatsim's
        launcher (``python -m batsim.cmds.launcher``); ``direct``: the
        direct layer's launcher (:mod:`iosched.run.direct_launcher`), which
        refuses a file that is not one of iosched's schedulers; ``auto``:
        the direct layer's launcher for iosched's shipped scheduler files
        (:func:`iosched.schedulers.registry.shipped`), pybatsim's for any
        other file.
    :raises InputError: an unknown layer.
    """
    check_layer(layer, "layer")
    direct = layer == "direct" or (layer == "auto" and shipped(sched_file))
    module = "iosched.run.direct_launcher" if direct else "batsim.cmds.launcher"
    argv = [sys.executable, "-m", module, str(sched_file), "-s", endpoint,
            "-t", str(SCHEDULER_SOCKET_TIMEOUT_MS), "-o", options_json]
    if verbosity:
        argv += ["-v", verbosity]
    if direct:
        argv += ["--layer", layer]
    return argv


def _command_lines(port, sched_file, options_json, quiet, engine_prefix, platform, workloads,
                   prefix, engine_args, layer="auto") -> tuple[list[str], list[str]]:
    """The scheduler's and the engine's command lines (argv lists) of one run
    on loopback port *port*."""
    endpoint = endpoint_of(port)
    sched_argv = scheduler_argv(sched_file, endpoint, options_json, "warning" if quiet else None,
                                layer)
    engine_argv = [*engine_prefix, "-p", str(platform)]
    for w in workloads:
        engine_argv += ["-w", str(w)]
    engine_argv += ["-e", str(prefix), "-s", endpoint]
    if quiet:
        engine_argv.append("-q")
    return sched_argv, engine_argv + list(engine_args)


def _record(cwd, port, env_add, in_process, sched_file, merged, sched_argv, sched_log,
            engine_argv, timeouts, start_order, cpus, hosts) -> dict:
    """The run record written to ``command.json`` (:mod:`iosched.record`);
    *timeouts* is (simulation, ready, success, failure) in s."""
    simulation, ready, success, failure = timeouts
    return {
        "cwd": cwd,
        "port": port,
        "environment": env_add,
        "in_process": in_process,
        "scheduler": {"file": str(sched_file), "options": merged,
                      "argv": sched_argv, "shell": shlex.join(sched_argv), "log": sched_log},
        "engine": {"argv": engine_argv, "shell": shlex.join(engine_argv), "log": "engine.log"},
        "timeouts_s": {"simulation": simulation, "ready": ready, "success": success,
                       "failure": failure},
        "start_order": start_order,
        "cpus": sorted(cpus) if cpus else None,
        "compute_hosts": hosts,
    }


#: engine flags of the in-process path (:func:`_run_in_process`) -> number of
#: values each takes; a command line without them is the two-process engine's
IN_PROCESS_FLAGS = {"--in-process-scheduler": 1, "--scheduler-options": 1,
                    "--scheduler-verbosity": 1, "--in-process-layer": 1}


def strip_in_process_flags(argv: list[str]) -> list[str]:
    """*argv* without the in-process flags (:data:`IN_PROCESS_FLAGS`) and
    their values: the engine command of the same run on two processes."""
    out, skip = [], 0
    for a in argv:
        if skip:
            skip -= 1
            continue
        name = a.split("=", 1)[0]
        if name in IN_PROCESS_FLAGS:
            skip = IN_PROCESS_FLAGS[name] if "=" not in a else 0
            continue
        out.append(a)
    return out


def _run_in_process(platform, workloads, sched_file, merged, options_json, out, prefix,
                    engine_prefix, engine_args, quiet, env, env_add, cwd, timeout,
                    ready_timeout, success_timeout, failure_timeout, cpu, layer="auto") -> RunResult:
    """:func:`run_simulation` with ``in_process=True``: one engine process
    that loads the scheduler file (``--in-process-scheduler``)."""
    t0 = time.monotonic()
    deadline = t0 + timeout
    with subreaper(), claim_cpu(cpu) as cpus:
        port = free_port()  # not bound: the -s of the equivalent two-process run
        sched_argv, engine_argv = _command_lines(port, sched_file, options_json, quiet,
                                                 engine_prefix, platform, workloads, prefix,
                                                 engine_args, layer)
        hosts = compute_hosts_of_argv(engine_argv)
        engine_argv += ["--in-process-scheduler", str(sched_file), "--scheduler-options", options_json]
        if layer != "auto" and "--in-process-layer" not in engine_args:
            engine_argv += ["--in-process-layer", layer]
        if quiet:
            engine_argv += ["--scheduler-verbosity", "warning"]
        write_record(out, _record(cwd, port, env_add, True, sched_file, merged, sched_argv,
                                  "engine.log", engine_argv, (timeout, ready_timeout,
                                                              success_timeout, failure_timeout),
                                  ["engine"], cpus, hosts))
        write_robin(out / "robin.yaml", engine_argv, None, out, simulation_timeout=timeout,
                    ready_timeout=ready_timeout, success_timeout=success_timeout,
                    failure_timeout=failure_timeout)
        engine = Child("engine", engine_argv, out / "engine.log", env=env, cpus=cpus)
        children = [engine]
        run_children(children, deadline, timeout, success_timeout, failure_timeout, out)
    jobs, schedule, states = engine_outputs(prefix)
    return RunResult(
        output_dir=out, export_prefix=prefix, jobs_csv=jobs, schedule_csv=schedule,
        machine_states_csv=states, wall_time=time.monotonic() - t0,
        scheduler_returncode=None, engine_returncode=engine.code,
        scheduler_cmd=None, engine_cmd=engine_argv, port=None,
        logs={"scheduler": engine.out, "engine": engine.out},
        pids={"engine": engine.pids()},
        cpus=sorted(cpus) if cpus else None, compute_hosts=hosts,
        rusage={c.name: c.rusage for c in children if c.rusage is not None},
    )

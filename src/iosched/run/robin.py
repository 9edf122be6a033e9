"""Robin experiment files: read, write and execute them.

A *robin* file is the YAML format of batexpe's ``robin``: ``batcmd``,
``schedcmd``, ``output-dir`` and four timeouts. :func:`run_robin` executes
one with robin's semantics, so that the same file can be replayed with the
real Batsim and robin; :func:`write_robin` writes the file that replays a
run; :func:`load_robin` reads and validates one. Also here: the safe YAML
mapping loader shared with the campaign files (:func:`load_yaml_mapping`).

A robin file is code, not data: ``batcmd`` and ``schedcmd`` are shell
commands that :func:`run_robin` executes as they are. Run only files you trust.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import time
from pathlib import Path

import psutil
import yaml

from iosched.checks import check_finite
from iosched.errors import InputError, one_line
from iosched.run.affinity import claim_cpu, parse_cpu
from iosched.run.hosts import compute_hosts_of_argv
from iosched.run.result import RunError, RunResult, engine_outputs
from iosched.run.supervise import Child, check_seconds, fmt_s, run_children, subreaper

__all__ = [
    "ROBIN_FIELDS",
    "ROBIN_DEFAULTS",
    "load_yaml_mapping",
    "yaml_error_text",
    "load_robin",
    "write_robin",
    "run_robin",
]

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



def load_yaml_mapping(path, what: str, fields: str) -> tuple[Path, dict]:
    """Read a YAML file with ``yaml.safe_load`` and check that it is a mapping.

    :param path: the file (str or PathLike).
    :param what: its kind for messages (``"robin file"``, ``"campaign file"``).
    :param fields: the expected fields, for the message when it is not a mapping.
    :returns: ``(Path, dict)``.
    :raises InputError: one line naming the file: missing, unreadable, invalid
        YAML (with line and column), nested too deeply, not a mapping, or
        holding a non-finite number (``.nan``, ``.inf``; the field is named).
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
    except RecursionError:
        raise InputError(f"{p}: invalid YAML: nesting too deep") from None
    if not isinstance(data, dict):
        raise InputError(f"{p}: expected a mapping with {fields}")
    check_finite(data, str(p))
    return p, data


def yaml_error_text(e: yaml.YAMLError) -> str:
    """One line describing a YAML parse error, with its line and column."""
    mark = getattr(e, "problem_mark", None)
    problem = getattr(e, "problem", None) or str(e)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return one_line(f"{problem}{where}")


def _parse_batcmd(batcmd: str, where: str) -> dict:
    """Extract socket endpoint, export prefix and --batexec from a Batsim command.

    The embedded engine's ``--in-process-scheduler`` (the scheduler runs
    inside the engine, :mod:`iosched.engine.inproc`) counts as ``--batexec``:
    no scheduler process, and no socket (port None)."""
    try:
        tokens = shlex.split(batcmd, comments=True)
    except ValueError as e:
        raise InputError(f"{where}: field 'batcmd': cannot split the command: {e}") from None
    socket_ep = _BATSIM_DEFAULT_SOCKET
    export = _BATSIM_DEFAULT_EXPORT
    batexec = in_process = False
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
        elif t == "--in-process-scheduler" or t.startswith("--in-process-scheduler="):
            batexec = in_process = True
        i += 1
    port = None
    if socket_ep.startswith("tcp://") and not in_process:
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
    ``--batexec`` mode, as in robin; or the embedded engine's
    ``--in-process-scheduler``, which runs its scheduler itself).

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
        spec[key] = check_seconds(value, f"{p}: field {key!r}",
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
        v = check_seconds(value, f"{path}: field {key!r}",
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
            return f"context not ready after {fmt_s(ready_timeout)} s (ready timeout): {what}"
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
    CPU by default (*cpu*, as in :func:`iosched.run.simulation.run_simulation`).

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
    with subreaper(), claim_cpu(cpu) as cpus:
        reason = _wait_context(bat["port"], spec["ready-timeout"])
        if reason is not None:
            raise RunError(reason, output_dir=out)
        bat_file = out / "cmd" / "batsim.bash"
        bat_file.write_text(spec["batcmd"] + "\n", encoding="utf-8")
        bat_file.chmod(0o755)
        engine = Child("batcmd", [shell, "-eux", str(bat_file)], out / "log" / "batsim.out.log",
                        out / "log" / "batsim.log", env=env, xtrace=True, cpus=cpus)
        children = [engine]
        sched = None
        if spec["schedcmd"].strip():
            sched_file = out / "cmd" / "sched.bash"
            sched_file.write_text(spec["schedcmd"] + "\n", encoding="utf-8")
            sched_file.chmod(0o755)
            sched = Child("schedcmd", [shell, "-eux", str(sched_file)],
                           out / "log" / "sched.out.log", out / "log" / "sched.err.log", env=env,
                           xtrace=True, cpus=cpus)
            children = [sched, engine]
        t0 = time.monotonic()
        run_children(children, t0 + timeout, timeout, spec["success-timeout"],
                     spec["failure-timeout"], out)
    prefix = Path(bat["export"]).expanduser().resolve()
    try:
        engine_argv = shlex.split(spec["batcmd"])
    except ValueError:
        engine_argv = []
    jobs, schedule, states = engine_outputs(prefix)
    return RunResult(
        output_dir=out, export_prefix=prefix, jobs_csv=jobs, schedule_csv=schedule,
        machine_states_csv=states, wall_time=time.monotonic() - t0,
        scheduler_returncode=sched.code if sched else None, engine_returncode=engine.code,
        scheduler_cmd=spec["schedcmd"] or None, engine_cmd=spec["batcmd"], port=bat["port"],
        logs={c.name: (c.err or c.out) for c in children},
        pids={c.name: c.pids() for c in children},
        cpus=sorted(cpus) if cpus else None, compute_hosts=compute_hosts_of_argv(engine_argv),
    )


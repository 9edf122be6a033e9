"""``iosched-batsim``: a drop-in for the ``batsim`` 4.2.1 command.

The command line is parsed with Batsim 4.2.1's own docopt usage string
(:data:`BATSIM_USAGE`, the text of ``parse_main_args`` in Batsim's
``src/batsim.cpp`` at tag v4.2.1), followed by one extra section of
iosched options (:data:`IOSCHED_OPTIONS`, embedded engine only). The engine
connects to the scheduler as Batsim does (ZeroMQ REQ socket, default
``tcp://localhost:28000``) and writes Batsim's output files.

Every documented Batsim 4.2.1 flag is honoured or refused in one line
(:data:`REFUSED`): energy, Redis (``--enable-redis``), workflows, external
events, compute sharing, exclusive storage and ``--no-sched`` are outside
the embedded engine's scope. ``--dump-execution-context`` prints the same
JSON object as Batsim 4.2.1 (:func:`execution_context`) and exits, as the
batexpe tools (``robin``) expect. Options that Batsim itself ignores in
the given context are accepted and ignored the same way: ``--redis-*``
without ``--enable-redis``, ``--forward-unknown-events`` without
``--events``, ``--disable-schedule-tracing`` (no Pajé trace is written).

Strict by default: inputs and scheduler requests that Batsim 4.2.1 refuses
are refused in one line; the embedded-only features are served with
``--embedded-extensions`` only (``--strict-batsim`` is accepted and has no
effect).

Exit codes: 0 success, 1 bad input, 2 bad command line, 3 the scheduler broke
the protocol (or the simulation stalled), 4 the scheduler did not answer.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import sys

from docopt import DocoptExit, docopt, parse_defaults

from iosched import __version__
from iosched.batsim.outputs import BATSIM_VERSION
from iosched.engine.inproc import SchedulerError, lean_log_records, load_peer
from iosched.engine.overload import parse_overload
from iosched.engine.server import EngineConfig, SchedulerTimeout, Simulation, import_simgrid
from iosched.errors import InputError, ProtocolError
from iosched.procmem import peak_rss_kb

__all__ = ["BATSIM_USAGE", "IOSCHED_OPTIONS", "REFUSED", "execution_context", "parse_args", "main"]

#: Batsim 4.2.1's usage string (``src/batsim.cpp``, tag v4.2.1), the grammar
#: :func:`parse_args` applies; ``batsim`` is the program name as in Batsim.
BATSIM_USAGE = r"""A tool to simulate (via SimGrid) the behaviour of scheduling algorithms.

Usage:
  batsim -p <platform_file> [-w <workload_file>...]
                            [-W <workflow_file>...]
                            [--WS (<cut_workflow_file> <start_time>)...]
                            [--sg-cfg <opt_name:opt_value>...]
                            [--sg-log <log_option>...]
                            [-r <hosts_roles_map>...]
                            [--events <events_file>...]
                            [--sched-cfg <cfg_str> | --sched-cfg-file <cfg_file>]
                            [options]
  batsim --help
  batsim --version
  batsim --simgrid-version

Input options:
  -p, --platform <platform_file>     The SimGrid platform to simulate.
  -w, --workload <workload_file>     The workload JSON files to simulate.
  -W, --workflow <workflow_file>     The workflow XML files to simulate.
  --WS, --workflow-start (<cut_workflow_file> <start_time>)  The workflow XML
                                     files to simulate, with the time at which
                                     they should be started.
  --events <events_file>             The files containing external events to simulate.

Most common options:
  -m, --master-host <name>           The name of the host in <platform_file>
                                     which will be used as the RJMS management
                                     host (thus NOT used to compute jobs)
                                     [default: master_host].
  -r, --add-role-to-hosts <hosts_role_map>  Add a `role` property to the specify host(s).
                                     The <hosts-roles-map> is formated as <hosts>:<role>
                                     The <hosts> should be formated as follow:
                                     hostname1,hostname2,..
                                     Supported roles are: master, storage, compute_node
                                     By default, no role means 'compute_node'
                                     Example: -r host8:master -r host1,host2:storage
  -E, --energy                       Enables the SimGrid energy plugin and
                                     outputs energy-related files.

Execution context options:
  -s, --socket-endpoint <endpoint>   The Decision process socket endpoint
                                     Decision process [default: tcp://localhost:28000].
  --enable-redis                     Enables Redis to communicate with the scheduler.
                                     Other redis options are ignored if this option is not set.
                                     Please refer to Batsim's documentation for more information.
  --redis-hostname <redis_host>      The Redis server hostname. Ignored if --enable-redis is not set.
                                     [default: 127.0.0.1]
  --redis-port <redis_port>          The Redis server port. Ignored if --enable-redis is not set.
                                     [default: 6379]
  --redis-prefix <prefix>            The Redis prefix. Ignored if --enable-redis is not set.
                                     [default: default]

Output options:
  -e, --export <prefix>              The export filename prefix used to generate
                                     simulation output [default: out].
  --disable-schedule-tracing         Disables the Pajé schedule outputting.
  --disable-machine-state-tracing    Disables the machine state outputting.

Platform size limit options:
  --mmax <nb>                        Limits the number of machines to <nb>.
                                     0 means no limit [default: 0].
  --mmax-workload                    If set, limits the number of machines to
                                     the 'nb_res' field of the input workloads.
                                     If several workloads are used, the maximum
                                     of these fields is kept.
Job-related options:
  --forward-profiles-on-submission   Attaches the job profile to the job information
                                     when the scheduler is notified about a job submission.
                                     [default: false]
  --enable-dynamic-jobs              Enables dynamic registration of jobs and profiles from the scheduler.
                                     Please refer to Batsim's documentation for more information.
                                     [default: false]
  --acknowledge-dynamic-jobs         Makes Batsim send a JOB_SUBMITTED back to the scheduler when
                                     Batsim receives a REGISTER_JOB.
                                     [default: false]
  --enable-profile-reuse             Enable dynamic jobs to reuse profiles of other jobs.
                                     Without this options, such profiles would be
                                     garbage collected.
                                     The option --enable-dynamic-jobs must be set for this option to work.
                                     [default: false]

Verbosity options:
  -v, --verbosity <verbosity_level>  Sets the Batsim verbosity level. Available
                                     values: quiet, network-only, information,
                                     debug [default: information].
  -q, --quiet                        Shortcut for --verbosity quiet

Workflow options:
  --workflow-jobs-limit <job_limit>  Limits the number of possible concurrent
                                     jobs for workflows. 0 means no limit
                                     [default: 0].
  --ignore-beyond-last-workflow      Ignores workload jobs that occur after all
                                     workflows have completed.

Other options:
  --dump-execution-context           Does not run the actual simulation but dumps the execution
                                     context on stdout (formatted as a JSON object).
  --enable-compute-sharing           Enables compute resource sharing:
                                     One compute resource may be used by several jobs at the same time.
  --disable-storage-sharing          Disables storage resource sharing:
                                     One storage resource may be used by several jobs at the same time.
  --no-sched                         If set, the jobs in the workloads are
                                     computed one by one, one after the other,
                                     without scheduler nor Redis.
  --sched-cfg <cfg_str>              Sets the scheduler configuration string.
                                     This is forwarded to the scheduler in the first protocol message.
  --sched-cfg-file <cfg_file>        Same as --sched-cfg, but value is read from a file instead.
  --sg-cfg <opt_name:opt_value>      Forwards a given option_name:option_value to SimGrid.
                                     Refer to SimGrid configuring documentation for more information.
  --sg-log <log_option>              Forwards a given logging option to SimGrid.
                                     Refer to SimGrid simulation logging documentation for more information.
  --forward-unknown-events           Enables the forwarding to the scheduler of external events that
                                     are unknown to Batsim. Ignored if there were no event inputs with --events.
                                     [default: false]
  -h, --help                         Shows this help.
"""

#: The iosched options (embedded engine only; the real Batsim refuses them),
#: appended to :data:`BATSIM_USAGE` as one more docopt options section.
IOSCHED_OPTIONS = r"""
iosched extension options (embedded engine only):
  --sched-timeout <s>                Seconds to wait for each scheduler reply [default: 600].
  --transcript <file>                Write every message, both ways, as JSON lines to <file>.
  --rusage-file <file>               Write the engine's own peak RSS (KB, VmHWM) and CPU times (s)
                                     as JSON (benchmarks).
  --no-direct-tasks                  Run every physics job on a worker actor, never as a direct
                                     task of the server actor (verification: same results, slower).
  --progress-file <file>             Rewrite <file> at most once a second with the simulated
                                     time (s), the jobs ended and the static jobs (iosched run).
  --embedded-extensions              Serve the embedded-only features that the real Batsim 4.2.1
                                     refuses, ignores or crashes on (listed in
                                     docs/real-batsim.md); without it they are refused in one
                                     line, as Batsim would.
  --link-overload <spec>             Embedded-only, needs --embedded-extensions: the capacity of a
                                     link against its concurrent transfers, LINK:BW@N[,BW@N...]
                                     [:tasks|flows] (e.g. pfs_link:20GiB@5,15GiB@10; linear
                                     between points; docs/real-batsim.md).
  --strict-batsim                    No effect (kept for old command lines): refusing what the
                                     real Batsim 4.2.1 refuses is the default.
  --in-process-scheduler <file>      Run the pybatsim scheduler <file> inside this process, called
                                     by function (no socket, no second process; -s is unused):
                                     the in-process path (docs/architecture.md).
  --scheduler-options <json>         Its options, a JSON object (pybatsim's -o) [default: {}].
  --scheduler-verbosity <level>      Its log level (pybatsim's -v: debug, info, warning, error,
                                     critical) [default: info].
  --in-process-layer <layer>         auto: iosched's own schedulers directly, any other file
                                     through pybatsim's Batsim class; pybatsim; direct
                                     [default: auto].
"""

#: Batsim 4.2.1 options outside the embedded engine's scope -> what they
#: enable; giving one (with a non-default value) is refused in one line.
REFUSED = {
    "--energy": "energy",
    "--enable-redis": "Redis",
    "--workflow": "workflows",
    "--WS": "workflows",
    "--workflow-jobs-limit": "workflows",
    "--ignore-beyond-last-workflow": "workflows",
    "--events": "external events",
    "--enable-compute-sharing": "compute sharing",
    "--disable-storage-sharing": "exclusive storage",
    "--no-sched": "--no-sched",
}

_VERBOSITY = ("quiet", "network-only", "information", "debug")


class CommandLineError(Exception):
    """A command line Batsim's grammar rejects (exit status 2)."""


def parse_args(argv: list[str]) -> dict:
    """Parse an ``iosched-batsim`` command line with Batsim 4.2.1's grammar.

    :param argv: the arguments, without the program name.
    :returns: docopt's dict (keys ``--platform``, ``--workload``... as in
        Batsim's ``parse_main_args``).
    :raises CommandLineError: one line: the arguments do not match the usage
        (e.g. ``--sched-cfg`` with ``--sched-cfg-file``, an unknown option).
    :raises SystemExit: ``--help`` / ``--version`` (docopt prints and exits 0).
    """
    _check_tokens(argv)
    try:
        return docopt(BATSIM_USAGE + IOSCHED_OPTIONS, argv=argv, help=True,
                      version=f"{BATSIM_VERSION} (iosched {__version__} embedded engine)")
    except DocoptExit as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        if first and not first.lower().startswith("usage"):
            raise CommandLineError(first) from None
        raise CommandLineError("the arguments do not match Batsim 4.2.1's usage "
                               "(iosched-batsim --help)") from None


def _check_tokens(argv: list[str]) -> None:
    """Name what docopt would only report as a usage mismatch: an unknown
    option, or ``--sched-cfg`` with ``--sched-cfg-file`` (exclusive in the
    usage)."""
    known = {o.long: o for o in parse_defaults(BATSIM_USAGE + IOSCHED_OPTIONS) if o.long}
    known.update({o.short: o for o in parse_defaults(BATSIM_USAGE + IOSCHED_OPTIONS) if o.short})
    known["--WS"] = known.get("--workflow-start")
    given = set()
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--":
            break
        if a.startswith("--"):
            name = a.split("=", 1)[0]
            if name not in known:
                raise CommandLineError(f"{name}: unknown option (not in Batsim 4.2.1's usage; "
                                       "iosched-batsim --help)")
            given.add(name)
            o = known[name]
            skip = bool(o is not None and o.argcount and "=" not in a)
        elif a.startswith("-") and len(a) > 1:
            name = a[:2]
            if name not in known:
                raise CommandLineError(f"{name}: unknown option (not in Batsim 4.2.1's usage; "
                                       "iosched-batsim --help)")
            o = known[name]
            skip = bool(o.argcount and len(a) == 2)
    if {"--sched-cfg", "--sched-cfg-file"} <= given:
        raise CommandLineError("--sched-cfg and --sched-cfg-file are mutually exclusive "
                               "(Batsim 4.2.1's usage)")


def execution_context(args: dict) -> dict:
    """The execution context Batsim 4.2.1 prints for ``--dump-execution-context``
    (``main`` in ``src/batsim.cpp``; read by batexpe's ``robin``).

    :param args: :func:`parse_args`'s result.
    :returns: ``{"socket_endpoint": str, "redis_enabled": bool,
        "redis_hostname": str, "redis_port": int, "redis_prefix": str,
        "export_prefix": str, "external_scheduler": bool}`` in Batsim's order.
    :raises CommandLineError: ``--redis-port`` is not an integer.
    """
    try:
        port = int(args["--redis-port"])
    except ValueError:
        raise CommandLineError(f"--redis-port: not an integer: {args['--redis-port']!r}") from None
    return {
        "socket_endpoint": args["--socket-endpoint"],
        "redis_enabled": bool(args["--enable-redis"]),
        "redis_hostname": args["--redis-hostname"],
        "redis_port": port,
        "redis_prefix": args["--redis-prefix"],
        "export_prefix": args["--export"],
        # an in-process scheduler (iosched extension) is not an external one
        "external_scheduler": not args["--no-sched"] and not args.get("--in-process-scheduler"),
    }


def _refused(args: dict) -> str | None:
    """The first given option of :data:`REFUSED`, or None."""
    for key, what in REFUSED.items():
        v = args.get(key)
        if key == "--workflow-jobs-limit":
            given = v not in (None, "0")
        else:
            given = bool(v)
        if given:
            return f"{key}: {what} is out of scope of the embedded engine; use the real Batsim"
    return None


def _number(args: dict, key: str, kind, minimum, strict: bool):
    raw = args[key]
    try:
        v = kind(raw)
    except (TypeError, ValueError):
        raise CommandLineError(f"{key}: not a number: {raw!r}") from None
    if v != v or (v <= minimum if strict else v < minimum):
        raise CommandLineError(f"{key}: must be {'>' if strict else '>='} {minimum}, got {raw}")
    return v


def _err(message: str, code: int) -> int:
    sys.stderr.write(f"iosched-batsim: {message}\n")
    return code


def _scheduler_failed(exc: SchedulerError) -> int:
    """The in-process scheduler raised or exited: its traceback, then one line."""
    sys.stdout.flush()
    if exc.details:
        sys.stderr.write(exc.details if exc.details.endswith("\n") else exc.details + "\n")
    return _err(str(exc), exc.code)


def main(argv=None) -> int:
    """Entry point; returns (and exits with) the process exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parse_args(argv)
        if args["--simgrid-version"]:
            v = import_simgrid().simgrid_version
            print(".".join(map(str, v)) if isinstance(v, (tuple, list)) else v)
            return 0
        if args["--dump-execution-context"]:  # Batsim answers before any other check
            print(json.dumps(execution_context(args), separators=(",", ":"), ensure_ascii=False))
            return 0
        refused = _refused(args)
        if refused:
            return _err(refused, 2)
        if args["--verbosity"] not in _VERBOSITY:
            raise CommandLineError(f"--verbosity: invalid level {args['--verbosity']!r}; "
                                   f"expected one of {', '.join(_VERBOSITY)}")
        mmax = _number(args, "--mmax", int, 0, strict=False)
        sched_timeout = _number(args, "--sched-timeout", float, 0, strict=True)
        if sched_timeout == float("inf"):
            raise CommandLineError("--sched-timeout: must be finite")
        overloads = [parse_overload(args["--link-overload"])] if args["--link-overload"] else []
    except (CommandLineError, InputError) as exc:
        return _err(str(exc), 2)
    workloads = args["--workload"]
    dynamic = args["--enable-dynamic-jobs"]
    if not workloads and not dynamic:
        return _err("no workload (-w) and dynamic jobs disabled: nothing to simulate", 2)
    if args["--enable-profile-reuse"] and not dynamic:
        return _err("--enable-profile-reuse needs --enable-dynamic-jobs", 2)
    if args["--acknowledge-dynamic-jobs"] and not dynamic:
        return _err("--acknowledge-dynamic-jobs needs --enable-dynamic-jobs", 2)
    sched_cfg = args["--sched-cfg"] or ""
    if args["--sched-cfg-file"]:
        try:
            with open(args["--sched-cfg-file"]) as f:
                sched_cfg = f.read()
        except OSError as exc:
            return _err(f"--sched-cfg-file {args['--sched-cfg-file']}: {exc.strerror}", 1)
    platform = args["--platform"]
    for path, what in [(platform, "platform")] + [(w, "workload") for w in workloads]:
        if not os.path.isfile(path):
            return _err(f"{what} file '{path}' cannot be read", 1)

    peer = None
    if args["--in-process-scheduler"]:
        try:
            options = json.loads(args["--scheduler-options"])
        except ValueError as exc:
            return _err(f"--scheduler-options: invalid JSON: {exc}", 2)
        if not isinstance(options, dict):
            return _err("--scheduler-options: expected a JSON object", 2)
        sched_file = args["--in-process-scheduler"]
        if not os.path.isfile(sched_file):
            return _err(f"--in-process-scheduler: scheduler file '{sched_file}' cannot be read", 1)
        try:
            peer = load_peer(sched_file, options, layer=args["--in-process-layer"],
                             verbosity=args["--scheduler-verbosity"])
        except InputError as exc:
            return _err(str(exc), 2)
        except SchedulerError as exc:
            return _scheduler_failed(exc)
        if peer.layer == "direct":
            lean_log_records()
    verbosity = "quiet" if args["--quiet"] else args["--verbosity"]
    quiet = verbosity in ("quiet", "network-only")
    cfg = EngineConfig(
        platform=platform, workloads=workloads, export_prefix=args["--export"],
        socket_endpoint=args["--socket-endpoint"], master_host=args["--master-host"],
        role_maps=args["--add-role-to-hosts"], mmax=mmax, mmax_workload=args["--mmax-workload"],
        dynamic_jobs=dynamic, ack_dynamic_jobs=args["--acknowledge-dynamic-jobs"],
        profile_reuse=args["--enable-profile-reuse"],
        forward_profiles=args["--forward-profiles-on-submission"],
        sched_config=sched_cfg, sg_cfg=args["--sg-cfg"], sg_log=args["--sg-log"],
        machine_state_tracing=not args["--disable-machine-state-tracing"],
        quiet=quiet or verbosity != "debug", sched_timeout=sched_timeout,
        transcript=args["--transcript"], direct_tasks=not args["--no-direct-tasks"],
        progress_file=args["--progress-file"], strict_batsim=True,
        embedded_extensions=bool(args["--embedded-extensions"]), peer=peer,
        link_overloads=overloads,
    )
    try:
        sim = Simulation(cfg)
        summary = sim.run()
    except InputError as exc:
        sys.stderr.write(f"iosched-batsim: {exc}\n")
        return 1
    except ProtocolError as exc:
        sys.stderr.write(f"iosched-batsim: protocol error: {exc}\n")
        return 3
    except SchedulerTimeout as exc:
        sys.stderr.write(f"iosched-batsim: {exc}\n")
        return 4
    except SchedulerError as exc:
        return _scheduler_failed(exc)
    except KeyboardInterrupt:
        sys.stderr.write("iosched-batsim: interrupted\n")
        return 130
    # The outputs are written and SimGrid runs one simulation per process:
    # what is left is to exit. Freezing the objects spares the interpreter's
    # final garbage collections a walk over all of them (the workload, the
    # jobs, an in-process scheduler's state): 0.6 s of a 7 s in-process run
    # on the full KTH-SP2 trace (docs/benchmarks.md, 2026-11-28 (13:00-14:30 UTC)).
    # Exit still flushes the standard streams and logging's handlers, and
    # frees by reference count what the modules held; only objects that
    # nothing but a reference cycle keeps alive are left unfinalized.
    gc.freeze()
    if peer is not None and peer.finish() != 0:
        return _err(peer.unbalanced_reason(), 1)
    if args["--rusage-file"]:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        with open(args["--rusage-file"], "w") as f:
            # max_rss_kb: this process's own peak (VmHWM); ru_maxrss also counts
            # the peak of the process that started it (iosched.procmem)
            json.dump({"max_rss_kb": peak_rss_kb(), "ru_maxrss_kb": ru.ru_maxrss,
                       "user_s": ru.ru_utime, "sys_s": ru.ru_stime,
                       "direct_jobs": summary["direct_jobs"], "handovers": summary["handovers"]}, f)
    if not quiet:
        sys.stderr.write(
            f"iosched-batsim: simulation ended: {summary['nb_jobs']} jobs, makespan "
            f"{summary['makespan']:.6f} s, outputs {args['--export']}_*.csv\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

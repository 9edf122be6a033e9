"""``iosched-batsim``: a drop-in for the ``batsim`` 4.2.1 command.

It accepts Batsim 4.2.1's flags (same names, same defaults), connects to the
scheduler as Batsim does (ZeroMQ REQ socket, default
``tcp://localhost:28000``) and writes Batsim's output files. Features outside
the embedded engine's scope (energy, Redis, workflows, external events,
compute sharing, ``--no-sched``) are rejected with a one-line message.

Exit codes: 0 success, 1 bad input, 2 bad command line, 3 the scheduler broke
the protocol (or the simulation stalled), 4 the scheduler did not answer.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys

from iosched import __version__
from iosched.batsim.outputs import BATSIM_VERSION
from iosched.engine.server import EngineConfig, SchedulerTimeout, Simulation, import_simgrid
from iosched.errors import InputError, ProtocolError

UNSUPPORTED = {
    "-E": "energy", "--energy": "energy",
    "--enable-redis": "Redis", "--redis-hostname": "Redis", "--redis-port": "Redis",
    "--redis-prefix": "Redis",
    "-W": "workflows", "--workflow": "workflows", "--WS": "workflows", "--workflow-start": "workflows",
    "--workflow-jobs-limit": "workflows", "--ignore-beyond-last-workflow": "workflows",
    "--events": "external events", "--forward-unknown-events": "external events",
    "--enable-compute-sharing": "compute sharing",
    "--disable-storage-sharing": "exclusive storage",
    "--no-sched": "--no-sched", "--dump-execution-context": "--dump-execution-context",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse prints usage by default)
        sys.stderr.write(f"iosched-batsim: {message}\n")
        sys.exit(2)


def make_parser() -> argparse.ArgumentParser:
    """The command-line parser (Batsim 4.2.1 flag names and defaults)."""
    p = _Parser(prog="iosched-batsim", description=__doc__.split("\n\n")[0],
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-p", "--platform", required=True, help="SimGrid platform XML")
    p.add_argument("-w", "--workload", action="append", default=[], help="workload JSON (repeatable)")
    p.add_argument("-e", "--export", default="out", help="output prefix [default: out]")
    p.add_argument("-s", "--socket-endpoint", default="tcp://localhost:28000",
                   help="scheduler endpoint [default: tcp://localhost:28000]")
    p.add_argument("-m", "--master-host", default="master_host", help="master host name [default: master_host]")
    p.add_argument("-r", "--add-role-to-hosts", action="append", default=[],
                   help="HOST1,HOST2:ROLE (master, storage, compute_node); repeatable")
    p.add_argument("-q", "--quiet", action="store_true", help="shortcut for --verbosity quiet")
    p.add_argument("-v", "--verbosity", default="information",
                   choices=["quiet", "network-only", "information", "debug"])
    p.add_argument("--mmax", type=int, default=0, help="limit the number of compute machines (0: no limit)")
    p.add_argument("--mmax-workload", action="store_true", help="limit machines to the workloads' nb_res")
    p.add_argument("--enable-dynamic-jobs", action="store_true")
    p.add_argument("--acknowledge-dynamic-jobs", action="store_true")
    p.add_argument("--enable-profile-reuse", action="store_true")
    p.add_argument("--forward-profiles-on-submission", action="store_true")
    p.add_argument("--sched-cfg", default="", help="string forwarded to the scheduler in SIMULATION_BEGINS")
    p.add_argument("--sched-cfg-file", default=None, help="file whose content is forwarded as --sched-cfg")
    p.add_argument("--sg-cfg", action="append", default=[], help="OPTION:VALUE forwarded to SimGrid")
    p.add_argument("--sg-log", action="append", default=[], help="logging option forwarded to SimGrid")
    p.add_argument("--disable-schedule-tracing", action="store_true", help="accepted (no Pajé trace is written)")
    p.add_argument("--disable-machine-state-tracing", action="store_true")
    p.add_argument("--sched-timeout", type=float, default=600.0,
                   help="iosched extension: seconds to wait for each scheduler reply [default: 600]")
    p.add_argument("--transcript", default=None,
                   help="iosched extension: write every message, both ways, as JSON lines to this file")
    p.add_argument("--rusage-file", default=None,
                   help="iosched extension (benchmarks): write the engine's peak RSS (KB) and CPU times (s) as JSON")
    p.add_argument("--no-direct-tasks", action="store_true",
                   help="iosched extension (verification): run every physics job on a worker actor, "
                        "never as a direct task of the server actor (same results, slower)")
    p.add_argument("--strict-batsim", action="store_true",
                   help="iosched extension: fail on every scheduler request the real Batsim 4.2.1 cannot "
                        "serve (it aborts or crashes) instead of serving it with a one-line warning")
    p.add_argument("--version", action="version", version=f"{BATSIM_VERSION} (iosched {__version__} embedded engine)")
    return p


def main(argv=None) -> int:
    """Entry point; returns (and exits with) the process exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--simgrid-version" in argv:
        v = import_simgrid().simgrid_version
        print(".".join(map(str, v)) if isinstance(v, (tuple, list)) else v)
        return 0
    for a in argv:
        key = a.split("=", 1)[0]
        if key in UNSUPPORTED:
            sys.stderr.write(
                f"iosched-batsim: {key}: {UNSUPPORTED[key]} is out of scope of the embedded engine; "
                "use the real Batsim\n"
            )
            return 2
    args = make_parser().parse_args(argv)
    if not args.workload and not args.enable_dynamic_jobs:
        sys.stderr.write("iosched-batsim: no workload (-w) and dynamic jobs disabled: nothing to simulate\n")
        return 2
    if args.enable_profile_reuse and not args.enable_dynamic_jobs:
        sys.stderr.write("iosched-batsim: --enable-profile-reuse needs --enable-dynamic-jobs\n")
        return 2
    if args.acknowledge_dynamic_jobs and not args.enable_dynamic_jobs:
        sys.stderr.write("iosched-batsim: --acknowledge-dynamic-jobs needs --enable-dynamic-jobs\n")
        return 2
    if args.mmax < 0:
        sys.stderr.write(f"iosched-batsim: --mmax: must be >= 0, got {args.mmax}\n")
        return 2
    if args.sched_timeout <= 0:
        sys.stderr.write("iosched-batsim: --sched-timeout: must be > 0\n")
        return 2
    sched_cfg = args.sched_cfg
    if args.sched_cfg_file:
        try:
            with open(args.sched_cfg_file) as f:
                sched_cfg = f.read()
        except OSError as exc:
            sys.stderr.write(f"iosched-batsim: --sched-cfg-file {args.sched_cfg_file}: {exc.strerror}\n")
            return 1
    for path, what in [(args.platform, "platform")] + [(w, "workload") for w in args.workload]:
        if not os.path.isfile(path):
            sys.stderr.write(f"iosched-batsim: {what} file '{path}' cannot be read\n")
            return 1

    quiet = args.quiet or args.verbosity == "quiet"
    cfg = EngineConfig(
        platform=args.platform, workloads=args.workload, export_prefix=args.export,
        socket_endpoint=args.socket_endpoint, master_host=args.master_host,
        role_maps=args.add_role_to_hosts, mmax=args.mmax, mmax_workload=args.mmax_workload,
        dynamic_jobs=args.enable_dynamic_jobs, ack_dynamic_jobs=args.acknowledge_dynamic_jobs,
        profile_reuse=args.enable_profile_reuse, forward_profiles=args.forward_profiles_on_submission,
        sched_config=sched_cfg, sg_cfg=args.sg_cfg, sg_log=args.sg_log,
        machine_state_tracing=not args.disable_machine_state_tracing,
        quiet=quiet or args.verbosity != "debug", sched_timeout=args.sched_timeout,
        transcript=args.transcript, direct_tasks=not args.no_direct_tasks,
        strict_batsim=args.strict_batsim,
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
    except KeyboardInterrupt:
        sys.stderr.write("iosched-batsim: interrupted\n")
        return 130
    if args.rusage_file:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        with open(args.rusage_file, "w") as f:
            json.dump({"max_rss_kb": ru.ru_maxrss, "user_s": ru.ru_utime, "sys_s": ru.ru_stime,
                       "direct_jobs": summary["direct_jobs"], "handovers": summary["handovers"]}, f)
    if not quiet:
        sys.stderr.write(
            f"iosched-batsim: simulation ended: {summary['nb_jobs']} jobs, makespan "
            f"{summary['makespan']:.6f} s, outputs {args.export}_*.csv\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

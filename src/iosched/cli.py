"""The ``iosched`` command line (click).

Each subcommand lives in the module that implements it and is registered
here lazily, so that ``iosched --help`` stays fast and a missing optional
piece does not break the others.

Subcommands:

* ``iosched run``       -- :mod:`iosched.run.cli` (one simulation, or a robin file)
* ``iosched sched``     -- :mod:`iosched.run.sched_cli` (a pybatsim scheduler by hand, on loopback)
* ``iosched metrics``   -- :mod:`iosched.analysis.cli`
* ``iosched demo``      -- :mod:`iosched.demo` (the main job)
* ``iosched arena``     -- :mod:`iosched.experiments.arena.campaign` (every scheduler on the I/O regimes)
* ``iosched campaign``  -- :mod:`iosched.campaign.cli` (experiment campaigns on Dask)
* ``iosched report``    -- :mod:`iosched.analysis.cli` (Markdown/HTML campaign reports)
* ``iosched leaderboard`` -- :mod:`iosched.analysis.cli` (a campaign's leaderboard)

and the experiment groups, whose kinds are listed in :data:`KINDS` (the one
table of where each experiment command lives):

* ``iosched workload <kind>`` -- workload generators (``swf``: SWF -> Batsim JSON)
* ``iosched platform <kind>`` -- SimGrid platform XMLs
* ``iosched repro <family>``  -- the reproductions of the families' papers
* ``iosched bench [<family>]`` -- benchmarks (no family: the KTH-SP2 benchmark, ``kth``)

Usage errors inside the experiment groups (a bad option or value, an
unknown kind) are one line, ``Error: message``, exit status 2; input
errors are one line with exit status 1 (or as the command documents).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util

import click

from iosched.clicommon import OneLineUsageError

# name -> (module, attribute holding the click command)
_SUBCOMMANDS = {
    "run": ("iosched.run.cli", "run_command"),
    "sched": ("iosched.run.sched_cli", "sched_command"),
    "metrics": ("iosched.analysis.cli", "metrics_command"),
    "demo": ("iosched.demo", "demo_command"),
    "arena": ("iosched.experiments.arena.campaign", "arena_command"),
    "campaign": ("iosched.campaign.cli", "campaign_command"),
    "report": ("iosched.analysis.cli", "report_command"),
    "leaderboard": ("iosched.analysis.cli", "leaderboard_command"),
}

#: The experiment groups: group -> (help, {kind -> (module, attribute, short help)
#: or, for a family with several commands, kind -> (help, {command -> (...)})}).
#: Modules are imported only when their command runs (or shows its help).
KINDS = {
    "workload": ("Workload generators: Batsim workload JSON files of each family.", {
        "swf": ("iosched.workloads.cli", "swf_command", "SWF log -> Batsim workload JSON"),
        "bb": ("iosched.experiments.bb.workload", "workload_command",
               "burst-buffer workload of an SWF log (Kopanski & Rzadca)"),
        "locality": ("iosched.experiments.locality.workload", "workload_command",
                     "locality workload from the artifact's format or an SWF log (Gonthier et al.)"),
        "listpack": ("iosched.experiments.listpack.workload", "workload_command",
                     "list-vs-pack workload of a family at an I/O load (Jeannot et al.)"),
        "dad": ("iosched.experiments.dad.workload", "workload_command",
                "data-aware dispatch workloads and their check (Li & Tatebe)"),
        "pfsbw": ("iosched.experiments.pfsbw.workload", "workload_command",
                  "PFS-bandwidth workloads and characterisation runs (Goponenko et al.)"),
        "arena": ("iosched.experiments.arena.regimes", "workload_command",
                  "an SWF trace under an I/O regime, for the arena's reference machine"),
    }),
    "platform": ("Platform generators: SimGrid 3.32 platform XMLs.", {
        "cluster": ("iosched.experiments.platforms", "cluster_command", "flat cluster (like cluster100.xml)"),
        "dragonfly96": ("iosched.experiments.platforms", "dragonfly96_command",
                        "the burst-buffer paper's 108-node dragonfly"),
        "dad": ("iosched.experiments.platforms", "dad_command", "NUSA cluster with node-local disks (Li & Tatebe)"),
        "locality": ("iosched.experiments.platforms", "locality_command",
                     "n nodes x m cores and a PFS (Gonthier et al.)"),
        "listpack": ("iosched.experiments.platforms", "listpack_command", "list-vs-pack machine (Jeannot et al.)"),
        "pfsbw": ("iosched.experiments.platforms", "pfsbw_command", "15 nodes and a PFS (Goponenko et al.)"),
        "arena": ("iosched.experiments.arena.machine", "platform_command",
                  "the arena's reference machine: every tier, dragonfly or fat-tree"),
    }),
    "repro": ("Reproductions of the families' papers: tables, figures, claims.", {
        "bb": ("iosched.experiments.bb.reproduction", "reproduction_command",
               "table, figures and claims of Kopanski & Rzadca from campaigns"),
        "locality": ("Reproduction of Gonthier et al. (the Uppmax day).", {
            "loop": ("iosched.experiments.locality.reproduction", "repro_command",
                     "the policies on one day with the artifact's loop"),
            "engine-runs": ("iosched.experiments.locality.engine_runs", "repro_command",
                            "the policies on one day on the engine, per I/O model"),
            "figures": ("iosched.experiments.locality.figures", "repro_command", "Fig. 3 and Fig. 5 of the runs"),
        }),
        "listpack": ("iosched.experiments.listpack.reproduction", "repro_command",
                     "tables and figures of Jeannot et al. from campaigns"),
        "pfsbw": ("iosched.experiments.pfsbw.reproduction", "repro_command", "tables and figures of Goponenko et al."),
        "dad": ("iosched.experiments.dad.reproduction", "repro_command", "Section V of Li & Tatebe, and the scale-out"),
    }),
    "bench": ("Benchmarks (without a family: the KTH-SP2 benchmark, kth, as `make bench`).", {
        "kth": ("iosched.experiments.bench.kth", "bench_command",
                "the KTH-SP2 trace, embedded engine vs reference (default)"),
        "bb": ("iosched.experiments.bench.bb", "bench_command", "burst-buffer plan search and full runs"),
        "listpack": ("iosched.experiments.bench.listpack", "bench_command", "list-vs-pack runs"),
        "locality": ("iosched.experiments.bench.locality", "bench_command", "locality policies on the Uppmax day"),
        "dad": ("iosched.experiments.bench.dad", "bench_command", "data-aware dispatchers on 512 NUSA nodes"),
        "pfsbw": ("iosched.experiments.bench.pfsbw", "bench_command", "Workload 2 with every pfsbw configuration"),
        "scale": ("iosched.experiments.bench.scale", "scale_command", "engine and schedulers at scale"),
        "campaign": ("iosched.experiments.bench.campaign", "bench_command", "parallel efficiency of a campaign"),
        "arena": ("iosched.experiments.bench.arena", "bench_command", "the whole arena and each scheduler's time"),
    }),
}

#: The kind ``iosched bench`` runs when no family is given.
DEFAULT_BENCH = "kth"


class _LazyGroup(click.Group):
    def list_commands(self, ctx):
        names = [n for n, (mod, _) in _SUBCOMMANDS.items() if importlib.util.find_spec(mod) is not None]
        return sorted(names + list(KINDS))

    def get_command(self, ctx, name):
        if name in KINDS:
            return _group(name, *KINDS[name])
        if name not in _SUBCOMMANDS:
            return None
        module, attr = _SUBCOMMANDS[name]
        if importlib.util.find_spec(module) is None:
            return None
        return getattr(importlib.import_module(module), attr)


class _KindGroup(click.Group):
    """A group whose commands are resolved lazily from ``table`` (kind ->
    (module, attribute, short help), or kind -> (help, sub-table)); its
    usage errors, and those of its commands, are one line (exit status 2).
    With ``default`` (a kind), arguments that are empty or start with an
    option (other than ``--help``) go to that kind's command."""

    def __init__(self, name, help, table, default=None):
        super().__init__(name=name, help=help)
        self.table = table
        self.default = default

    def list_commands(self, ctx):
        return list(self.table)

    def get_command(self, ctx, name):
        entry = self.table.get(name)
        if entry is None:
            return None
        if isinstance(entry[1], dict):
            return _group(name, *entry)
        module, attr, _ = entry
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx, formatter):
        rows = [(k, e[2] if len(e) == 3 else e[0]) for k, e in self.table.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def parse_args(self, ctx, args):
        if self.default and (not args or (args[0].startswith("-") and args[0] != "--help")):
            args = [self.default, *args]
        return super().parse_args(ctx, args)

    def make_context(self, info_name, args, parent=None, **extra):
        with _usage_errors_one_line():
            return super().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx):
        with _usage_errors_one_line():
            return super().invoke(ctx)


@contextlib.contextmanager
def _usage_errors_one_line():
    """Re-raise a click usage error (but a bare group's help) as a one-line one."""
    try:
        yield
    except (click.exceptions.NoArgsIsHelpError, OneLineUsageError):
        raise
    except click.UsageError as exc:
        raise OneLineUsageError(exc.format_message(), exc.ctx) from None


def _group(name, help, table):
    return _KindGroup(name, help, table, default=DEFAULT_BENCH if name == "bench" else None)


@click.group(cls=_LazyGroup)
@click.version_option(package_name="iosched")
def cli():
    """iosched: I/O-aware batch scheduling research on Batsim."""


def main(argv=None):
    """Console entry point of ``iosched``; returns the exit status."""
    try:
        return cli.main(args=argv, prog_name="iosched", standalone_mode=True)
    except KeyboardInterrupt:  # pragma: no cover - interactive only
        click.echo("iosched: interrupted", err=True)
        return 130


if __name__ == "__main__":  # pragma: no cover
    main()

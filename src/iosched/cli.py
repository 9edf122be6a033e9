"""The ``iosched`` command line (click).

Each subcommand lives in the module that implements it and is registered
here lazily, so that ``iosched --help`` stays fast and a missing optional
piece does not break the others.

Subcommands:

* ``iosched run``       -- :mod:`iosched.run.cli` (one simulation, or a robin file)
* ``iosched sched``     -- :mod:`iosched.run.sched_cli` (a pybatsim scheduler by hand, on loopback)
* ``iosched metrics``   -- :mod:`iosched.analysis.cli`
* ``iosched workload``  -- :mod:`iosched.workloads.cli` (SWF -> Batsim JSON)
* ``iosched platform``  -- :mod:`iosched.experiments.platforms` (SimGrid platform XMLs)
* ``iosched demo``      -- :mod:`iosched.demo` (the main job)
* ``iosched campaign``  -- :mod:`iosched.campaign.cli` (experiment campaigns on Dask)
* ``iosched report``    -- :mod:`iosched.analysis.cli` (Markdown/HTML campaign reports)
"""

from __future__ import annotations

import importlib
import importlib.util

import click

# name -> (module, attribute holding the click command)
_SUBCOMMANDS = {
    "run": ("iosched.run.cli", "run_command"),
    "sched": ("iosched.run.sched_cli", "sched_command"),
    "metrics": ("iosched.analysis.cli", "metrics_command"),
    "workload": ("iosched.workloads.cli", "workload_command"),
    "platform": ("iosched.experiments.platforms", "platform_command"),
    "demo": ("iosched.demo", "demo_command"),
    "campaign": ("iosched.campaign.cli", "campaign_command"),
    "report": ("iosched.analysis.cli", "report_command"),
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(n for n, (mod, _) in _SUBCOMMANDS.items() if importlib.util.find_spec(mod) is not None)

    def get_command(self, ctx, name):
        if name not in _SUBCOMMANDS:
            return None
        module, attr = _SUBCOMMANDS[name]
        if importlib.util.find_spec(module) is None:
            return None
        return getattr(importlib.import_module(module), attr)


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

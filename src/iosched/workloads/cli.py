"""``iosched workload swf``: SWF log -> Batsim workload (click).

``iosched workload swf [SWF] OUT.json`` converts a Standard Workload Format
log into a Batsim workload with :func:`iosched.workloads.convert.swf_to_batsim`
and prints what it kept and dropped.  Without SWF it reads the KTH-SP2 trace
from the shared data folder, ``<repo>/../shared/data/KTH-SP2-1996-2.1-cln.swf``
(``<repo>`` found from this package's location, else from the current
directory), else the copy shipped with the package
(:func:`iosched.workloads.default_swf.find_default_swf`).
The other kinds of ``iosched workload`` are listed in
:data:`iosched.cli.KINDS`.  Errors are one line on stderr and a non-zero
exit status.
"""

from __future__ import annotations

from pathlib import Path

import click

from iosched.clicommon import OneLineErrorCommand
from iosched.errors import InputError
from iosched.workloads.convert import PROFILE_TYPES, swf_to_batsim
from iosched.workloads.writer import dump_workload
from iosched.workloads.default_swf import find_default_swf

__all__ = ["swf_command", "swf_and_out"]


def swf_and_out(paths, command: str, out: str = "OUT.json") -> tuple:
    """``(swf, out)`` of a generator's ``[SWF] OUT`` arguments: the SWF given,
    or the default KTH-SP2 trace (the shared one, else the copy shipped with
    iosched: :func:`~iosched.workloads.default_swf.find_default_swf`).

    :param paths: the one or two command-line arguments (strings).
    :param command: the command's name, quoted in the error.
    :param out: the name of the output argument in the error.
    :raises click.ClickException: not one or two arguments, or no default
        trace found (one line).
    """
    if len(paths) == 2:
        return paths[0], paths[1]
    if len(paths) != 1:
        raise click.ClickException(f"{command}: expected [SWF] {out}, got {len(paths)} arguments")
    try:
        return find_default_swf(), paths[0]
    except InputError as exc:
        raise click.ClickException(str(exc)) from None


@click.command(name="swf", cls=OneLineErrorCommand)
@click.argument("paths", nargs=-1, metavar="[SWF] OUT.json")
@click.option("--nb-res", type=int, default=None, help="resources of the target platform [default: SWF MaxProcs]")
@click.option("--first", type=int, default=None, help="keep only the first N job records")
@click.option("--start", type=float, default=None, help="keep jobs submitted at or after this SWF time (s)")
@click.option("--end", type=float, default=None, help="keep jobs submitted before this SWF time (s)")
@click.option(
    "--profile-type", type=click.Choice(PROFILE_TYPES), default="delay", show_default=True,
    help="delay profiles, or parallel_homogeneous (cpu = run time x speed)",
)
@click.option("--speed", type=float, default=1e9, show_default=True, help="host speed in flop/s (parallel_homogeneous)")
@click.option("--walltime-factor", type=float, default=None,
              help="walltime = max(requested time, FACTOR x run time), as Batsim's "
                   "swf_to_batsim_workload_delay.py -jwf (2 there) [default: max(requested, run time)]")
@click.option("--use-allocated", is_flag=True,
              help="res = allocated processors, as Batsim's converter [default: requested processors]")
def swf_command(paths, nb_res, first, start, end, profile_type, speed, walltime_factor, use_allocated):
    """Convert SWF (default: the KTH-SP2 trace, shared or shipped) to a Batsim workload OUT.json.

    Jobs that cannot run on NB_RES resources or have no run time are dropped;
    the counts per reason are printed. SWF may be gzip-compressed (.swf.gz).
    --use-allocated --walltime-factor 2 gives the res and walltime of Batsim's
    tools/swf_to_batsim_workload_delay.py.
    """
    swf, out = swf_and_out(paths, "swf")
    try:
        workload, report = swf_to_batsim(
            swf, nb_res=nb_res, first=first, start=start, end=end, profile_type=profile_type, speed=speed,
            walltime_factor=walltime_factor, use_allocated=use_allocated,
        )
    except InputError as exc:
        raise click.ClickException(str(exc)) from None
    text = dump_workload(workload)
    try:
        Path(out).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"{out}: cannot write: {exc.strerror or exc}") from None
    click.echo(
        f"wrote {out}: {report.kept} jobs, {len(workload['profiles'])} profiles, "
        f"nb_res {report.nb_res} (from {swf}, {report.selected} job records selected)"
    )
    click.echo(report.summary())
    if report.walltime_raised:
        if walltime_factor is None:
            click.echo(f"note: {report.walltime_raised} jobs ran longer than requested: walltime set to their run time")
        else:
            click.echo(f"note: {report.walltime_raised} jobs: walltime set to {walltime_factor:g} x run time "
                       "(above their requested time)")
    if report.without_walltime:
        click.echo(f"note: {report.without_walltime} jobs have no requested time: "
                   + ("no walltime" if walltime_factor is None else f"walltime {walltime_factor:g} x run time"))

"""``python -m iosched.experiments.listpack FAMILY ALPHA OUT.json``: write one generated
workload (and optionally its platform); one-line errors, exit status 2."""

from __future__ import annotations

import click

from iosched.clicommon import OneLineErrorCommand
from iosched.errors import InputError, one_line
from iosched.experiments.listpack.workload import generate, write_workload
from iosched.experiments.platforms import listpack_xml


@click.command(cls=OneLineErrorCommand, error_prefix="iosched.listpack")
@click.argument("family")
@click.argument("alpha", type=float)
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--n-jobs", default=30, show_default=True, type=int)
@click.option("--volume", default="paper", show_default=True, help="paper (v = X w B Q / P) or time (v = X w B)")
@click.option("--platform", "platform_out", default=None, type=click.Path(dir_okay=False),
              help="also write the family's platform XML there")
def main(family, alpha, out, seed, n_jobs, volume, platform_out):
    """Generate a workload of FAMILY (M-BN, M-No, U-BN, U-No) at I/O load ALPHA."""
    try:
        wl = generate(family, alpha, seed, n_jobs, volume=volume)
        write_workload(out, wl)
        if platform_out:
            try:
                with open(platform_out, "w") as f:
                    f.write(listpack_xml(wl.machine.resources))
            except OSError as exc:
                raise InputError(f"{platform_out}: cannot write: {exc.strerror or exc}") from None
    except InputError as exc:
        click.echo(f"iosched.listpack: {one_line(exc)}", err=True)
        raise click.exceptions.Exit(2) from None
    click.echo(f"wrote {out}: {family} alpha={wl.alpha:.4f} ({len(wl.jobs)} jobs, "
               f"{wl.machine.resources} resources of {wl.machine.block} nodes)")


if __name__ == "__main__":
    main()

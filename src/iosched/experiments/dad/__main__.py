"""``python -m iosched.experiments.dad``: platforms, workloads, checks and the
reproduction of the data-aware dispatch family (see ``docs/dad.md``)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import click

from iosched.checks import check_output_file
from iosched.clicommon import OneLineErrorCommand
from iosched.engine.platform import read_hosts
from iosched.errors import InputError, one_line
from iosched.experiments.dad import reproduction
from iosched.experiments.dad.workload import GB, blast_like, check_workload, file_benchmark, trace_driven, write_workload
from iosched.experiments.platforms import nusa_xml


def _one_line(fn):
    """Turn an InputError into click's one-line error (status 1)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except InputError as exc:
            raise click.ClickException(one_line(exc)) from None
    return wrapper


@click.group()
def cli():
    """Data-aware dispatch (Li & Tatebe 2017): platforms, workloads, reproduction."""


@cli.command(cls=OneLineErrorCommand)
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--nodes", type=int, default=4, show_default=True)
@click.option("--slots", type=int, default=16, show_default=True)
@click.option("--nic-bw", default="125MBps", show_default=True)
@click.option("--local-bw", default="2803.61MBps", show_default=True)
@click.option("--local-sharing", type=click.Choice(["FATPIPE", "SHARED"]), default="FATPIPE", show_default=True)
@_one_line
def platform(out, nodes, slots, nic_bw, local_bw, local_sharing):
    """Write a NUSA platform (nodes x slots, node-local disks) to OUT."""
    check_output_file(out)
    Path(out).write_text(nusa_xml(nodes, slots, nic_bw=nic_bw, local_bw=local_bw, local_sharing=local_sharing))


@cli.command(cls=OneLineErrorCommand)
@click.argument("kind", type=click.Choice(["readgf", "thput-gfpio", "blast", "kth"]))
@click.argument("out", type=click.Path(dir_okay=False))
@click.option("--nodes", type=int, default=4, show_default=True)
@click.option("--slots", type=int, default=16, show_default=True)
@click.option("--swf", type=click.Path(), default=None, help="SWF trace (kind kth)")
@click.option("--first", type=int, default=1000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--load", type=float, default=0.9, show_default=True)
@_one_line
def workload(kind, out, nodes, slots, swf, first, seed, load):
    """Write a workload of KIND to OUT."""
    check_output_file(out)
    if kind in ("readgf", "thput-gfpio"):
        w = file_benchmark(20, GB, nodes, kind.replace("-", ""))
    elif kind == "blast":
        w = blast_like(nb_nodes=nodes, set_bytes_n=8 * GB)
    else:
        if swf is None:
            raise InputError("workload kth: --swf is required")
        w = trace_driven(swf, nodes, slots, first=first, seed=seed, load=load)
    write_workload(w, out)


@cli.command(cls=OneLineErrorCommand)
@click.argument("workload_file", type=click.Path())
@click.argument("platform_file", type=click.Path())
@_one_line
def check(workload_file, platform_file):
    """Check WORKLOAD_FILE's files and replicas against PLATFORM_FILE's nodes."""
    try:
        w = json.loads(Path(workload_file).read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{workload_file}: cannot read the workload: {exc}") from None
    hosts = read_hosts(platform_file)
    nodes = {h.properties["node"] for h in hosts.values() if "node" in h.properties}
    check_workload(w, nodes, workload_file)
    click.echo(f"{workload_file}: {len(w.get('jobs', []))} tasks OK on {len(nodes)} nodes")


@cli.command(name="reproduce", cls=OneLineErrorCommand)
@click.option("--out", type=click.Path(file_okay=False), default="results/dad", show_default=True)
@click.option("--swf", type=click.Path(exists=True, dir_okay=False), default=None,
              help="SWF trace for the 64/512-node scale-out")
@_one_line
def reproduce_cmd(out, swf):
    """Run the reproduction (Section V) and, with --swf, the scale-out."""
    reproduction.main(out, swf)


if __name__ == "__main__":
    cli()

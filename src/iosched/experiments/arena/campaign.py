"""``iosched arena``: every registered scheduler on the arena's regimes,
seeds and machine sizes, as a campaign, then its leaderboard and a report
(issue 27, item 3; ``docs/arena.md``, "Running the arena").

For each machine size N the arena writes, under ``OUTPUT/n<N>/``:

* ``inputs/arena<N>-<topology>.xml`` -- the reference machine
  (:func:`iosched.experiments.arena.machine.arena_xml`);
* ``arena.yaml`` -- a campaign file (``docs/campaigns.md``): that platform
  file, one ``python`` workload per regime (:func:`regime_workload`,
  called by the campaign with each seed: the campaign's own generated
  inputs under ``inputs/workloads/``), every chosen scheduler with the
  machine's bandwidths as options where its family takes them
  (:func:`iosched.experiments.arena.machine.scheduler_options`), the
  seeds, baseline ``easy`` and the engine argument
  ``--enable-dynamic-jobs`` (with ``--overload``, also the embedded
  engine's ``--embedded-extensions --link-overload=pfs_link:...``:
  :func:`iosched.experiments.arena.machine.arena_overload_args`);
* the campaign's runs (``runs/``, ``campaign.json``), run or resumed by
  :func:`iosched.campaign.run_campaign` (Dask; finished runs are skipped);
* ``leaderboard/`` -- :func:`iosched.analysis.leaderboard.write_leaderboard`
  (baseline ``easy``; rejected jobs are one of its columns).

Then ``OUTPUT/report.md`` and ``OUTPUT/report.html`` (self-contained):
per machine, the leaderboard tables, the per-regime rankings figure, and
per regime the I/O of its representative runs (seed = the first seed:
``easy`` and the top-ranked scheduler of each other family; bytes per tier
of every scheduler) drawn by :func:`iosched.analysis.ioplots.io_blocks`.

Same arguments, same outputs (runs are seeded; nothing depends on the
wall clock).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Callable, Optional, Sequence

import click
import yaml

from iosched.analysis.io import load_io
from iosched.analysis.ioplots import io_blocks, plot_tier_bytes
from iosched.analysis.leaderboard import render_blocks, write_leaderboard
from iosched.analysis.report import render_html, render_markdown
from iosched.campaign.execute import run_campaign
from iosched.campaign.schema import load_campaign
from iosched.campaign.files import write_if_changed
from iosched.campaign.jobqueue import jobqueue_settings
from iosched.errors import InputError, one_line
from iosched.engine.overload import parse_bandwidth
from iosched.experiments.arena.machine import (SIZES, TOPOLOGIES, ArenaMachine, arena_overload_args, arena_xml,
                                               scheduler_options)
from iosched.experiments.arena.regimes import REGIMES, Shape, generate
from iosched.paths import RESULTS_DIR
from iosched.run.simulation import ENGINES
from iosched.schedulers.registry import SCHEDULERS
from iosched.workloads.default_swf import DEFAULT_SWF_HELP, find_default_swf

__all__ = ["BASELINE", "ENGINE_ARGS", "parse_names", "parse_seeds", "parse_nodes",
           "regime_workload", "campaign_spec", "write_report", "run_arena", "arena_board_text",
           "arena_command"]

#: The leaderboard's baseline (I/O-unaware EASY backfilling).
BASELINE = "easy"
#: Engine arguments of every arena run (phase jobs are dynamic jobs).
ENGINE_ARGS = ("--enable-dynamic-jobs",)


def parse_names(text: str, allowed: Sequence[str], option: str) -> list[str]:
    """``all`` or comma-separated names, each one of *allowed*, in the given
    order, without repeats.

    :raises InputError: an empty list, an unknown name (one line naming
        *option* and the name).
    """
    if text.strip() == "all":
        return list(allowed)
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise InputError(f"option {option}: expected 'all' or comma-separated names")
    _check_names(names, allowed, option)
    return list(dict.fromkeys(names))


def _check_names(names: Sequence[str], allowed: Sequence[str], option: str) -> None:
    for n in names:
        if n not in allowed:
            raise InputError(f"option {option}: unknown name {n!r} (one of: all, {', '.join(allowed)})")


def _ints(text: str, option: str, minimum: int) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"option {option}: expected integers separated by commas, got {text!r}") from None
    if not values or any(v < minimum for v in values):
        raise InputError(f"option {option}: expected integers >= {minimum}, got {text!r}")
    if len(set(values)) != len(values):
        raise InputError(f"option {option}: repeated value in {text!r}")
    return values


def parse_seeds(text: str) -> list[int]:
    """``N`` (one number: the seeds 1..N) or ``S1,S2,...`` (the seeds, >= 0).

    :raises InputError: not integers, a repeat, N < 1.
    """
    if "," not in text:
        n = _ints(text, "--seeds", 1)[0]
        return list(range(1, n + 1))
    return _ints(text, "--seeds", 0)


def parse_nodes(text: str) -> list[int]:
    """Comma-separated machine sizes (compute nodes, 1..100,000).

    :raises InputError: not integers, a repeat, a size out of range.
    """
    values = _ints(text, "--nodes", 1)
    for v in values:
        if v > 100_000:
            raise InputError(f"option --nodes: at most 100000 compute nodes, got {v}")
    return values


def regime_workload(seed: int, regime: str, nodes: int, topology: str = "dragonfly",
                    jobs: Optional[int] = None, trace: Optional[str] = None,
                    node_io_cap: Optional[float] = None) -> dict:
    """The workload of one regime and seed for the machine of *nodes* and
    *topology*: :func:`iosched.experiments.arena.regimes.generate` on
    *trace* (None: the default KTH-SP2 trace), with the machine's per-node
    I/O cap *node_io_cap* (bytes/s; None: none). Called by the campaign (a
    ``python`` workload entry) once per seed.

    :returns: a Batsim workload dict. :raises InputError: as ``generate``.
    """
    swf = find_default_swf() if trace is None else Path(trace)
    return generate(swf, regime, seed, jobs=jobs, shape=Shape.of_machine(ArenaMachine(nodes, topology)),
                    node_io_cap=node_io_cap)


def _scheduler_entry(name: str, options: dict, own: Optional[dict] = None) -> dict | str:
    extra = {**(options.get(SCHEDULERS[name][0]) or {}), **(own or {})}
    return {"name": name, "options": extra} if extra else name


def parse_scheduler_options(items: Sequence[str], schedulers: Sequence[str]) -> dict:
    """``--scheduler-options NAME=JSON`` values as ``{name: options}``.

    :raises InputError: an item without ``=``, a name not among
        *schedulers*, a name given twice, JSON that is not an object.
    """
    out: dict = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep:
            raise InputError(f"option --scheduler-options: {item!r} is not NAME=JSON")
        if name not in schedulers:
            raise InputError(f"option --scheduler-options: {name!r} is not one of the arena's schedulers")
        if name in out:
            raise InputError(f"option --scheduler-options: {name!r} given twice")
        try:
            value = json.loads(text)
        except ValueError as e:
            raise InputError(f"option --scheduler-options: {name}: not JSON ({e})") from None
        if not isinstance(value, dict):
            raise InputError(f"option --scheduler-options: {name}: not a JSON object: {text!r}")
        out[name] = value
    return out


def campaign_spec(name: str, platform: Path, machine: ArenaMachine, schedulers: Sequence[str],
                  regimes: Sequence[str], seeds: Sequence[int], jobs: Optional[int],
                  trace: Optional[Path], in_process: bool, overload: Optional[str] = None,
                  engine: str = "embedded", own_options: Optional[dict] = None) -> dict:
    """The campaign file's mapping of one machine size (module docstring).

    :param platform: the machine's platform file (absolute path).
    :param overload: ``--overload`` (a pfsbw reading or a curve for
        ``pfs_link``; None: linear sharing), as
        :func:`~iosched.experiments.arena.machine.arena_overload_args`.
    :param engine: the campaign's ``engine`` (``embedded`` or ``batsim``,
        the real Batsim 4.2.1 on PATH; the key is left out for embedded).
    :param own_options: ``{scheduler: options}`` given by the user, over
        the machine's (:func:`parse_scheduler_options`).
    :returns: a dict that :func:`iosched.campaign.load_campaign` accepts.
    """
    options = scheduler_options(machine)
    args = {"nodes": machine.nodes, "topology": machine.topology}
    if jobs is not None:
        args["jobs"] = int(jobs)
    if trace is not None:
        args["trace"] = str(trace)
    if machine.node_io_cap is not None:
        args["node_io_cap"] = machine.node_io_cap
    spec = {
        "name": name,
        "platforms": [{"file": str(platform), "label": platform.stem}],
        "workloads": [{"python": f"{__name__}:regime_workload", "label": r,
                       "args": {"regime": r, **args}} for r in regimes],
        "schedulers": [_scheduler_entry(s, options, (own_options or {}).get(s)) for s in schedulers],
        "seeds": [int(s) for s in seeds],
        "baseline": BASELINE,
        "engine_args": [*ENGINE_ARGS, *arena_overload_args(overload, machine)],
        "in_process": bool(in_process),
    }
    if engine != "embedded":
        spec["engine"] = engine
    return spec


def _representatives(board, regime: str, machine: str) -> list[str]:
    """``easy``, then per family (scheduler file) its top-ranked scheduler
    on (regime, machine), in rank order."""
    g = board[(board["regime"] == regime) & (board["machine"] == machine)].sort_values("rank")
    names, families = [], {SCHEDULERS[BASELINE][0]}
    for s in g["scheduler"]:
        if SCHEDULERS[s][0] not in families:
            families.add(SCHEDULERS[s][0])
            names.append(s)
    return [BASELINE, *names] if BASELINE in set(g["scheduler"]) else names


def write_report(output: Path, sizes: list[dict]) -> dict:
    """``OUTPUT/report.md`` and ``OUTPUT/report.html`` of the arena (module
    docstring).

    :param sizes: per machine size: ``{"campaign": Campaign, "runs": the
        campaign's run specs, "leaderboard": write_leaderboard's result}``.
    :returns: {"markdown": Path, "html": Path}. :raises InputError: an
        unwritable file or figure.
    """
    figdir = output / "figures"
    blocks: list = [("h1", "iosched arena"),
                    ("p", "Every chosen scheduler on the same machine and the same jobs, per I/O "
                          "regime, over seeds (docs/arena.md). Leaderboard definitions: "
                          "docs/leaderboard.md; the runs: each machine's campaign folder.")]
    for size in sizes:
        camp, lb = size["campaign"], size["leaderboard"]
        board = lb["board"]
        rel = lb["paths"]["figure"].relative_to(output)
        sub = render_blocks(board, f"Machine {', '.join(sorted(set(board['machine'])))}: leaderboard",
                            camp.tau, figure=str(rel))
        blocks += [("h2", sub[0][1]) if b[0] == "h1" else (("h3", b[1]) if b[0] == "h2" else b)
                   for b in sub]
        runs = {(r["params"]["workload"], r["params"]["scheduler"], r["params"]["seed"]): Path(r["dir"])
                for r in size["runs"]}
        seed = camp.seeds[0]
        for (regime, machine) in sorted(set(zip(board["regime"], board["machine"]))):
            records = {}
            for s in sorted(set(board["scheduler"])):
                d = runs.get((regime, s, seed))
                rec = load_io(d) if d is not None and d.is_dir() else None
                if rec is not None:
                    records[s] = rec
            blocks.append(("h2", f"I/O of regime {regime} on machine {machine} (seed {seed})"))
            if not records:
                blocks.append(("p", "No run of this regime wrote an I/O record."))
                continue
            prefix = f"io_{machine}_{regime}"
            tiers = f"{prefix}_all_tiers.png"
            plot_tier_bytes(records, figdir / tiers)
            blocks.append(("img", f"figures/{tiers}", f"Bytes moved per tier, every scheduler, "
                                                       f"regime {regime}, seed {seed}"))
            rep = {s: records[s] for s in _representatives(board, regime, machine) if s in records}
            blocks.append(("p", f"Representative runs: {', '.join(rep)} (the baseline and the "
                                "top-ranked scheduler of each other family)."))
            blocks += [("h3", b[1]) if b[0] == "h2" else b
                       for b in io_blocks(rep, figdir, prefix=prefix)]
    md, html = output / "report.md", output / "report.html"
    try:
        md.write_text(render_markdown(blocks), encoding="utf-8")
        html.write_text(render_html(blocks, "iosched arena", output), encoding="utf-8")
    except OSError as e:
        raise InputError(f"{output}: cannot write the report: {e.strerror or e}") from None
    return {"markdown": md, "html": html}



def run_arena(schedulers: Sequence[str], regimes: Sequence[str], seeds: Sequence[int],
              nodes: Sequence[int], output, *, topology: str = "dragonfly",
              jobs: Optional[int] = None, trace=None, workers: Optional[int] = None,
              cluster: Optional[str] = None, jobqueue: Optional[dict] = None,
              in_process: bool = False, progress: bool = False,
              overload: Optional[str] = None, node_io_cap: Optional[float] = None,
              engine: str = "embedded", retry_failed: bool = False,
              scheduler_opts: Optional[dict] = None, echo: Callable[[str], None] = print) -> dict:
    """Run (or resume) the arena and write its leaderboards and report
    (module docstring).

    :param schedulers: registered names (the baseline ``easy`` among them).
    :param regimes: names of :data:`~iosched.experiments.arena.regimes.REGIMES`.
    :param seeds: ints >= 0. :param nodes: machine sizes (compute nodes).
    :param output: the output folder (created).
    :param jobs: the first *jobs* jobs of the trace (None: all that fit).
    :param trace: SWF file (None: the default KTH-SP2 trace).
    :param overload: the PFS under overload, embedded engine only (a
        pfsbw reading ``issue``, ``long-term``, ``fig4`` scaled to the
        machine's PFS link, or a curve ``BW@N,...`` for ``pfs_link``; None
        or ``linear``: linear sharing).
    :param node_io_cap: per-node I/O cap b (bytes/s; None: no cap): in
        the platform and as the jobs' ``io.throughput_cap``.
    :param engine: ``embedded`` (default) or ``batsim`` (the real Batsim
        4.2.1, found on PATH when a run starts; not with *in_process* nor
        *overload*, both embedded-only).
    :param retry_failed: also re-run the runs that failed before (else
        they are listed again, as :func:`iosched.campaign.run_campaign`).
    :param scheduler_opts: ``{scheduler: options}`` over the machine's
        (e.g. ``{"io-list": {"io_model": "shared"}}``).
    :param workers, cluster, jobqueue: where the runs execute
        (:func:`iosched.campaign.run_campaign`; *jobqueue*: settings of
        :func:`iosched.campaign.jobqueue.jobqueue_settings`).
    :returns: {"sizes": [{"campaign", "runs", "result", "leaderboard"}],
        "report": {"markdown", "html"}, "failed": {run id: reason}}.
    :raises InputError: bad names or values, no scheduler ``easy``, a run
        that could not be prepared; failed runs are returned, not raised.
    """
    if BASELINE not in schedulers:
        raise InputError(f"option --schedulers: the baseline {BASELINE!r} must be among them")
    _check_names(schedulers, list(SCHEDULERS), "--schedulers")
    _check_names(regimes, REGIMES, "--regimes")
    if topology not in TOPOLOGIES:
        raise InputError(f"option --topology: unknown topology {topology!r} "
                         f"(one of {', '.join(TOPOLOGIES)})")
    if engine not in ENGINES:
        raise InputError(f"option --engine: unknown engine {engine!r} (one of {', '.join(ENGINES)})")
    if engine != "embedded":
        for opt, on in (("--in-process", in_process), ("--overload", overload not in (None, "linear"))):
            if on:
                raise InputError(f"option {opt}: embedded engine only, not with --engine {engine}")
    if trace is not None and not Path(trace).is_file():
        raise InputError(f"option --trace: file not found: {trace}")
    out = Path(output).resolve()
    sizes, failed = [], {}
    for n in nodes:
        machine = ArenaMachine(n, topology, node_io_cap)
        cdir = out / f"n{n}"
        platform = cdir / "inputs" / f"arena{n}-{topology}.xml"
        try:
            platform.parent.mkdir(parents=True, exist_ok=True)
            write_if_changed(platform, arena_xml(n, topology, node_io_cap))
            spec = campaign_spec(f"arena-n{n}", platform, machine, schedulers, regimes, seeds, jobs,
                                 None if trace is None else Path(trace).resolve(), in_process, overload,
                                 engine, scheduler_opts)
            cfile = cdir / "arena.yaml"
            write_if_changed(cfile, yaml.safe_dump(spec, sort_keys=False))
        except OSError as e:
            raise InputError(f"{cdir}: cannot write the arena's inputs: {e.strerror or e}") from None
        camp = dataclasses.replace(load_campaign(cfile, output=cdir), jobqueue=jobqueue)
        res = run_campaign(camp, workers=workers, cluster=cluster, progress=progress, echo=echo,
                           retry_failed=retry_failed)
        if res.interrupted:
            raise KeyboardInterrupt
        failed.update(res.failed)
        lb = write_leaderboard(cdir, cdir / "leaderboard", baseline=BASELINE)
        sizes.append({"campaign": camp, "runs": res.runs, "result": res, "leaderboard": lb})
    report = write_report(out, sizes)
    return {"sizes": sizes, "report": report, "failed": failed}


def arena_board_text(board) -> str:
    """The leaderboard's main columns as plain text (one line per row)."""
    cols = ["regime", "machine", "rank", "scheduler", "runs", "failed", "bounded_slowdown_mean",
            "waiting_time_mean", "utilization", "jobs_rejected"]
    return board[[c for c in cols if c in board.columns]].to_string(index=False, float_format="%.4g")


@click.command(name="arena")
@click.option("--schedulers", default="all", show_default=True,
              help="'all' (every registered scheduler) or comma-separated names; easy is the baseline")
@click.option("--regimes", default="all", show_default=True,
              help=f"'all' or comma-separated regimes ({', '.join(REGIMES)})")
@click.option("--seeds", default="5", show_default=True, help="N (seeds 1..N) or S1,S2,...")
@click.option("--nodes", default=str(SIZES[0]), show_default=True,
              help="machine sizes in compute nodes, comma-separated (e.g. 100,1000)")
@click.option("--topology", default="dragonfly", show_default=True,
              help=f"interconnect ({', '.join(TOPOLOGIES)})")
@click.option("--jobs", "nb_jobs", type=click.IntRange(min=1), default=None,
              help="the first N jobs of the trace that fit the machine [default: all]")
@click.option("--trace", type=click.Path(dir_okay=False), default=None,
              help=f"SWF trace [default: {DEFAULT_SWF_HELP}]")
@click.option("--output", type=click.Path(file_okay=False), default=str(RESULTS_DIR / "arena"),
              show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="local Dask workers [default: the number of cores]")
@click.option("--cluster", default=None, help="address of a running Dask scheduler (tcp://HOST:8786)")
@click.option("--jobqueue", type=click.Choice(["slurm", "pbs"]), default=None,
              help="start the Dask workers as batch jobs (docs/campaigns.md)")
@click.option("--jobqueue-jobs", type=int, default=None, help="batch jobs kept running (with --jobqueue)")
@click.option("--jobqueue-option", "jobqueue_options", multiple=True, metavar="KEY=VALUE",
              help="one jobqueue setting (with --jobqueue; repeatable)")
@click.option("--overload", default=None, metavar="READING|CURVE",
              help="the PFS under overload, embedded engine only: a pfsbw reading (issue, long-term, fig4) "
                   "scaled to the PFS link, or BW@N[,BW@N...][:tasks|flows] for pfs_link [default: linear]")
@click.option("--node-io-cap", default=None, metavar="BW",
              help="each compute node's path to the PFS capped at BW bytes/s (e.g. 31.25MB); jobs get "
                   "io.throughput_cap = nodes x BW [default: no cap]")
@click.option("--in-process", is_flag=True, help="run each scheduler inside the engine's process")
@click.option("--engine", default="embedded", show_default=True,
              help="embedded, or batsim: the real Batsim 4.2.1 on PATH (not with --in-process, --overload)")
@click.option("--retry-failed", is_flag=True, help="also re-run the runs that failed before")
@click.option("--scheduler-options", "scheduler_options_", multiple=True, metavar="NAME=JSON",
              help='options of one scheduler, over the machine\'s (e.g. io-list=\'{"io_model": "shared"}\'; '
                   'repeatable)')
@click.option("--progress/--no-progress", default=False, help="a progress bar on stderr")
def arena_command(schedulers, regimes, seeds, nodes, topology, nb_jobs, trace, output, workers,
                  cluster, jobqueue, jobqueue_jobs, jobqueue_options, overload, node_io_cap, in_process,
                  engine, retry_failed, scheduler_options_, progress):
    """Every scheduler on each regime x seed x machine size: a resumable
    campaign, its leaderboard (baseline easy) and a report with the I/O views.

    Exit status: 0 every run finished, 1 some runs failed, 2 bad input.
    """
    try:
        where = [n for n, v in (("--workers", workers is not None), ("--cluster", cluster is not None),
                                ("--jobqueue", jobqueue is not None)) if v]
        if len(where) > 1:
            raise InputError(f"{' and '.join(where)}: give one place to run the campaign")
        names = parse_names(schedulers, list(SCHEDULERS), "--schedulers")
        own = parse_scheduler_options(scheduler_options_, names)
        res = run_arena(names,
                        parse_names(regimes, list(REGIMES), "--regimes"),
                        parse_seeds(seeds), parse_nodes(nodes), output, topology=topology,
                        jobs=nb_jobs, trace=trace, workers=workers, cluster=cluster,
                        jobqueue=jobqueue_settings(None, jobqueue, jobqueue_options, jobqueue_jobs),
                        in_process=in_process, progress=progress, overload=overload, engine=engine,
                        retry_failed=retry_failed, scheduler_opts=own,
                        node_io_cap=None if node_io_cap is None else parse_bandwidth(node_io_cap, "--node-io-cap"),
                        echo=lambda s: click.echo(s, err=True))
    except InputError as e:
        click.echo(f"Error: {one_line(e)}", err=True)
        raise SystemExit(2) from None
    for size in res["sizes"]:
        click.echo(arena_board_text(size["leaderboard"]["board"]))
    click.echo(f"arena: report {res['report']['html']}")
    for rid in sorted(res["failed"]):
        click.echo(f"FAILED {rid}: {res['failed'][rid]}")
    raise SystemExit(1 if res["failed"] else 0)

"""KTH-SP2 -> Batsim JSON with burst-buffer requests (the paper's workload).

Source: Kopanski & Rzadca, Euro-Par 2021, Section 5.1; artifact
``scripts/generate_swf_workload.py``, ``burstbuffer/model.py``
(``generate_burst_buffer_lognorm``, ``burst_buffer_distribution``),
``workloads/swf.yaml`` and ``workloads/KTH-split/io-aware/part-*.yaml``,
``platforms/dragonfly96.yaml``.

Per SWF job (``requested_processors`` = ``n``, ``run_time``, ``requested_time``):

* **burst buffer per processor** (bytes): ``max(X * 1024, 100 MB)`` with ``X``
  (KiB) drawn from the shifted log-normal of the artifact
  (``scipy.stats.lognorm(s=1.0972516604048774, loc=-150361.59523836235,
  scale=2714115.5724594607)``, i.e. ``X = loc + scale * exp(s * Z)``, ``Z``
  standard normal), rounded to an integer, then capped (option ``cap``):

  - ``"artifact"`` (default; the artifact's ``burstbuffer/model.py``, final
    version): at most ``C`` (the capacity of one burst-buffer node, 40 GB)
    per processor, and, when the job's ``ceil(n / S)`` burst buffers per
    storage node would not fit in ``C`` (``S`` = 12 storage nodes), set to
    ``floor(C / ceil(n / S))``; so every job fits on the machine. All the
    artifact's committed workloads (../shared/data/bb-artifact) satisfy
    this rule;
  - ``"total"`` (iosched before issue 13): only the job's total ``n * bb``
    is capped at the machine's total capacity ``S * C`` and ``bb`` is then
    ``round(total / n)``; jobs whose burst buffers cannot be placed are
    rejected by the scheduler.
* **very short jobs** (``requested_time <= 120`` s): ``bb`` = 10 MB per
  processor and no I/O correction of the computation;
* **compute vs I/O time**: ``flops = speed * max(run_time - F * bb / B,
  0.05 * run_time)`` with ``speed`` = 1 Gflop/s, ``B`` = 1,250 MB/s
  (the artifact's ``platforms/dragonfly96.yaml`` line 5, ``bandwidth: 1250 #
  MBps``, since its commit abc93f6 "Update bandwidth"; option ``bandwidth``;
  iosched used 125 MB/s before issue 13) and ``F`` = 40
  (``multiply_factor_runtime`` of the artifact's README configuration and of
  its split parts), rounded to an integer number of flops: the computation is
  shortened to leave room for the I/O phases without changing the walltime;
* **communication** (bytes per ordered pair of nodes, per compute phase):
  0 for one node, else ``round(N(0.1 GB, 0.02 GB))`` (``swf.yaml``:
  ``expected_communication_per_node`` 0.1 GB, ``stddev`` 20 %), floored at 0;
* **times**: ``subtime = submit_time - (first submit_time - 1)`` (the
  artifact's offset); ``walltime = requested_time`` (artifact); jobs with no
  run time, no processors or no requested time are dropped (as
  :func:`iosched.workloads.convert.swf_to_batsim` does for the first two).

The random draws use ``numpy.random.Generator(PCG64(seed))``, in job order:
for every job, one normal for the burst buffer (also drawn, and unused, for
short jobs, so that a job's draw does not depend on the previous jobs' kinds)
and one for the communication. Same SWF + seed -> byte-identical JSON.

Each Batsim job carries its I/O model (:mod:`iosched.sched.iojob`), the
extra field ``io``: ``burst_buffer.bytes`` (bytes per node),
``compute.flops`` (flops per node) and ``compute.com`` (bytes per pair),
read by the scheduler (before issue 26: the fields ``bb``, ``flops``,
``com``, still read); its
profile is the artifact's ``parallel_homogeneous`` (``cpu``, ``com``, ``bb``),
which is never executed as such (see :mod:`iosched.sched.bbrun`).

Capacity: 40 GB per burst-buffer node (:data:`BB_CAPACITY`, the artifact's
``burst_buffer_capacity: 40`` GB of ``dragonfly96.yaml``); the paper's
reasoning behind it is :func:`expected_capacity_per_storage`: the expected
request of a fully busy machine -- 96 compute nodes x ``E[max(X * 1024, 100
MB)]`` = 96 x 4.921 GB -- divided among the 12 burst-buffer nodes, 39.37 GB,
which the artifact rounds to 40 GB (``capacity_per_storage`` sets another
value).

Parts: :data:`ARTIFACT_PARTS` are the artifact's 16 three-week parts, cut by
SWF job numbers (``workloads/KTH-split/io-aware/part-*.yaml``:
``from_job_number``, ``num_jobs``); :func:`artifact_parts` cuts a generated
workload the same way. :func:`three_week_parts` cuts by 21 days of
submission time instead (iosched before issue 13).

Files are written by the one workload writer
(:func:`iosched.workloads.writer.write_workload`, re-exported here).
Command line: ``iosched workload bb [SWF] OUT`` (:func:`workload_command`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import click
import numpy as np

from iosched.bb.model import CPU_SPEED, GB, KIB, MB
from iosched.checks import MAX_AMOUNT, argument
from iosched.clicommon import OneLineErrorCommand
from iosched.errors import InputError
from iosched.sched.iojob import BurstBuffer, Compute, IOJob, to_json
from iosched.workloads.cli import swf_and_out
from iosched.workloads.default_swf import find_default_swf
from iosched.workloads.subset import workload_subset
from iosched.workloads.swf import read_swf
from iosched.workloads.writer import write_workload

__all__ = ["LOGNORM_S", "LOGNORM_LOC", "LOGNORM_SCALE", "BB_MIN", "SHORT_JOB", "SHORT_BB",
           "RUNTIME_FACTOR", "IO_BANDWIDTH", "BB_CAPACITY", "CAPS", "ARTIFACT_PARTS", "artifact_parts",
           "cap_bb", "COM_MEAN", "COM_STD", "NB_COMPUTE", "NB_STORAGE",
           "expected_bb_per_node", "expected_capacity_per_storage", "generate", "first_jobs",
           "three_week_parts", "write_workload", "PART_SECONDS", "campaign_workload", "workload_command"]

LOGNORM_S = 1.0972516604048774
LOGNORM_LOC = -150361.59523836235     # KiB
LOGNORM_SCALE = 2714115.5724594607    # KiB
BB_MIN = 100 * MB                     # lower bound per processor
SHORT_JOB = 120.0                     # s: requested time at most this -> short job
SHORT_BB = 10 * MB
RUNTIME_FACTOR = 40.0
IO_BANDWIDTH = 1250 * MB              # bytes/s (artifact dragonfly96.yaml, since abc93f6)
BB_CAPACITY = 40 * GB                 # bytes per burst-buffer node (artifact dragonfly96.yaml)
#: Burst-buffer cap rules (module documentation); the first is the default.
CAPS = ("artifact", "total")
COM_MEAN = 0.1 * GB
COM_STD = 0.2 * COM_MEAN
NB_COMPUTE = 96
NB_STORAGE = 12
#: Length of one part of :func:`three_week_parts` (s).
PART_SECONDS = 21 * 24 * 3600


def _phi(x):
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def expected_bb_per_node() -> float:
    """``E[max(X * 1024, BB_MIN)]`` in bytes (closed form of the shifted
    log-normal truncated from below; about 4.921e9)."""
    m = BB_MIN / KIB                      # threshold in KiB
    w0 = m - LOGNORM_LOC                  # scale * exp(s Z) >= w0
    z0 = math.log(w0 / LOGNORM_SCALE) / LOGNORM_S
    p_low = _phi(z0)
    upper = LOGNORM_LOC * (1 - p_low) + LOGNORM_SCALE * math.exp(LOGNORM_S ** 2 / 2) * _phi(LOGNORM_S - z0)
    return (m * p_low + upper) * KIB


def expected_capacity_per_storage(nb_compute: int = NB_COMPUTE, nb_storage: int = NB_STORAGE) -> float:
    """Burst-buffer bytes per storage node: ``nb_compute * E[bb] / nb_storage``."""
    return nb_compute * expected_bb_per_node() / nb_storage


def cap_bb(per_proc: float, n: int, capacity: float, nb_storage: int, cap: str) -> int:
    """Burst buffer per processor (bytes) after the cap rule ``cap``.

    :param per_proc: the drawn request per processor (bytes).
    :param n: processors (nodes) of the job.
    :param capacity: bytes per burst-buffer node (C).
    :param nb_storage: burst-buffer nodes (S).
    :param cap: ``"artifact"`` or ``"total"`` (module documentation).
    :raises InputError: unknown rule.
    """
    if cap == "artifact":
        bb = min(per_proc, capacity)
        per_node = math.ceil(n / nb_storage)
        if bb * per_node > capacity:
            bb = math.floor(capacity / per_node)
        return int(round(bb))
    if cap == "total":
        return int(round(min(per_proc * n, capacity * nb_storage) / n))
    raise InputError(f"cap={cap!r} is unknown; expected one of {', '.join(CAPS)}")


def generate(swf_path, *, seed: int = 0, nb_res: int = NB_COMPUTE, first: Optional[int] = None,
             capacity_per_storage: Optional[float] = None, nb_storage: int = NB_STORAGE,
             runtime_factor: float = RUNTIME_FACTOR, name: Optional[str] = None,
             cap: str = "artifact", bandwidth: float = IO_BANDWIDTH) -> dict:
    """Batsim workload (dict) of an SWF log with burst-buffer requests.

    :param swf_path: SWF file (KTH-SP2-1996-2.1-cln.swf).
    :param seed: random seed (int).
    :param nb_res: the workload's ``nb_res`` (compute nodes).
    :param first: keep only the first ``first`` kept jobs (None: all).
    :param capacity_per_storage: bytes per storage node (default
        :data:`BB_CAPACITY`, 40 GB), used by the cap.
    :param cap: the cap rule, ``"artifact"`` or ``"total"``.
    :param bandwidth: I/O bandwidth (bytes/s) of the compute-time correction.
    :returns: ``{"description", "nb_res", "seed", "jobs", "profiles"}``; job
        ids are the SWF job numbers; ``dropped`` counts the dropped jobs.
    :raises InputError: unreadable SWF, bad arguments (one line naming the
        argument: ``seed`` an integer >= 0, ``nb_res``, ``nb_storage`` and
        ``first`` integers >= 1, ``capacity_per_storage`` at least 1 MB (a
        smaller one would round requests to 0 bytes), ``runtime_factor`` >= 0,
        ``bandwidth`` > 0; numbers finite and at most
        :data:`iosched.checks.MAX_AMOUNT`).
    """
    if first is not None and (not isinstance(first, int) or isinstance(first, bool) or first < 1):
        raise InputError(f"first must be a positive integer, got {first!r}")
    if cap not in CAPS:
        raise InputError(f"cap={cap!r} is unknown; expected one of {', '.join(CAPS)}")
    argument(seed, "seed", integer=True, maximum=None, where="bb workload")
    argument(nb_res, "nb_res", integer=True, minimum=1, maximum=None, where="bb workload")
    argument(nb_storage, "nb_storage", integer=True, minimum=1, maximum=None, where="bb workload")
    if capacity_per_storage is not None:
        argument(capacity_per_storage, "capacity_per_storage", minimum=MB, where="bb workload")
    argument(runtime_factor, "runtime_factor", where="bb workload")
    argument(bandwidth, "bandwidth", minimum=0, exclusive_minimum=True, where="bb workload")
    log = read_swf(swf_path)
    df = log.jobs
    capacity = BB_CAPACITY if capacity_per_storage is None else float(capacity_per_storage)
    rng = np.random.Generator(np.random.PCG64(int(seed)))
    jobs, profiles = [], {}
    dropped = 0
    offset = None
    cols = [df[c].to_numpy() for c in ("job_number", "submit_time", "run_time",
                                       "requested_processors", "requested_time")]
    for num, sub, run, procs, req in zip(*cols):
        if first is not None and len(jobs) >= first:
            break
        bad = (_na(procs) or _na(run) or _na(req) or _na(sub)
               or int(procs) <= 0 or float(run) <= 0 or float(req) <= 0)
        if bad:
            dropped += 1
            continue
        n, run, req, sub = int(procs), float(run), float(req), float(sub)
        z_bb, z_com = rng.standard_normal(2)
        if offset is None:
            offset = sub - 1
        if req <= SHORT_JOB:
            bb = SHORT_BB
            flops = round(run * CPU_SPEED)
        else:
            x_kib = LOGNORM_LOC + LOGNORM_SCALE * math.exp(LOGNORM_S * float(z_bb))
            per = round(max(x_kib * KIB, BB_MIN))
            bb = cap_bb(per, n, capacity, nb_storage, cap)
            flops = round(CPU_SPEED * max(run - runtime_factor * bb / bandwidth, run * 0.05))
        com = 0 if n == 1 else max(0, round(COM_MEAN + COM_STD * float(z_com)))
        jid = int(num)
        pid = str(jid)
        io = IOJob(burst_buffer=BurstBuffer(int(bb)), compute=Compute(flops=int(flops), com=int(com)))
        jobs.append({"id": jid, "subtime": _num(sub - offset), "walltime": _num(req), "res": n,
                     "profile": pid, "io": to_json(io)})
        profiles[pid] = {"type": "parallel_homogeneous", "cpu": int(flops), "com": int(com), "bb": int(bb)}
    src = Path(swf_path).name
    # the text names the generator's module before issue 26: the output bytes stay the same
    desc = name or f"{src} with burst-buffer requests (iosched.bb.workload, seed {seed})"
    return {"description": desc, "nb_res": int(nb_res), "seed": int(seed),
            "bb_capacity_per_storage": float(capacity), "bb_cap": cap, "io_bandwidth": float(bandwidth), "dropped": dropped, "jobs": jobs, "profiles": profiles}


def _na(v) -> bool:
    try:
        return v is None or bool(np.isnan(float(v)))
    except (TypeError, ValueError):
        return True


def _num(x: float):
    return int(x) if float(x).is_integer() else float(x)


def first_jobs(workload: dict, count: int = 1000) -> dict:
    """The first ``count`` jobs of a generated workload (same draws as in the
    full one: the seed sequence is per job in log order)."""
    jobs = workload["jobs"][:count]
    keep = {j["profile"] for j in jobs}
    out = dict(workload)
    out["jobs"] = jobs
    out["profiles"] = {k: v for k, v in workload["profiles"].items() if k in keep}
    out["description"] = f"{workload['description']}, first {len(jobs)} jobs"
    return out


def three_week_parts(workload: dict, nb_parts: int = 16, length: float = PART_SECONDS) -> list:
    """Split into ``nb_parts`` non-overlapping parts of ``length`` s of
    submission time (the 16 three-week parts of the paper's Figures 11-12).

    Part ``k`` holds the jobs submitted in ``[k * length, (k + 1) * length)``
    of the generated submission times; each part's submission times are
    shifted so that its first job is submitted at 1 s (as the artifact's
    generator does for every part). Jobs after the last part are left out.

    :returns: a list of ``nb_parts`` workloads (dicts).
    """
    parts = []
    for k in range(nb_parts):
        lo, hi = k * length, (k + 1) * length
        jobs = [dict(j) for j in workload["jobs"] if lo <= j["subtime"] < hi]
        if jobs:
            off = jobs[0]["subtime"] - 1
            for j in jobs:
                j["subtime"] = _num(j["subtime"] - off)
        parts.append(workload_subset(
            workload, jobs, description=f"{workload['description']}, part {k} [{lo:.0f}, {hi:.0f}) s"))
    return parts


#: The artifact's 16 three-week parts of KTH-SP2 as ``(from_job_number,
#: num_jobs)``: part ``k`` holds the SWF jobs numbered ``from .. from +
#: num_jobs - 1`` (``workloads/KTH-split/io-aware/part-k.yaml`` of
#: jankopanski/Burst-Buffer-Scheduling; parts 14 and 15 share job 27154, as
#: there).
ARTIFACT_PARTS = (
    (15, 1766), (1781, 1222), (3003, 1532), (4535, 1746), (6281, 1566), (7847, 1938),
    (9785, 2234), (12019, 1647), (13666, 1374), (15040, 2037), (17077, 2940), (20017, 2247),
    (22264, 1893), (24157, 1693), (25850, 1305), (27154, 1337),
)


def artifact_parts(workload: dict, parts=ARTIFACT_PARTS) -> list:
    """Cut a generated workload into the artifact's parts (:data:`ARTIFACT_PARTS`).

    Part ``k`` keeps the jobs whose id (the SWF job number) is in
    ``[from, from + num_jobs)``, with their draws from the whole-log
    generation; its submission times are shifted so that its first job is
    submitted at 1 s (as the artifact's generator does for every part).

    :returns: a list of workloads (dicts), one per part.
    """
    out = []
    for k, (lo, num) in enumerate(parts):
        jobs = [dict(j) for j in workload["jobs"] if lo <= int(j["id"]) < lo + num]
        if jobs:
            off = jobs[0]["subtime"] - 1
            for j in jobs:
                j["subtime"] = _num(j["subtime"] - off)
        out.append(workload_subset(
            workload, jobs, description=f"{workload['description']}, part {k} "
                                        f"(SWF jobs {lo}..{lo + num - 1})"))
    return out


def campaign_workload(seed: int = 0, swf: str = "default", first: Optional[int] = None,
                      parts=None, part_days: float = 21.0, cap: str = "artifact",
                      bandwidth_mbps: float = IO_BANDWIDTH / MB,
                      capacity: float = BB_CAPACITY):
    """Campaign hook (``workloads: [{python: "iosched.experiments.bb.workload:campaign_workload",
    args: {...}}]``, see ``docs/campaigns.md``): the burst-buffer workload of
    :func:`generate` for a campaign seed.

    :param seed: random seed (the campaign's seed).
    :param swf: SWF path, or ``"default"`` (the KTH-SP2 log found by
        :func:`iosched.workloads.default_swf.find_default_swf`).
    :param first: keep the first ``first`` jobs (None: the whole log).
    :param parts: None (one workload), ``"artifact"`` (the artifact's 16
        parts, :func:`artifact_parts`) or an int ``k`` (:func:`three_week_parts`
        with ``k`` parts of ``part_days`` days).
    :param cap: the cap rule (:data:`CAPS`); ``bandwidth_mbps``: the I/O
        bandwidth of the compute-time correction (MB/s); ``capacity``: bytes
        per burst-buffer node.
    :returns: a workload dict, or a list of workload dicts.
    :raises InputError: unreadable SWF or bad arguments (one line naming the
        argument, as :func:`generate`; ``part_days`` > 0).
    """
    argument(bandwidth_mbps, "bandwidth_mbps", minimum=0, exclusive_minimum=True, maximum=MAX_AMOUNT / MB,
             where="bb workload")
    argument(capacity, "capacity", minimum=MB, where="bb workload")
    argument(part_days, "part_days", minimum=0, exclusive_minimum=True, where="bb workload")
    argument(seed, "seed", integer=True, maximum=None, where="bb workload")
    if swf == "default":
        swf = find_default_swf()
    w = generate(swf, seed=int(seed), first=first, cap=cap, bandwidth=float(bandwidth_mbps) * MB,
                 capacity_per_storage=float(capacity))
    if parts is None:
        return w
    if parts == "artifact":
        return artifact_parts(w)
    if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
        raise InputError(f"parts={parts!r}: expected 'artifact' or a positive integer")
    return three_week_parts(w, nb_parts=int(parts), length=float(part_days) * 24 * 3600)


# --------------------------------------------------------------------------
# command line


@click.command(name="bb", cls=OneLineErrorCommand)
@click.argument("paths", nargs=-1, metavar="[SWF] OUT")
@click.option("--seed", type=int, default=1, show_default=True, help="random seed of the burst-buffer draws")
@click.option("--first", type=click.IntRange(min=1), default=None, help="keep only the first N jobs")
@click.option("--parts", default=None, metavar="artifact|N",
              help="cut into parts; OUT is then a folder: 'artifact' = the artifact's 16 parts "
                   "(by SWF job numbers), N = N consecutive parts of --part-days days")
@click.option("--part-days", type=click.FloatRange(min=0, min_open=True), default=21.0, show_default=True,
              help="length of a part in days (with --parts N)")
@click.option("--cap", type=click.Choice(["artifact", "total"]), default="artifact", show_default=True,
              help="burst-buffer cap rule (docs/burst-buffers.md)")
@click.option("--bandwidth", type=click.FloatRange(min=0, min_open=True), default=1250.0,
              show_default=True, help="I/O bandwidth of the compute-time correction, MB/s")
def workload_command(paths, seed, first, parts, part_days, cap, bandwidth):
    """Burst-buffer workload (Kopanski & Rzadca, Euro-Par 2021) of an SWF log
    (default: the KTH-SP2 trace, shared or shipped) for platforms/dragonfly96.xml.

    Writes OUT (a Batsim workload JSON), or with --parts the files
    OUT/part-00.json ... Each job gets a burst-buffer request per node, a
    computation and a communication volume (docs/burst-buffers.md); the same
    seed gives byte-identical files. Run it with a burst-buffer policy, e.g.
    `iosched run -p platforms/dragonfly96.xml -w OUT -s sjf-bb -o DIR`.
    """
    swf, out = swf_and_out(paths, "bb", "OUT")
    out = Path(out)
    if parts is not None and parts != "artifact":
        try:
            parts = int(parts)
        except ValueError:
            raise click.ClickException(f"--parts: expected 'artifact' or a positive integer, "
                                       f"got {parts!r}") from None
        if parts < 1:
            raise click.ClickException(f"--parts: expected 'artifact' or a positive integer, got {parts}")
    try:
        res = campaign_workload(seed=seed, swf=Path(swf), first=first, parts=parts,
                                part_days=part_days, cap=cap, bandwidth_mbps=bandwidth)
        if parts is None:
            write_workload(res, out)
            click.echo(f"wrote {out}: {len(res['jobs'])} jobs (seed {seed}, {res.get('dropped', 0)} dropped)")
            return
        out.mkdir(parents=True, exist_ok=True)
        pieces = res
        for k, p in enumerate(pieces):
            write_workload(p, out / f"part-{k:02d}.json")
        click.echo(f"wrote {out}/part-00.json .. part-{len(pieces) - 1:02d}.json: "
                   f"{sum(len(p['jobs']) for p in pieces)} jobs in {len(pieces)} parts "
                   f"(seed {seed})")
    except InputError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"{out}: cannot write: {exc.strerror or exc}") from None

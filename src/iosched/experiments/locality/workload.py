"""Workloads of the locality model: the artifact's format, Batsim JSON, SWF.

* :func:`read_artifact` reads the artifact's workload format (Gonthier et
  al., userccgrid/Locality-aware-batch-scheduling ``inputs/``; one job a
  line ``{ id: I subtime: S delay: D walltime: W cores: C user: U data: F
  data_size: G workload: R start_time_from_history: H
  start_node_from_history: N }``) into :class:`~iosched.locality.planner.LJob`;
* :func:`read_cluster` reads its cluster file (``{ id: I memory: M
  bandwidth: B core: C }`` a line);
* :func:`to_batsim` converts jobs to a Batsim workload (times unchanged:
  jobs of role -1 and -2 are submitted at the start of day 0; each job
  carries its I/O model ``io`` (:mod:`iosched.sched.iojob`: ``cores``, one
  input file, ``compute.delay``), ``role``, and for history jobs
  ``history_node`` and ``history_start``);
* :func:`from_swf` builds jobs from an SWF log with user ids, applying the
  paper's file-sharing rule (Section 5.1: same user, same number of cores,
  submitted within 800 s of the first job of the group) and file-size rule
  (``cores / m x memory``).

Errors are one line naming the file, line and field
(:class:`~iosched.errors.InputError`).
"""

from __future__ import annotations

import math
from pathlib import Path

import click
import pandas as pd

from iosched.checks import MAX_AMOUNT, MAX_TIME, argument, check_output_file
from iosched.errors import InputError
from iosched.locality.planner import LJob
from iosched.sched.iojob import Compute, InputFile, IOJob, to_json
from iosched.workloads.cli import swf_and_out
from iosched.workloads.swf import read_swf
from iosched.workloads.writer import write_workload

__all__ = ["FIELDS", "ROLES", "read_artifact", "read_cluster", "to_batsim", "from_swf", "GB"]

#: Bytes per GB in the model (the artifact's sizes are GB, bandwidths GB/s).
GB = 1e9

#: Fields of a job line, in order.
FIELDS = ("id", "subtime", "delay", "walltime", "cores", "user", "data", "data_size", "workload",
          "start_time_from_history", "start_node_from_history")

#: Job roles (``workload`` field).
ROLES = {-2: "running at the start", -1: "queued before day 0", 0: "warm-up day",
         1: "evaluated day", 2: "following day"}


def _pairs(text: str, where: str) -> dict:
    toks = text.split()
    if not toks or toks[0] != "{" or toks[-1] != "}":
        raise InputError(f"{where}: a record must be '{{ key: value ... }}'")
    toks = toks[1:-1]
    if len(toks) % 2:
        raise InputError(f"{where}: odd number of tokens (a key without value)")
    out = {}
    for i in range(0, len(toks), 2):
        k = toks[i]
        if not k.endswith(":"):
            raise InputError(f"{where}: expected 'key:' but got {k!r}")
        out[k[:-1]] = toks[i + 1]
    return out


def _int(rec: dict, key: str, where: str) -> int:
    if key not in rec:
        raise InputError(f"{where}: field {key} is missing")
    try:
        return int(rec[key])
    except ValueError:
        raise InputError(f"{where}: field {key}={rec[key]!r} is not an integer") from None


def _num(rec: dict, key: str, where: str) -> float:
    if key not in rec:
        raise InputError(f"{where}: field {key} is missing")
    try:
        v = float(rec[key])
    except ValueError:
        raise InputError(f"{where}: field {key}={rec[key]!r} is not a number") from None
    if not (v == v and abs(v) != float("inf")):
        raise InputError(f"{where}: field {key}={rec[key]!r} is not finite")
    return v


def _finite(x) -> bool:
    """True for a finite number (an int too large for a double is not)."""
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


def _show(x) -> str:
    """``repr`` of a value, cut to 40 characters (a huge int stays one short line)."""
    text = repr(x)
    return text if len(text) <= 40 else text[:37] + "..."


def read_cluster(path) -> list:
    """Nodes of an artifact cluster file: list of dicts ``id``, ``memory``
    (GB), ``bandwidth`` (GB/s), ``cores``.

    :raises InputError: unreadable file, bad line or field (one line)."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})") from None
    nodes = []
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path} line {no}"
        rec = _pairs(line, where)
        mem, bw, cores = _num(rec, "memory", where), _num(rec, "bandwidth", where), _int(rec, "core", where)
        if mem <= 0 or bw <= 0 or cores < 1:
            raise InputError(f"{where}: memory, bandwidth and core must be positive")
        nodes.append({"id": _int(rec, "id", where), "memory": mem, "bandwidth": bw, "cores": cores})
    if not nodes:
        raise InputError(f"{path}: no node")
    return nodes


def read_artifact(path, cores_per_node: int = 20) -> list:
    """Jobs of an artifact workload file, in file order
    (:class:`~iosched.locality.planner.LJob`, ids ``str(id)``).

    :param cores_per_node: a job asking more cores is refused.
    :raises InputError: unreadable file, a line with a missing or non-numeric
        field, an unknown role, a non-positive delay/walltime/cores, a job
        asking more cores than a node has, a duplicate id (one line naming
        the line and field).
    """
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})") from None
    jobs, seen = [], set()
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path} line {no}"
        rec = _pairs(line, where)
        for f in FIELDS:
            if f not in rec:
                raise InputError(f"{where}: field {f} is missing")
        jid = _int(rec, "id", where)
        role = _int(rec, "workload", where)
        if role not in ROLES:
            raise InputError(f"{where}: field workload={role} is not a known role (-2, -1, 0, 1, 2)")
        cores = _int(rec, "cores", where)
        if cores < 1:
            raise InputError(f"{where}: field cores={cores} must be at least 1")
        if cores > cores_per_node:
            raise InputError(f"{where}: field cores={cores} is more than a node has ({cores_per_node})")
        delay, wall = _int(rec, "delay", where), _int(rec, "walltime", where)
        if wall < 1 or delay < 0:
            raise InputError(f"{where}: field delay={delay}/walltime={wall} must be >= 0 / >= 1")
        size = _num(rec, "data_size", where)
        if size < 0:
            raise InputError(f"{where}: field data_size={size} is negative")
        if jid in seen:
            raise InputError(f"{where}: field id={jid} is a duplicate")
        seen.add(jid)
        jobs.append(LJob(str(jid), _int(rec, "subtime", where), delay, wall, cores,
                         _int(rec, "data", where), size, role,
                         _int(rec, "start_time_from_history", where),
                         _int(rec, "start_node_from_history", where), seq=len(jobs)))
    if not jobs:
        raise InputError(f"{path}: no job")
    return jobs


def day0(jobs: list) -> int:
    """Start of day 0 (s): the subtime of the first warm-up job in file
    order (artifact ``get_first_time_day_0``; 0 if there is none)."""
    for j in jobs:
        if j.role == 0:
            return j.subtime
    return 0


def to_batsim(jobs: list, out=None, nb_res: int = None, start: int = None) -> dict:
    """Batsim workload of locality jobs: one ``delay`` profile per job
    (``delay`` s of computation; the load is the scheduler's dynamic job);
    ``res`` = cores, ``walltime``, ``subtime`` (jobs of role -2/-1 at day 0),
    the I/O model ``io`` (:mod:`iosched.sched.iojob`: ``cores``, ``inputs``
    = one file read from the PFS, its id the file number and its ``bytes``,
    ``compute.delay`` in s; before issue 26 the fields ``file``,
    ``file_size``, ``delay``) and the extra fields ``role``,
    ``history_node``, ``history_start``, ``orig_subtime``, ``seq`` (rank in
    the input file: the queue order, as Batsim may announce jobs submitted
    at one instant in another order).

    :param out: if given, path where the JSON is written.
    :param nb_res: the workload's ``nb_res`` (int >= 0; None or 0: the
        largest ``cores`` of the jobs).
    :param start: day 0 (s, a finite number at most
        :data:`iosched.checks.MAX_TIME`); default :func:`day0` of the jobs.
    :returns: the workload dict.
    :raises InputError: a bad ``nb_res`` or ``start`` (one line naming it).
    """
    if nb_res is not None:
        argument(nb_res, "nb_res", integer=True, minimum=0, maximum=None, where="locality to_batsim")
    if start is not None:
        argument(start, "start", minimum=None, maximum=MAX_TIME, where="locality to_batsim")
    t0 = day0(jobs) if start is None else int(start)
    wl_jobs, profiles = [], {}
    for j in jobs:
        pname = f"d{j.delay}"
        profiles.setdefault(pname, {"type": "delay", "delay": j.delay})
        rec = {"id": j.id, "subtime": max(j.subtime, t0) if j.role in (-2, -1) else j.subtime,
               "res": j.cores, "walltime": j.walltime, "profile": pname,
               "io": to_json(IOJob(cores=j.cores, inputs=(InputFile(str(j.file), float(j.size) * GB),),
                                   compute=Compute(delay=j.delay))),
               "role": j.role, "orig_subtime": j.subtime, "seq": j.seq}
        if j.role == -2:
            rec["history_node"] = j.hist_node
            rec["history_start"] = j.hist_start
        wl_jobs.append(rec)
    wl_jobs.sort(key=lambda r: r["subtime"])
    wl = {"nb_res": int(nb_res or max(j.cores for j in jobs)), "jobs": wl_jobs, "profiles": profiles,
          "locality": {"day0": t0}}
    if out is not None:
        write_workload(wl, out)
    return wl


def from_swf(swf_jobs, cores_per_node: int = 20, memory_gb: float = 128.0, window: float = 800.0,
             role=1) -> list:
    """Locality jobs from SWF records (dicts with ``id``, ``subtime``,
    ``runtime``, ``walltime``, ``cores``, ``user``), with the paper's rules
    (Section 5.1): jobs of one user asking the same number of cores share a
    file while they are submitted within ``window`` s of the group's first
    job; a file's size is ``cores / cores_per_node x memory_gb`` GB.
    Jobs asking more cores than a node are split into node-sized jobs, as
    the paper replaces multi-node jobs by single-node ones.

    :raises InputError: a record without user id or with non-positive cores;
        ``cores_per_node`` not a positive integer, ``memory_gb`` not a
        positive finite number (at most :data:`iosched.checks.MAX_AMOUNT`),
        ``window`` negative or not finite (at most
        :data:`iosched.checks.MAX_TIME`) (one line naming the argument).
    """
    if isinstance(cores_per_node, bool) or not isinstance(cores_per_node, int) or cores_per_node < 1:
        raise InputError(f"cores per node: expected a positive integer, got {cores_per_node!r}")
    if not (isinstance(memory_gb, (int, float)) and _finite(memory_gb) and 0 < memory_gb <= MAX_AMOUNT):
        raise InputError(f"memory per node: expected a positive finite number of GB (at most {MAX_AMOUNT:g}), "
                         f"got {_show(memory_gb)}")
    if not (isinstance(window, (int, float)) and _finite(window) and 0 <= window <= MAX_TIME):
        raise InputError(f"window: expected a finite number of s >= 0 (at most {MAX_TIME:g}), got {_show(window)}")
    out, groups, next_file = [], {}, 1
    for r in sorted(swf_jobs, key=lambda r: (r["subtime"], r["id"])):
        user, cores = r.get("user"), int(r["cores"])
        if user is None or int(user) < 0:
            raise InputError(f"SWF job {r['id']}: field user is missing (the file-sharing rule needs user ids)")
        if cores < 1:
            raise InputError(f"SWF job {r['id']}: field cores={cores} must be at least 1")
        parts = []
        while cores > 0:
            parts.append(min(cores, cores_per_node))
            cores -= cores_per_node
        for i, c in enumerate(parts):
            key = (int(user), c)
            g = groups.get(key)
            if g is None or r["subtime"] - g[0] > window:
                g = groups[key] = (r["subtime"], next_file)
                next_file += 1
            jid = f"{r['id']}" if len(parts) == 1 else f"{r['id']}.{i}"
            out.append(LJob(jid, int(r["subtime"]), max(1, int(r["runtime"])), max(1, int(r["walltime"])),
                            c, g[1], c / cores_per_node * memory_gb, role, seq=len(out)))
    return out


def swf_records(path) -> list:
    """Records for :func:`from_swf` from an SWF file: completed-or-not jobs
    with a run time, processors (allocated, else requested), requested time
    (else the run time) and user id.

    :raises InputError: as :func:`iosched.workloads.swf.read_swf`, or a job
        without user id (one line naming the SWF line)."""
    df = read_swf(path).jobs
    out = []
    for line, r in df.iterrows():
        if pd.isna(r["run_time"]) or r["run_time"] <= 0 or pd.isna(r["submit_time"]):
            continue
        procs = r["allocated_processors"] if not pd.isna(r["allocated_processors"]) else r["requested_processors"]
        if pd.isna(procs) or procs < 1:
            continue
        if pd.isna(r["user_id"]):
            raise InputError(f"{path} line {line}: field user_id is missing (the file-sharing rule needs user ids)")
        wall = r["requested_time"] if not pd.isna(r["requested_time"]) and r["requested_time"] > 0 else r["run_time"]
        out.append({"id": int(r["job_number"]), "subtime": int(r["submit_time"]), "runtime": int(r["run_time"]),
                    "walltime": int(max(wall, r["run_time"])), "cores": int(procs), "user": int(r["user_id"])})
    return out


@click.command(name="locality")
@click.argument("kind", type=click.Choice(["artifact", "swf"]))
@click.argument("paths", nargs=-1, metavar="[INPUT] OUTPUT")
@click.option("--cores", type=int, default=20, help="cores per node")
@click.option("--memory", type=float, default=128.0, help="GB per node (file-size rule)")
@click.option("--window", type=float, default=800.0, help="s (file-sharing rule)")
@click.option("--nb-res", type=int, default=9720, help="nb_res of the Batsim workload")
@click.option("--first", type=click.IntRange(min=1), default=None,
              help="KIND swf: keep the first N usable job records of the log")
def workload_command(kind, paths, cores, memory, window, nb_res, first):
    """Write the Batsim workload OUTPUT of INPUT, in the artifact's format
    (KIND artifact) or an SWF log with user ids (KIND swf, the paper's
    file-sharing and file-size rules; without INPUT, the KTH-SP2 trace,
    shared or shipped)."""
    if kind == "swf":
        input, output = swf_and_out(paths, "locality swf", "OUTPUT")
    elif len(paths) != 2:
        raise click.ClickException(f"locality artifact: expected INPUT OUTPUT, got {len(paths)} arguments")
    else:
        input, output = paths
    try:
        if nb_res < 1:
            raise InputError(f"--nb-res: expected a positive integer, got {nb_res}")
        check_output_file(output)
        if kind == "artifact":
            jobs = read_artifact(input, cores)
        else:
            jobs = from_swf(swf_records(input)[:first], cores, memory, window)
        to_batsim(jobs, output, nb_res)
    except (InputError, OSError) as e:
        raise click.ClickException(str(e)) from None

"""Workload generators for the data-aware dispatch family (Li & Tatebe, IEEE
Systems Journal 2017, Section V) and the workload checker.

Every task is a Batsim job with its I/O model ``io`` (the files it reads,
``inputs``, with the nodes holding a replica as ``copies``:
:mod:`iosched.sched.iojob`; before issue 26 the field ``files``) and the
extra field ``queue`` (:mod:`iosched.dad.model`) and a Batsim 4.2.1 profile: ``composed`` of one
``parallel_homogeneous_pfs`` read per file and, if it computes, a
``parallel_homogeneous`` step (``cpu`` flops per slot, no communication).
A read-only task's profile is the read itself.

The task reads each byte of its files once, spread over its ``res`` slots:
``parallel_homogeneous_pfs`` moves ``bytes_to_read`` to *every* executor, so
a read profile carries the bytes per executor, ``size / res``, and the
profiles are made per slot count (:func:`read_profile_name`,
:func:`task_profile_name`): ``read_<file>__r<res>`` reads file ``<file>``
(``storage`` label = the file's name) on ``res`` slots, and the task's
composed profile is ``<name>__r<res>``.  Batsim 4.2.1 has no key that
divides the bytes among the executors (``generation_strategy`` is not one of
its profile fields: it ignores it, and every executor would read the whole
file); :func:`check_workload` refuses it.  The scheduler estimates from the
job's input files (whole file sizes), never from the profiles.

* :func:`file_benchmark` -- thput-gfpio and readgf (Section V-A/B): ``F``
  files of ``size`` bytes spread evenly over the nodes in blocks (files
  ``0..F/N-1`` on node 0...), one single-slot task per file, all submitted at
  t = 0 in file order.
* :func:`blast_like` -- the BLAST benchmark (Section V-C) as two queues of
  multi-threaded tasks (``slots`` slots each) reading their queue's file set
  then computing; the shares are derived in :func:`blast_shares`.
* :func:`trace_driven` -- the scale-out: arrival times and sizes of an SWF
  trace (e.g. KTH-SP2), each task reading a synthetic file set.

Same arguments (and seed) -> the same dict, and :func:`write_workload` (the
one workload writer, :func:`iosched.workloads.writer.write_workload`)
writes it byte-identically.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np

from iosched.checks import check_output_file
from iosched.clicommon import OneLineErrorCommand, input_errors_one_line
from iosched.dad.model import read_task
from iosched.checks import MAX_TIME, argument
from iosched.engine.platform import read_hosts
from iosched.errors import InputError
from iosched.experiments.platforms import node_name
from iosched.sched.iojob import InputFile, IOJob, to_json
from iosched.workloads.default_swf import DEFAULT_SWF_HELP, find_default_swf
from iosched.workloads.writer import write_workload

__all__ = ["GB", "MB", "file_benchmark", "blast_shares", "blast_like", "trace_driven",
           "write_workload", "check_workload", "read_profile", "read_profile_name", "task_profile_name",
           "workload_command"]

GB = 1e9
MB = 1e6
#: relative tolerance of :func:`check_workload` on bytes per executor x res = file size
BYTES_RTOL = 1e-9


def read_profile_name(file: str, slots: int) -> str:
    """Name of the profile that reads ``file`` on ``slots`` slots: ``read_<file>__r<slots>``."""
    return f"read_{file}__r{int(slots)}"


def task_profile_name(name: str, slots: int) -> str:
    """Name of a task's profile ``name`` made for ``slots`` slots: ``<name>__r<slots>``."""
    return f"{name}__r{int(slots)}"


def read_profile(name: str, size: float, slots: int) -> dict:
    """The ``parallel_homogeneous_pfs`` profile reading file ``name`` of
    ``size`` bytes on ``slots`` executors: ``bytes_to_read`` = ``size /
    slots`` per executor, ``storage`` = the file's name (mapped to a disk at
    EXECUTE_JOB)."""
    return {"type": "parallel_homogeneous_pfs", "bytes_to_read": float(size) / int(slots),
            "bytes_to_write": 0.0, "storage": name}


def _add_reads(profiles: dict, files, slots: int) -> list:
    """Add the read profiles of ``files`` on ``slots`` slots (once per file
    and slot count); returns their names, in file order."""
    names = []
    for f in files:
        rname = read_profile_name(f["name"], slots)
        profiles.setdefault(rname, read_profile(f["name"], f["size"], slots))
        names.append(rname)
    return names


def _task(jid, subtime, slots, profile, files, queue, walltime=None) -> dict:
    io = IOJob(inputs=tuple(InputFile(f["name"], f["size"], tuple(f["replicas"])) for f in files))
    job = {"id": jid, "subtime": float(subtime), "res": int(slots), "profile": profile,
           "queue": queue, "io": to_json(io)}
    if walltime is not None:
        job["walltime"] = float(walltime)
    return job


def file_benchmark(nb_files: int = 20, size: float = GB, nb_nodes: int = 4, name: str = "readgf") -> dict:
    """thput-gfpio / readgf: ``nb_files`` files of ``size`` bytes, file ``i``
    on node ``i * nb_nodes // nb_files`` (blocks, evenly), task ``i`` reads
    file ``i`` on one slot (Section V-A/B: 20 files of 1 GB on 4 nodes).

    :returns: a Batsim workload dict (``nb_res`` = ``nb_nodes``, a lower bound).
    :raises InputError: a count not an integer >= 1, a size not a finite
        number > 0 (at most :data:`iosched.checks.MAX_AMOUNT`); one line
        naming the argument.
    """
    argument(nb_files, "nb_files", integer=True, minimum=1, maximum=None, where=name)
    argument(nb_nodes, "nb_nodes", integer=True, minimum=1, maximum=None, where=name)
    argument(size, "size", exclusive_minimum=True, where=name)
    jobs, profiles = [], {}
    w = len(str(nb_files - 1))
    for i in range(nb_files):
        f = f"f{i:0{w}d}"
        node = node_name(i * nb_nodes // nb_files, nb_nodes)
        files = [{"name": f, "size": float(size), "replicas": [node]}]
        (rname,) = _add_reads(profiles, files, 1)
        jobs.append(_task(f"{name}{i:0{w}d}", 0.0, 1, rname, files, "batch"))
    return {"description": f"{name}: {nb_files} files of {size:g} B on {nb_nodes} nodes "
                           f"(Li & Tatebe 2017, Section V)", "nb_res": nb_nodes, "jobs": jobs,
            "profiles": profiles}


def blast_shares(slowdown: float, set_bytes: float, slots: int, local_bw: float, nic_bw: float,
                 speed: float) -> dict:
    """Compute share of a BLAST-like task from its remote slowdown.

    Run alone, a task reads ``set_bytes`` then computes ``C`` s.  Locally its
    ``slots`` streams each read ``set_bytes / slots`` at ``local_bw`` (FATPIPE
    local link): ``T_local = set_bytes / (slots * local_bw) + C``; remotely
    they share one network interface: ``T_remote = set_bytes / nic_bw + C``.
    ``T_remote / T_local = 1 + slowdown`` gives
    ``C = (set_bytes / nic_bw - (1 + slowdown) * set_bytes / (slots * local_bw)) / slowdown``.

    :param slowdown: relative increase of the run time when remote (> 0;
        the paper's Blastx: 0.1728, Section II).
    :returns: ``{"compute_s", "flops", "t_local", "t_remote", "io_share_local",
        "io_share_remote"}`` (s, flops per slot, s, s, fractions).
    :raises InputError: an argument not a finite number > 0 (at most
        :data:`iosched.checks.MAX_AMOUNT`; ``slots`` an integer >= 1), or a
        slowdown too large for the I/O (C would be negative); one line naming
        the argument.
    """
    for arg, value in (("slowdown", slowdown), ("set_bytes", set_bytes), ("local_bw", local_bw),
                       ("nic_bw", nic_bw), ("speed", speed)):
        argument(value, arg, exclusive_minimum=True, where="blast_shares")
    argument(slots, "slots", integer=True, minimum=1, maximum=None, where="blast_shares")
    io_l, io_r = set_bytes / (slots * local_bw), set_bytes / nic_bw
    c = (io_r - (1 + slowdown) * io_l) / slowdown
    if c < 0:
        raise InputError(f"blast_shares: slowdown {slowdown} needs more I/O than {set_bytes:g} B")
    return {"compute_s": c, "flops": c * speed, "t_local": io_l + c, "t_remote": io_r + c,
            "io_share_local": io_l / (io_l + c), "io_share_remote": io_r / (io_r + c)}


def blast_like(nb_tasks: int = 8, slots: int = 8, nb_nodes: int = 4, set_files: int = 2,
               set_bytes: float = 2 * GB, slowdown_x: float = 0.1728, slowdown_n: float = 1.0,
               set_bytes_n: float | None = None,
               local_bw: float = 2803.61 * MB, nic_bw: float = 125 * MB, speed: float = 1e9,
               replicas: int = 2) -> dict:
    """The BLAST benchmark as two queues (Section V-C).

    Queue ``blastx`` (submitted first) and queue ``blastn``: ``nb_tasks``
    tasks each, ``slots`` slots per task (BLAST+ threads), all at t = 0.
    Each queue's file set has ``set_files`` files totalling ``set_bytes``
    (blastn: ``set_bytes_n`` if given),
    every file replicated on ``replicas`` nodes: the blastn set on nodes
    ``0..replicas-1``, the blastx set on the next ``replicas`` nodes (modulo
    ``nb_nodes``), as in Fig. 4 (two nodes per file).  A task reads its whole
    set then computes for the time :func:`blast_shares` derives from its
    remote slowdown: Blastx 17.28 % (the paper's measure, Section II),
    Blastn ``slowdown_n`` (the paper says only "significant"; 1.0 is our
    assumption).

    :returns: a Batsim workload dict; ``description`` records the shares.
    :raises InputError: a count not an integer >= 1, ``replicas`` above
        ``nb_nodes``, a size, slowdown, bandwidth or speed not a finite number
        > 0 (at most :data:`iosched.checks.MAX_AMOUNT`); one line naming the
        argument.
    """
    for arg, value in (("nb_tasks", nb_tasks), ("slots", slots), ("nb_nodes", nb_nodes),
                       ("set_files", set_files), ("replicas", replicas)):
        argument(value, arg, integer=True, minimum=1, maximum=None, where="blast_like")
    if replicas > nb_nodes:
        raise InputError(f"blast_like: replicas={replicas} is more than nb_nodes={nb_nodes}")
    for arg, value in (("set_bytes", set_bytes), ("set_bytes_n", set_bytes_n), ("slowdown_x", slowdown_x),
                       ("slowdown_n", slowdown_n), ("local_bw", local_bw), ("nic_bw", nic_bw), ("speed", speed)):
        if value is not None or arg != "set_bytes_n":
            argument(value, arg, exclusive_minimum=True, where="blast_like")
    jobs, profiles, desc = [], {}, {}
    sizes = {"blastx": set_bytes, "blastn": set_bytes if set_bytes_n is None else set_bytes_n}
    for q, (queue, slowdown) in enumerate((("blastx", slowdown_x), ("blastn", slowdown_n))):
        sh = blast_shares(slowdown, sizes[queue], slots, local_bw, nic_bw, speed)
        desc[queue] = {k: round(v, 6) for k, v in sh.items()}
        first = (1 - q) * replicas   # blastn on nodes 0..replicas-1, blastx after them
        holders = [node_name((first + r) % nb_nodes, nb_nodes) for r in range(replicas)]
        files = [{"name": f"{queue}_db{j}", "size": sizes[queue] / set_files, "replicas": holders}
                 for j in range(set_files)]
        reads = _add_reads(profiles, files, slots)
        profiles[f"compute_{queue}"] = {"type": "parallel_homogeneous", "cpu": round(sh["flops"]), "com": 0}
        pname = task_profile_name(queue, slots)
        profiles[pname] = {"type": "composed", "repeat": 1, "seq": reads + [f"compute_{queue}"]}
        for i in range(nb_tasks):
            jobs.append(_task(f"{queue}{i:02d}", 0.0, slots, pname, files, queue))
    return {"description": "BLAST-like (Li & Tatebe 2017, Section V-C): " + json.dumps(desc, sort_keys=True),
            "nb_res": nb_nodes * slots, "jobs": jobs, "profiles": profiles}


def trace_driven(swf_path, nb_nodes: int, slots: int, *, first: int = 1000, seed: int = 0,
                 nb_sets: int = 0, files_per_set: int = 4, file_bytes: float = 2 * GB,
                 replicas: int = 2, io_queue_share: float = 0.5, speed: float = 1e9,
                 max_runtime: float = 600.0, load: float = 0.0) -> dict:
    """A trace-driven workload beyond the paper: the first ``first`` jobs of
    an SWF trace give the arrival times (``submit_time``, shifted to start at
    0) and the run times (``run_time``, capped at ``max_runtime`` s, as
    computation), each job becomes one task of ``min(procs, slots)`` slots
    reading one of ``nb_sets`` synthetic file sets (default ``nb_nodes / 4``
    sets; ``files_per_set`` files of ``file_bytes``, each replicated on
    ``replicas`` random nodes: the same nodes for every file of an
    even-numbered set, so that some nodes hold the whole set, independent
    draws per file for an odd-numbered one, so that usually no node is
    local -- the paper's delay-scheduling assumption 2 fails); a share ``io_queue_share`` of the sets belongs
    to queue ``io`` (the others to ``cpu``).  If ``load`` > 0 the arrival
    times are compressed (or stretched) by one factor so that the offered
    computation (sum of slots x capped run time over the trace's span)
    equals ``load`` times the machine's slots: KTH-SP2 was a 100-node
    machine, a 512 x 16-slot one would otherwise stay idle.  Draws use
    ``numpy.random.Generator(PCG64(seed))``.

    :raises InputError: unreadable trace; a count not an integer (``first``,
        ``files_per_set``, ``replicas``, ``nb_nodes``, ``slots`` >= 1,
        ``nb_sets`` >= 0), ``replicas`` above ``nb_nodes``, ``seed`` not an
        integer >= 0, ``io_queue_share`` not in [0, 1], ``file_bytes``,
        ``speed`` or ``max_runtime`` not a finite number > 0, ``load`` not a
        finite number >= 0 (numbers at most :data:`iosched.checks.MAX_AMOUNT`)
        or so small that the arrivals would end after
        :data:`iosched.checks.MAX_TIME`; one line naming the argument.
    """
    for arg, value, low in (("nb_nodes", nb_nodes, 1), ("slots", slots, 1), ("first", first, 1),
                            ("nb_sets", nb_sets, 0), ("files_per_set", files_per_set, 1),
                            ("replicas", replicas, 1), ("seed", seed, 0)):
        argument(value, arg, integer=True, minimum=low, maximum=None, where="trace_driven")
    if replicas > nb_nodes:
        raise InputError(f"trace_driven: replicas={replicas} is more than nb_nodes={nb_nodes}")
    for arg, value in (("file_bytes", file_bytes), ("speed", speed), ("max_runtime", max_runtime)):
        argument(value, arg, exclusive_minimum=True, where="trace_driven")
    argument(max_runtime, "max_runtime", exclusive_minimum=True, maximum=MAX_TIME, where="trace_driven")
    argument(io_queue_share, "io_queue_share", maximum=1, where="trace_driven")
    argument(load, "load", where="trace_driven")
    try:
        rows = []
        with open(swf_path) as fh:
            for line in fh:
                if line.startswith(";") or not line.strip():
                    continue
                p = line.split()
                sub, run, procs = float(p[1]), float(p[3]), int(float(p[4]))
                if run > 0 and procs > 0:
                    rows.append((sub, run, procs))
                if len(rows) >= first:
                    break
    except (OSError, ValueError, IndexError) as exc:
        raise InputError(f"{swf_path}: cannot read the SWF trace: {exc}") from None
    if not rows:
        raise InputError(f"{swf_path}: no usable job")
    rng = np.random.Generator(np.random.PCG64(seed))
    nb_sets = nb_sets or max(2, nb_nodes // 4)
    sets = []
    for s in range(nb_sets):
        files = []
        together = sorted(rng.choice(nb_nodes, size=replicas, replace=False).tolist())
        for j in range(files_per_set):
            scattered = sorted(rng.choice(nb_nodes, size=replicas, replace=False).tolist())
            holders = together if s % 2 == 0 else scattered
            files.append({"name": f"set{s}_f{j}", "size": float(file_bytes),
                          "replicas": [node_name(h, nb_nodes) for h in holders]})
        sets.append(files)
    profiles, jobs = {}, []
    t0 = rows[0][0]
    factor = 1.0
    span = rows[-1][0] - t0
    if load > 0 and span > 0:
        work = sum(min(p, slots) * min(r, max_runtime) for _, r, p in rows)
        factor = work / (load * nb_nodes * slots * span)
        if not span * factor <= MAX_TIME:
            raise InputError(f"trace_driven: load={load!r} stretches the trace's {span:g} s of arrivals to "
                             f"{span * factor:g} s, above {MAX_TIME:g} s")
    for i, (sub, run, procs) in enumerate(rows):
        s = int(rng.integers(nb_sets))
        queue = "io" if s < round(io_queue_share * nb_sets) else "cpu"
        n = min(procs, slots)
        pname = task_profile_name(f"task{i}", n)
        cname = f"compute{i}"
        profiles[cname] = {"type": "parallel_homogeneous", "cpu": round(min(run, max_runtime) * speed), "com": 0}
        profiles[pname] = {"type": "composed", "repeat": 1, "seq": _add_reads(profiles, sets[s], n) + [cname]}
        jobs.append(_task(f"j{i}", round((sub - t0) * factor, 6), n, pname, sets[s], queue))
    return {"description": f"trace-driven: {Path(swf_path).name} first {len(rows)} jobs, {nb_nodes} nodes x {slots} "
                           f"slots, {nb_sets} file sets, seed {seed}, arrival factor {factor:.6g}",
            "nb_res": nb_nodes * slots, "jobs": jobs, "profiles": profiles}


def _storage_steps(profiles: dict, name: str, where: str, seen=None) -> list:
    """``(profile name, profile, storage label)`` of every storage step of a
    profile (through ``composed``), each once."""
    seen = set() if seen is None else seen
    if name in seen:
        return []
    seen.add(name)
    prof = profiles.get(name)
    if prof is None:
        raise InputError(f"{where}: profile {name!r} is not defined")
    if prof.get("type") == "parallel_homogeneous_pfs":
        return [(name, prof, prof.get("storage", prof.get("host", "pfs")))]
    if prof.get("type") == "data_staging":
        return [(name, prof, prof.get("from")), (name, prof, prof.get("to"))]
    if prof.get("type") == "composed":
        out = []
        for sub in prof.get("seq", []):
            out += _storage_steps(profiles, sub, where, seen)
        return out
    return []


def _profiles_used(profiles: dict, name: str, seen: set) -> None:
    if name in seen or name not in profiles:
        return
    seen.add(name)
    for sub in profiles[name].get("seq", []) if profiles[name].get("type") == "composed" else []:
        _profiles_used(profiles, sub, seen)


def check_workload(workload: dict, nodes, source: str = "workload") -> None:
    """Check a DAD workload against the platform's node names.

    Every job's input files (``io.inputs`` or ``files``) and ``queue`` must be well formed
    (:func:`iosched.dad.model.read_task`), every replica on a known node,
    every storage label its profile reads a file the job lists (the label is
    mapped to a disk at EXECUTE_JOB), each such read move the file's size
    over the job's ``res`` executors (``bytes_to_read x res`` = ``size``,
    relative tolerance :data:`BYTES_RTOL`: the simulated read is what the
    scheduler estimates from the input files), and no profile a job uses may carry
    ``generation_strategy`` (not a Batsim 4.2.1 profile field: Batsim ignores
    it, so a workload relying on it means other bytes on the real Batsim).

    :param workload: the workload dict.
    :param nodes: the platform's node names (iterable of str).
    :param source: file name used in error messages.
    :raises InputError: one line naming the file, the job and the field.
    """
    known = set(nodes)
    profiles = workload.get("profiles", {})
    for k, job in enumerate(workload.get("jobs", [])):
        where = f"{source}: job {job.get('id', k)!r}"
        req = read_task(job, where)
        sizes = {f.name: f.size for f in req.files}
        for f in req.files:
            for r in f.replicas:
                if r not in known:
                    raise InputError(f"{where}: file {f.name!r}: replica on unknown node {r!r}")
        steps = _storage_steps(profiles, job.get("profile"), where)
        used: set = set()
        _profiles_used(profiles, job.get("profile"), used)
        for pname in sorted(used):
            if "generation_strategy" in profiles[pname]:
                raise InputError(f"{where}: profile {pname!r} has 'generation_strategy', which Batsim 4.2.1 "
                                 f"ignores (every executor would read all of bytes_to_read); give the bytes "
                                 f"per executor instead (iosched workload dad)")
        res = job.get("res")
        for pname, prof, label in steps:
            if label not in sizes:
                raise InputError(f"{where}: its profile reads unknown file {label!r} (not among the job's input files)")
            if prof.get("type") != "parallel_homogeneous_pfs" or not isinstance(res, int) or res < 1:
                continue
            per = prof.get("bytes_to_read", 0.0)
            if not isinstance(per, (int, float)) or \
                    abs(per * res - sizes[label]) > BYTES_RTOL * max(abs(sizes[label]), 1.0):
                raise InputError(f"{where}: profile {pname!r} reads {per!r} B per executor x res={res} of "
                                 f"file {label!r}, whose size is {sizes[label]:g} B (expected "
                                 f"{sizes[label] / res!r} B per executor)")


# --------------------------------------------------------------------------
# command line

#: The workloads of ``iosched workload dad KIND OUT``: kind -> help.
WORKLOAD_KINDS = {
    "readgf": "the readgf file benchmark: 20 files of 1 GB, one task per file",
    "thput-gfpio": "the thput-gfpio file benchmark: 20 files of 1 GB, one task per file",
    "blast": "the BLAST-like benchmark",
    "kth": "tasks of an SWF trace (--swf, default the KTH-SP2 trace), scaled to the machine",
}


@click.group(name="dad")
def workload_command():
    """Workloads of the data-aware dispatch family (Li & Tatebe 2017) and their check."""


def _kind_command(kind):
    """The click command writing the workload ``kind`` (a key of :data:`WORKLOAD_KINDS`)."""
    @click.command(name=kind, cls=OneLineErrorCommand, help=f"Write {WORKLOAD_KINDS[kind]} to OUT.")
    @click.argument("out", type=click.Path(dir_okay=False))
    @click.option("--nodes", type=int, default=4, show_default=True)
    @click.option("--slots", type=int, default=16, show_default=True)
    @click.option("--swf", type=click.Path(), default=None,
                  help=f"SWF trace (kind kth) [default: {DEFAULT_SWF_HELP}]")
    @click.option("--first", type=int, default=1000, show_default=True)
    @click.option("--seed", type=int, default=0, show_default=True)
    @click.option("--load", type=float, default=0.9, show_default=True)
    @input_errors_one_line
    def command(out, nodes, slots, swf, first, seed, load):
        check_output_file(out)
        if kind in ("readgf", "thput-gfpio"):
            w = file_benchmark(20, GB, nodes, kind.replace("-", ""))
        elif kind == "blast":
            w = blast_like(nb_nodes=nodes, set_bytes_n=8 * GB)
        else:
            w = trace_driven(find_default_swf() if swf is None else swf, nodes, slots,
                             first=first, seed=seed, load=load)
        write_workload(w, out)
    return command


for _kind in WORKLOAD_KINDS:
    workload_command.add_command(_kind_command(_kind))


@workload_command.command(cls=OneLineErrorCommand)
@click.argument("workload_file", type=click.Path())
@click.argument("platform_file", type=click.Path())
@input_errors_one_line
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

"""Turn Batsim profiles into the steps SimGrid executes.

A job's profile is flattened into a list of steps, each either a
:class:`Delay` (a sleep, no physics) or a :class:`PTask` (a SimGrid parallel
task under the ``ptask_L07`` host model: flops per host and a bytes matrix
between hosts, the way Batsim 4.2.1 builds them).

Construction rules (Batsim 4.2.1, checked against ``shared/golden``):

* ``parallel``: ``cpu[i]`` flops on executor i, ``com[i*n+j]`` bytes from
  executor i to j; executor i runs on the i-th resource of the allocation
  (or on ``mapping[i]`` when given).
* ``parallel_homogeneous``: ``cpu`` flops on every host, ``com`` bytes for
  every ordered pair of distinct hosts (loopback 0). With
  ``generation_strategy = DefinedAmountsSpreadUniformly`` (an embedded-engine
  extension, served with ``--embedded-extensions`` only) it behaves as
  ``parallel_homogeneous_total``.
* ``parallel_homogeneous_total``: ``cpu/n`` flops per host and ``com/n``
  bytes per ordered pair of distinct hosts. (Batsim's documentation says
  ``com/(n(n-1))``; the real Batsim 4.2.1 divides by ``n``, which the golden
  run g1 shows: 4 hosts give 0.211489 s, not 0.0728 s.)
* ``parallel_homogeneous_pfs``: the allocation plus the storage host (its
  label: ``storage``, else ``host``, else ``pfs``, as in Batsim 4.2.1);
  ``bytes_to_read`` from the storage to each host and ``bytes_to_write`` from
  each host to the storage (0 when absent), no computation (divided by n
  with the spread strategy).
* ``data_staging``: ``nb_bytes`` from storage ``from`` to storage ``to``.
* ``composed``: the sub-profiles' steps in order, ``repeat`` times.

An ``additional_io_job`` (EXECUTE_JOB) is merged into each parallel task of
the job: the union of both allocations, flops and bytes added.
"""

from __future__ import annotations

from dataclasses import dataclass

from iosched.engine.workload import SPREAD, pfs_label
from iosched.errors import ProtocolError


@dataclass
class Delay:
    """Sleep for ``seconds`` (s); no resource is used in SimGrid."""

    seconds: float


@dataclass
class PTask:
    """A parallel task: ``hosts`` (resource ids), ``cpu`` (flops, len n),
    ``com`` (bytes, len n*n, row i sends to column j; empty: no
    communication)."""

    hosts: list[int]
    cpu: list[float]
    com: list[float]


def _homogeneous(hosts: list[int], cpu: float, com: float) -> PTask:
    n = len(hosts)
    if not com:  # no communication: SimGrid accepts an empty matrix (cheaper)
        return PTask(list(hosts), [float(cpu)] * n, [])
    return PTask(
        list(hosts),
        [float(cpu)] * n,
        [0.0 if i == j else float(com) for i in range(n) for j in range(n)],
    )


def _resolve_storage(label: str, storage_mapping: dict | None, storage_ids: list[int], job_id: str) -> int:
    if storage_mapping and label in storage_mapping:
        try:
            return int(storage_mapping[label])
        except (TypeError, ValueError):
            raise ProtocolError(
                f"EXECUTE_JOB {job_id}: storage_mapping['{label}'] is not a resource id"
            ) from None
    if len(storage_ids) == 1:
        return storage_ids[0]
    raise ProtocolError(
        f"EXECUTE_JOB {job_id}: no storage_mapping for label '{label}' and the platform "
        f"has {len(storage_ids)} storage resources (a mapping is needed unless there is exactly one)"
    )


def build_steps(
    job_id: str,
    profile_name: str,
    profiles: dict,
    executors: list[int],
    storage_mapping: dict | None,
    storage_ids: list[int],
) -> list:
    """Flatten a profile into :class:`Delay` / :class:`PTask` steps.

    :param executors: resource ids, one per executor (the allocation, or the
        allocation reordered by ``mapping``).
    :param storage_ids: ids of the platform's storage resources.
    :raises ProtocolError: a parallel profile whose size differs from the
        number of executors, an unresolvable storage label.
    """
    prof = profiles[profile_name]
    t = prof["type"]
    n = len(executors)
    if t == "delay":
        return [Delay(float(prof["delay"]))]
    if t == "parallel":
        cpu = prof.get("cpu")
        com = prof.get("com")
        m = len(cpu) if cpu is not None else int(round(len(com) ** 0.5))
        if m != n:
            raise ProtocolError(
                f"EXECUTE_JOB {job_id}: profile '{profile_name}' describes {m} executors "
                f"but the job has {n}"
            )
        # the profile's own lists (validated: numbers only; SimGrid reads
        # ints as doubles, as float() would); no step modifies them
        return [PTask(list(executors), cpu or [0.0] * n, com or [0.0] * (n * n))]
    if t == "parallel_homogeneous":
        if prof.get("generation_strategy") == SPREAD:
            return [_homogeneous(executors, prof["cpu"] / n, prof["com"] / n)]
        return [_homogeneous(executors, prof["cpu"], prof["com"])]
    if t == "parallel_homogeneous_total":
        return [_homogeneous(executors, prof["cpu"] / n, prof["com"] / n)]
    if t == "parallel_homogeneous_pfs":
        sid = _resolve_storage(pfs_label(prof), storage_mapping, storage_ids, job_id)
        rd, wr = float(prof.get("bytes_to_read", 0.0)), float(prof.get("bytes_to_write", 0.0))
        if prof.get("generation_strategy") == SPREAD:
            rd, wr = rd / n, wr / n
        hosts = list(executors) + [sid]
        m = n + 1
        com = [0.0] * (m * m)
        for i in range(n):
            com[n * m + i] = rd  # storage -> host i
            com[i * m + n] = wr  # host i -> storage
        return [PTask(hosts, [0.0] * m, com)]
    if t == "data_staging":
        src = _resolve_storage(prof["from"], storage_mapping, storage_ids, job_id)
        dst = _resolve_storage(prof["to"], storage_mapping, storage_ids, job_id)
        return [PTask([src, dst], [0.0, 0.0], [0.0, float(prof["nb_bytes"]), 0.0, 0.0])]
    if t == "composed":
        steps: list = []
        once: list = []
        for sub in prof["seq"]:
            once.extend(build_steps(job_id, sub, profiles, executors, storage_mapping, storage_ids))
        for _ in range(int(prof.get("repeat", 1))):
            steps.extend(once)
        return steps
    raise ProtocolError(f"EXECUTE_JOB {job_id}: profile type '{t}' cannot be executed")


def merge_ptasks(a: PTask, b: PTask) -> PTask:
    """Merge two parallel tasks (Batsim's ``additional_io_job``): the union of
    their hosts, flops and bytes added host-wise."""
    hosts = list(a.hosts)
    for h in b.hosts:
        if h not in hosts:
            hosts.append(h)
    idx = {h: i for i, h in enumerate(hosts)}
    m = len(hosts)
    cpu = [0.0] * m
    com = [0.0] * (m * m)
    for t in (a, b):
        k = len(t.hosts)
        for i, h in enumerate(t.hosts):
            cpu[idx[h]] += t.cpu[i]
            if not t.com:
                continue
            for j, g in enumerate(t.hosts):
                v = t.com[i * k + j]
                if v:
                    com[idx[h] * m + idx[g]] += v
    return PTask(hosts, cpu, com)


def total_delay(steps: list) -> float | None:
    """Total duration (s) if every step is a :class:`Delay`, else ``None``."""
    total = 0.0
    for s in steps:
        if not isinstance(s, Delay):
            return None
        total += s.seconds
    return total


def profile_leaves(name: str, profiles: dict) -> list:
    """The non-``composed`` profiles that profile *name* runs: itself, or
    the leaves of its ``composed`` tree (each named profile once)."""
    prof = profiles[name]
    if prof["type"] != "composed":
        return [prof]
    leaves, seen, todo = [], {name}, list(reversed(prof["seq"]))
    while todo:
        sub = todo.pop()
        if sub in seen:
            continue
        seen.add(sub)
        p = profiles[sub]
        if p["type"] == "composed":
            todo.extend(reversed(p["seq"]))
        else:
            leaves.append(p)
    return leaves

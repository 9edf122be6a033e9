"""The burst-buffer family's scheduler-side job model: what a job requests.

Source: Kopanski & Rzadca, Euro-Par 2021 (arXiv 2109.00082), Section 5.1,
and the artifact ``jankopanski/Burst-Buffer-Scheduling``.

A job requests ``nodes`` compute nodes and ``bb`` bytes of burst buffer *per
compute node* (:class:`JobRequest`, read from the job's I/O model by
:func:`job_request`); each compute node ``i`` is given a burst-buffer
(storage) node ``s(i)`` where its ``bb`` bytes are held for the job's whole
life (:func:`bb_held`: bytes held per storage node, what the placer
reserves). How a started job then runs on Batsim -- stage-in, compute
phases with checkpoints and drains, stage-out, as Batsim profiles -- is the
core's (:mod:`iosched.sched.bbrun`, through
:func:`iosched.sched.ioplan.plan_for`; issue 26).
"""

from __future__ import annotations

from typing import Mapping

from iosched.batsim.jobs import walltime_seconds
from iosched.errors import InputError
from iosched.sched.bbrun import CHECKPOINT_FACTOR, MAX_COMPUTE_PHASES, TARGET_PHASE_FLOPS, RunRequest, bb_held
from iosched.sched.iojob import Compute, read_io

__all__ = [
    "MB", "GB", "KIB", "CPU_SPEED", "TARGET_PHASE_FLOPS", "MAX_COMPUTE_PHASES",
    "CHECKPOINT_FACTOR", "JobRequest", "job_request", "bb_held",
]

MB = 10 ** 6
GB = 10 ** 9
KIB = 1024
#: Compute node speed (flops/s) of dragonfly96 (artifact ``platforms/dragonfly96.yaml``).
CPU_SPEED = 1e9


#: What the family reads of a job: the core's
#: :class:`~iosched.sched.bbrun.RunRequest` (``nodes`` = Batsim's ``res``;
#: ``bb`` bytes per compute node, > 0, ``io.burst_buffer.bytes``; ``flops``
#: per compute node over the whole job, >= 0, ``io.compute.flops``; ``com``
#: bytes per ordered pair of compute nodes per compute phase, >= 0,
#: ``io.compute.com``; ``walltime`` s or ``inf``; ``checkpoint_factor``,
#: ``io.burst_buffer.checkpoint_factor``): the placer reserves what it asks,
#: the core runs it from the same numbers.
JobRequest = RunRequest


def job_request(job_json: Mapping) -> JobRequest:
    """Read the model fields of a Batsim job object.

    :param job_json: the job dict as Batsim forwards it: ``res``,
        ``walltime`` and the I/O model ``io`` (``burst_buffer``, ``compute``,
        optional ``nodes`` equal to ``res``) written by
        :mod:`iosched.experiments.bb.workload`, or the earlier extra fields ``bb``,
        ``flops``, ``com`` (:func:`iosched.sched.iojob.read_io`).
    :raises InputError: a field is missing, not a number, or out of range
        (one line naming the job and the field).
    """
    where = f"job {job_json.get('id')}"
    nodes = job_json.get("res")
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise InputError(f"{where}: res={nodes!r} is not a positive integer")
    io = read_io(job_json, where)
    if io.burst_buffer is None:
        raise InputError(f"{where}: no burst-buffer request (io.burst_buffer, or the field bb)")
    if io.nodes is not None and io.nodes != nodes:
        raise InputError(f"{where}: io.nodes={io.nodes} differs from res={nodes} (one Batsim resource "
                         "per compute node)")
    c = io.compute or Compute()
    flops, com = (0.0 if c.flops is None else c.flops), (0.0 if c.com is None else c.com)
    return JobRequest(nodes, float(io.burst_buffer.bytes), float(flops), float(com),
                      walltime_seconds(job_json.get("walltime")), float(io.burst_buffer.checkpoint_factor))

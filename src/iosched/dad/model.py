"""Files, replicas and the data-aware cost of Li & Tatebe (IEEE Systems
Journal 2017): ``fileLocality`` (equation 1, Algorithm 1 GETFILELOCALITY) and
``Score`` (equation 2).

A task (a Batsim job) names the files it reads in its I/O model
(:mod:`iosched.sched.iojob`, ``io.inputs``: file, bytes, copies on nodes;
earlier: the extra job field ``files``, a list of ``{"name": str, "size":
bytes, "replicas": [node names]}``) (the paper's ``qsub -g file1,file2,...`` plus what the scheduler
asks the Gfarm metadata server: file size and replica locations); the extra
field ``queue`` (str, default ``"batch"``) names its Torque queue.  Node
names are the ``node`` property of the platform's core hosts
(:func:`iosched.experiments.platforms.nusa_xml`).

How a started task runs (all Batsim-standard, :mod:`iosched.experiments.dad.workload`
writes the profiles): its profile is ``composed`` of one
``parallel_homogeneous_pfs`` read per file, whose ``storage`` label is the
file's name, then its computation (``parallel_homogeneous``).  At
EXECUTE_JOB the scheduler sends ``storage_mapping = {file name: Batsim id of
the disk of the replica it reads}`` (:func:`replica_for`): the node's own
disk when it holds a replica (a local read through the node's ``local``
link), else the replica node serving the fewest remote reads (a remote read
through both nodes' network interfaces).
"""

from __future__ import annotations

from typing import NamedTuple

from iosched.errors import InputError
from iosched.sched.iojob import PFS, read_io
from iosched.sched.ioplan import DISK_SUFFIX as IOPLAN_DISK_SUFFIX

__all__ = ["FileRef", "TaskRequest", "read_task", "file_locality", "score", "replica_for",
           "DEFAULT_QUEUE", "DISK_SUFFIX"]

#: Queue of a task without a ``queue`` field.
DEFAULT_QUEUE = "batch"

#: Suffix of a node's disk host (a storage resource of the platform): the
#: disk of node ``n003`` is ``n003_disk``; the dispatcher finds each node's
#: disk by it. The core's convention (:data:`iosched.sched.ioplan.DISK_SUFFIX`),
#: by which it maps a replica to its disk.
DISK_SUFFIX = IOPLAN_DISK_SUFFIX


class FileRef(NamedTuple):
    """A file a task reads: ``name``, ``size`` (bytes) and ``replicas``
    (tuple of node names holding a copy, at least one)."""

    name: str
    size: float
    replicas: tuple


class TaskRequest(NamedTuple):
    """The extra fields of a task: ``files`` (tuple of :class:`FileRef`) and
    ``queue`` (str)."""

    files: tuple
    queue: str


def read_task(fields: dict, where: str = "job") -> TaskRequest:
    """Read and check a job's input files and ``queue`` field.

    :param fields: the job's JSON dict (Batsim workload job): its I/O model
        (:func:`iosched.sched.iojob.read_io`: ``io.inputs``, a replica
        being every copy but ``"pfs"``, or the earlier field ``files``) and
        the plain field ``queue``.
    :param where: prefix of error messages (e.g. ``"job w0!3"``).
    :returns: a :class:`TaskRequest`.
    :raises InputError: ``files`` is not a list of ``{name, size, replicas}``
        with a non-empty name, a finite size >= 0 and a non-empty list of node
        names, a file name appears twice, an input has no copy on a node,
        or ``queue`` is not a non-empty str.
    """
    io = read_io(fields, where)
    files = []
    for i, f in enumerate(io.inputs):
        reps = tuple(c for c in f.copies if c != PFS)
        if not reps:
            raise InputError(f"{where}: io.inputs[{i}] ({f.file}): no copy on a node-local disk "
                             "(data-aware dispatch reads replicas on nodes, not the PFS)")
        files.append(FileRef(f.file, float(f.bytes), reps))
    queue = fields.get("queue", DEFAULT_QUEUE)
    if not isinstance(queue, str) or not queue:
        raise InputError(f"{where}: field 'queue' must be a non-empty string, got {queue!r}")
    return TaskRequest(tuple(files), queue)


def file_locality(files, node: str) -> float:
    """``fileLocality(t, h)`` of a task reading ``files`` dispatched to ``node``
    (equation 1; Algorithm 1, GETFILELOCALITY, lines 7-18):

    ``(fileMismatch - fileMatch) / (2 * fileTotalSize) + 1/2``

    where ``fileMatch`` (bytes) sums the sizes of the files with a replica on
    ``node`` and ``fileMismatch`` the others; 0 when every byte is local, 1
    when none is.  (Algorithm 1 never sets ``fileTotalSize``; it is the sum
    of the sizes, as in equation 1.)  A task reading no byte gets 1/2
    (neither local nor remote: our convention, the paper does not say).

    :param files: iterable of :class:`FileRef`.
    :returns: a float in [0, 1].
    """
    match = mismatch = 0.0
    for f in files:
        if node in f.replicas:
            match += f.size
        else:
            mismatch += f.size
    total = match + mismatch
    if total <= 0:
        return 0.5
    return (mismatch - match) / (2.0 * total) + 0.5


def score(locality: float, load: float, beta: float) -> float:
    """``Score(t, h) = fileLocality(t, h) x beta + load(h) x (1 - beta)``
    (equation 2; Algorithm 1 line 27); lower is better.

    :param locality: ``fileLocality`` in [0, 1].
    :param load: normalized load of the node in [0, 1].
    :param beta: weight of the file locality, 0 <= beta <= 1.
    """
    return locality * beta + load * (1.0 - beta)


def replica_for(f: FileRef, node: str, serving=None) -> str:
    """The node whose disk a task on ``node`` reads ``f`` from: ``node``
    itself if it holds a replica, else the replica node serving the fewest
    remote reads now (``serving``: node name -> count; ties and ``None``:
    the first listed replica) -- a stand-in for Gfarm's choice of a file
    system node by load.

    :returns: a node name.
    """
    if node in f.replicas:
        return node
    if not serving:
        return f.replicas[0]
    return min(f.replicas, key=lambda r: serving.get(r, 0))

"""The I/O job model: what a workload job does with I/O, one extra job field ``io``.

A job's I/O behaviour (the files it reads and where their copies live, its
burst-buffer request, its compute phases and periodic writes, the bytes it
writes, its own throughput cap) is a property of the **workload**; where and
when it runs is the scheduler's decision. The model is the union of the job
models of the five papers (``docs/io-job-model.md`` documents every field,
its unit and its paper):

* Kopanski & Rzadca, Euro-Par 2021 (burst buffers, Section 5.1): ``nodes``
  (Batsim's ``res``), ``burst_buffer`` (bytes per compute node, checkpoint
  factor), ``compute.flops`` and ``compute.com``;
* Gonthier et al., Inria RR-9497 (data locality, Section 3): ``cores`` of one
  node, one input file (``inputs``), ``compute.delay``;
* Jeannot, Pallez & Vidal, IJHPCA 2023 (list vs pack, Section 3): ``nodes``
  (Q_i) and ``periodic`` (n_i periods of w_i seconds of compute then v_i
  bytes written to the PFS);
* Goponenko et al., 2024 (PFS-bandwidth-aware backfilling, Section 3):
  ``nodes``, ``application`` (the job's type, what the throughput estimator
  learns per) and ``writes`` (bytes written to the PFS);
* Li & Tatebe, IEEE Systems Journal 2017 (data-aware dispatch, Section III):
  ``inputs`` with the node-local disks holding a replica (``copies``).

The model travels as ONE extra field of a Batsim workload job, ``io``
(Batsim 4.2.1 forwards a job's JSON, nested objects included). It is checked
against the JSON schema shipped with the package
(``iosched/sched/io_job.schema.json``, :data:`SCHEMA`) after every number has
been checked finite. A job without ``io`` is read in its family's earlier
format (:data:`LEGACY_FIELDS`) and converted; a job with ``io`` takes its I/O
fields from ``io`` only (legacy fields beside it are ignored).

Units: bytes, flops, seconds, bytes/s.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from importlib import resources
from typing import Mapping

import jsonschema
from jsonschema import Draft202012Validator

from iosched.checks import MAX_FLOAT
from iosched.errors import InputError

__all__ = ["InputFile", "Compute", "BurstBuffer", "Periodic", "Writes", "IOJob", "SCHEMA",
           "LEGACY_FIELDS", "NO_IO", "PFS", "DEFAULT_CHECKPOINT_FACTOR", "read_io", "validate", "parse_io",
           "to_json"]

#: The copy / target name of the parallel file system.
PFS = "pfs"
#: Checkpoint size / burst-buffer request when ``burst_buffer`` does not say
#: (Kopanski & Rzadca's artifact, ``_checkpoint_phase_factor``).
DEFAULT_CHECKPOINT_FACTOR = 0.5
#: The job fields of each family's earlier format, converted when a job has no
#: ``io`` field (``x`` of listpack, ``queue`` of dad, ``role``, ``seq`` and the
#: history fields of locality are not I/O: they stay plain job fields).
LEGACY_FIELDS = {
    "bb": ("bb", "flops", "com"),
    "locality": ("file", "file_size", "delay"),
    "listpack": ("nodes", "periods", "w", "v"),
    "dad": ("files",),
    "pfsbw": ("variety", "bytes_written", "nodes"),
}

#: Every field :func:`read_io` converts from the earlier formats (a job
#: with none of them and no ``io`` has no I/O model: :data:`NO_IO`).
_LEGACY_KEYS = frozenset(k for keys in LEGACY_FIELDS.values() for k in keys) | {"w", "v"}


@dataclass(frozen=True)
class InputFile:
    """A file the job reads whole.

    ``file`` (str, the file id), ``bytes`` (size, >= 0), ``copies`` (tuple of
    str, at least one: :data:`PFS` or the host name of a node-local disk
    holding a replica; Li & Tatebe's replicas). Whether a file is cached in a
    node's memory is the scheduler's model (locality), not the workload's.
    """

    file: str
    bytes: float
    copies: tuple = (PFS,)


@dataclass(frozen=True)
class Compute:
    """The job's computation (a field None: not given): ``flops`` per compute
    node over the whole job (>= 0; Kopanski & Rzadca), ``com`` bytes per
    ordered pair of compute nodes per compute phase (>= 0; idem), ``delay``
    duration in s (>= 0; Gonthier et al.'s job duration)."""

    flops: float | None = None
    com: float | None = None
    delay: float | None = None


@dataclass(frozen=True)
class BurstBuffer:
    """Burst-buffer request of Kopanski & Rzadca (Section 5.1): ``bytes`` per
    compute node (> 0), held for the job's life: stage-in of ``bytes`` from
    the PFS, a checkpoint of ``checkpoint_factor * bytes`` between compute
    phases drained to the PFS, stage-out of ``bytes`` to the PFS."""

    bytes: float
    checkpoint_factor: float = DEFAULT_CHECKPOINT_FACTOR


@dataclass(frozen=True)
class Periodic:
    """Periodic job of Jeannot, Pallez & Vidal (Section 3): ``periods`` (n_i,
    int >= 1) times ``compute`` s of computation (w_i, > 0) then ``bytes``
    written (v_i, >= 0) to ``to`` (:data:`PFS`)."""

    periods: int
    compute: float
    bytes: float
    to: str = PFS


@dataclass(frozen=True)
class Writes:
    """Bytes the job writes over its life (Goponenko et al.): ``bytes`` (>= 0)
    to ``to`` (:data:`PFS`)."""

    bytes: float
    to: str = PFS


@dataclass(frozen=True)
class IOJob:
    """The I/O model of one job (every part optional; ``None``: absent).

    ``nodes`` (int >= 1, compute nodes the job represents), ``cores`` (int
    >= 1, cores on one node), ``memory`` (bytes per node), ``inputs`` (tuple
    of :class:`InputFile`), ``compute`` (:class:`Compute`), ``burst_buffer``
    (:class:`BurstBuffer`), ``periodic`` (:class:`Periodic`), ``writes``
    (:class:`Writes`), ``application`` (str, the job's type),
    ``throughput_cap`` (bytes/s, > 0).
    """

    nodes: int | None = None
    cores: int | None = None
    memory: float | None = None
    inputs: tuple = field(default=())
    compute: Compute | None = None
    burst_buffer: BurstBuffer | None = None
    periodic: Periodic | None = None
    writes: Writes | None = None
    application: str | None = None
    throughput_cap: float | None = None


#: The I/O model of a job without one (no ``io``, none of the earlier
#: fields): the Batsim profile is the whole job (shared: the model is frozen).
NO_IO = IOJob()


def _load_schema() -> dict:
    """The shipped JSON schema of ``io`` (package data)."""
    text = resources.files("iosched.sched").joinpath("io_job.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


#: The JSON schema (draft 2020-12) of the ``io`` field.
SCHEMA = _load_schema()


def _is_int(_checker, x) -> bool:
    """A JSON integer: an int, not a bool and not a whole float (``2.0``)."""
    return type(x) is int


_VALIDATOR = jsonschema.validators.extend(
    Draft202012Validator, type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_int),
)(SCHEMA)

_KINDS = {"integer": "an integer", "number": "a number", "string": "a string", "object": "an object",
          "array": "a list", "boolean": "a boolean"}


def _show(x) -> str:
    """A value as quoted in messages (short, one line)."""
    text = repr(x) if x is None or isinstance(x, (str, int, float)) else json.dumps(x, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _path(parts) -> str:
    out = "io"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _first_non_finite(obj, parts=()):
    """``(path parts, value)`` of the first non-finite number in *obj*, or None."""
    t = type(obj)
    if t is float or t is int:
        return None if -MAX_FLOAT <= obj <= MAX_FLOAT else (parts, obj)
    if t is dict:
        for k, v in obj.items():
            bad = _first_non_finite(v, parts + (k,))
            if bad:
                return bad
    elif t is list:
        for i, v in enumerate(obj):
            bad = _first_non_finite(v, parts + (i,))
            if bad:
                return bad
    return None


def _message(error: jsonschema.ValidationError) -> str:
    """``io.PATH: problem`` of one schema error."""
    parts = tuple(error.absolute_path)
    kind, value, x = error.validator, error.validator_value, error.instance
    if kind == "required":
        missing = [k for k in value if k not in x]
        return f"{_path(parts + (missing[0],))}: is missing"
    if kind == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(k for k in x if k not in allowed)
        return f"{_path(parts + (extra[0],))}: unknown field (allowed: {', '.join(allowed)})"
    where = _path(parts)
    if kind == "type":
        return f"{where}: {_show(x)} is not {_KINDS.get(value, value)}"
    if kind == "minimum":
        return f"{where}: {_show(x)} is not >= {value}"
    if kind == "exclusiveMinimum":
        return f"{where}: {_show(x)} is not > {value}"
    if kind == "enum":
        return f"{where}: {_show(x)} is not one of {', '.join(map(repr, value))}"
    if kind == "minItems":
        return f"{where}: an empty list (at least one item)"
    if kind == "minLength":
        return f"{where}: an empty string"
    if kind == "uniqueItems":
        return f"{where}: an item is listed twice"
    return f"{where}: {' '.join(error.message.split())}"


def validate(obj, where: str) -> None:
    """Check an ``io`` object against :data:`SCHEMA`, every number finite.

    :param obj: the decoded ``io`` value.
    :param where: names the job in messages (``"job w0!3"``; a file name may
        precede it).
    :raises InputError: one line ``WHERE: io.PATH: problem``, e.g.
        ``job w0!3: io.burst_buffer.bytes: -1 is not > 0``; NaN, infinities,
        bools, strings in place of numbers, a missing required field and an
        unknown key are refused. A file listed twice in ``inputs`` too.
    """
    bad = _first_non_finite(obj)
    if bad is not None:
        raise InputError(f"{where}: {_path(bad[0])}: {_show(bad[1])} is not a finite number")
    error = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(obj))
    if error is not None:
        raise InputError(f"{where}: {_message(error)}")
    seen = set()
    for i, f in enumerate(obj.get("inputs", ())):
        if f["file"] in seen:
            raise InputError(f"{where}: {_path(('inputs', i, 'file'))}: file {f['file']!r} is listed twice")
        seen.add(f["file"])


def parse_io(obj, where: str) -> IOJob:
    """The :class:`IOJob` of a (checked) ``io`` object; defaults applied
    (``copies`` ``["pfs"]``, ``checkpoint_factor`` 0.5, ``to`` ``"pfs"``; a
    ``compute`` field not given is None).

    :raises InputError: as :func:`validate`.
    """
    fast = _fast_parse(obj)
    return fast if fast is not None else _checked_parse(obj, where)


def _checked_parse(obj, where: str) -> IOJob:
    """:func:`parse_io` through the schema (:func:`validate`), no fast path."""
    validate(obj, where)
    inputs = tuple(InputFile(f["file"], f["bytes"], tuple(f.get("copies", (PFS,))))
                   for f in obj.get("inputs", ()))
    c, bb, p, w = obj.get("compute"), obj.get("burst_buffer"), obj.get("periodic"), obj.get("writes")
    return IOJob(
        nodes=obj.get("nodes"), cores=obj.get("cores"), memory=obj.get("memory"), inputs=inputs,
        compute=None if c is None else Compute(c.get("flops"), c.get("com"), c.get("delay")),
        burst_buffer=None if bb is None else BurstBuffer(
            bb["bytes"], bb.get("checkpoint_factor", DEFAULT_CHECKPOINT_FACTOR)),
        periodic=None if p is None else Periodic(p["periods"], p["compute"], p["bytes"], p.get("to", PFS)),
        writes=None if w is None else Writes(w["bytes"], w.get("to", PFS)),
        application=obj.get("application"), throughput_cap=obj.get("throughput_cap"),
    )


def _num(x, low: float, strict: bool = False) -> bool:
    """*x* a finite JSON number (not a bool) >= *low* (> *low* if *strict*)."""
    t = type(x)
    return (t is float or t is int) and (x > low if strict else x >= low) and x <= MAX_FLOAT


def _count1(x) -> bool:
    """*x* a JSON integer (not a bool, not ``2.0``) >= 1 and finite as a double."""
    return type(x) is int and 1 <= x <= MAX_FLOAT


def _keys(d, allowed: frozenset, required: tuple = ()) -> bool:
    return type(d) is dict and d.keys() <= allowed and all(k in d for k in required)


_TOP = frozenset(SCHEMA["properties"])
_PARTS = {k: frozenset(SCHEMA["properties"][k]["properties"])
          for k in ("compute", "burst_buffer", "periodic", "writes")}
_INPUT = frozenset(SCHEMA["properties"]["inputs"]["items"]["properties"])


def _fast_parse(obj):
    """The :class:`IOJob` of a valid ``io`` object, or None when *obj* may
    be invalid (then :func:`validate` finds the error; it accepts everything
    accepted here). About 20 times faster than the schema validator."""
    if not _keys(obj, _TOP) or any(v is None for v in obj.values()):
        return None
    g = obj.get
    nodes, cores, memory, cap, app = g("nodes"), g("cores"), g("memory"), g("throughput_cap"), g("application")
    if not ((nodes is None or _count1(nodes)) and (cores is None or _count1(cores))
            and (memory is None or _num(memory, 0)) and (cap is None or _num(cap, 0, True))
            and (app is None or (type(app) is str and app))):
        return None
    inputs = []
    raw = g("inputs", ())
    if "inputs" in obj:
        if type(raw) is not list:
            return None
        seen = set()
        for f in raw:
            if not _keys(f, _INPUT, ("file", "bytes")):
                return None
            name, size, copies = f["file"], f["bytes"], f.get("copies", [PFS])
            if not (type(name) is str and name and name not in seen and _num(size, 0)
                    and type(copies) is list and copies and len(set(copies)) == len(copies)
                    and all(type(c) is str and c for c in copies)):
                return None
            seen.add(name)
            inputs.append(InputFile(name, size, tuple(copies)))
    c = g("compute")
    if c is not None:
        if not (_keys(c, _PARTS["compute"]) and all(_num(v, 0) for v in c.values())):
            return None
        c = Compute(c.get("flops"), c.get("com"), c.get("delay"))
    bb = g("burst_buffer")
    if bb is not None:
        if not (_keys(bb, _PARTS["burst_buffer"], ("bytes",)) and _num(bb["bytes"], 0, True)
                and _num(bb.get("checkpoint_factor", 0), 0)):
            return None
        bb = BurstBuffer(bb["bytes"], bb.get("checkpoint_factor", DEFAULT_CHECKPOINT_FACTOR))
    p = g("periodic")
    if p is not None:
        if not (_keys(p, _PARTS["periodic"], ("periods", "compute", "bytes")) and _count1(p["periods"])
                and _num(p["compute"], 0, True) and _num(p["bytes"], 0)
                and p.get("to", PFS) == PFS):
            return None
        p = Periodic(p["periods"], p["compute"], p["bytes"], PFS)
    w = g("writes")
    if w is not None:
        if not (_keys(w, _PARTS["writes"], ("bytes",)) and _num(w["bytes"], 0) and w.get("to", PFS) == PFS):
            return None
        w = Writes(w["bytes"], PFS)
    return IOJob(nodes=nodes, cores=cores, memory=memory, inputs=tuple(inputs), compute=c, burst_buffer=bb,
                 periodic=p, writes=w, application=app, throughput_cap=cap)


def to_json(io: IOJob) -> dict:
    """The canonical ``io`` object of *io*: keys sorted, absent parts (None,
    no input, a ``compute`` field not given) omitted, every other field of a
    present part written (defaults included). ``read_io({"io": to_json(io)}, ...) == io``."""
    out: dict = {}
    if io.application is not None:
        out["application"] = io.application
    if io.burst_buffer is not None:
        out["burst_buffer"] = {"bytes": io.burst_buffer.bytes,
                               "checkpoint_factor": io.burst_buffer.checkpoint_factor}
    if io.compute is not None:
        c = io.compute
        out["compute"] = {k: v for k, v in (("com", c.com), ("delay", c.delay), ("flops", c.flops))
                          if v is not None}
    if io.cores is not None:
        out["cores"] = io.cores
    if io.inputs:
        out["inputs"] = [{"bytes": f.bytes, "copies": list(f.copies), "file": f.file} for f in io.inputs]
    if io.memory is not None:
        out["memory"] = io.memory
    if io.nodes is not None:
        out["nodes"] = io.nodes
    if io.periodic is not None:
        p = io.periodic
        out["periodic"] = {"bytes": p.bytes, "compute": p.compute, "periods": p.periods, "to": p.to}
    if io.throughput_cap is not None:
        out["throughput_cap"] = io.throughput_cap
    if io.writes is not None:
        out["writes"] = {"bytes": io.writes.bytes, "to": io.writes.to}
    return out


def read_io(job_json: Mapping, where: str) -> IOJob:
    """The I/O model of a Batsim workload job.

    With an ``io`` field, that field only (:func:`parse_io`); without, the
    legacy fields of every family present (:data:`LEGACY_FIELDS`) converted:
    bb ``bb``/``flops``/``com`` -> ``burst_buffer.bytes``/``compute``;
    locality ``file``/``file_size`` -> one input read from the PFS,
    ``delay`` -> ``compute.delay``, ``res`` -> ``cores``; listpack
    ``nodes``/``periods``/``w``/``v`` -> ``nodes``/``periodic``; dad
    ``files`` -> ``inputs`` (``replicas`` -> ``copies``); pfsbw ``variety``
    -> ``application``, ``bytes_written`` -> ``writes.bytes``, ``nodes``.

    :param job_json: the job's dict as Batsim forwards it.
    :param where: names the job in messages (``"job w0!3"``).
    :raises InputError: one line naming the job and the field.
    """
    if "io" in job_json:
        return parse_io(job_json["io"], where)
    if _LEGACY_KEYS.isdisjoint(job_json):
        return NO_IO      # most jobs of plain workloads: read once per submission
    return _from_legacy(job_json, where)


# --------------------------------------------------------------------------
# the families' earlier formats


def _number(d: Mapping, key: str, where: str, *, lenient: bool = True, positive: bool = False) -> float:
    """``float`` of a legacy numeric field, finite and >= 0 (> 0 if *positive*).

    *lenient*: a numeric string is accepted (the family read it with
    ``float()``); bools are refused.
    """
    v = d[key]
    x = None
    if type(v) in (int, float):
        x = float(v) if -MAX_FLOAT <= v <= MAX_FLOAT else math.inf
    elif lenient and isinstance(v, str):
        try:
            x = float(v)
        except ValueError:
            pass
    if x is None:
        raise InputError(f"{where}: field {key}: {_show(v)} is not a number")
    if not math.isfinite(x):
        raise InputError(f"{where}: field {key}: {_show(v)} is not a finite number")
    if positive and not x > 0:
        raise InputError(f"{where}: field {key}: {_show(v)} is not > 0")
    if x < 0:
        raise InputError(f"{where}: field {key}: {_show(v)} is not >= 0")
    return x


def _count(d: Mapping, key: str, where: str) -> int:
    """A legacy integer field >= 1 (an int, not a bool nor a float)."""
    v = d[key]
    if type(v) is not int or v < 1:
        raise InputError(f"{where}: field {key}: {_show(v)} is not an integer >= 1")
    return v


def _legacy_files(raw, where: str) -> tuple:
    """dad's ``files`` [{name, size, replicas}] as :class:`InputFile`s (the
    checks and messages of ``iosched.dad.model.read_task``)."""
    if not isinstance(raw, list):
        raise InputError(f"{where}: field 'files' must be a list, got {type(raw).__name__}")
    files, seen = [], set()
    for i, f in enumerate(raw):
        at = f"{where}: files[{i}]"
        if not isinstance(f, dict) or set(f) - {"name", "size", "replicas"} or "name" not in f:
            raise InputError(f"{at}: expected an object with keys name, size, replicas")
        name, size, reps = f.get("name"), f.get("size"), f.get("replicas")
        if not isinstance(name, str) or not name:
            raise InputError(f"{at}: 'name' must be a non-empty string")
        if name in seen:
            raise InputError(f"{at}: file {name!r} is listed twice")
        seen.add(name)
        if isinstance(size, bool) or not isinstance(size, (int, float)) or not math.isfinite(size) or size < 0:
            raise InputError(f"{at} ({name}): 'size' must be a finite number of bytes >= 0, got {size!r}")
        if not isinstance(reps, list) or not reps or not all(isinstance(r, str) and r for r in reps):
            raise InputError(f"{at} ({name}): 'replicas' must be a non-empty list of node names")
        files.append(InputFile(name, float(size), tuple(reps)))
    return tuple(files)


def _from_legacy(d: Mapping, where: str) -> IOJob:
    """Convert the legacy I/O fields of a job (see :func:`read_io`)."""
    inputs: tuple = ()
    cores = None
    if "file" in d or "file_size" in d:                       # locality
        for key in ("file", "file_size"):
            if key not in d:
                raise InputError(f"{where}: field {key} is missing (a locality job reads one file)")
        try:
            fid = str(int(d["file"]))
        except (TypeError, ValueError, OverflowError):
            raise InputError(f"{where}: field file: {_show(d['file'])} is not a file number") from None
        inputs = (InputFile(fid, _number(d, "file_size", where)),)
        res = d.get("res")
        cores = res if type(res) is int and res >= 1 else None
    if "files" in d:                                          # dad
        if inputs:
            raise InputError(f"{where}: fields file and files both given (a locality file and dad's files)")
        inputs = _legacy_files(d["files"], where)
    compute = None
    if "flops" in d or "com" in d or "delay" in d:            # bb, locality
        compute = Compute(*(_number(d, k, where) if k in d else None for k in ("flops", "com", "delay")))
    bb = BurstBuffer(_number(d, "bb", where, positive=True)) if "bb" in d else None
    periodic = None
    if "periods" in d or "w" in d or "v" in d:                # listpack
        for key in ("periods", "w", "v"):
            if key not in d:
                raise InputError(f"{where}: field {key} is missing (a periodic job has periods, w and v)")
        periodic = Periodic(_count(d, "periods", where), _number(d, "w", where, positive=True),
                            _number(d, "v", where))
    nodes = _count(d, "nodes", where) if "nodes" in d else None   # listpack, pfsbw
    application = None
    if "variety" in d:                                        # pfsbw
        application = d["variety"]
        if not isinstance(application, str) or not application:
            raise InputError(f"{where}: field variety: {_show(application)} is not a non-empty string")
    writes = None
    if "bytes_written" in d:
        writes = Writes(_number(d, "bytes_written", where, lenient=False))
    return IOJob(nodes=nodes, cores=cores, inputs=inputs, compute=compute, burst_buffer=bb,
                 periodic=periodic, writes=writes, application=application)

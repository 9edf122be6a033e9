"""Batsim workload JSON: loading and validation for the embedded engine.

Format: Batsim 4.2.1 ``docs/input-workload.rst``. A workload is an object with
``jobs`` (list), ``profiles`` (object) and optionally ``nb_res``. Jobs have
``id`` (string or integer), ``subtime`` (s, >= 0), ``res`` (int >= 1),
``profile`` (name) and optionally ``walltime`` (s, > 0, or -1 for none);
any other field is kept and forwarded to the scheduler. Every number must be
finite, and times (``subtime``, ``walltime``, ``delay``) at most
:data:`iosched.checks.MAX_TIME` (2**32 s; :mod:`iosched.checks` says why).

Profile types executed by the engine (parameters in bytes, flops, seconds):

==============================  ===============================================
``delay``                       ``delay`` (s)
``parallel``                    ``cpu`` (flops per executor, list of n),
                                ``com`` (bytes, row-major n x n matrix)
``parallel_homogeneous``        ``cpu`` (flops per host), ``com`` (bytes per
                                ordered pair of distinct hosts)
``parallel_homogeneous_total``  ``cpu`` and ``com`` spread over the allocation
``composed``                    ``seq`` (profile names), ``repeat`` (>= 1)
``parallel_homogeneous_pfs``    ``bytes_to_read``, ``bytes_to_write`` (bytes per
                                host), ``storage`` label (default ``pfs``)
``data_staging``                ``nb_bytes``, ``from`` and ``to`` labels
==============================  ===============================================

SMPI and usage-trace replays are out of scope and rejected.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import jsonschema

from iosched.batsim.jobs import NO_WALLTIME, SEPARATOR, job_id, local_id, walltime_field_ok
from iosched.checks import MAX_FLOAT, MAX_TIME, check_finite, check_time, loads_json, non_finite
from iosched.errors import InputError

OUT_OF_SCOPE_TYPES = {
    "smpi": "SMPI trace replay",
    "usage_trace": "usage-trace replay",
    "trace_replay": "trace replay",
    "scheduler_send": "scheduler_send (Batsim 3)",
    "scheduler_recv": "scheduler_recv (Batsim 3)",
}

_NUM = {"type": "number", "minimum": 0}
_STRATEGY = {"enum": ["DefinedAmountsUsedForEachValue", "DefinedAmountsSpreadUniformly"]}

PROFILE_SCHEMAS = {
    "delay": {
        "type": "object",
        "required": ["delay"],
        "properties": {"delay": _NUM},
    },
    "parallel": {
        "type": "object",
        "properties": {
            "cpu": {"type": "array", "items": _NUM},
            "com": {"type": "array", "items": _NUM},
        },
    },
    "parallel_homogeneous": {
        "type": "object",
        "required": ["cpu", "com"],
        "properties": {"cpu": _NUM, "com": _NUM, "generation_strategy": _STRATEGY},
    },
    "parallel_homogeneous_total": {
        "type": "object",
        "required": ["cpu", "com"],
        "properties": {"cpu": _NUM, "com": _NUM},
    },
    "composed": {
        "type": "object",
        "required": ["seq"],
        "properties": {
            "seq": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "repeat": {"type": "integer", "minimum": 1},
        },
    },
    "parallel_homogeneous_pfs": {
        "type": "object",
        "required": ["bytes_to_read", "bytes_to_write"],
        "properties": {
            "bytes_to_read": _NUM,
            "bytes_to_write": _NUM,
            "storage": {"type": "string"},
            "generation_strategy": _STRATEGY,
        },
    },
    "data_staging": {
        "type": "object",
        "required": ["nb_bytes", "from", "to"],
        "properties": {
            "nb_bytes": _NUM,
            "from": {"type": "string"},
            "to": {"type": "string"},
        },
    },
}

JOB_SCHEMA = {
    "type": "object",
    "required": ["id", "subtime", "res", "profile"],
    "properties": {
        "id": {"type": ["string", "integer"]},
        "subtime": {"type": "number", "minimum": 0},
        "res": {"type": "integer", "minimum": 1},
        "profile": {"type": "string"},
        "walltime": {"type": "number"},
    },
}

WORKLOAD_SCHEMA = {
    "type": "object",
    "required": ["jobs", "profiles"],
    "properties": {
        "jobs": {"type": "array"},
        "profiles": {"type": "object"},
        "nb_res": {"type": "integer", "minimum": 0},
    },
}

_VALIDATORS = {
    k: jsonschema.Draft202012Validator(v) for k, v in PROFILE_SCHEMAS.items()
}
_JOB_VALIDATOR = jsonschema.Draft202012Validator(JOB_SCHEMA)
_WORKLOAD_VALIDATOR = jsonschema.Draft202012Validator(WORKLOAD_SCHEMA)


def _first_error(validator, instance, where: str) -> None:
    err = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    if err is not None:
        loc = "/".join(str(p) for p in err.absolute_path)
        field_ = f"{where}/{loc}" if loc else where
        raise InputError(f"{field_}: {err.message}")


def check_job_fields(job: dict, where: str) -> None:
    """Check a job object against :data:`JOB_SCHEMA` (the fields of a
    workload's job, and of a REGISTER_JOB's ``job``), then its numbers: every
    number finite (:func:`iosched.checks.check_finite`, extra fields
    included), ``subtime`` and ``walltime`` at most
    :data:`iosched.checks.MAX_TIME` s.

    The common valid case is accepted by a cheap check (``_fast_job_ok``,
    which accepts nothing the full check refuses); the schema validator
    runs only when it fails (it costs about 0.1 ms a job: a REGISTER_JOB of
    every dynamic job goes through here).

    :raises InputError: the first violation, prefixed by ``where``.
    """
    if _fast_job_ok(job):
        return
    _first_error(_JOB_VALIDATOR, job, where)
    if SEPARATOR not in where:  # workload jobs: name the job by its id too
        where = f"{where} (id '{job['id']}')"
    check_finite(job, where)
    check_time(job["subtime"], where, "subtime")
    wt = job.get("walltime")
    if wt is not None and wt != NO_WALLTIME:
        check_time(wt, where, "walltime")


def job_walltime(value) -> float | None:
    """A valid ``walltime`` field (:func:`iosched.batsim.jobs.walltime_field_ok`)
    as the engine keeps it: seconds, or ``None`` for no walltime."""
    return None if value is None or value == NO_WALLTIME else float(value)


def _is_num(x) -> bool:
    """A finite number >= 0 (NaN fails both comparisons)."""
    return (type(x) is float or type(x) is int) and 0 <= x <= MAX_FLOAT


def _scalars_ok(d: dict) -> bool:
    """No value of *d* is a container or a non-finite number."""
    for v in d.values():
        t = type(v)
        if t is float or t is int:
            if not (-MAX_FLOAT <= v <= MAX_FLOAT):
                return False
        elif t is dict or t is list:
            return False
    return True


def _fast_job_ok(job: dict) -> bool:
    """Cheap check of the common case; ``False`` means: run the schema
    validator, which produces the precise message (or accepts a rare form)."""
    sub = job.get("subtime")
    res = job.get("res")
    wt = job.get("walltime", 0)
    return (
        type(job.get("id")) in (str, int)
        and _is_num(sub) and sub <= MAX_TIME
        and type(res) is int and res >= 1
        and type(job.get("profile")) is str
        and (type(wt) is float or type(wt) is int) and wt <= MAX_TIME
        and _scalars_ok(job)
    )


_STRATEGIES = ("DefinedAmountsUsedForEachValue", "DefinedAmountsSpreadUniformly")


_NUM_TYPES = frozenset((float, int))


def _nums_ok(xs) -> bool:
    """A list of finite non-negative numbers (bools and strings excluded).

    Vectorised in C (a registered ``parallel`` profile holds ``n**2``
    numbers): the types first, then the minimum, then a finite sum, which
    also refuses NaN and infinities (a list whose sum overflows although
    every number is finite is refused too: the caller then runs the full
    validator, which accepts it)."""
    if type(xs) is not list:
        return False
    if not xs:
        return True
    if not _NUM_TYPES.issuperset(map(type, xs)):
        return False
    try:
        return min(xs) >= 0 and math.isfinite(sum(xs))
    except OverflowError:  # an int beyond a double
        return False


def _fast_profile_ok(ptype: str, p: dict) -> bool:
    """Cheap check of the common, valid profiles (registered profiles can hold
    matrices of thousands of numbers: jsonschema would take milliseconds);
    ``False`` means: run the schema validator for the precise message."""
    if ptype == "delay":
        return _is_num(p.get("delay"))
    if ptype == "parallel":
        return (("cpu" not in p or _nums_ok(p["cpu"])) and ("com" not in p or _nums_ok(p["com"])))
    if ptype in ("parallel_homogeneous", "parallel_homogeneous_total"):
        return (_is_num(p.get("cpu")) and _is_num(p.get("com"))
                and p.get("generation_strategy", _STRATEGIES[0]) in _STRATEGIES)
    if ptype == "parallel_homogeneous_pfs":
        return (_is_num(p.get("bytes_to_read")) and _is_num(p.get("bytes_to_write"))
                and type(p.get("storage", "")) is str
                and p.get("generation_strategy", _STRATEGIES[0]) in _STRATEGIES)
    if ptype == "data_staging":
        return _is_num(p.get("nb_bytes")) and type(p.get("from")) is str and type(p.get("to")) is str
    if ptype == "composed":
        seq = p.get("seq")
        rep = p.get("repeat", 1)
        return (type(seq) is list and len(seq) > 0 and all(type(x) is str for x in seq)
                and type(rep) is int and rep >= 1)
    return False


def validate_profile(name: str, profile, where: str, profiles: dict | None = None) -> None:
    """Check one profile; ``where`` prefixes the message (file and path).

    :raises InputError: not an object, no/unknown ``type``, out-of-scope type,
        bad parameter, ``composed`` naming a missing profile.
    """
    loc = f"{where}: profile '{name}'"
    if not isinstance(profile, dict):
        raise InputError(f"{loc}: a profile must be a JSON object")
    ptype = profile.get("type")
    if not isinstance(ptype, str):
        raise InputError(f"{loc}: missing or non-string field 'type'")
    if ptype in OUT_OF_SCOPE_TYPES:
        raise InputError(
            f"{loc}: profile type '{ptype}' ({OUT_OF_SCOPE_TYPES[ptype]}) is out of "
            "scope of the embedded engine; use the real Batsim"
        )
    if ptype not in _VALIDATORS:
        raise InputError(
            f"{loc}: unknown profile type '{ptype}' (known: {', '.join(sorted(_VALIDATORS))})"
        )
    if not _fast_profile_ok(ptype, profile):
        _first_error(_VALIDATORS[ptype], profile, loc)
        check_finite(profile, loc)
    else:
        for key, v in profile.items():
            if key != "cpu" and key != "com" and non_finite(v) is not None:
                check_finite({key: v}, loc)
    if ptype == "delay":
        check_time(profile["delay"], loc, "delay")
    if ptype == "parallel":
        cpu, com = profile.get("cpu"), profile.get("com")
        if cpu is None and com is None:
            raise InputError(f"{loc}: a parallel profile needs 'cpu' and/or 'com'")
        if cpu is not None and com is not None and len(com) != len(cpu) ** 2:
            raise InputError(
                f"{loc}: 'com' has {len(com)} values, expected {len(cpu)}^2 = {len(cpu) ** 2}"
            )
        if cpu is None and math.isqrt(len(com)) ** 2 != len(com):
            raise InputError(f"{loc}: 'com' has {len(com)} values, not a square matrix")
    if ptype == "composed" and profiles is not None:
        for sub in profile["seq"]:
            if sub not in profiles:
                raise InputError(f"{loc}: 'seq' names an unknown profile '{sub}'")


def check_composed_cycles(profiles: dict, where: str) -> None:
    """Reject ``composed`` profiles that (indirectly) contain themselves.

    :raises InputError: naming the profile in the cycle.
    """
    state: dict[str, int] = {}

    def visit(name: str) -> None:
        st = state.get(name, 0)
        if st == 1:
            raise InputError(f"{where}: profile '{name}': composed profiles form a cycle")
        if st == 2:
            return
        state[name] = 1
        p = profiles.get(name)
        if isinstance(p, dict) and p.get("type") == "composed":
            for sub in p.get("seq", []):
                if sub in profiles:
                    visit(sub)
        state[name] = 2

    for n in profiles:
        visit(n)


@dataclass
class JobSpec:
    """A job of a workload, as the engine knows it.

    ``walltime`` is in seconds, ``None`` when the job has none; ``json`` is the
    object forwarded in JOB_SUBMITTED (the workload's job object with ``id``
    replaced by the full ``workload!id``).
    """

    id: str
    workload: str
    local_id: str
    subtime: float
    res: int
    profile: str
    walltime: float | None
    json: dict = field(repr=False)


@dataclass
class Workload:
    """One workload file: ``name`` (``w0``, ``w1``...), jobs and profiles."""

    name: str
    path: str
    jobs: list[JobSpec]
    profiles: dict
    nb_res: int | None


def load_workload(path: str, name: str) -> Workload:
    """Load and validate a Batsim workload JSON file.

    :param path: the file.
    :param name: the workload name (``w0`` for the first ``-w``...).
    :raises InputError: missing file, invalid or too deeply nested JSON,
        schema violation, unknown or out-of-scope profile type, missing
        profile, negative, non-numeric, non-finite (NaN, Infinity, 1e400) or
        too large times (above :data:`iosched.checks.MAX_TIME`), any other
        non-finite number, duplicate job ids; the message names the file, the
        job or profile, and the field.
    """
    try:
        with open(path, "rb") as f:
            text = f.read()
    except FileNotFoundError:
        raise InputError(f"{path}: workload file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: workload path is a directory") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read workload file: {exc.strerror}") from None
    data = loads_json(text, path)
    _first_error(_WORKLOAD_VALIDATOR, data, path)
    profiles = data["profiles"]
    for pname, prof in profiles.items():
        validate_profile(pname, prof, path, profiles)
    check_composed_cycles(profiles, path)

    jobs: list[JobSpec] = []
    seen: set[str] = set()
    for i, job in enumerate(data["jobs"]):
        where = f"{path}: jobs[{i}]"
        if not isinstance(job, dict):
            raise InputError(f"{where}: a job must be a JSON object")
        if not _fast_job_ok(job):
            check_job_fields(job, where)
        local = local_id(str(job["id"]))
        if local in seen:
            raise InputError(f"{where}: duplicate job id '{local}'")
        seen.add(local)
        if job["profile"] not in profiles:
            raise InputError(f"{where} (id '{local}'): unknown profile '{job['profile']}'")
        wt = job.get("walltime")
        if not walltime_field_ok(wt):
            raise InputError(f"{where} (id '{local}'): walltime must be > 0 or -1, got {wt}")
        full = job_id(name, local)
        forwarded = dict(job)
        forwarded["id"] = full
        jobs.append(
            JobSpec(full, name, local, float(job["subtime"]), int(job["res"]),
                    job["profile"], job_walltime(wt), forwarded)
        )
    return Workload(name, os.path.abspath(path), jobs, profiles, data.get("nb_res"))

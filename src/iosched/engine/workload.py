"""Batsim workload JSON: loading and validation for the embedded engine.

Format: Batsim 4.2.1 ``docs/input-workload.rst``; the rules are those of its
loader (tag v4.2.1: ``Workload::load_from_json`` and
``Workload::check_validity`` in ``src/workload.cpp``, ``Job::from_json`` and
``JobIdentifier`` in ``src/jobs.cpp``, ``Profile::from_json`` in
``src/profiles.cpp``): what Batsim refuses is refused here in one line
naming the file, the job or profile, and the field. A workload is an object
with ``nb_res`` (an integer > 0), ``profiles`` (object) and ``jobs`` (list).
Jobs have ``id`` (string or integer; when the string contains the workload's
name it must read ``WORKLOAD!NAME``, else it must not contain ``!``),
``subtime`` (s, a number), ``res`` (an integer >= 0), ``profile`` (name) and
optionally ``walltime`` (s, > 0, or -1 for none); any other field is kept
and forwarded to the scheduler. Integers are JSON integers of 32 bits
(rapidjson's ``IsInt``: ``2.0`` is not one). Every number must be finite, and
times (``subtime``, ``walltime``, ``delay``) at most
:data:`iosched.checks.MAX_TIME` (2**32 s; :mod:`iosched.checks` says why). A
key appearing twice in one JSON object is refused (Batsim's parser keeps
both occurrences: a duplicate profile name aborts, a job field is read from
its first occurrence, Python's from its last).

Profile types executed by the engine (parameters in bytes, flops, seconds):

==============================  ===============================================
``delay``                       ``delay`` (s, > 0)
``parallel``                    ``cpu`` (flops per executor, non-empty list of
                                n), ``com`` (bytes, row-major n x n matrix); a
                                job of such a profile has ``res`` = n
``parallel_homogeneous``        ``cpu`` (flops per host), ``com`` (bytes per
                                ordered pair of distinct hosts)
``parallel_homogeneous_total``  ``cpu`` and ``com`` spread over the allocation
``composed``                    ``seq`` (non-empty list of profile names),
                                ``repeat`` (an integer >= 1, default 1)
``parallel_homogeneous_pfs``    ``bytes_to_read`` and/or ``bytes_to_write``
                                (bytes per host, default 0; no sign check, as
                                in Batsim: SimGrid ignores negative amounts),
                                the storage label ``storage``, else ``host``,
                                else ``pfs``
``data_staging``                ``nb_bytes``, ``from`` and ``to`` labels
==============================  ===============================================

Every profile may have ``ret`` (an integer: the job's return code).
SMPI, usage-trace and scheduler send/recv profiles are out of scope and
rejected.

Embedded-engine extension: ``generation_strategy:
"DefinedAmountsSpreadUniformly"`` in a ``parallel_homogeneous`` or
``parallel_homogeneous_pfs`` profile (a Batsim 5 key, which Batsim 4.2.1
ignores) divides the amounts by the number of executors. The loader does not
refuse it: it lists such profiles in :attr:`Workload.extensions`, and the
engine refuses them unless ``--embedded-extensions``
(``ProtocolMixin._init_protocol``). Any other value of the key is ignored,
as by Batsim 4.2.1.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from iosched.batsim.jobs import NO_WALLTIME, job_id
from iosched.checks import MAX_FLOAT, MAX_TIME, all_finite_numbers, check_finite, check_time
from iosched.errors import InputError

OUT_OF_SCOPE_TYPES = {
    "smpi": "SMPI trace replay",
    "usage_trace": "usage-trace replay",
    "send": "scheduler send",
    "recv": "scheduler receive",
    "trace_replay": "trace replay",
    "scheduler_send": "scheduler_send (Batsim 3)",
    "scheduler_recv": "scheduler_recv (Batsim 3)",
}

#: ``generation_strategy`` value that the engine interprets (an extension).
SPREAD = "DefinedAmountsSpreadUniformly"
#: profile types whose ``generation_strategy`` the engine reads.
SPREADABLE = ("parallel_homogeneous", "parallel_homogeneous_pfs")

#: rapidjson's ``IsInt``: a JSON integer of 32 bits.
INT_MIN, INT_MAX = -(2 ** 31), 2 ** 31 - 1

_MISSING = object()
_SEPARATORS = re.compile("!+")


def is_int(x) -> bool:
    """rapidjson's ``IsInt``: a JSON integer of 32 bits (``2.0`` and
    ``true`` are not)."""
    return type(x) is int and INT_MIN <= x <= INT_MAX


def is_number(x) -> bool:
    """rapidjson's ``IsNumber`` (``true`` is not a number)."""
    t = type(x)
    return t is int or t is float


def _field(loc: str, key: str, problem: str) -> InputError:
    return InputError(f"{loc}: field '{key}': {problem}")


def _need(d: dict, key: str, loc: str):
    v = d.get(key, _MISSING)
    if v is _MISSING:
        raise InputError(f"{loc}: no '{key}' field")
    return v


# ------------------------------------------------------------------ profiles
def _nums_ok(xs) -> bool:
    """A list of finite non-negative numbers (bools and strings excluded).

    Vectorised in C (a registered ``parallel`` profile holds ``n**2``
    numbers): the types first, then the minimum, then a finite sum, which
    also refuses NaN and infinities (a list whose sum overflows although
    every number is finite is refused too: the caller then checks each
    number, and accepts it)."""
    if type(xs) is not list:
        return False
    return not xs or (all_finite_numbers(xs) and min(xs) >= 0)


def _check_finite_fields(profile: dict, loc: str) -> None:
    """Every number of the profile finite (cheap for the number lists)."""
    for key, v in profile.items():
        t = type(v)
        if t is float or t is int:
            if not (-MAX_FLOAT <= v <= MAX_FLOAT):
                check_finite({key: v}, loc)
        elif t is list:
            if not all_finite_numbers(v):
                check_finite({key: v}, loc)
        elif t is dict:
            check_finite({key: v}, loc)


def _nonneg_number(p: dict, key: str, loc: str):
    v = _need(p, key, loc)
    if not is_number(v):
        raise _field(loc, key, f"not a number: {v!r}")
    if v < 0:
        raise _field(loc, key, f"must be >= 0, got {v!r}")
    return v


def _string(p: dict, key: str, loc: str) -> str:
    v = _need(p, key, loc)
    if type(v) is not str:
        raise _field(loc, key, f"not a string: {v!r}")
    return v


def _num_list(p: dict, key: str, loc: str) -> list:
    v = _need(p, key, loc)
    if type(v) is not list:
        raise _field(loc, key, f"not a list: {v!r}")
    if not _nums_ok(v):
        for i, x in enumerate(v):
            if not is_number(x):
                raise _field(loc, f"{key}/{i}", f"not a number: {x!r}")
            if x < 0:
                raise _field(loc, f"{key}/{i}", f"must be >= 0, got {x!r}")
    return v


def _check_delay(p: dict, loc: str) -> None:
    d = _need(p, "delay", loc)
    if not is_number(d):
        raise _field(loc, "delay", f"not a number: {d!r}")
    if not d > 0:
        raise _field(loc, "delay", f"must be > 0 (Batsim 4.2.1 refuses a non-strictly-positive delay), got {d!r}")
    check_time(d, loc, "delay")


def _check_parallel(p: dict, loc: str) -> None:
    cpu = _num_list(p, "cpu", loc)
    if not cpu:
        raise _field(loc, "cpu", "empty list (one amount per executor is needed)")
    com = _num_list(p, "com", loc)
    n = len(cpu)
    if len(com) != n * n:
        raise _field(loc, "com", f"{len(com)} values, expected {n}^2 = {n * n} ('cpu' has {n})")


def _check_homogeneous(p: dict, loc: str) -> None:
    _nonneg_number(p, "cpu", loc)
    _nonneg_number(p, "com", loc)


def _check_composed(p: dict, loc: str) -> None:
    if "repeat" in p:
        r = p["repeat"]
        if not is_int(r):
            raise _field(loc, "repeat", f"not an integer: {r!r}")
        if r < 1:
            raise _field(loc, "repeat", f"must be >= 1, got {r}")
    seq = _need(p, "seq", loc)
    if type(seq) is not list:
        raise _field(loc, "seq", f"not a list: {seq!r}")
    if not seq:
        raise _field(loc, "seq", "empty list")
    for i, s in enumerate(seq):
        if type(s) is not str:
            raise _field(loc, f"seq/{i}", f"not a profile name: {s!r}")


def pfs_label_key(p: dict) -> str | None:
    """The key holding a ``parallel_homogeneous_pfs`` profile's storage label:
    ``storage``, else ``host`` (Batsim 4.2.1 reads both, ``storage`` first),
    else None (the label is ``pfs``)."""
    if "storage" in p:
        return "storage"
    if "host" in p:
        return "host"
    return None


def pfs_label(p: dict) -> str:
    """A ``parallel_homogeneous_pfs`` profile's storage label (see
    :func:`pfs_label_key`)."""
    key = pfs_label_key(p)
    return "pfs" if key is None else p[key]


def _check_pfs(p: dict, loc: str) -> None:
    if "bytes_to_read" not in p and "bytes_to_write" not in p:
        raise InputError(f"{loc}: no 'bytes_to_read' nor 'bytes_to_write' field (one of them may be "
                         "omitted, 0 then, not both)")
    for key in ("bytes_to_read", "bytes_to_write"):
        if key in p and not is_number(p[key]):
            raise _field(loc, key, f"not a number: {p[key]!r}")
    key = pfs_label_key(p)
    if key is not None and type(p[key]) is not str:
        raise _field(loc, key, f"not a string (the storage label): {p[key]!r}")


def _check_staging(p: dict, loc: str) -> None:
    _nonneg_number(p, "nb_bytes", loc)
    _string(p, "from", loc)
    _string(p, "to", loc)


#: profile type -> its check (Batsim 4.2.1 ``Profile::from_json``)
_CHECKS = {
    "delay": _check_delay,
    "parallel": _check_parallel,
    "parallel_homogeneous": _check_homogeneous,
    "parallel_homogeneous_total": _check_homogeneous,
    "composed": _check_composed,
    "parallel_homogeneous_pfs": _check_pfs,
    "data_staging": _check_staging,
}


def validate_profile(name: str, profile, where: str, profiles: dict | None = None) -> str | None:
    """Check one profile as Batsim 4.2.1's ``Profile::from_json`` does;
    ``where`` prefixes the message (file and path).

    :param profiles: the profiles a ``composed`` profile may name (not
        checked when None).
    :returns: the name of the embedded-engine extension key the profile uses
        (``generation_strategy`` set to :data:`SPREAD` in a
        ``parallel_homogeneous`` or ``parallel_homogeneous_pfs`` profile), or
        None; the caller refuses it unless ``--embedded-extensions``.
    :raises InputError: not an object, no/unknown ``type``, out-of-scope type,
        bad or missing parameter, non-integer ``ret``, ``composed`` naming a
        missing profile.
    """
    loc = f"{where}: profile '{name}'"
    if type(profile) is not dict:
        raise InputError(f"{loc}: a profile must be a JSON object")
    ptype = profile.get("type")
    if type(ptype) is not str:
        raise InputError(f"{loc}: missing or non-string field 'type'")
    check = _CHECKS.get(ptype)
    if check is None:
        if ptype in OUT_OF_SCOPE_TYPES:
            raise InputError(
                f"{loc}: profile type '{ptype}' ({OUT_OF_SCOPE_TYPES[ptype]}) is out of "
                "scope of the embedded engine; use the real Batsim"
            )
        raise InputError(
            f"{loc}: unknown profile type '{ptype}' (known: {', '.join(sorted(_CHECKS))}; Batsim 4.2.1 "
            "reads any other type as a trace replay)"
        )
    _check_finite_fields(profile, loc)
    if "ret" in profile and not is_int(profile["ret"]):
        raise _field(loc, "ret", f"not an integer (the job's return code): {profile['ret']!r}")
    check(profile, loc)
    if ptype == "composed" and profiles is not None:
        for sub in profile["seq"]:
            if sub not in profiles:
                raise InputError(f"{loc}: 'seq' names an unknown profile '{sub}'")
    if ptype in SPREADABLE and profile.get("generation_strategy") == SPREAD:
        return "generation_strategy"
    return None


def check_composed_cycles(profiles: dict, where: str) -> None:
    """Reject ``composed`` profiles that (indirectly) contain themselves
    (Batsim 4.2.1 does not check; it recurses forever when such a job runs).

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


# ---------------------------------------------------------------------- jobs
def parse_job_id(text: str) -> tuple[str, str] | None:
    """Batsim 4.2.1's ``JobIdentifier(string)``: ``"w0!12"`` ->
    ``("w0", "12")``; runs of ``!`` count as one separator (boost's
    ``token_compress_on``); None when the text is not two parts."""
    parts = _SEPARATORS.split(text)
    if len(parts) != 2:
        return None
    return parts[0], parts[1]


def job_name(raw, workload: str) -> str:
    """The job name Batsim 4.2.1 gives a job of workload *workload* whose
    ``id`` field is *raw* (``Job::from_json``): the id itself, or, when its
    text contains the workload's name, the second part of ``WORKLOAD!NAME``.

    :raises ValueError: what Batsim aborts on (a ``!`` in a name, an id
        containing the workload's name that is not ``WORKLOAD!NAME``), or an
        id naming another workload (Batsim files the job under a workload
        that does not exist, and crashes at its first use).
    """
    s = raw if type(raw) is str else str(raw)
    if workload not in s:
        if "!" in s:
            raise ValueError(f"job id '{s}' contains a '!' (Batsim 4.2.1's JobIdentifier refuses "
                             "it in a job name)")
        return s
    parts = parse_job_id(s)
    if parts is None:
        raise ValueError(f"job id '{s}' contains the workload's name '{workload}', so Batsim 4.2.1 "
                         "reads it as WORKLOAD!NAME (JobIdentifier), which it is not")
    if parts[0] != workload:
        raise ValueError(f"job id '{s}' names workload '{parts[0]}', not '{workload}'")
    return parts[1]


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
    """Cheap check of the common valid case (accepts nothing the full check
    refuses); ``False`` means: run the full check, for the precise message."""
    jid = job.get("id")
    sub = job.get("subtime")
    res = job.get("res")
    wt = job.get("walltime", 1.0)
    return (
        (type(jid) is str or (type(jid) is int and INT_MIN <= jid <= INT_MAX))
        and (type(sub) is float or type(sub) is int) and -MAX_FLOAT <= sub <= MAX_TIME
        and type(res) is int and 0 <= res <= INT_MAX
        and type(job.get("profile")) is str
        and (type(wt) is float or type(wt) is int) and (wt == NO_WALLTIME or 0 < wt <= MAX_TIME)
        and _scalars_ok(job)
    )


def _check_job_fields(job: dict, where: str, name_job: bool) -> str:
    """The full check of a job's fields (Batsim 4.2.1 ``Job::from_json``):
    ``id`` a string or an integer, ``subtime`` a number, ``walltime`` absent
    or a number, -1 or > 0, ``res`` an integer >= 0, ``profile`` a string;
    every number finite, times at most :data:`MAX_TIME`. Returns *where*
    naming the job by its id (when *name_job*)."""
    jid = _need(job, "id", where)
    if not (type(jid) is str or is_int(jid)):
        raise _field(where, "id", f"must be a string or an integer, got {jid!r}")
    if name_job:
        where = f"{where} (id '{jid}')"
    check_finite(job, where)
    sub = _need(job, "subtime", where)
    if not is_number(sub):
        raise _field(where, "subtime", f"not a number: {sub!r}")
    check_time(sub, where, "subtime")
    if "walltime" in job:
        wt = job["walltime"]
        if not is_number(wt):
            raise _field(where, "walltime", f"not a number: {wt!r}")
        if wt != NO_WALLTIME and not wt > 0:
            raise _field(where, "walltime", f"must be > 0 or -1 (none), got {wt}")
        check_time(wt, where, "walltime")
    res = _need(job, "res", where)
    if not is_int(res):
        raise _field(where, "res", f"not an integer: {res!r}")
    if res < 0:
        raise _field(where, "res", f"must be >= 0, got {res}")
    prof = _need(job, "profile", where)
    if type(prof) is not str:
        raise _field(where, "profile", f"not a string: {prof!r}")
    return where


def check_job(job, where: str, workload: str, profiles: dict, name_job: bool = True) -> str:
    """Check a job object as Batsim 4.2.1 does (``Job::from_json``,
    ``Workload::check_single_job_validity``): a workload's job, or the
    ``job`` of a REGISTER_JOB.

    :param workload: the name of the job's workload (``w0``...).
    :param profiles: that workload's profiles.
    :param name_job: add the job's id to *where* in messages (workload jobs;
        a REGISTER_JOB's *where* names the job already).
    :returns: the job's name within its workload (see :func:`job_name`).
    :raises InputError: the first violation, prefixed by *where*.
    """
    if type(job) is not dict:
        raise InputError(f"{where}: a job must be a JSON object")
    if not _fast_job_ok(job):
        where = _check_job_fields(job, where, name_job)
    elif name_job:
        where = f"{where} (id '{job['id']}')"
    try:
        name = job_name(job["id"], workload)
    except ValueError as exc:
        raise InputError(f"{where}: {exc}") from None
    prof = profiles.get(job["profile"])
    if prof is None:
        raise InputError(f"{where}: unknown profile '{job['profile']}'")
    if prof.get("type") == "parallel" and len(prof["cpu"]) != job["res"]:
        raise _field(where, "res", f"{job['res']} resources requested but profile '{job['profile']}' "
                     f"(parallel) describes {len(prof['cpu'])} executors (Batsim 4.2.1 requires equality)")
    return name


def job_walltime(value) -> float | None:
    """A valid ``walltime`` field as the engine keeps it: seconds, or
    ``None`` for no walltime."""
    return None if value is None or value == NO_WALLTIME else float(value)


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
    """One workload file: ``name`` (``w0``, ``w1``...), jobs and profiles.

    ``extensions``: ``(profile name, key)`` of the profiles that use an
    embedded-engine extension (:func:`validate_profile`)."""

    name: str
    path: str
    jobs: list[JobSpec]
    profiles: dict
    nb_res: int
    extensions: list = field(default_factory=list)


class _DuplicateKey(Exception):
    def __init__(self, key):
        super().__init__(key)
        self.key = key


def _unique_keys(pairs):
    """``json.loads`` hook: refuse a key that appears twice in one object."""
    d = dict(pairs)
    if len(d) != len(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKey(k)
            seen.add(k)
    return d


def load_workload(path: str, name: str) -> Workload:
    """Load and validate a Batsim workload JSON file (the rules of Batsim
    4.2.1's loader, see the module's docstring).

    :param path: the file.
    :param name: the workload name (``w0`` for the first ``-w``...).
    :raises InputError: missing file, invalid or too deeply nested JSON, a
        key twice in one object, missing or invalid ``nb_res``, any field
        Batsim 4.2.1 refuses, unknown or out-of-scope profile type, missing
        profile, non-finite (NaN, Infinity, 1e400) or too large times (above
        :data:`iosched.checks.MAX_TIME`), duplicate job ids; the message
        names the file, the job or profile, and the field.
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
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise InputError(f"{path}: invalid JSON: nesting too deep") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: invalid JSON: {exc}") from None
    except _DuplicateKey as exc:
        raise InputError(f"{path}: key '{exc.key}' appears twice in one JSON object (Batsim 4.2.1's "
                         "parser keeps both: a duplicate profile name aborts, a job field is read "
                         "from its first occurrence)") from None
    if type(data) is not dict:
        raise InputError(f"{path}: a workload must be a JSON object")
    nb_res = data.get("nb_res", _MISSING)
    if nb_res is _MISSING:
        raise InputError(f"{path}: no 'nb_res' field (Batsim 4.2.1 requires it: the number of "
                         "machines of the workload, an integer > 0)")
    if not is_int(nb_res) or nb_res <= 0:
        raise _field(path, "nb_res", f"must be an integer > 0, got {nb_res!r}")
    profiles = data.get("profiles", _MISSING)
    if type(profiles) is not dict:
        raise InputError(f"{path}: {'no' if profiles is _MISSING else 'non-object'} 'profiles' field "
                         "(an object: profile name -> profile)")
    jobs_json = data.get("jobs", _MISSING)
    if type(jobs_json) is not list:
        raise InputError(f"{path}: {'no' if jobs_json is _MISSING else 'non-list'} 'jobs' field "
                         "(a list of jobs)")
    extensions = []
    for pname, prof in profiles.items():
        ext = validate_profile(pname, prof, path, profiles)
        if ext is not None:
            extensions.append((pname, ext))
    check_composed_cycles(profiles, path)

    jobs: list[JobSpec] = []
    seen: set[str] = set()
    for i, job in enumerate(jobs_json):
        where = f"{path}: jobs[{i}]"
        local = check_job(job, where, name, profiles)
        if local in seen:
            raise InputError(f"{where} (id '{job['id']}'): duplicate job id '{local}'")
        seen.add(local)
        full = job_id(name, local)
        forwarded = dict(job)
        forwarded["id"] = full
        jobs.append(
            JobSpec(full, name, local, float(job["subtime"]), job["res"],
                    job["profile"], job_walltime(job.get("walltime")), forwarded)
        )
    return Workload(name, os.path.abspath(path), jobs, profiles, nb_res, extensions)

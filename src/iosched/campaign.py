"""Experiment campaigns: the cross product of platforms x workloads x schedulers x seeds.

A campaign is a YAML file (read with ``yaml.safe_load``, validated with
jsonschema against :data:`CAMPAIGN_SCHEMA`; the format is documented in
``docs/campaigns.md``)::

    name: small
    output: ../results/campaigns/small      # relative to the YAML file
    platforms:
      - {cluster: {nb_nodes: 8}}             # or a path, or {file: PATH}
    workloads:
      - {synthetic: {nb_jobs: 20}}           # seeded by the campaign seed
      - {swf: default, first: 1000, parts: {weeks: 1, count: 3}}
    schedulers: [easy, {name: fcfs, options: {}}]
    seeds: [1, 2]
    baseline: fcfs
    timeout: 600                             # s per run

Life of a campaign (:func:`run_campaign`):

1. :func:`load_campaign` validates the file; :func:`prepare_runs` writes the
   generated inputs under ``OUTPUT/inputs/`` (platform XMLs, workload JSONs,
   deterministic, written atomically) and expands the runs. A run's identity
   is a stable hash of its parameters (input contents, scheduler and options,
   seed, engine); its folder is ``OUTPUT/runs/<slug>-<hash>``.
2. ``OUTPUT/campaign.json`` (the manifest: campaign, runs and their
   parameters) is written; it is what :mod:`iosched.analysis` and
   ``iosched report`` read.
3. Runs whose folder has ``done.json`` are skipped; runs with ``failed.json``
   are skipped unless ``retry_failed``; any other folder (a run killed
   mid-way) is removed and the run executed again.
4. The runs execute on Dask (:func:`execute_run` per run): a local cluster
   bound to 127.0.0.1 whose workers are threads of this process (each run's
   work happens in its own scheduler and engine processes), or an existing
   distributed scheduler (``cluster=ADDRESS``; the output folder must then be
   on a file system shared with the workers).
5. A run folder holds ``run.json`` (parameters, inputs with sha256, seed,
   versions), ``command.json`` and ``robin.yaml`` (from
   :func:`iosched.runner.run_simulation`: exact command lines; the robin file
   replays the run with the embedded engine), ``robin-batsim.yaml`` (the same
   run with the real ``batsim`` command, outputs under ``replay/``), the
   engine's ``out_*.csv``, ``metrics.json``, and last ``done.json`` (written
   atomically) or ``failed.json`` (the one-line reason).

Interruption: SIGINT / SIGTERM on the campaign kills the scheduler and
engine processes of the running runs (they are children of this process),
leaves those runs without a marker (they run again on the next invocation),
closes the Dask cluster and exits with 128 + signal number.

Refreshing the metrics (:func:`refresh_metrics`, ``iosched campaign FILE
--refresh-metrics``): the metrics of every finished run are recomputed from
the run's own ``out_*.csv`` with the current :mod:`iosched.metrics` code,
through the same function as a fresh run (:func:`run_metrics`, same
nb_resources and tau), and ``metrics.json`` and ``done.json`` are rewritten
atomically; nothing is simulated, no Dask cluster is started.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib.metadata
import itertools
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import jsonschema
import psutil

from iosched.clicommon import OneLineErrorCommand
from iosched.errors import InputError
from iosched.errors import one_line as _one_line
from iosched.runner import load_yaml_mapping

__all__ = [
    "CAMPAIGN_SCHEMA",
    "Campaign",
    "CampaignResult",
    "load_campaign",
    "prepare_runs",
    "execute_run",
    "run_status",
    "run_campaign",
    "run_metrics",
    "refresh_metrics",
    "RefreshResult",
    "synthetic_workload",
    "split_parts",
    "campaign_command",
    "MANIFEST",
]

#: File name of a campaign's manifest in its output folder.
MANIFEST = "campaign.json"
#: Marker of a finished run (written last, atomically).
DONE = "done.json"
#: Marker of a failed run (holds the one-line reason).
FAILED = "failed.json"
#: Metrics of a finished run (also in done.json).
METRICS = "metrics.json"
#: Export prefix of the engine's outputs in a run folder (``out_jobs.csv`` ...).
OUT_PREFIX = "out"

_SECONDS_PER = {"seconds": 1.0, "hours": 3600.0, "days": 86400.0, "weeks": 604800.0}

_LABEL = {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._+-]*$", "maxLength": 64}
_QUANTITY = {"type": ["number", "string"]}

#: JSON schema of a campaign file (after ``yaml.safe_load``).
CAMPAIGN_SCHEMA: dict = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "platforms", "workloads", "schedulers"],
    "properties": {
        "name": _LABEL,
        "output": {"type": "string", "minLength": 1},
        "platforms": {"type": "array", "minItems": 1, "items": {"oneOf": [
            {"type": "string", "minLength": 1},
            {"type": "object", "additionalProperties": False, "required": ["file"],
             "properties": {"file": {"type": "string", "minLength": 1}, "label": _LABEL}},
            {"type": "object", "additionalProperties": False, "required": ["cluster"],
             "properties": {"label": _LABEL, "cluster": {
                 "type": "object", "additionalProperties": False, "required": ["nb_nodes"],
                 "properties": {
                     "nb_nodes": {"type": "integer", "minimum": 1},
                     "speed": _QUANTITY, "bw": _QUANTITY, "lat": _QUANTITY,
                     "bb_bw": _QUANTITY, "bb_lat": _QUANTITY,
                     "pfs": {"type": "object", "additionalProperties": False,
                             "required": ["bw", "lat"],
                             "properties": {"bw": _QUANTITY, "lat": _QUANTITY}},
                 }}}},
            {"type": "object", "additionalProperties": False, "required": ["dragonfly96"],
             "properties": {"label": _LABEL, "dragonfly96": {
                 "type": ["object", "null"], "additionalProperties": False,
                 "properties": {"routing": {"type": "string"}}}}},
        ]}},
        "workloads": {"type": "array", "minItems": 1, "items": {"oneOf": [
            {"type": "string", "minLength": 1},
            {"type": "object", "additionalProperties": False, "required": ["file"],
             "properties": {"file": {"type": "string", "minLength": 1}, "label": _LABEL}},
            {"type": "object", "additionalProperties": False, "required": ["swf"],
             "properties": {
                 "swf": {"type": "string", "minLength": 1},
                 "label": _LABEL,
                 "first": {"type": "integer", "minimum": 1},
                 "start": {"type": "number"},
                 "end": {"type": "number"},
                 "profile_type": {"enum": ["delay", "parallel_homogeneous"]},
                 "parts": {"type": "object", "additionalProperties": False,
                           "minProperties": 1,
                           "properties": {
                               "weeks": {"type": "number", "exclusiveMinimum": 0},
                               "days": {"type": "number", "exclusiveMinimum": 0},
                               "hours": {"type": "number", "exclusiveMinimum": 0},
                               "seconds": {"type": "number", "exclusiveMinimum": 0},
                               "count": {"type": "integer", "minimum": 1},
                           }},
             }},
            {"type": "object", "additionalProperties": False, "required": ["python"],
             "properties": {"label": _LABEL,
                            "python": {"type": "string", "pattern": r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$"},
                            "args": {"type": "object"}}},
            {"type": "object", "additionalProperties": False, "required": ["synthetic"],
             "properties": {"label": _LABEL, "synthetic": {
                 "type": "object", "additionalProperties": False, "required": ["nb_jobs"],
                 "properties": {
                     "nb_jobs": {"type": "integer", "minimum": 1},
                     "max_res": {"type": "integer", "minimum": 1},
                     "runtime": {"type": "array", "minItems": 2, "maxItems": 2,
                                 "items": {"type": "number", "exclusiveMinimum": 0}},
                     "interarrival": {"type": "number", "minimum": 0},
                     "walltime_factor": {"type": "number", "minimum": 1},
                 }}}},
        ]}},
        "schedulers": {"type": "array", "minItems": 1, "items": {"oneOf": [
            {"type": "string", "minLength": 1},
            {"type": "object", "additionalProperties": False, "required": ["name"],
             "properties": {"name": {"type": "string", "minLength": 1},
                            "label": _LABEL,
                            "options": {"type": "object"},
                            "seed_option": {"type": "string", "minLength": 1}}},
        ]}},
        "seeds": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}},
        "baseline": {"type": "string"},
        "timeout": {"type": "number", "exclusiveMinimum": 0},
        "engine": {"type": "string", "minLength": 1},
        "engine_args": {"type": "array", "items": {"type": "string"}},
        "tau": {"type": "number", "exclusiveMinimum": 0},
    },
}


# --------------------------------------------------------------------------
# small helpers


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _short_hash(obj: Any, n: int = 10) -> str:
    return hashlib.sha256(_canonical(obj).encode("utf-8")).hexdigest()[:n]


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _slug(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._+-]+", "-", str(text)).strip("-.")
    return s[:48] or "x"


def _write_atomic(path: Path, text: str) -> None:
    """Write *text* to *path* through a temporary file and ``os.replace``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _json_text(data: Any) -> str:
    """Keys sorted, indent 2, no NaN, a final newline (as metrics.json)."""
    return json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"


def _write_json(path: Path, data: Any) -> None:
    _write_atomic(path, _json_text(data))


def _write_if_changed(path: Path, text: str) -> bool:
    """Write *text* to *path* atomically unless it already holds it; True if written."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except (OSError, UnicodeDecodeError):
        pass
    _write_atomic(path, text)
    return True


def _schema_path(error: jsonschema.ValidationError) -> str:
    parts = []
    for p in error.absolute_path:
        parts.append(f"[{p}]" if isinstance(p, int) else (f".{p}" if parts else str(p)))
    return "".join(parts) or "(top level)"


def _schema_message(error: jsonschema.ValidationError) -> str:
    """One-line, user-oriented text of a jsonschema error (the deepest useful one)."""
    # oneOf: report the branch that matched the entry's kind (its distinguishing key)
    if error.validator == "oneOf" and isinstance(error.instance, dict):
        keys = set(error.instance)
        for sub in error.context:
            branch = sub.schema_path[0] if sub.schema_path else None
            schema = error.validator_value[branch] if isinstance(branch, int) else None
            if schema and schema.get("required") and set(schema["required"]) <= keys:
                return _schema_message(_best(sub, error.context, branch))
        kinds = [s["required"][0] for s in error.validator_value if "required" in s]
        return (f"field {_schema_path(error)}: expected a string or a mapping with one of "
                f"the keys {', '.join(kinds)}, got keys {', '.join(sorted(map(str, keys))) or 'none'}")
    where = _schema_path(error)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        return (f"field {where}: unknown field(s) {', '.join(map(repr, extra))} "
                f"(allowed: {', '.join(allowed)})")
    if error.validator == "required":
        return f"field {where}: {error.message}"
    if error.validator == "pattern":
        return f"field {where}: {error.instance!r} is not a valid label (letters, digits, . _ + -)"
    return f"field {where}: {_one_line(error.message)}"


def _best(first, context, branch):
    """Deepest error of one oneOf branch."""
    errors = [e for e in context if e.schema_path and e.schema_path[0] == branch]
    return max(errors, key=lambda e: len(e.absolute_path)) if errors else first


# --------------------------------------------------------------------------
# campaign file


@dataclass
class Campaign:
    """A validated campaign file.

    ``path``: the YAML file; ``base_dir``: its folder (relative paths of the
    file are relative to it); ``output``: absolute output folder; ``platforms``,
    ``workloads``, ``schedulers``: normalised entries (dicts, see
    :data:`CAMPAIGN_SCHEMA`); ``seeds``: list of ints; ``baseline``: a
    scheduler label or None; ``timeout``: s per run (None: the runner's
    default of one week); ``engine``: "embedded", "batsim" or a command;
    ``tau``: bounded-slowdown threshold in s; ``engine_args``: extra engine
    arguments of every run (e.g. ``--enable-dynamic-jobs``); ``raw``: the
    file's mapping.
    """

    path: Path
    base_dir: Path
    name: str
    output: Path
    platforms: list
    workloads: list
    schedulers: list
    seeds: list
    baseline: str | None
    timeout: float | None
    engine: str
    tau: float
    raw: dict = field(repr=False, default_factory=dict)
    engine_args: list = field(default_factory=list)


def load_campaign(path, output=None) -> Campaign:
    """Read and validate a campaign YAML file.

    :param path: the file; relative paths inside it are relative to its folder.
    :param output: overrides the file's ``output`` (default when neither is
        given: ``results/campaigns/<name>`` under the current directory).
    :returns: a :class:`Campaign`.
    :raises InputError: unreadable file, invalid YAML, schema violation
        (unknown or missing field, wrong type: the message names the file and
        the field), duplicate labels, a baseline that is not a scheduler label,
        a missing input file.
    """
    p, data = load_yaml_mapping(path, "campaign file",
                                "the fields name, platforms, workloads, schedulers")
    validator = jsonschema.Draft202012Validator(CAMPAIGN_SCHEMA)
    errors = sorted(validator.iter_errors(data), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    if errors:
        raise InputError(f"{p}: {_schema_message(errors[0])}")
    base = p.resolve().parent

    def rel(value: str) -> Path:
        q = Path(value).expanduser()
        return q if q.is_absolute() else base / q

    def file_entry(e: dict, where: str) -> None:  # resolve e["file"], default label
        f = rel(e["file"])
        if not f.is_file():
            raise InputError(f"{p}: field {where}.file: file not found: {e['file']}")
        e["file"] = str(f)
        e.setdefault("label", _slug(f.stem))

    platforms = []
    for i, entry in enumerate(data["platforms"]):
        e = {"file": entry} if isinstance(entry, str) else dict(entry)
        if "file" in e:
            file_entry(e, f"platforms[{i}]")
        elif "cluster" in e:
            e.setdefault("label", f"cluster{e['cluster']['nb_nodes']}")
        else:
            e["dragonfly96"] = dict(e["dragonfly96"] or {})
            e.setdefault("label", "dragonfly96")
        platforms.append(e)
    workloads = []
    for i, entry in enumerate(data["workloads"]):
        e = {"file": entry} if isinstance(entry, str) else dict(entry)
        if "file" in e:
            file_entry(e, f"workloads[{i}]")
        elif "python" in e:
            e["args"] = dict(e.get("args") or {})
            e.setdefault("label", _slug(e["python"].rsplit(":", 1)[1]))
        elif "swf" in e:
            if e["swf"] != "default":
                f = rel(e["swf"])
                if not f.is_file():
                    raise InputError(f"{p}: field workloads[{i}].swf: file not found: {e['swf']}")
                e["swf"] = str(f)
            e.setdefault("label", "kth" if e["swf"] == "default" else _slug(Path(e["swf"]).stem))
            parts = e.get("parts")
            if parts is not None and len([k for k in parts if k in _SECONDS_PER]) != 1:
                raise InputError(f"{p}: field workloads[{i}].parts: give exactly one of "
                                 f"{', '.join(_SECONDS_PER)} (and optionally count)")
            if "start" in e and "end" in e and not e["start"] < e["end"]:
                raise InputError(f"{p}: field workloads[{i}].end: must be after start")
        else:
            syn = e["synthetic"]
            if "runtime" in syn and not syn["runtime"][0] <= syn["runtime"][1]:
                raise InputError(f"{p}: field workloads[{i}].synthetic.runtime: expected [min, max] "
                                 f"with min <= max")
            e.setdefault("label", f"synthetic{syn['nb_jobs']}")
        workloads.append(e)
    schedulers = []
    for i, entry in enumerate(data["schedulers"]):
        e = {"name": entry} if isinstance(entry, str) else dict(entry)
        e["options"] = dict(e.get("options") or {})
        name = e["name"]
        if name.endswith(".py") or os.sep in name:
            f = rel(name)
            if not f.is_file():
                raise InputError(f"{p}: field schedulers[{i}].name: scheduler file not found: {name}")
            e["name"] = str(f)
            e.setdefault("label", _slug(f.stem))
        else:
            e.setdefault("label", _slug(name))
        schedulers.append(e)
    for what, items in (("platforms", platforms), ("workloads", workloads),
                        ("schedulers", schedulers)):
        seen: dict[str, int] = {}
        for i, e in enumerate(items):
            if e["label"] in seen:
                raise InputError(f"{p}: field {what}[{i}].label: {e['label']!r} is already the label "
                                 f"of {what}[{seen[e['label']]}] (give a distinct 'label')")
            seen[e["label"]] = i
    seeds = list(data.get("seeds", [0]))
    if len(set(seeds)) != len(seeds):
        raise InputError(f"{p}: field seeds: duplicate seed")
    baseline = data.get("baseline")
    labels = [s["label"] for s in schedulers]
    if baseline is not None and baseline not in labels:
        raise InputError(f"{p}: field baseline: {baseline!r} is not a scheduler label "
                         f"({', '.join(labels)})")
    if output is not None:
        out = Path(os.fspath(output)).expanduser().resolve()
    elif "output" in data:
        out = rel(data["output"]).resolve()
    else:
        out = (Path.cwd() / "results" / "campaigns" / data["name"]).resolve()
    return Campaign(
        path=p.resolve(), base_dir=base, name=data["name"], output=out,
        platforms=platforms, workloads=workloads, schedulers=schedulers, seeds=seeds,
        baseline=baseline, timeout=float(data["timeout"]) if "timeout" in data else None,
        engine=data.get("engine", "embedded"), tau=float(data.get("tau", 600.0)), raw=data,
        engine_args=list(data.get("engine_args", [])),
    )


# --------------------------------------------------------------------------
# input generators


def synthetic_workload(nb_jobs: int, nb_res: int, seed: int, max_res: int | None = None,
                       runtime=(10.0, 600.0), interarrival: float = 30.0,
                       walltime_factor: float = 1.5) -> dict:
    """A random Batsim workload of ``delay`` jobs, fully determined by its arguments.

    Inter-arrival times are exponential with mean *interarrival* (s; 0: every
    job at t = 0), job sizes uniform in [1, min(max_res, nb_res)], run times
    uniform in [runtime[0], runtime[1]] (s, rounded to 0.1 s), walltimes =
    run time x *walltime_factor* (s, rounded to 0.1 s, >= the run time).
    Uses Python's ``random.Random(seed)`` (stable across versions).

    :returns: a workload dict (``nb_res``, ``jobs``, ``profiles``) for
        :func:`iosched.workloads.convert.dump_workload`.
    :raises InputError: a non-positive count or size, bad run-time range.
    """
    if nb_jobs < 1 or nb_res < 1:
        raise InputError(f"synthetic: nb_jobs and nb_res must be >= 1, got {nb_jobs}, {nb_res}")
    lo, hi = float(runtime[0]), float(runtime[1])
    if not 0 < lo <= hi:
        raise InputError(f"synthetic: runtime must be [min, max] with 0 < min <= max, got {runtime}")
    top = min(nb_res, max_res or nb_res)
    rng = random.Random(seed)
    t = 0.0
    jobs, profiles = [], {}
    for i in range(nb_jobs):
        if i and interarrival > 0:
            t += rng.expovariate(1.0 / interarrival)
        run = max(0.1, round(rng.uniform(lo, hi), 1))
        res = rng.randint(1, top)
        name = f"delay_{run:g}"
        profiles[name] = {"type": "delay", "delay": run}
        jobs.append({"id": i, "subtime": round(t, 3), "res": res, "profile": name,
                     "walltime": max(run, round(run * walltime_factor, 1))})
    return {"nb_res": nb_res, "jobs": jobs, "profiles": profiles}


def split_parts(workload: dict, length: float, count: int | None = None) -> list[tuple[int, dict]]:
    """Cut a workload into consecutive time windows of *length* s.

    Window k holds the jobs with ``k*length <= subtime < (k+1)*length``
    (subtimes measured from the workload's first submission); their subtimes
    are shifted by -k*length and only the profiles they use are kept. Empty
    windows are skipped; *count* keeps the first *count* non-empty windows.

    :returns: list of (window index k, workload dict).
    :raises InputError: non-positive *length*.
    """
    if not (isinstance(length, (int, float)) and math.isfinite(length) and length > 0):
        raise InputError(f"parts: window length must be > 0 s, got {length!r}")
    jobs = workload["jobs"]
    if not jobs:
        return []
    t0 = min(float(j["subtime"]) for j in jobs)
    buckets: dict[int, list] = {}
    for j in jobs:
        k = int((float(j["subtime"]) - t0) // length)
        buckets.setdefault(k, []).append(j)
    out = []
    for k in sorted(buckets):
        if count is not None and len(out) >= count:
            break
        part_jobs = []
        for j in buckets[k]:
            jj = dict(j)
            jj["subtime"] = round(float(j["subtime"]) - t0 - k * length, 6)
            part_jobs.append(jj)
        used = {j["profile"] for j in part_jobs}
        profiles = {n: p for n, p in workload["profiles"].items() if n in used}
        out.append((k, {**{kk: v for kk, v in workload.items() if kk not in ("jobs", "profiles")},
                        "jobs": part_jobs, "profiles": profiles}))
    return out


def _platform_input(campaign: Campaign, entry: dict, inputs: Path) -> dict:
    """Materialise a platform entry; returns {label, identity, path, nb_res}."""
    from iosched.engine.platform import count_compute_hosts
    from iosched import platforms as plat

    label = entry["label"]
    if "file" in entry:
        path = Path(entry["file"])
        identity = {"file": path.name, "sha256": _sha256_file(path)}
    else:
        if "cluster" in entry:
            args = dict(entry["cluster"])
            text = plat.cluster_xml(**args)
            identity = {"cluster": args}
        else:
            args = dict(entry["dragonfly96"])
            text = plat.dragonfly96_xml(**args)
            identity = {"dragonfly96": args}
        d = inputs / "platforms"
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{label}-{_short_hash(identity)}.xml"
        _write_if_changed(path, text)
        identity = {**identity, "sha256": _sha256_file(path)}
    if campaign.engine_args:  # -r roles, -m, --mmax change the compute hosts
        from iosched.metrics import compute_hosts_of_argv

        nb_res = compute_hosts_of_argv(["-p", str(path), *campaign.engine_args])
        if nb_res is None:
            raise InputError(f"{campaign.path}: platform {label!r} with engine_args "
                             f"{campaign.engine_args}: no compute host, or a bad -r, -m or --mmax")
    else:
        try:
            nb_res = count_compute_hosts(str(path))
        except InputError as e:
            raise InputError(f"{campaign.path}: platform {label!r}: {_one_line(e)}") from None
    return {"label": label, "identity": identity, "path": str(path), "nb_res": nb_res}


def _workload_inputs(campaign: Campaign, entry: dict, platform: dict, seed: int,
                     inputs: Path) -> list[dict]:
    """Materialise a workload entry for one platform and seed.

    Returns a list of {label, part, identity, path, seeded}.
    """
    from iosched.workloads.convert import dump_workload, swf_to_batsim

    label = entry["label"]
    d = inputs / "workloads"
    d.mkdir(parents=True, exist_ok=True)
    if "file" in entry:
        path = Path(entry["file"])
        return [{"label": label, "part": None, "seeded": False, "path": str(path),
                 "identity": {"file": path.name, "sha256": _sha256_file(path)}}]
    if "python" in entry:
        return _python_workload(campaign, entry, seed, d)
    if "synthetic" in entry:
        syn = dict(entry["synthetic"])
        identity = {"synthetic": syn, "nb_res": platform["nb_res"], "seed": seed}
        path = d / f"{label}-s{seed}-{_short_hash(identity)}.json"
        if not path.is_file():
            w = synthetic_workload(syn["nb_jobs"], platform["nb_res"], seed,
                                   max_res=syn.get("max_res"),
                                   runtime=tuple(syn.get("runtime", (10.0, 600.0))),
                                   interarrival=float(syn.get("interarrival", 30.0)),
                                   walltime_factor=float(syn.get("walltime_factor", 1.5)))
            _write_if_changed(path, dump_workload(w))
        return [{"label": label, "part": None, "seeded": True, "path": str(path),
                 "identity": {**identity, "sha256": _sha256_file(path)}}]
    # SWF trace
    if entry["swf"] == "default":
        from iosched.workloads.default_swf import find_default_swf

        try:
            swf = find_default_swf()
        except InputError as e:
            raise InputError(f"{campaign.path}: workload {label!r}: {_one_line(e)}") from None
    else:
        swf = Path(entry["swf"])
    opts = {k: entry[k] for k in ("first", "start", "end", "profile_type") if k in entry}
    parts = entry.get("parts")
    identity = {"swf": swf.name, "swf_sha256": _sha256_file(swf), "nb_res": platform["nb_res"],
                **opts, "parts": parts}
    key = f"{label}-{_short_hash(identity)}"
    index = d / f"{key}.parts.json"
    if index.is_file():
        listed = json.loads(index.read_text(encoding="utf-8"))
        if all((d / item["file"]).is_file() for item in listed):
            return [{"label": label, "part": item["part"], "seeded": False,
                     "path": str(d / item["file"]),
                     "identity": {**identity, "part": item["part"], "sha256": item["sha256"]}}
                    for item in listed]
    try:
        w, _report = swf_to_batsim(swf, nb_res=platform["nb_res"], **opts)
    except InputError as e:
        raise InputError(f"{campaign.path}: workload {label!r}: {_one_line(e)}") from None
    if parts is None:
        pieces = [(None, w)]
    else:
        unit = next(k for k in parts if k in _SECONDS_PER)
        pieces = split_parts(w, float(parts[unit]) * _SECONDS_PER[unit], parts.get("count"))
    if not pieces or not any(piece["jobs"] for _, piece in pieces):
        raise InputError(f"{campaign.path}: workload {label!r}: no job left after selection")
    listed = []
    for part, piece in pieces:
        name = f"{key}.json" if part is None else f"{key}-p{part}.json"
        _write_if_changed(d / name, dump_workload(piece))
        listed.append({"part": part, "file": name, "sha256": _sha256_file(d / name)})
    _write_if_changed(index, json.dumps(listed, indent=2, sort_keys=True) + "\n")
    return [{"label": label, "part": item["part"], "seeded": False, "path": str(d / item["file"]),
             "identity": {**identity, "part": item["part"], "sha256": item["sha256"]}}
            for item in listed]


def _python_workload(campaign: Campaign, entry: dict, seed: int, d: Path) -> list[dict]:
    """Workload entry ``{python: "module:function", args: {...}}``: calls
    ``function(seed=seed, **args)``, which returns one workload dict or a list
    of them (parts ``0..k-1``). The function must be deterministic in its
    arguments; the files are written once per (function, args, seed).

    :raises InputError: the function cannot be imported, raises InputError /
        OSError, or returns something else than dicts with ``jobs``.
    """
    import importlib

    from iosched.workloads.convert import dump_workload

    label = entry["label"]
    modname, fname = entry["python"].rsplit(":", 1)
    identity = {"python": entry["python"], "args": entry["args"], "seed": seed}
    key = f"{label}-s{seed}-{_short_hash(identity)}"
    index = d / f"{key}.parts.json"
    listed = None
    if index.is_file():
        listed = json.loads(index.read_text(encoding="utf-8"))
        if not all((d / item["file"]).is_file() for item in listed):
            listed = None
    if listed is None:
        try:
            fn = getattr(importlib.import_module(modname), fname)
            got = fn(seed=seed, **entry["args"])
        except (ImportError, AttributeError) as e:
            raise InputError(f"{campaign.path}: workload {label!r}: cannot import "
                             f"{entry['python']}: {_one_line(e)}") from None
        except (InputError, OSError, TypeError) as e:
            raise InputError(f"{campaign.path}: workload {label!r}: {_one_line(e)}") from None
        single = isinstance(got, dict)
        pieces = [got] if single else list(got)
        if not pieces or not all(isinstance(w, dict) and "jobs" in w for w in pieces):
            raise InputError(f"{campaign.path}: workload {label!r}: {entry['python']} must return "
                             "a workload dict or a list of them")
        listed = []
        for k, w in enumerate(pieces):
            part = None if single else k
            name = f"{key}.json" if single else f"{key}-p{k}.json"
            _write_if_changed(d / name, dump_workload(w))
            listed.append({"part": part, "file": name, "sha256": _sha256_file(d / name)})
        _write_if_changed(index, json.dumps(listed, indent=2, sort_keys=True) + "\n")
    return [{"label": label, "part": item["part"], "seeded": True, "path": str(d / item["file"]),
             "identity": {**identity, "part": item["part"], "sha256": item["sha256"]}}
            for item in listed]


def _scheduler_identity(entry: dict) -> dict:
    name = entry["name"]
    if os.path.isfile(name) and (name.endswith(".py") or os.sep in name):
        return {"file": Path(name).name, "sha256": _sha256_file(Path(name)),
                "options": entry["options"]}
    return {"name": name, "options": entry["options"]}


def prepare_runs(campaign: Campaign) -> list[dict]:
    """Write the campaign's generated inputs and list its runs.

    Generated platforms and workloads go to ``OUTPUT/inputs/`` (same
    parameters -> same file names and bytes; existing identical files are not
    rewritten). The runs are the cross product platforms x workloads (x parts)
    x schedulers x seeds, in that nesting order.

    :returns: a list of run specs (JSON-ready dicts) with keys ``id`` (slug +
        hash of the identity), ``dir`` (absolute), ``params`` (platform,
        workload, part, scheduler, options, seed, engine), ``identity``,
        ``platform`` / ``workload`` (input paths), ``nb_res``, ``scheduler``
        (name or file), ``options`` (merged with ``seed_option``),
        ``engine``, ``timeout`` (s or None), ``tau`` (s).
    :raises InputError: a generator failed (names the campaign file and the
        entry), or two runs would share an identity.
    """
    inputs = campaign.output / "inputs"
    runs_dir = campaign.output / "runs"
    try:
        inputs.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{campaign.path}: output {campaign.output}: cannot create: "
                         f"{e.strerror or e}") from None
    runs = []
    seen: set[str] = set()
    for pentry in campaign.platforms:
        plat = _platform_input(campaign, pentry, inputs)
        for wentry, seed in itertools.product(campaign.workloads, campaign.seeds):
            for wl in _workload_inputs(campaign, wentry, plat, seed, inputs):
                for sentry in campaign.schedulers:
                    options = dict(sentry["options"])
                    if "seed_option" in sentry:
                        options[sentry["seed_option"]] = seed
                    identity = {"platform": plat["identity"], "workload": wl["identity"],
                                "scheduler": _scheduler_identity(sentry), "options": options,
                                "seed": seed, "engine": campaign.engine}
                    if campaign.engine_args:  # absent when empty: older run ids unchanged
                        identity["engine_args"] = list(campaign.engine_args)
                    part = "" if wl["part"] is None else f"-p{wl['part']}"
                    slug = f"{plat['label']}__{wl['label']}{part}__{sentry['label']}__s{seed}"
                    rid = f"{_slug(slug)}-{_short_hash(identity)}"
                    if rid in seen:
                        raise InputError(f"{campaign.path}: two runs have the same parameters ({slug})")
                    seen.add(rid)
                    runs.append({
                        "id": rid,
                        "dir": str(runs_dir / rid),
                        "params": {"platform": plat["label"], "workload": wl["label"],
                                   "part": wl["part"], "scheduler": sentry["label"],
                                   "options": options, "seed": seed, "engine": campaign.engine,
                                   "nb_res": plat["nb_res"]},
                        "identity": identity,
                        "platform": plat["path"],
                        "workload": wl["path"],
                        "nb_res": plat["nb_res"],
                        "scheduler": sentry["name"],
                        "options": options,
                        "engine": campaign.engine,
                        "timeout": campaign.timeout,
                        "tau": campaign.tau,
                        "engine_args": list(campaign.engine_args),
                    })
    return runs


def write_manifest(campaign: Campaign, runs: list[dict]) -> Path:
    """Write ``OUTPUT/campaign.json``: the campaign and its runs (paths relative
    to OUTPUT), deterministic (sorted keys). Returns its path."""
    out = campaign.output

    def relp(p: str) -> str:
        try:
            return os.path.relpath(p, out)
        except ValueError:
            return p

    manifest = {
        "name": campaign.name,
        "campaign_file": str(campaign.path),
        "baseline": campaign.baseline,
        "engine": campaign.engine,
        "timeout_s": campaign.timeout,
        "tau_s": campaign.tau,
        "seeds": campaign.seeds,
        "platforms": [p["label"] for p in campaign.platforms],
        "workloads": [w["label"] for w in campaign.workloads],
        "schedulers": [s["label"] for s in campaign.schedulers],
        "spec": campaign.raw,
        "runs": [{"id": r["id"], "dir": relp(r["dir"]), "params": r["params"],
                  "identity": r["identity"], "platform": relp(r["platform"]),
                  "workload": relp(r["workload"])} for r in runs],
    }
    path = out / MANIFEST
    _write_if_changed(path, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return path


# --------------------------------------------------------------------------
# one run (executed by a Dask worker)

#: Set when the campaign is being interrupted: runs failing from then on are
#: left without a marker (they were killed, they will run again).
_STOP = threading.Event()


@functools.lru_cache(maxsize=1)
def versions() -> dict:
    """Versions of the software a run depends on (strings; "unknown" if not found)."""
    out = {"python": sys.version.split()[0]}
    for dist in ("iosched", "pybatsim", "pyzmq", "dask", "distributed", "pandas", "numpy"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "unknown"
    try:
        r = subprocess.run([sys.executable, "-m", "iosched.engine.cli", "--simgrid-version"],
                           capture_output=True, text=True, timeout=60)
        out["simgrid"] = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() \
            else "unknown"
    except (OSError, subprocess.SubprocessError):
        out["simgrid"] = "unknown"
    try:
        from iosched.engine.output import BATSIM_VERSION

        out["batsim_protocol"] = BATSIM_VERSION
    except ImportError:  # pragma: no cover
        out["batsim_protocol"] = "unknown"
    return out


def run_status(run_dir) -> str:
    """State of a run folder: ``"done"`` (valid done.json), ``"failed"``
    (failed.json), ``"partial"`` (folder without a marker: killed mid-way) or
    ``"pending"`` (no folder)."""
    d = Path(run_dir)
    try:
        json.loads((d / DONE).read_text(encoding="utf-8"))
        return "done"
    except (OSError, ValueError):
        pass
    if (d / FAILED).is_file():
        return "failed"
    return "partial" if d.exists() else "pending"


def run_metrics(run_dir, nb_res: int, tau: float) -> dict:
    """Metrics of a campaign run folder, from its engine outputs.

    The one definition of a run's metrics, shared by :func:`execute_run`
    (fresh runs) and :func:`refresh_metrics`: :func:`iosched.metrics.load_jobs`
    of ``RUN_DIR/out_jobs.csv`` (burst-buffer runs merged into their jobs),
    then :func:`iosched.metrics.compute_metrics` with ``nb_resources=nb_res``
    (the platform's compute hosts) and ``tau``, rounded as
    :func:`iosched.metrics.write_metrics` rounds (6 decimals, non-finite as
    None). Reads only; see :func:`_save_run_metrics`.

    :returns: the metrics dict (JSON-ready).
    :raises InputError: missing or unreadable outputs (the message names the file).
    """
    from iosched.analysis.metrics_file import dir_metrics

    return dir_metrics(run_dir, OUT_PREFIX, nb_resources=nb_res, tau=tau)


def _save_run_metrics(run_dir: Path, metrics: dict) -> bool:
    """Write ``RUN_DIR/metrics.json`` atomically (only if it changes); True if written.

    :raises InputError: the file cannot be written.
    """
    target = Path(run_dir) / METRICS
    try:
        from iosched.analysis.metrics_file import metrics_json

        return _write_if_changed(target, metrics_json(metrics))
    except OSError as e:
        raise InputError(f"{target}: cannot write ({e.strerror or e})") from None


def _replay_robin(run_dir: Path, command: dict, timeout: float | None) -> None:
    """Write robin-batsim.yaml: the run with the real ``batsim`` (outputs in replay/)."""
    from iosched.runner import engine_command, write_robin, DEFAULT_SIMULATION_TIMEOUT

    engine_argv = list(command["engine"]["argv"])
    prefix = engine_command("embedded")
    if engine_argv[: len(prefix)] == prefix:
        rest = engine_argv[len(prefix):]
    else:
        rest = engine_argv[1:]
    replay = run_dir / "replay"
    for i, tok in enumerate(rest[:-1]):
        if tok == "-e":
            rest[i + 1] = str(replay / "out")
    write_robin(run_dir / "robin-batsim.yaml", ["batsim", *rest], command["scheduler"]["argv"],
                replay, simulation_timeout=timeout or DEFAULT_SIMULATION_TIMEOUT,
                ready_timeout=command["timeouts_s"]["ready"],
                success_timeout=command["timeouts_s"]["success"],
                failure_timeout=command["timeouts_s"]["failure"])


def execute_run(spec: dict) -> dict:
    """Execute one run of a campaign (the Dask task).

    Removes and recreates the run folder, writes ``run.json``, runs
    :func:`iosched.runner.run_simulation`, writes ``metrics.json``
    (:func:`run_metrics`: :mod:`iosched.metrics` with the platform's
    compute-host count) and ``robin-batsim.yaml``, then ``done.json`` (atomically: the run
    is finished only once it exists). On a failure writes ``failed.json`` with
    the one-line reason, unless the campaign is being interrupted (then the
    folder is left without a marker, to be re-run).

    :param spec: one item of :func:`prepare_runs`.
    :returns: ``{"id", "status": "done"|"failed"|"interrupted", "reason",
        "wall_time_s"}``. Never raises for a failed run.
    """
    from iosched.runner import RunError, run_simulation

    d = Path(spec["dir"])
    t0 = time.monotonic()
    try:
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        _write_json(d / "run.json", {
            "id": spec["id"], "params": spec["params"], "identity": spec["identity"],
            "inputs": {"platform": spec["platform"], "workload": spec["workload"]},
            "scheduler": spec["scheduler"], "options": spec["options"],
            "seed": spec["params"]["seed"], "engine": spec["engine"],
            "timeout_s": spec["timeout"], "tau_s": spec["tau"], "versions": versions(),
        })
        run_simulation(spec["platform"], spec["workload"], spec["scheduler"], d,
                       options=spec["options"], engine_cmd=spec["engine"],
                       engine_args=spec.get("engine_args", ()),
                       timeout=spec["timeout"])
        metrics = run_metrics(d, nb_res=spec["nb_res"], tau=spec["tau"])
        _save_run_metrics(d, metrics)
        command = json.loads((d / "command.json").read_text(encoding="utf-8"))
        _replay_robin(d, command, spec["timeout"])
        wall = time.monotonic() - t0
        _write_json(d / DONE, {"id": spec["id"], "status": "done", "metrics": metrics,
                               "wall_time_s": round(wall, 3)})
        return {"id": spec["id"], "status": "done", "reason": None, "wall_time_s": wall}
    except Exception as e:  # noqa: BLE001 - every failure becomes a listed failure
        wall = time.monotonic() - t0
        if isinstance(e, (RunError, InputError)):
            reason = _one_line(e)
        else:
            reason = _one_line(f"{type(e).__name__}: {e}")
        if _STOP.is_set():
            return {"id": spec["id"], "status": "interrupted", "reason": reason, "wall_time_s": wall}
        try:
            d.mkdir(parents=True, exist_ok=True)
            _write_json(d / FAILED, {"id": spec["id"], "status": "failed", "reason": reason,
                                     "wall_time_s": round(wall, 3)})
        except OSError:
            pass
        return {"id": spec["id"], "status": "failed", "reason": reason, "wall_time_s": wall}


# --------------------------------------------------------------------------
# the campaign


@dataclass
class CampaignResult:
    """Outcome of :func:`run_campaign`.

    ``runs``: every run spec; ``skipped``: ids already done (or failed and not
    retried) before this invocation; ``executed``: ids executed now;
    ``failed``: {id: one-line reason} of every failed run (old and new);
    ``interrupted``: True if a signal stopped the campaign; ``wall_time_s``:
    duration of the execution phase (s).
    """

    output: Path
    runs: list
    skipped: list
    executed: list
    failed: dict
    interrupted: bool = False
    interrupted_signal: int | None = None
    wall_time_s: float = 0.0

    @property
    def nb_done(self) -> int:
        """Runs whose folder holds done.json."""
        return sum(1 for r in self.runs if run_status(r["dir"]) == "done")


class _Interrupted(BaseException):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _signals_raise():
    """Turn SIGTERM / SIGHUP / SIGINT into :class:`_Interrupted` in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {}

    def handler(signum, frame):
        raise _Interrupted(signum)

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        try:
            old[sig] = signal.signal(sig, handler)
        except (ValueError, OSError):  # pragma: no cover
            pass
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


def _kill_descendants(grace: float = 2.0) -> None:
    """SIGTERM then SIGKILL every descendant process of this process."""
    try:
        me = psutil.Process()
        procs = me.children(recursive=True)
    except psutil.Error:
        return
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(alive, timeout=grace)


class _Progress:
    """tqdm bar: runs done / total, with running and failed counts."""

    def __init__(self, total: int, initial: int, enabled: bool, desc: str = "campaign"):
        self.bar = None
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=initial, unit="run", desc=desc,
                            file=sys.stderr, dynamic_ncols=True, leave=True)

    def update(self, done: int = 0, running: int = 0, failed: int = 0,
               postfix: str | None = None) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(postfix if postfix is not None
                                     else f"running={running} failed={failed}", refresh=False)
            self.bar.update(done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _start_client(workers: int | None, cluster: str | None):
    """A dask.distributed Client: on *cluster* (an address) or on a new local
    cluster of *workers* thread workers of this process (in-process transport;
    the only sockets are the HTTP servers distributed always starts for its
    scheduler and workers, bound to loopback on free ports)."""
    import logging

    from distributed import Client, LocalCluster

    for name in ("distributed", "distributed.core", "distributed.worker", "distributed.scheduler",
                 "distributed.nanny", "distributed.http.proxy"):
        logging.getLogger(name).setLevel(logging.ERROR)
    if cluster:
        try:
            return Client(cluster, timeout="20s"), None
        except (OSError, TimeoutError, ValueError) as e:
            raise InputError(f"--cluster {cluster}: cannot connect: {_one_line(e)}") from None
    n = workers or os.cpu_count() or 1
    # Thread workers in this process talk over Dask's in-process transport:
    # nothing listens on any network interface.
    try:
        lc = LocalCluster(n_workers=n, threads_per_worker=1, processes=False,
                          dashboard_address="127.0.0.1:0", worker_dashboard_address="127.0.0.1:0",
                          silence_logs=logging.ERROR)
    except Exception as e:  # noqa: BLE001
        raise InputError(f"cannot start the local Dask cluster: {_one_line(e)}") from None
    return Client(lc), lc


def run_campaign(campaign: Campaign, workers: int | None = None, cluster: str | None = None,
                 retry_failed: bool = False, progress: bool = True,
                 echo=None) -> CampaignResult:
    """Run (or resume) a campaign on Dask; see the module docstring.

    :param workers: local cluster size (default: number of cores); ignored
        with *cluster*.
    :param cluster: address of an existing distributed scheduler
        (``tcp://host:8786``), or None for a local cluster.
    :param retry_failed: also re-run the runs that have ``failed.json``.
    :param progress: show a tqdm progress bar on stderr.
    :param echo: callable(str) for status lines (default: nothing).
    :returns: a :class:`CampaignResult` (failures are in it, not raised).
    :raises InputError: bad inputs (see :func:`prepare_runs`), unreachable
        cluster, bad *workers*.
    """
    echo = echo or (lambda s: None)
    if workers is not None and workers < 1:
        raise InputError(f"--workers: must be >= 1, got {workers}")
    runs = prepare_runs(campaign)
    write_manifest(campaign, runs)
    todo, skipped, failed = [], [], {}
    for r in runs:
        st = run_status(r["dir"])
        if st == "done":
            skipped.append(r["id"])
        elif st == "failed" and not retry_failed:
            skipped.append(r["id"])
            failed[r["id"]] = _failure_reason(r["dir"])
        else:
            todo.append(r)
    result = CampaignResult(output=campaign.output, runs=runs, skipped=skipped, executed=[],
                            failed=failed)
    echo(f"campaign {campaign.name}: {len(runs)} runs, {len(runs) - len(todo)} already finished "
         f"or failed, {len(todo)} to run")
    if not todo:
        return result
    _STOP.clear()
    t0 = time.monotonic()
    client = lc = None
    bar = _Progress(len(runs), len(runs) - len(todo), progress)
    bar.update(failed=len(failed))
    try:
        with _signals_raise():
            from distributed import as_completed

            client, lc = _start_client(workers, cluster)
            nthreads = max(1, sum(client.nthreads().values()))
            futures = client.map(execute_run, todo, key=[f"iosched-run-{r['id']}" for r in todo],
                                 pure=False)
            pending = len(futures)
            bar.update(running=min(nthreads, pending), failed=len(failed))
            for fut in as_completed(futures):
                try:
                    out = fut.result()
                except Exception as e:  # noqa: BLE001 - a worker died, a task was lost
                    rid = todo[futures.index(fut)]["id"]
                    out = {"id": rid, "status": "failed",
                           "reason": _one_line(f"task lost: {type(e).__name__}: {e}")}
                pending -= 1
                result.executed.append(out["id"])
                if out["status"] == "failed":
                    failed[out["id"]] = out["reason"]
                bar.update(done=1, running=min(nthreads, pending), failed=len(failed))
    except _Interrupted as e:
        result.interrupted = True
        _STOP.set()
        echo(f"campaign {campaign.name}: interrupted by signal {e.signum}, stopping the running runs")
        _kill_descendants()
        result.interrupted_signal = e.signum
    finally:
        bar.close()
        if client is not None:
            with contextlib.suppress(Exception):
                client.close(timeout=10)
        if lc is not None:
            with contextlib.suppress(Exception):
                lc.close(timeout=10)
        if result.interrupted:
            _kill_descendants()
    result.wall_time_s = time.monotonic() - t0
    return result


def _failure_reason(run_dir) -> str:
    try:
        return str(json.loads((Path(run_dir) / FAILED).read_text(encoding="utf-8"))["reason"])
    except (OSError, ValueError, KeyError, TypeError):
        return "failed (failed.json unreadable)"


# --------------------------------------------------------------------------
# refreshing the metrics of finished runs


@dataclass
class RefreshResult:
    """Outcome of :func:`refresh_metrics`.

    ``runs``: every run spec of the campaign; ``refreshed``: ids of the
    finished runs whose metrics were recomputed (and saved); ``changed``: the
    subset whose ``done.json`` or ``metrics.json`` changed; ``skipped``:
    {id: status} of the runs without ``done.json`` (``failed``, ``partial``,
    ``pending``), left alone; ``errors``: {id: one-line reason naming the
    file} of the finished runs whose outputs are missing or unreadable (their
    files are left as they were); ``interrupted_signal``: the signal that
    stopped the refresh, or None.
    """

    output: Path
    runs: list
    refreshed: list = field(default_factory=list)
    changed: list = field(default_factory=list)
    skipped: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)
    interrupted_signal: int | None = None


def _refresh_run(spec: dict) -> bool:
    """Recompute and save the metrics of one finished run; True if a file changed.

    :raises InputError: unreadable done.json, missing or unreadable outputs,
        a file that cannot be written (the message names the file).
    """
    d = Path(spec["dir"])
    done_path = d / DONE
    try:
        done = json.loads(done_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise InputError(f"{done_path}: unreadable: {getattr(e, 'strerror', None) or e}") from None
    if not isinstance(done, dict):
        raise InputError(f"{done_path}: expected a JSON object")
    try:
        metrics = run_metrics(d, nb_res=spec["nb_res"], tau=spec["tau"])
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure is one line naming the file
        jobs = d / f"{OUT_PREFIX}_jobs.csv"
        raise InputError(f"{jobs}: cannot compute the metrics: {type(e).__name__}: {e}") from None
    changed = _save_run_metrics(d, metrics)
    text = _json_text({**done, "metrics": metrics})
    try:
        changed = _write_if_changed(done_path, text) or changed
    except OSError as e:
        raise InputError(f"{done_path}: cannot write ({e.strerror or e})") from None
    return changed


def refresh_metrics(campaign: Campaign, progress: bool = False, echo=None) -> RefreshResult:
    """Recompute the metrics of the finished runs of a campaign; simulate nothing.

    For every run with ``done.json``: :func:`run_metrics` of the run folder
    (its ``out_jobs.csv``, with the current :mod:`iosched.metrics`, the
    platform's compute hosts and the campaign's ``tau``: exactly what a
    fresh run computes), then ``metrics.json`` and the ``metrics`` of
    ``done.json`` are rewritten atomically (only when they change; the other
    fields of ``done.json`` are kept). Runs without ``done.json`` are left
    alone. Runs in-process, one after the other (no Dask).

    :param campaign: the campaign; its ``output`` must hold a campaign
        (``campaign.json``).
    :param progress: show a tqdm progress bar on stderr.
    :param echo: callable(str) for status lines (default: nothing).
    :returns: a :class:`RefreshResult` (per-run errors are in it, not raised).
    :raises InputError: no campaign in the output folder; bad inputs (see
        :func:`prepare_runs`).
    """
    echo = echo or (lambda s: None)
    out = campaign.output
    if not (out / MANIFEST).is_file():
        raise InputError(f"{out}: no campaign here (no {MANIFEST}); nothing to refresh "
                         f"(run the campaign first, or give its folder with --output)")
    runs = prepare_runs(campaign)
    write_manifest(campaign, runs)
    result = RefreshResult(output=out, runs=runs)
    todo = []
    for r in runs:
        if (Path(r["dir"]) / DONE).exists():
            todo.append(r)
        else:
            result.skipped[r["id"]] = run_status(r["dir"])
    echo(f"campaign {campaign.name}: refreshing the metrics of {len(todo)} finished runs "
         f"({len(result.skipped)} without {DONE} left alone)")
    bar = _Progress(len(todo), 0, progress, desc="refresh")
    try:
        with _signals_raise():
            for r in todo:
                try:
                    if _refresh_run(r):
                        result.changed.append(r["id"])
                    result.refreshed.append(r["id"])
                except InputError as e:
                    result.errors[r["id"]] = _one_line(e)
                except Exception as e:  # noqa: BLE001 - one line per run, never a traceback
                    result.errors[r["id"]] = _one_line(f"{Path(r['dir']) / DONE}: "
                                                       f"{type(e).__name__}: {e}")
                bar.update(done=1, postfix=f"changed={len(result.changed)} "
                                           f"errors={len(result.errors)}")
    except _Interrupted as e:
        result.interrupted_signal = e.signum
    finally:
        bar.close()
    return result


def _write_campaign_table(camp: Campaign) -> None:
    """OUTPUT/runs.parquet and OUTPUT/runs.csv; exits 2 with one line on error."""
    from iosched.analysis.campaign import campaign_table, write_table

    try:
        write_table(campaign_table(camp.output), camp.output)
    except InputError as e:
        click.echo(f"Error: {_one_line(e)}", err=True)
        sys.exit(2)


def _refresh_command(camp: Campaign, progress: bool, table: bool) -> None:
    """``iosched campaign FILE --refresh-metrics``: prints, then exits."""
    try:
        res = refresh_metrics(camp, progress=progress, echo=lambda s: click.echo(s, err=True))
    except InputError as e:
        click.echo(f"Error: {_one_line(e)}", err=True)
        sys.exit(2)
    if res.interrupted_signal is not None:
        click.echo(f"campaign {camp.name}: metrics refresh interrupted; run the same command "
                   f"again", err=True)
        sys.exit(128 + int(res.interrupted_signal))
    if table:
        _write_campaign_table(camp)
    err = f", {len(res.errors)} error{'s' if len(res.errors) != 1 else ''}" if res.errors else ""
    click.echo(f"campaign {camp.name}: metrics: {len(res.refreshed)} refreshed, "
               f"{len(res.changed)} changed, {len(res.skipped)} skipped (no {DONE}){err} "
               f"-> {camp.output}")
    for rid in sorted(res.skipped):
        click.echo(f"NOT REFRESHED {rid}: {res.skipped[rid]}, no {DONE}")
    for rid in sorted(res.errors):
        click.echo(f"ERROR {rid}: {res.errors[rid]}")
    sys.exit(1 if res.errors else 0)


# --------------------------------------------------------------------------
# command line


@click.command("campaign", cls=OneLineErrorCommand)
@click.argument("file", metavar="FILE.yaml", type=click.Path(dir_okay=False))
@click.option("--workers", "-j", type=int, default=None,
              help="Local Dask workers (default: number of cores).")
@click.option("--cluster", default=None, metavar="ADDRESS",
              help="Use an existing dask.distributed scheduler (e.g. tcp://host:8786) "
                   "instead of a local cluster.")
@click.option("--output", "-o", default=None, type=click.Path(file_okay=False),
              help="Output folder (default: the file's 'output').")
@click.option("--retry-failed", is_flag=True, help="Re-run the runs that failed before.")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar on stderr (default: when stderr is a terminal).")
@click.option("--table/--no-table", default=True, show_default=True,
              help="Write OUTPUT/runs.parquet and OUTPUT/runs.csv at the end.")
@click.option("--engine", default=None, metavar="ENGINE",
              help="Engine for every run: 'embedded', 'batsim' (the real Batsim on PATH) or a "
                   "command; overrides the file's 'engine' (default: embedded).")
@click.option("--refresh-metrics", is_flag=True,
              help="Simulate nothing: recompute the metrics of the finished runs (done.json) "
                   "from their out_*.csv with the current code, rewrite metrics.json, "
                   "done.json and the table.")
def campaign_command(file, workers, cluster, output, retry_failed, progress, table, engine,
                     refresh_metrics):
    """Run or resume a campaign: platforms x workloads x schedulers x seeds.

    Finished runs (done.json) are skipped, failed runs (failed.json) are
    listed and re-run only with --retry-failed, runs killed mid-way are
    re-run. Exit status: 0 all runs finished, 1 some runs failed, 2 bad
    input, 128+N interrupted by signal N.

    With --refresh-metrics nothing is simulated: the metrics of the finished
    runs are recomputed from their output files; exit status 1 when some
    finished runs have missing or unreadable outputs (each listed).
    """
    if progress is None:
        progress = sys.stderr.isatty()
    if refresh_metrics:
        given = [name for name, value in (("--workers", workers is not None),
                                          ("--cluster", cluster is not None),
                                          ("--retry-failed", retry_failed)) if value]
        if given:
            click.echo(f"Error: --refresh-metrics runs no simulation (in-process, no Dask): "
                       f"{' and '.join(given)} cannot be used with it", err=True)
            sys.exit(2)
    try:
        camp = load_campaign(file, output=output)
        if engine is not None and refresh_metrics:
            # selects the runs of that engine (part of their identity); nothing is run
            camp = dataclasses.replace(camp, engine=engine)
        elif engine is not None:
            if engine == "batsim":
                from iosched.runner import engine_command

                engine_command("batsim")  # one-line error now if batsim is not on PATH
            camp = dataclasses.replace(camp, engine=engine)
    except InputError as e:
        click.echo(f"Error: {_one_line(e)}", err=True)
        sys.exit(2)
    if refresh_metrics:
        _refresh_command(camp, progress, table)
    try:
        res = run_campaign(camp, workers=workers, cluster=cluster, retry_failed=retry_failed,
                           progress=progress, echo=lambda s: click.echo(s, err=True))
    except InputError as e:
        click.echo(f"Error: {_one_line(e)}", err=True)
        sys.exit(2)
    if res.interrupted:
        sig = res.interrupted_signal or signal.SIGINT
        click.echo(f"campaign {camp.name}: interrupted; run the same command to resume", err=True)
        sys.exit(128 + int(sig))
    if table:
        _write_campaign_table(camp)
    nb_done = res.nb_done
    click.echo(f"campaign {camp.name}: {nb_done}/{len(res.runs)} runs finished, "
               f"{len(res.failed)} failed ({len(res.executed)} executed now) -> {camp.output}")
    for rid in sorted(res.failed):
        click.echo(f"FAILED {rid}: {res.failed[rid]}")
    sys.exit(1 if res.failed else 0)

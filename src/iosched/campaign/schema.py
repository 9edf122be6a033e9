"""The campaign file: its JSON schema (:data:`CAMPAIGN_SCHEMA`), its
validated form (:class:`Campaign`) and :func:`load_campaign`.

The format is documented in ``docs/campaigns.md``; the file is read with
``yaml.safe_load`` (:func:`iosched.run.robin.load_yaml_mapping`) and
validated with jsonschema, errors being one line naming the file and the
field.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema

from iosched.campaign.files import slug
from iosched.campaign.jobqueue import JOBQUEUE_SCHEMA, check_settings, jobqueue_settings
from iosched.engine.platform import validate_platform
from iosched.engine.workload import load_workload
from iosched.errors import InputError, one_line
from iosched.paths import CAMPAIGNS_DIR
from iosched.run.robin import load_yaml_mapping
from iosched.schedulers.registry import check_options, resolve

__all__ = ["CAMPAIGN_SCHEMA", "SECONDS_PER", "Campaign", "load_campaign"]

#: Seconds per unit of a workload's ``parts`` (``{weeks: 1}``...).
SECONDS_PER = {"seconds": 1.0, "hours": 3600.0, "days": 86400.0, "weeks": 604800.0}

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
        "in_process": {"type": "boolean"},
        "tau": {"type": "number", "exclusiveMinimum": 0},
        "jobqueue": JOBQUEUE_SCHEMA,
    },
}


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
    return f"field {where}: {one_line(error.message)}"


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
    arguments of every run (e.g. ``--enable-dynamic-jobs``); ``in_process``:
    run each scheduler inside the embedded engine's process
    (:func:`iosched.run.simulation.run_simulation`'s ``in_process``; not
    part of a run's identity: the outputs are the same); ``jobqueue``: the
    file's ``jobqueue`` section with its defaults (the batch system that
    starts the Dask workers, :mod:`iosched.campaign.jobqueue`; not part of a
    run's identity) or None; ``raw``: the file's mapping.
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
    in_process: bool = False
    jobqueue: dict | None = None


def load_campaign(path, output=None) -> Campaign:
    """Read and validate a campaign YAML file.

    :param path: the file; relative paths inside it are relative to its folder.
    :param output: overrides the file's ``output`` (default when neither is
        given: ``results/campaigns/<name>`` under the current directory).
    :returns: a :class:`Campaign`.
    :raises InputError: unreadable file, invalid YAML, schema violation
        (unknown or missing field, wrong type: the message names the file and
        the field), a non-finite number anywhere (``.nan``, ``.inf``), duplicate
        labels, a baseline that is not a scheduler label, a scheduler name
        unknown to :func:`iosched.schedulers.registry.resolve`, an option or a
        ``seed_option`` the scheduler does not declare
        (:func:`iosched.schedulers.registry.check_options`), a missing input
        file, a workload file or a platform file that the engine would refuse
        (:func:`iosched.engine.workload.load_workload`,
        :func:`iosched.engine.platform.validate_platform`), a bad value in the
        ``jobqueue`` section (:func:`iosched.campaign.jobqueue.check_settings`).
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

    def file_entry(e: dict, where: str, check) -> None:  # resolve e["file"], default label
        f = rel(e["file"])
        if not f.is_file():
            raise InputError(f"{p}: field {where}.file: file not found: {e['file']}")
        try:
            check(str(f))
        except InputError as exc:
            raise InputError(f"{p}: field {where}.file: {exc}") from None
        e["file"] = str(f)
        e.setdefault("label", slug(f.stem))

    platforms = []
    for i, entry in enumerate(data["platforms"]):
        e = {"file": entry} if isinstance(entry, str) else dict(entry)
        if "file" in e:
            file_entry(e, f"platforms[{i}]", validate_platform)
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
            file_entry(e, f"workloads[{i}]", lambda f: load_workload(f, "w0"))
        elif "python" in e:
            e["args"] = dict(e.get("args") or {})
            e.setdefault("label", slug(e["python"].rsplit(":", 1)[1]))
        elif "swf" in e:
            if e["swf"] != "default":
                f = rel(e["swf"])
                if not f.is_file():
                    raise InputError(f"{p}: field workloads[{i}].swf: file not found: {e['swf']}")
                e["swf"] = str(f)
            e.setdefault("label", "kth" if e["swf"] == "default" else slug(Path(e["swf"]).stem))
            parts = e.get("parts")
            if parts is not None and len([k for k in parts if k in SECONDS_PER]) != 1:
                raise InputError(f"{p}: field workloads[{i}].parts: give exactly one of "
                                 f"{', '.join(SECONDS_PER)} (and optionally count)")
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
            e.setdefault("label", slug(f.stem))
        else:
            try:
                resolve(name)
            except InputError as exc:
                raise InputError(f"{p}: field schedulers[{i}].name: {exc}") from None
            e.setdefault("label", slug(name))
        try:  # the option names the scheduler file declares
            check_options(e["name"], e["options"])
            if "seed_option" in e:
                check_options(e["name"], {e["seed_option"]: 0})
        except InputError as exc:
            field = "seed_option" if "seed_option" in e and e["seed_option"] in str(exc) else "options"
            raise InputError(f"{p}: field schedulers[{i}].{field}: {exc}") from None
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
    engine = data.get("engine", "embedded")
    in_process = bool(data.get("in_process", False))
    if in_process and engine != "embedded":
        raise InputError(f"{p}: field in_process: the scheduler runs inside the embedded engine "
                         f"only, not with engine {engine!r}")
    jobqueue = data.get("jobqueue")
    if jobqueue is not None:
        check_settings(jobqueue, lambda key: f"{p}: field jobqueue.{key}")
    if output is not None:
        out = Path(os.fspath(output)).expanduser().resolve()
    elif "output" in data:
        out = rel(data["output"]).resolve()
    else:
        out = (Path.cwd() / CAMPAIGNS_DIR / data["name"]).resolve()
    return Campaign(
        path=p.resolve(), base_dir=base, name=data["name"], output=out,
        platforms=platforms, workloads=workloads, schedulers=schedulers, seeds=seeds,
        baseline=baseline, timeout=float(data["timeout"]) if "timeout" in data else None,
        engine=engine, tau=float(data.get("tau", 600.0)), raw=data,
        engine_args=list(data.get("engine_args", [])), in_process=in_process,
        jobqueue=jobqueue_settings(jobqueue),
    )

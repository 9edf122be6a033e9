"""The inputs and runs of a campaign: generated platforms and workloads
under ``OUTPUT/inputs/``, the expanded run specs (:func:`prepare_runs`) and
the manifest ``OUTPUT/campaign.json`` (:func:`write_manifest`).

Workloads are sized for the compute hosts of the engine's platform: those of
:func:`iosched.engine.platform.count_compute_hosts`, or with ``engine_args``
(``-r`` roles, ``-m``, ``--mmax``) those of the engine command
(:func:`iosched.run.hosts.compute_hosts_of_argv`).
"""

from __future__ import annotations

import importlib
import itertools
import json
import os
from pathlib import Path

from iosched.campaign.files import sha256_file, short_hash, slug, write_if_changed
from iosched.campaign.generators import split_parts, synthetic_workload
from iosched.campaign.schema import SECONDS_PER, Campaign
from iosched.engine.platform import count_compute_hosts
from iosched.errors import InputError, one_line
from iosched.experiments.platforms import cluster_xml, dragonfly96_xml
from iosched.run.hosts import compute_hosts_of_argv
from iosched.workloads.convert import swf_to_batsim
from iosched.workloads.writer import dump_workload
from iosched.workloads.default_swf import find_default_swf

__all__ = ["MANIFEST", "prepare_runs", "write_manifest"]

#: File name of a campaign's manifest in its output folder.
MANIFEST = "campaign.json"


def _platform_input(campaign: Campaign, entry: dict, inputs: Path) -> dict:
    """Materialise a platform entry; returns {label, identity, path, nb_res}."""
    label = entry["label"]
    if "file" in entry:
        path = Path(entry["file"])
        identity = {"file": path.name, "sha256": sha256_file(path)}
    else:
        if "cluster" in entry:
            args = dict(entry["cluster"])
            text = cluster_xml(**args)
            identity = {"cluster": args}
        else:
            args = dict(entry["dragonfly96"])
            text = dragonfly96_xml(**args)
            identity = {"dragonfly96": args}
        d = inputs / "platforms"
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{label}-{short_hash(identity)}.xml"
        write_if_changed(path, text)
        identity = {**identity, "sha256": sha256_file(path)}
    if campaign.engine_args:  # -r roles, -m, --mmax change the compute hosts
        nb_res = compute_hosts_of_argv(["-p", str(path), *campaign.engine_args])
        if nb_res is None:
            raise InputError(f"{campaign.path}: platform {label!r} with engine_args "
                             f"{campaign.engine_args}: no compute host, or a bad -r, -m or --mmax")
    else:
        try:
            nb_res = count_compute_hosts(str(path))
        except InputError as e:
            raise InputError(f"{campaign.path}: platform {label!r}: {one_line(e)}") from None
    return {"label": label, "identity": identity, "path": str(path), "nb_res": nb_res}


def _workload_inputs(campaign: Campaign, entry: dict, platform: dict, seed: int,
                     inputs: Path) -> list[dict]:
    """Materialise a workload entry for one platform and seed.

    Returns a list of {label, part, identity, path, seeded}.
    """
    label = entry["label"]
    d = inputs / "workloads"
    d.mkdir(parents=True, exist_ok=True)
    if "file" in entry:
        path = Path(entry["file"])
        return [{"label": label, "part": None, "seeded": False, "path": str(path),
                 "identity": {"file": path.name, "sha256": sha256_file(path)}}]
    if "python" in entry:
        return _python_workload(campaign, entry, seed, d)
    if "synthetic" in entry:
        syn = dict(entry["synthetic"])
        identity = {"synthetic": syn, "nb_res": platform["nb_res"], "seed": seed}
        path = d / f"{label}-s{seed}-{short_hash(identity)}.json"
        if not path.is_file():
            w = synthetic_workload(syn["nb_jobs"], platform["nb_res"], seed,
                                   max_res=syn.get("max_res"),
                                   runtime=tuple(syn.get("runtime", (10.0, 600.0))),
                                   interarrival=float(syn.get("interarrival", 30.0)),
                                   walltime_factor=float(syn.get("walltime_factor", 1.5)))
            write_if_changed(path, dump_workload(w))
        return [{"label": label, "part": None, "seeded": True, "path": str(path),
                 "identity": {**identity, "sha256": sha256_file(path)}}]
    # SWF trace
    if entry["swf"] == "default":
        try:
            swf = find_default_swf()
        except InputError as e:
            raise InputError(f"{campaign.path}: workload {label!r}: {one_line(e)}") from None
    else:
        swf = Path(entry["swf"])
    opts = {k: entry[k] for k in ("first", "start", "end", "profile_type") if k in entry}
    parts = entry.get("parts")
    identity = {"swf": swf.name, "swf_sha256": sha256_file(swf), "nb_res": platform["nb_res"],
                **opts, "parts": parts}
    key = f"{label}-{short_hash(identity)}"
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
        raise InputError(f"{campaign.path}: workload {label!r}: {one_line(e)}") from None
    if parts is None:
        pieces = [(None, w)]
    else:
        unit = next(k for k in parts if k in SECONDS_PER)
        pieces = split_parts(w, float(parts[unit]) * SECONDS_PER[unit], parts.get("count"))
    if not pieces or not any(piece["jobs"] for _, piece in pieces):
        raise InputError(f"{campaign.path}: workload {label!r}: no job left after selection")
    return _entries(_write_pieces(d, key, index, pieces), d, label, identity, seeded=False)


def _write_pieces(d: Path, key: str, index: Path, pieces) -> list[dict]:
    """Write each ``(part, workload)`` of ``pieces`` as ``d/<key>.json`` (part
    None) or ``d/<key>-p<part>.json`` (only when changed) and the ``index``
    listing them; returns that listing (``part``, ``file``, ``sha256``)."""
    listed = []
    for part, piece in pieces:
        name = f"{key}.json" if part is None else f"{key}-p{part}.json"
        write_if_changed(d / name, dump_workload(piece))
        listed.append({"part": part, "file": name, "sha256": sha256_file(d / name)})
    write_if_changed(index, json.dumps(listed, indent=2, sort_keys=True) + "\n")
    return listed


def _entries(listed: list, d: Path, label: str, identity: dict, seeded: bool) -> list[dict]:
    """The run-input entries of a workload's listed files."""
    return [{"label": label, "part": item["part"], "seeded": seeded, "path": str(d / item["file"]),
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
    label = entry["label"]
    modname, fname = entry["python"].rsplit(":", 1)
    identity = {"python": entry["python"], "args": entry["args"], "seed": seed}
    key = f"{label}-s{seed}-{short_hash(identity)}"
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
                             f"{entry['python']}: {one_line(e)}") from None
        except (InputError, OSError, TypeError) as e:
            raise InputError(f"{campaign.path}: workload {label!r}: {one_line(e)}") from None
        single = isinstance(got, dict)
        pieces = [got] if single else list(got)
        if not pieces or not all(isinstance(w, dict) and "jobs" in w for w in pieces):
            raise InputError(f"{campaign.path}: workload {label!r}: {entry['python']} must return "
                             "a workload dict or a list of them")
        listed = _write_pieces(d, key, index, [(None if single else k, w) for k, w in enumerate(pieces)])
    return _entries(listed, d, label, identity, seeded=True)


def _scheduler_identity(entry: dict) -> dict:
    name = entry["name"]
    if os.path.isfile(name) and (name.endswith(".py") or os.sep in name):
        return {"file": Path(name).name, "sha256": sha256_file(Path(name)),
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
        ``engine``, ``timeout`` (s or None), ``tau`` (s), ``engine_args``,
        ``in_process`` (not in the identity: the outputs are the same).
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
                    run_slug = f"{plat['label']}__{wl['label']}{part}__{sentry['label']}__s{seed}"
                    rid = f"{slug(run_slug)}-{short_hash(identity)}"
                    if rid in seen:
                        raise InputError(f"{campaign.path}: two runs have the same parameters ({run_slug})")
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
                        "in_process": campaign.in_process,
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
    write_if_changed(path, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return path

"""The I/O job model (issue 26, deliverable 1): the job field ``io``, its
shipped JSON schema, the conversion of each family's earlier fields, and the
families' readers on both forms."""

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from batsim.batsim import Job as BatsimJob
from hypothesis import given
from hypothesis import strategies as st

from iosched.bb import model as bb_model
from iosched.sched import bbrun
from iosched.experiments.bb import workload as bb_workload
from iosched.experiments.dad import workload as dad_workload
from iosched.dad.model import read_task
from iosched.errors import InputError
from iosched.experiments.listpack import workload as lp_workload
from iosched.experiments.locality import workload as loc_workload
from iosched.locality.planner import LJob
from iosched.experiments.pfsbw import workload as pfs_workload
from iosched.sched import iojob
from iosched.sched.iojob import (SCHEMA, BurstBuffer, Compute, InputFile, IOJob, Periodic, Writes, parse_io,
                                 read_io, to_json, validate)
from iosched.schedulers.listpack import read_periodic_job
from iosched.schedulers.locality import read_locality_job
from iosched.schedulers.pfsbw import read_pfs_job

REPO = Path(__file__).resolve().parent.parent


def _raises_one_line(fn, *parts):
    """``fn()`` raises InputError, its message one line holding every part."""
    with pytest.raises(InputError) as exc:
        fn()
    msg = str(exc.value)
    assert "\n" not in msg, msg
    for p in parts:
        assert p in msg, (p, msg)
    return msg


# ---------------------------------------------------------------- the schema
def test_schema_ships_as_package_data():
    text = resources.files("iosched.sched").joinpath("io_job.schema.json").read_text()
    assert json.loads(text) == SCHEMA
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert '"iosched.sched" = ["io_job.schema.json"]' in (REPO / "pyproject.toml").read_text()


def _generated_workloads(shared):
    jobs = [LJob(str(i), i * 10, 50, 100, 2, 1 + i % 2, 1.0, 1 if i else -2, hist_start=0, hist_node=0, seq=i)
            for i in range(4)]
    return {
        "bb": bb_workload.generate(shared / "data" / "KTH-SP2-1996-2.1-cln.swf", seed=1, first=40),
        "locality": loc_workload.to_batsim(jobs, nb_res=12),
        "listpack": lp_workload.to_batsim(lp_workload.generate("M-BN", 0.6, seed=1, n_jobs=20)),
        "dad": dad_workload.blast_like(nb_tasks=2),
        "dad-files": dad_workload.file_benchmark(4, 1e9, 2),
        "pfsbw": pfs_workload.workload2(waves=1),
    }


def test_schema_accepts_every_generators_output(shared):
    """Every generator writes ``io`` (and none of the earlier fields), which
    the shipped schema accepts and the reader reads back unchanged."""
    legacy = {f for fields in iojob.LEGACY_FIELDS.values() for f in fields}
    for family, w in _generated_workloads(shared).items():
        assert w["jobs"], family
        for j in w["jobs"]:
            assert "io" in j and not legacy & set(j), (family, j)
            jsonschema.validate(j["io"], SCHEMA)
            io = read_io(j, f"{family} job {j['id']}")
            assert to_json(io) == j["io"]            # the generators write the canonical form
            assert json.loads(json.dumps(j["io"])) == j["io"]


# --------------------------------------------------------- malformed io fields
GOOD = {"nodes": 2, "cores": 4, "memory": 1e9, "application": "app", "throughput_cap": 1e8,
        "inputs": [{"file": "a", "bytes": 10, "copies": ["pfs", "n1"]}],
        "compute": {"flops": 1e9, "com": 0, "delay": 5},
        "burst_buffer": {"bytes": 1e9, "checkpoint_factor": 0.5},
        "periodic": {"periods": 3, "compute": 10.0, "bytes": 1e6, "to": "pfs"},
        "writes": {"bytes": 5e6, "to": "pfs"}}


def _with(path, value):
    """A deep copy of GOOD with ``path`` (keys / indices) set to *value*, or
    removed when *value* is the sentinel DELETE."""
    obj = json.loads(json.dumps(GOOD))
    d = obj
    for k in path[:-1]:
        d = d[k]
    if value is DELETE:
        del d[path[-1]]
    elif isinstance(d, list) and path[-1] == len(d):
        d.append(value)
    else:
        d[path[-1]] = value
    return obj


DELETE = object()
NAN, INF = float("nan"), float("inf")

MALFORMED = [
    (("burst_buffer", "bytes"), -1, "io.burst_buffer.bytes: -1 is not > 0"),
    (("burst_buffer", "bytes"), 0, "io.burst_buffer.bytes: 0 is not > 0"),
    (("burst_buffer", "bytes"), NAN, "io.burst_buffer.bytes: nan is not a finite number"),
    (("burst_buffer", "bytes"), INF, "io.burst_buffer.bytes: inf is not a finite number"),
    (("burst_buffer", "bytes"), 10 ** 400, "io.burst_buffer.bytes:"),
    (("burst_buffer", "bytes"), "1e9", "io.burst_buffer.bytes: '1e9' is not a number"),
    (("burst_buffer", "bytes"), True, "io.burst_buffer.bytes: True is not a number"),
    (("burst_buffer", "bytes"), DELETE, "io.burst_buffer.bytes: is missing"),
    (("burst_buffer", "drain"), 1, "io.burst_buffer.drain: unknown field"),
    (("burst_buffer", "checkpoint_factor"), -0.5, "io.burst_buffer.checkpoint_factor: -0.5 is not >= 0"),
    (("nodes",), 0, "io.nodes: 0 is not >= 1"),
    (("nodes",), 2.0, "io.nodes: 2.0 is not an integer"),
    (("nodes",), "2", "io.nodes: '2' is not an integer"),
    (("nodes",), False, "io.nodes: False is not an integer"),
    (("cores",), -3, "io.cores: -3 is not >= 1"),
    (("memory",), -1.0, "io.memory: -1.0 is not >= 0"),
    (("memory",), NAN, "io.memory: nan is not a finite number"),
    (("application",), "", "io.application: an empty string"),
    (("application",), 7, "io.application: 7 is not a string"),
    (("throughput_cap",), 0, "io.throughput_cap: 0 is not > 0"),
    (("throughput_cap",), -INF, "io.throughput_cap: -inf is not a finite number"),
    (("inputs",), {"file": "a"}, "io.inputs: "),
    (("inputs", 0, "bytes"), -1, "io.inputs[0].bytes: -1 is not >= 0"),
    (("inputs", 0, "bytes"), DELETE, "io.inputs[0].bytes: is missing"),
    (("inputs", 0, "file"), DELETE, "io.inputs[0].file: is missing"),
    (("inputs", 0, "file"), 3, "io.inputs[0].file: 3 is not a string"),
    (("inputs", 0, "copies"), [], "io.inputs[0].copies: an empty list"),
    (("inputs", 0, "copies"), ["n1", "n1"], "io.inputs[0].copies: an item is listed twice"),
    (("inputs", 0, "copies"), ["n1", ""], "io.inputs[0].copies[1]: an empty string"),
    (("inputs", 0, "replicas"), ["n1"], "io.inputs[0].replicas: unknown field"),
    (("inputs", 1), {"file": "a", "bytes": 1}, "io.inputs[1].file: file 'a' is listed twice"),
    (("compute", "flops"), -1e9, "io.compute.flops: -1000000000.0 is not >= 0"),
    (("compute", "delay"), NAN, "io.compute.delay: nan is not a finite number"),
    (("compute", "com"), [1], "io.compute.com: [1] is not a number"),
    (("compute", "cpu"), 1, "io.compute.cpu: unknown field"),
    (("periodic", "periods"), 0, "io.periodic.periods: 0 is not >= 1"),
    (("periodic", "periods"), 1.5, "io.periodic.periods: 1.5 is not an integer"),
    (("periodic", "compute"), 0, "io.periodic.compute: 0 is not > 0"),
    (("periodic", "compute"), DELETE, "io.periodic.compute: is missing"),
    (("periodic", "bytes"), INF, "io.periodic.bytes: inf is not a finite number"),
    (("periodic", "to"), "bb", "io.periodic.to: 'bb' is not one of 'pfs'"),
    (("writes", "bytes"), -5, "io.writes.bytes: -5 is not >= 0"),
    (("writes", "bytes"), DELETE, "io.writes.bytes: is missing"),
    (("writes",), 5, "io.writes: 5 is not an object"),
    (("variety",), "x", "io.variety: unknown field"),
]


@pytest.mark.parametrize("path, value, message", MALFORMED, ids=[m[2].split(":")[0] + f"-{i}"
                                                                for i, m in enumerate(MALFORMED)])
def test_malformed_io_is_refused_in_one_line_naming_job_and_field(path, value, message):
    bad = _with(path, value)
    _raises_one_line(lambda: read_io({"id": 3, "io": bad}, "job w0!3"), f"job w0!3: {message}")
    _raises_one_line(lambda: validate(bad, "w.json: job w0!3"), f"w.json: job w0!3: {message}")
    assert iojob._fast_parse(bad) is None       # the fast path accepts nothing the schema refuses
    if not ("finite" in message or "file 'a' is listed twice" in message or value == 10 ** 400):
        # the schema file itself refuses it (non-finite numbers and a file id
        # listed twice are the reader's own checks, documented)
        assert not iojob._VALIDATOR.is_valid(bad)


def test_io_not_an_object_and_the_good_one():
    _raises_one_line(lambda: read_io({"io": []}, "job 1"), "job 1: io: [] is not an object")
    _raises_one_line(lambda: read_io({"io": None}, "job 1"), "job 1: io: None is not an object")
    io = read_io({"io": GOOD}, "job 1")
    assert io == IOJob(2, 4, 1e9, (InputFile("a", 10, ("pfs", "n1")),), Compute(1e9, 0, 5),
                       BurstBuffer(1e9, 0.5), Periodic(3, 10.0, 1e6), Writes(5e6), "app", 1e8)
    assert to_json(io) == GOOD
    assert read_io({"io": {}}, "job 1") == IOJob()


def test_defaults_of_the_io_form():
    io = read_io({"io": {"inputs": [{"file": "f", "bytes": 1}], "burst_buffer": {"bytes": 2},
                         "periodic": {"periods": 1, "compute": 1, "bytes": 0}, "writes": {"bytes": 0},
                         "compute": {"delay": 3}}}, "job 1")
    assert io.inputs[0].copies == ("pfs",) and io.burst_buffer.checkpoint_factor == 0.5
    assert io.periodic.to == "pfs" and io.writes.to == "pfs"
    assert io.compute == Compute(None, None, 3)
    assert to_json(io)["compute"] == {"delay": 3}


def test_io_is_the_only_source_when_present():
    """With ``io``, the earlier fields beside it are not read (nor checked)."""
    io = read_io({"io": {"burst_buffer": {"bytes": 5}}, "bb": -1, "files": "junk", "nodes": 0}, "job 1")
    assert io == IOJob(burst_buffer=BurstBuffer(5))
    req = bb_model.job_request({"id": 1, "res": 2, "io": {"burst_buffer": {"bytes": 5}}, "bb": 9})
    assert (req.bb, req.flops, req.com) == (5.0, 0.0, 0.0)


# ------------------------------------------------- legacy == io, family by family
def _bj(jid, json_dict, res=None, walltime=100.0, profile="p", subtime=0.0):
    d = {"id": jid, "res": res, "profile": profile, **json_dict}
    return BatsimJob(jid, subtime, walltime, d["res"], profile, d)


def test_bb_legacy_and_io_give_the_same_request():
    legacy = {"id": "w0!1", "res": 3, "walltime": 500, "bb": 2e9, "flops": 7.2e12, "com": 1e6}
    new = {"id": "w0!1", "res": 3, "walltime": 500,
           "io": {"burst_buffer": {"bytes": 2e9}, "compute": {"flops": 7.2e12, "com": 1e6}}}
    assert bb_model.job_request(legacy) == bb_model.job_request(new)
    assert bb_model.job_request(legacy) == bb_model.JobRequest(3, 2e9, 7.2e12, 1e6, 500.0, 0.5)
    # defaults: flops and com 0
    assert bb_model.job_request({"id": 1, "res": 1, "bb": 1}) == \
        bb_model.job_request({"id": 1, "res": 1, "io": {"burst_buffer": {"bytes": 1}}})
    # the job's own checkpoint factor reaches the profiles
    req = bb_model.job_request({**new, "io": {**new["io"], "burst_buffer": {"bytes": 2e9, "checkpoint_factor": 0.25}}})
    run = bbrun.build_run("w0!1", req, [0, 1, 2], {0: 5, 1: 5, 2: 6}, pfs=7)
    half = bbrun.build_run("w0!1", bb_model.job_request(new), [0, 1, 2], {0: 5, 1: 5, 2: 6}, pfs=7)
    assert req.checkpoint_factor == 0.25 and run.profiles != half.profiles
    assert bbrun.build_run("w0!1", req, [0, 1, 2], {0: 5, 1: 5, 2: 6}, pfs=7,
                              checkpoint_factor=0.5).profiles == half.profiles


@pytest.mark.parametrize("job, words", [
    ({"res": 1}, ["job 9: no burst-buffer request"]),
    ({"res": 1, "bb": 0}, ["job 9: field bb: 0 is not > 0"]),
    ({"res": 1, "bb": "x"}, ["job 9: field bb: 'x' is not a number"]),
    ({"res": 1, "bb": 1, "flops": -1}, ["job 9: field flops: -1 is not >= 0"]),
    ({"res": 1, "bb": 1, "com": NAN}, ["job 9: field com: nan is not a finite number"]),
    ({"res": 0, "bb": 1}, ["job 9: res=0 is not a positive integer"]),
    ({"res": 2, "io": {"nodes": 3, "burst_buffer": {"bytes": 1}}}, ["job 9: io.nodes=3 differs from res=2"]),
    ({"res": 2, "io": {"burst_buffer": {"bytes": -1}}}, ["job 9: io.burst_buffer.bytes: -1 is not > 0"]),
])
def test_bb_bad_requests_one_line(job, words):
    _raises_one_line(lambda: bb_model.job_request({"id": 9, **job}), *words)


def _ljob_fields(lj):
    return {k: getattr(lj, k) for k in ("id", "subtime", "delay", "walltime", "cores", "file", "size", "role",
                                        "hist_start", "hist_node", "seq")}


def test_locality_legacy_and_io_give_the_same_job():
    plain = {"role": -2, "history_node": 4, "history_start": 17, "orig_subtime": 3, "seq": 5}
    legacy = _bj("w0!6", {**plain, "file": 5, "file_size": 12.8e9, "delay": 54}, res=4)
    new = _bj("w0!6", {**plain, "io": {"cores": 4, "inputs": [{"file": "5", "bytes": 12.8e9}],
                                       "compute": {"delay": 54}}}, res=4)
    a, b = read_locality_job(legacy), read_locality_job(new)
    assert a[:3] == b[:3] == (4, 100.0, {}) and a[3][1] == b[3][1] == "p"
    assert _ljob_fields(a[3][0]) == _ljob_fields(b[3][0])
    assert (a[3][0].file, a[3][0].delay, a[3][0].cores) == (5, 54, 4)
    assert read_io(legacy.json_dict, "j") == read_io(new.json_dict, "j")
    # io.cores may be left out (res)
    del new.json_dict["io"]["cores"]
    assert _ljob_fields(read_locality_job(new)[3][0]) == _ljob_fields(a[3][0])


@pytest.mark.parametrize("fields, res, words", [
    ({"file": 1, "delay": 5}, 1, ["job w0!1: field file_size is missing"]),
    ({"file_size": 1, "delay": 5}, 1, ["job w0!1: field file is missing"]),
    ({"file": "a", "file_size": 1, "delay": 5}, 1, ["job w0!1: field file: 'a' is not a file number"]),
    ({"file": 1, "file_size": -1, "delay": 5}, 1, ["job w0!1: field file_size: -1 is not >= 0"]),
    ({"file": 1, "file_size": 1}, 1, ["job w0!1: field delay (the job's duration in s) is missing"]),
    ({"delay": 5}, 1, ["job w0!1: a locality job reads one input file, got 0"]),
    ({"io": {"inputs": [{"file": "x", "bytes": 1}], "compute": {"delay": 1}}}, 1,
     ["job w0!1: input file 'x': a locality file id is a whole number"]),
    ({"io": {"inputs": [{"file": "1", "bytes": 1}], "compute": {"flops": 1}}}, 1,
     ["job w0!1: field delay (the job's duration in s) is missing (io.compute.delay)"]),
    ({"io": {"cores": 2, "inputs": [{"file": "1", "bytes": 1}], "compute": {"delay": 1}}}, 1,
     ["job w0!1: io.cores=2 differs from res=1"]),
])
def test_locality_bad_jobs_one_line(fields, res, words):
    _raises_one_line(lambda: read_locality_job(_bj("w0!1", fields, res=res)), *words)


def test_listpack_legacy_and_io_give_the_same_job():
    legacy = {"id": "3", "nodes": 5120, "periods": 53, "w": 136.17, "v": 2.3e12, "x": 0.69}
    new = {"id": "3", "x": 0.69, "io": {"nodes": 5120, "periodic": {"periods": 53, "compute": 136.17,
                                                                    "bytes": 2.3e12}}}
    assert read_periodic_job(legacy) == read_periodic_job(new)
    assert read_periodic_job(new).nodes == 5120 and read_periodic_job(new).x == 0.69


@pytest.mark.parametrize("job, words", [
    ({"nodes": 1, "periods": 2, "w": 10.0}, ["job j7: field v is missing"]),
    ({"nodes": 0, "periods": 2, "w": 10.0, "v": 1}, ["job j7: field nodes: 0 is not an integer >= 1"]),
    ({"nodes": 1, "periods": 2.0, "w": 10.0, "v": 1}, ["job j7: field periods: 2.0 is not an integer >= 1"]),
    ({"nodes": 1, "periods": 2, "w": 0, "v": 1}, ["job j7: field w: 0 is not > 0"]),
    ({"nodes": 1, "periods": 2, "w": 1, "v": INF}, ["job j7: field v: inf is not a finite number"]),
    ({"periods": 2, "w": 1, "v": 1}, ["job j7: listpack fields missing", "io.nodes"]),
    ({"io": {"nodes": 4}}, ["job j7: listpack fields missing", "io.periodic"]),
])
def test_listpack_bad_jobs_one_line(job, words):
    _raises_one_line(lambda: read_periodic_job({"id": "j7", **job}), *words)


def test_dad_legacy_and_io_give_the_same_task():
    legacy = {"queue": "blastn", "files": [{"name": "db0", "size": 4e9, "replicas": ["n000", "n001"]},
                                           {"name": "db1", "size": 1e9, "replicas": ["n002"]}]}
    new = {"queue": "blastn", "io": {"inputs": [{"file": "db0", "bytes": 4e9, "copies": ["n000", "n001"]},
                                                {"file": "db1", "bytes": 1e9, "copies": ["pfs", "n002"]}]}}
    assert read_task(legacy) == read_task(new)
    assert [f.replicas for f in read_task(new).files] == [("n000", "n001"), ("n002",)]


@pytest.mark.parametrize("job, words", [
    ({"files": {}}, ["job 1: field 'files' must be a list"]),
    ({"files": [{"name": "a", "size": 1, "replicas": []}]}, ["job 1: files[0] (a): 'replicas' must be"]),
    ({"files": [{"name": "a", "size": -1, "replicas": ["n"]}]}, ["job 1: files[0] (a): 'size' must be"]),
    ({"files": [{"name": "a", "size": 1, "replicas": ["n"]}], "queue": ""}, ["job 1: field 'queue'"]),
    ({"io": {"inputs": [{"file": "a", "bytes": 1}]}}, ["job 1: io.inputs[0] (a): no copy on a node-local disk"]),
    ({"io": {"inputs": [{"file": "a", "bytes": 1, "copies": ["n", "n"]}]}},
     ["job 1: io.inputs[0].copies: an item is listed twice"]),
])
def test_dad_bad_tasks_one_line(job, words):
    _raises_one_line(lambda: read_task(job, "job 1"), *words)


def test_pfsbw_legacy_and_io_give_the_same_request():
    legacy = _bj("w0!0", {"nodes": 1, "variety": "write_x8", "bytes_written": 8e10}, res=8, profile="write_x8")
    new = _bj("w0!0", {"io": {"nodes": 1, "application": "write_x8", "writes": {"bytes": 8e10}}}, res=8,
              profile="write_x8")
    a, b = read_pfs_job(legacy, cores_per_node=8), read_pfs_job(new, cores_per_node=8)
    assert a[:3] == b[:3] and a[0] == 8
    assert (a[3].variety, a[3].bytes_written) == (b[3].variety, b[3].bytes_written) == ("write_x8", 8e10)
    # defaults: the profile's name, 0 bytes, Batsim's res
    c = read_pfs_job(_bj("w0!1", {"io": {}}, res=3, profile="sleep"), cores_per_node=8)
    d = read_pfs_job(_bj("w0!1", {}, res=3, profile="sleep"), cores_per_node=8)
    assert c[0] == d[0] == 3 and (c[3].variety, c[3].bytes_written) == (d[3].variety, d[3].bytes_written) \
        == ("sleep", 0.0)


@pytest.mark.parametrize("fields, words", [
    ({"bytes_written": -3}, ["job w0!1: field bytes_written: -3 is not >= 0"]),
    ({"bytes_written": "3"}, ["job w0!1: field bytes_written: '3' is not a number"]),
    ({"variety": 4}, ["job w0!1: field variety: 4 is not a non-empty string"]),
    ({"nodes": True}, ["job w0!1: field nodes: True is not an integer >= 1"]),
    ({"io": {"writes": {"bytes": -3}}}, ["job w0!1: io.writes.bytes: -3 is not >= 0"]),
    ({"io": {"nodes": 1}}, ["job w0!1: res=9 executors do not fit on 1 node(s) of 8 cores"]),
])
def test_pfsbw_bad_jobs_one_line(fields, words):
    _raises_one_line(lambda: read_pfs_job(_bj("w0!1", fields, res=9), cores_per_node=8), *words)


def test_legacy_conversion_of_each_family():
    """What each family's earlier fields become (``read_io`` without ``io``)."""
    assert read_io({"bb": 5, "flops": 6, "com": 7}, "j") == \
        IOJob(compute=Compute(6.0, 7.0, None), burst_buffer=BurstBuffer(5.0))
    assert read_io({"res": 4, "file": 5, "file_size": 1e9, "delay": 9}, "j") == \
        IOJob(cores=4, inputs=(InputFile("5", 1e9),), compute=Compute(None, None, 9.0))
    assert read_io({"nodes": 4, "periods": 2, "w": 3, "v": 4, "x": 0.5}, "j") == \
        IOJob(nodes=4, periodic=Periodic(2, 3.0, 4.0))
    assert read_io({"files": [{"name": "a", "size": 1, "replicas": ["n1"]}], "queue": "q"}, "j") == \
        IOJob(inputs=(InputFile("a", 1.0, ("n1",)),))
    assert read_io({"nodes": 1, "variety": "v", "bytes_written": 0}, "j") == \
        IOJob(nodes=1, application="v", writes=Writes(0.0))
    assert read_io({"id": 1, "subtime": 0, "res": 4, "profile": "p", "walltime": 9}, "j") == IOJob()
    _raises_one_line(lambda: read_io({"file": 1, "file_size": 1, "files": []}, "job 2"),
                     "job 2: fields file and files both given")


# ------------------------------------------------- golden inputs (earlier format)
GOLDEN = {
    "bb": "bb_kth_first200_seed1.json",
    "locality": "loc_uppmax_sub500.json",
    "listpack": "listpack_mbn_a0.6_seed1_n30.json",
    "dad": "dad_blast.json",
    "pfsbw": "pfsbw_w1_waves2.json",
}


@pytest.mark.parametrize("family", sorted(GOLDEN))
def test_a_golden_input_of_each_family_loads(shared, family):
    """The golden runs' inputs (earlier format, read-only) load through the
    family's reader; their converted model is a valid ``io`` that gives the
    same request."""
    w = json.loads((shared / "golden" / "inputs" / GOLDEN[family]).read_text())
    assert w["jobs"]
    for j in w["jobs"]:
        assert "io" not in j
        io = read_io(j, f"job {j['id']}")
        new = {k: v for k, v in j.items() if k not in iojob.LEGACY_FIELDS[family]}
        new["io"] = to_json(io)
        jsonschema.validate(new["io"], SCHEMA)
        jid = f"w0!{j['id']}"
        if family == "bb":
            assert bb_model.job_request(j) == bb_model.job_request(new)
        elif family == "locality":
            a, b = (read_locality_job(BatsimJob(jid, x["subtime"], x["walltime"], x["res"], x["profile"], x))
                    for x in (j, new))
            assert a[:3] == b[:3] and _ljob_fields(a[3][0]) == _ljob_fields(b[3][0])
        elif family == "listpack":
            assert read_periodic_job(j) == read_periodic_job(new)
        elif family == "dad":
            assert read_task(j) == read_task(new)
        else:
            a, b = (read_pfs_job(BatsimJob(jid, x["subtime"], x["walltime"], x["res"], x["profile"], x), 8)
                    for x in (j, new))
            assert a[:3] == b[:3] and (a[3].variety, a[3].bytes_written) == (b[3].variety, b[3].bytes_written)


# ------------------------------------------------------------- round trip
finite = st.floats(min_value=0, max_value=1e18, allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=1e-9, max_value=1e18, allow_nan=False, allow_infinity=False)
number = st.one_of(finite, st.integers(min_value=0, max_value=2 ** 60))
count = st.integers(min_value=1, max_value=2 ** 40)
name = st.text(min_size=1, max_size=8)


@st.composite
def io_jobs(draw):
    files = draw(st.lists(name, unique=True, max_size=4))
    inputs = tuple(InputFile(f, draw(number), tuple(draw(st.lists(name, min_size=1, max_size=3, unique=True))))
                   for f in files)
    opt = lambda s: draw(st.one_of(st.none(), s))
    return IOJob(
        nodes=opt(count), cores=opt(count), memory=opt(number), inputs=inputs,
        compute=opt(st.builds(Compute, st.one_of(st.none(), number), st.one_of(st.none(), number),
                              st.one_of(st.none(), number))),
        burst_buffer=opt(st.builds(BurstBuffer, positive, finite)),
        periodic=opt(st.builds(Periodic, count, positive, number)),
        writes=opt(st.builds(Writes, number)),
        application=opt(name), throughput_cap=opt(positive),
    )


@given(io_jobs())
def test_to_json_read_io_round_trips(io):
    obj = to_json(io)
    assert list(obj) == sorted(obj)
    assert read_io({"io": obj}, "job 1") == io
    assert read_io({"io": json.loads(json.dumps(obj))}, "job 1") == io
    jsonschema.validate(obj, SCHEMA)
    validate(obj, "job 1")                                   # the schema path accepts it too
    assert iojob._fast_parse(obj) == io


@given(st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3)),
                    lambda kids: st.one_of(st.lists(kids, max_size=3),
                                           st.dictionaries(st.sampled_from(sorted(GOOD) + ["file", "bytes",
                                                                                           "copies", "x"]),
                                                           kids, max_size=4)),
                    max_leaves=12))
def test_fast_path_accepts_only_what_the_schema_accepts(obj):
    """Random objects: the fast path and the schema path accept the same
    objects and build the same model; a refusal is one line."""
    fast = iojob._fast_parse(obj)
    try:
        checked = iojob._checked_parse(obj, "job 1")
    except InputError as exc:
        assert fast is None
        assert "\n" not in str(exc) and str(exc).startswith("job 1: io")
        return
    assert fast == checked and parse_io(obj, "job 1") == checked

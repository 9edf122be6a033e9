"""Property tests of each family's job reader (issue 31, item 3).

Each reader is given workload jobs whose family fields are drawn from valid
values and from invalid ones (NaN, +-inf, negative numbers, booleans,
strings, None, lists, a missing field).  The property: the reader either
returns a request whose numbers are finite (a walltime may be inf: "none")
and in range, or raises :class:`~iosched.errors.InputError` with a one-line
message naming the job; never another exception.

Only the readers' public behaviour (a job dict in, a request or an
InputError out) is tested, not how they read.  The standard Batsim fields
(``id``, ``subtime``, ``res``, ``walltime``, ``profile``) are drawn valid
where the reader gets them from Batsim (which refuses a job without them),
and wild where the reader itself checks them (``bb.model.job_request``).
"""

from __future__ import annotations

import math

from batsim.batsim import Job as BatsimJob
from hypothesis import given, settings
from hypothesis import strategies as st

from iosched.bb.model import job_request
from iosched.dad.model import read_task
from iosched.errors import InputError
from iosched.schedulers.burstbuffer import read_bb_job
from iosched.schedulers.listpack import read_periodic_job
from iosched.schedulers.locality import read_locality_job
from iosched.schedulers.pfsbw import read_pfs_job

EXAMPLES = settings(max_examples=200, deadline=None)

#: A field left out of the job.
MISSING = object()

#: Values no numeric field accepts (or accepts only by luck of a conversion).
JUNK = st.one_of(
    st.just(math.nan), st.just(math.inf), st.just(-math.inf),
    st.booleans(), st.none(), st.text(max_size=6),
    st.sampled_from(["nan", "inf", "-inf", "1e400", "12", " 3 ", "0x10", ""]),
    st.lists(st.integers(), max_size=2), st.just({}),
    st.floats(max_value=-1e-9, allow_nan=False), st.integers(max_value=-1),
    st.floats(min_value=1e300, max_value=1e308), st.integers(min_value=2 ** 63, max_value=2 ** 80),
)


def field(valid):
    """A field drawn from ``valid``, from :data:`JUNK` or left out."""
    return st.one_of(valid, valid, JUNK, st.just(MISSING))


#: How the family fields of a job are drawn: all valid, exactly one of them
#: wild (the others valid, so that the reader gets to check it), or each one
#: valid or wild.
MODES = st.sampled_from(["valid", "one", "one", "any"])


def job_dict(draw, fields: dict, standard: bool = True) -> dict:
    """A workload job: standard Batsim fields (valid) plus ``fields``
    (name -> strategy of its valid values), drawn as :data:`MODES` says; a
    field drawn as :data:`MISSING` is left out.  Returns ``(job dict,
    whether every family field was drawn valid)``."""
    n = draw(st.integers(min_value=0, max_value=10 ** 6))
    d = {"id": f"w0!{n}", "profile": "p"} if standard else {"id": f"w0!{n}"}
    if standard:
        d["subtime"] = draw(st.floats(min_value=0, max_value=1e7))
        d["res"] = draw(st.integers(min_value=1, max_value=64))
        d["walltime"] = draw(st.one_of(st.just(-1), st.floats(min_value=1, max_value=1e7)))
    mode = draw(MODES)
    wild = draw(st.sampled_from(sorted(fields))) if mode == "one" else None
    for name, valid in fields.items():
        if mode == "any":
            value = draw(field(valid))
        elif name == wild:
            value = draw(st.one_of(JUNK, st.just(MISSING)))
        else:
            value = draw(valid)
        if value is not MISSING:
            d[name] = value
    return d, mode == "valid"


def batsim_job(d: dict) -> BatsimJob:
    """The pybatsim job a scheduler gets for the workload job ``d``."""
    return BatsimJob.from_json_dict(d)


def assert_one_line_naming(exc: InputError, job_id: str) -> None:
    msg = str(exc)
    assert "\n" not in msg, msg
    assert job_id in msg, (job_id, msg)


def finite(*xs) -> bool:
    return all(type(x) in (int, float) and math.isfinite(x) for x in xs)


def positive_int(x) -> bool:
    return type(x) is int and x >= 1


def walltime_ok(w) -> bool:
    return type(w) is float and (w == math.inf or (math.isfinite(w) and w > 0))


NUMBER = st.floats(min_value=0, max_value=1e15, allow_nan=False)
POSITIVE = st.floats(min_value=1e-3, max_value=1e15)
COUNT = st.integers(min_value=1, max_value=1000)


# ---------------------------------------------------------------- burst buffers
@st.composite
def bb_jobs(draw, wild_standard=False):
    fields = {"bb": POSITIVE, "flops": NUMBER, "com": NUMBER}
    if wild_standard:
        fields["res"] = COUNT
        fields["walltime"] = st.one_of(st.just(-1), POSITIVE)
    return job_dict(draw, fields, standard=not wild_standard)


def check_bb_request(req) -> None:
    assert positive_int(req.nodes)
    assert finite(req.bb, req.flops, req.com)
    assert req.bb > 0 and req.flops >= 0 and req.com >= 0
    assert walltime_ok(req.walltime)


@EXAMPLES
@given(bb_jobs(wild_standard=True))
def test_bb_job_request_returns_a_valid_request_or_one_line(job):
    d, valid = job
    try:
        req = job_request(d)
    except InputError as exc:
        assert not valid, exc
        assert_one_line_naming(exc, d["id"])
        return
    check_bb_request(req)
    assert req.nodes == d["res"]


@EXAMPLES
@given(bb_jobs())
def test_read_bb_job_returns_a_valid_request_or_one_line(job):
    d, valid = job
    try:
        nb_res, estimate, pools, req = read_bb_job(batsim_job(d))
    except InputError as exc:
        assert not valid, exc
        assert_one_line_naming(exc, d["id"])
        return
    check_bb_request(req)
    assert nb_res == req.nodes == d["res"] and estimate == req.walltime and pools == {}


# ---------------------------------------------------------------- list vs pack
@st.composite
def periodic_jobs(draw):
    return job_dict(draw, {"nodes": COUNT, "periods": COUNT, "w": POSITIVE, "v": NUMBER,
                           "x": st.floats(-1e6, 1e6)})


@EXAMPLES
@given(periodic_jobs())
def test_read_periodic_job_returns_a_valid_job_or_one_line(drawn):
    d, valid = drawn
    try:
        job = read_periodic_job(d)
    except InputError as exc:
        assert not valid, exc
        assert_one_line_naming(exc, d["id"])
        return
    assert positive_int(job.nodes) and positive_int(job.periods)
    assert finite(job.w, job.v, job.x) and job.w > 0 and job.v >= 0
    assert (job.nodes, job.periods) == (d["nodes"], d["periods"])


# ---------------------------------------------------------------- data locality
@st.composite
def locality_jobs(draw):
    return job_dict(draw, {
        "file": st.integers(min_value=0, max_value=10 ** 6),
        "file_size": NUMBER,
        "delay": st.integers(min_value=0, max_value=10 ** 6),
        "role": st.integers(min_value=-2, max_value=2),
        "orig_subtime": st.integers(min_value=0, max_value=10 ** 7),
        "history_start": st.integers(min_value=-1, max_value=10 ** 7),
        "history_node": st.integers(min_value=-1, max_value=1000),
        "seq": st.integers(min_value=0, max_value=10 ** 6),
    })


@EXAMPLES
@given(locality_jobs())
def test_read_locality_job_returns_a_valid_job_or_one_line(job):
    d, valid = job
    try:
        cores, walltime, pools, (lj, _profile) = read_locality_job(batsim_job(d))
    except InputError as exc:
        assert not (valid and d["walltime"] > 0), exc  # a locality job needs a walltime
        assert_one_line_naming(exc, d["id"])
        return
    assert positive_int(cores) and cores == d["res"] and pools == {}
    assert math.isfinite(walltime) and walltime > 0
    assert lj.delay >= 0 and lj.walltime > 0
    assert math.isfinite(lj.size) and lj.size >= 0
    assert lj.role in (-2, -1, 0, 1, 2)
    assert finite(lj.subtime, lj.hist_start, lj.hist_node, lj.seq)


# ---------------------------------------------------------------- data-aware dispatch
FILE = st.fixed_dictionaries({"name": st.text(min_size=1, max_size=3),
                              "size": NUMBER,
                              "replicas": st.lists(st.sampled_from(["n0", "n1"]), min_size=1, max_size=2)})


@st.composite
def dad_files(draw):
    """A file entry, valid or with one field replaced by junk or left out."""
    f = dict(draw(FILE))
    key = draw(st.sampled_from([None, "name", "size", "replicas", "extra"]))
    if key == "extra":
        f["mode"] = "r"
    elif key is not None:
        bad = draw(st.one_of(JUNK, st.just(MISSING), st.just([]), st.just([3])))
        if bad is MISSING:
            del f[key]
        else:
            f[key] = bad
    return draw(st.one_of(st.just(f), JUNK))


@st.composite
def dad_jobs(draw):
    return job_dict(draw, {"files": st.lists(dad_files(), max_size=4),
                           "queue": st.sampled_from(["default", "q1"])})


@EXAMPLES
@given(dad_jobs())
def test_dad_read_task_returns_a_valid_task_or_one_line(job):
    d, _valid = job  # the files of a "valid" job may still be malformed (dad_files)
    where = f"job {d['id']}"
    try:
        req = read_task(d, where)
    except InputError as exc:
        assert_one_line_naming(exc, d["id"])
        return
    assert isinstance(req.queue, str) and req.queue
    names = [f.name for f in req.files]
    assert len(names) == len(set(names))
    for f in req.files:
        assert isinstance(f.name, str) and f.name
        assert finite(f.size) and f.size >= 0
        assert f.replicas and all(isinstance(r, str) and r for r in f.replicas)


# ---------------------------------------------------------------- PFS bandwidth
@st.composite
def pfs_jobs(draw):
    return job_dict(draw, {"nodes": COUNT, "variety": st.sampled_from(["a", "b"]),
                           "bytes_written": NUMBER})


@EXAMPLES
@given(pfs_jobs(), st.integers(min_value=1, max_value=64))
def test_read_pfs_job_returns_a_valid_request_or_one_line(job, cores_per_node):
    d, valid = job
    try:
        nb_res, estimate, pools, req = read_pfs_job(batsim_job(d), cores_per_node=cores_per_node)
    except InputError as exc:
        # the job's executors must fit on its nodes
        assert not (valid and d["res"] <= d["nodes"] * cores_per_node), exc
        assert_one_line_naming(exc, d["id"])
        return
    assert positive_int(nb_res) and nb_res >= d["res"]
    assert walltime_ok(estimate) and pools == {}
    assert isinstance(req.variety, str)
    assert finite(req.bytes_written) and req.bytes_written >= 0

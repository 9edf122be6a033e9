"""Property tests of each family's generators (issue 31, item 3).

Every workload generator (:mod:`iosched.experiments.bb.workload`,
``locality``, ``listpack``, ``dad``, ``pfsbw``) and every platform generator
(:mod:`iosched.experiments.platforms`) is called through its library function
(what the command lines call) with its numeric arguments drawn from valid
values, or with exactly one of them drawn from bad ones (NaN, +-inf,
negative, zero where not allowed, bool, str, None, huge), the others valid.

The rule: the call either raises :class:`~iosched.errors.InputError` whose
message is one line naming the bad argument, or returns a valid output:

* a workload: every job's I/O model passes
  :func:`iosched.sched.iojob.read_io`, every number in its jobs and profiles
  is finite and >= 0, the file written by the one workload writer loads in
  the embedded engine (:func:`iosched.engine.workload.load_workload`: the
  checks of Batsim 4.2.1's loader), and a dad workload passes its family's
  :func:`~iosched.experiments.dad.workload.check_workload`;
* a platform: valid XML that the engine's checks accept
  (:func:`iosched.engine.platform.validate_platform`, ``read_hosts``) and
  whose speeds and bandwidths are finite and > 0.

Never another exception, never a hang (each call runs under a 20 s alarm).
A bool is a bad value that a generator may also read as 0 or 1 (the rule
then only asks for a valid output). Counts are never drawn huge (a huge
count is a valid, long request); huge magnitudes are.
"""

from __future__ import annotations

import math
import re
import signal
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosched.engine.platform import UNIT_ATTRIBUTES, read_hosts, validate_platform
from iosched.engine.workload import load_workload
from iosched.errors import InputError
from iosched.experiments import platforms
from iosched.experiments.bb import workload as bbw
from iosched.experiments.dad import workload as dadw
from iosched.experiments.listpack import workload as lpw
from iosched.experiments.locality import workload as locw
from iosched.experiments.pfsbw import workload as pfsw
from iosched.sched.iojob import read_io
from iosched.workloads.writer import write_workload

EXAMPLES = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Seconds a generator call may take before it counts as a hang.
ALARM = 20

_NONFINITE = st.sampled_from([math.nan, math.inf, -math.inf])
_JUNK = st.one_of(st.booleans(), st.none(), st.text(max_size=4), st.sampled_from(["nan", "1e400", "12", ""]))


def bad_count(zero_ok: bool = False):
    """Bad values of a count (an integer argument): not an integer, negative,
    zero unless ``zero_ok``; never huge (a valid, long request)."""
    parts = [_NONFINITE, _JUNK, st.integers(max_value=-1), st.just(1.5), st.just(1e300)]
    if not zero_ok:
        parts.append(st.just(0))
    return st.one_of(*parts)


def bad_amount(zero_ok: bool = False):
    """Bad values of a magnitude (a float argument: s, bytes, bytes/s...):
    non-finite, junk, negative, zero unless ``zero_ok``, huge."""
    parts = [_NONFINITE, _JUNK, st.floats(max_value=-1e-9, allow_nan=False, allow_infinity=False),
             st.integers(max_value=-1), st.just(10 ** 400), st.just(1.7e308)]
    if not zero_ok:
        parts += [st.just(0), st.just(0.0)]
    return st.one_of(*parts)


def bad_seed():
    """Bad values of a random seed (an integer >= 0)."""
    return st.one_of(_NONFINITE, _JUNK, st.integers(max_value=-1), st.just(1e300))


@contextmanager
def alarm(seconds: int = ALARM):
    """Fail instead of hanging: raise after ``seconds`` s of one call."""
    def ring(signum, frame):
        raise TimeoutError(f"generator call did not return within {seconds} s (a hang)")
    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def draw_args(draw, spec: dict):
    """Arguments drawn from ``spec`` (name -> (valid strategy, bad
    strategy)): all valid, or one bad and the others valid. Returns
    ``(kwargs, name of the bad argument or None)``."""
    args = {name: draw(valid) for name, (valid, _) in spec.items()}
    bad = draw(st.sampled_from([None, *sorted(spec)]))
    if bad is not None:
        args[bad] = draw(spec[bad][1])
    return args, bad


def call(fn, args: dict, bad, names=None, may_refuse_valid: bool = False):
    """Call ``fn(**args)`` under :func:`alarm` and check the error half of the
    rule: an :class:`InputError` is one line naming the bad argument (one of
    ``names[bad]`` if given, else ``bad`` itself). Returns the output, or
    None after an :class:`InputError`."""
    try:
        with alarm():
            return fn(**args)
    except InputError as exc:
        msg = str(exc)
        assert msg and "\n" not in msg, f"not one line: {msg!r}"
        if bad is None:
            assert may_refuse_valid, f"valid arguments {args!r} refused: {msg}"
            return None
        accepted = (names or {}).get(bad, (bad,))
        assert any(a in msg for a in accepted), f"{bad}={args[bad]!r}: the message does not name it: {msg}"
        return None


def _numbers(obj, path=""):
    """(path, number) of every number in a JSON-like object (bools left out)."""
    if isinstance(obj, bool):
        return
    if isinstance(obj, (int, float)):
        yield path, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _numbers(v, f"{path}.{k}")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _numbers(v, f"{path}[{i}]")


def check_workload_output(wl: dict, nodes=None) -> None:
    """The output half of the rule for a workload dict (module docstring)."""
    assert isinstance(wl, dict) and isinstance(wl.get("jobs"), list) and isinstance(wl.get("profiles"), dict)
    for where, x in _numbers(wl):
        assert math.isfinite(x), f"non-finite number at {where}: {x!r}"
    for part in ("jobs", "profiles"):
        for where, x in _numbers(wl[part], part):
            assert x >= 0, f"negative number at {where}: {x!r}"
    for job in wl["jobs"]:
        read_io(job, f"job {job.get('id')!r}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "w.json"
        write_workload(wl, path)
        load_workload(str(path), "w0")
    if nodes is not None:
        dadw.check_workload(wl, nodes)


_ATTR_NUMBER = re.compile(r"\s*(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def check_platform_output(xml: str) -> None:
    """The output half of the rule for a platform's XML text."""
    assert isinstance(xml, str)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.xml"
        path.write_text(xml)
        validate_platform(str(path))
        hosts = read_hosts(str(path))
    assert hosts
    for attr in UNIT_ATTRIBUTES:
        for value in re.findall(rf'\s{attr}="([^"]*)"', xml):
            for part in value.split(","):
                m = _ATTR_NUMBER.match(part)
                assert m, f"{attr}={value!r} is not a number with a unit"
                x = float(m.group(1) + (m.group(2) or ""))
                assert math.isfinite(x) and x >= 0, f"{attr}={value!r}"
                if "lat" not in attr:
                    assert x > 0, f"{attr}={value!r} must be > 0"


# ------------------------------------------------------------------ inputs

SWF_LINES = [
    # job submit wait run alloc cpu mem req_procs req_time req_mem status user group app queue part prev think
    "1 0 0 100 2 -1 -1 2 3600 -1 1 1 1 -1 1 -1 -1 -1",
    "2 10 0 50 1 -1 -1 1 60 -1 1 2 1 -1 1 -1 -1 -1",
    "3 20 0 3000 4 -1 -1 4 7200 -1 1 1 1 -1 1 -1 -1 -1",
    "4 900 0 10 8 -1 -1 8 1800 -1 1 3 1 -1 1 -1 -1 -1",
    "5 950 0 200 1 -1 -1 1 400 -1 1 2 1 -1 1 -1 -1 -1",
]


@pytest.fixture(scope="module")
def swf(tmp_path_factory) -> Path:
    """A five-job SWF trace with user ids."""
    path = tmp_path_factory.mktemp("gen") / "tiny.swf"
    path.write_text("; tiny trace\n" + "\n".join(SWF_LINES) + "\n")
    return path


# ------------------------------------------------------------------ bb

BB_SPEC = {
    "seed": (st.integers(0, 2 ** 32), bad_seed()),
    "nb_res": (st.integers(1, 200), bad_count()),
    "first": (st.one_of(st.none(), st.integers(1, 10)), bad_count()),
    "capacity_per_storage": (st.floats(1e6, 1e12), bad_amount()),
    "nb_storage": (st.integers(1, 20), bad_count()),
    "runtime_factor": (st.floats(0, 100), bad_amount(zero_ok=True)),
    "bandwidth": (st.floats(1e6, 1e12), bad_amount()),
}


@EXAMPLES
@given(data=st.data())
def test_bb_generate(swf, data):
    args, bad = draw_args(data.draw, BB_SPEC)
    out = call(lambda **kw: bbw.generate(swf, **kw), args, bad)
    if out is not None:
        check_workload_output(out)


BB_CAMPAIGN_SPEC = {
    "seed": (st.integers(0, 2 ** 32), bad_seed()),
    "part_days": (st.floats(0.001, 30), bad_amount()),
    "bandwidth_mbps": (st.floats(1, 1e5), bad_amount()),
    "capacity": (st.floats(1e6, 1e12), bad_amount()),
}


@FEW
@given(data=st.data(), parts=st.integers(1, 3))
def test_bb_campaign_parts(swf, data, parts):
    args, bad = draw_args(data.draw, BB_CAMPAIGN_SPEC)
    out = call(lambda **kw: bbw.campaign_workload(swf=swf, parts=parts, **kw), args, bad)
    if out is not None:
        assert len(out) == parts
        for part in out:
            check_workload_output(part)


# ------------------------------------------------------------------ locality

LOC_RECORDS = [
    {"id": 1, "subtime": 0, "runtime": 100, "walltime": 3600, "cores": 2, "user": 1},
    {"id": 2, "subtime": 10, "runtime": 50, "walltime": 60, "cores": 30, "user": 2},
    {"id": 3, "subtime": 20, "runtime": 3000, "walltime": 7200, "cores": 2, "user": 1},
    {"id": 4, "subtime": 900, "runtime": 10, "walltime": 1800, "cores": 8, "user": 3},
]

LOC_SWF_SPEC = {
    "cores_per_node": (st.integers(1, 40), bad_count()),
    "memory_gb": (st.floats(0.001, 1e4), bad_amount()),
    "window": (st.floats(0, 1e5), bad_amount(zero_ok=True)),
}
LOC_NAMES = {"cores_per_node": ("cores per node",), "memory_gb": ("memory per node",)}


@EXAMPLES
@given(data=st.data())
def test_locality_from_swf(data):
    args, bad = draw_args(data.draw, LOC_SWF_SPEC)
    jobs = call(lambda **kw: locw.from_swf(LOC_RECORDS, **kw), args, bad, LOC_NAMES)
    if jobs is not None:
        check_workload_output(locw.to_batsim(jobs))


LOC_BATSIM_SPEC = {
    "nb_res": (st.one_of(st.none(), st.integers(40, 10000)), bad_count()),
    "start": (st.one_of(st.none(), st.integers(0, 10 ** 6)), bad_amount(zero_ok=True)),
}


@EXAMPLES
@given(data=st.data())
def test_locality_to_batsim(data):
    jobs = locw.from_swf(LOC_RECORDS)
    args, bad = draw_args(data.draw, LOC_BATSIM_SPEC)
    out = call(lambda **kw: locw.to_batsim(jobs, **kw), args, bad)
    if out is not None:
        check_workload_output(out)


# ------------------------------------------------------------------ listpack

LP_SPEC = {
    "alpha": (st.floats(0.2, 0.6), st.one_of(bad_amount(), st.just(1), st.just(1.5))),
    "seed": (st.integers(0, 2 ** 32), bad_seed()),
    "n_jobs": (st.integers(5, 12), bad_count()),
    "tol": (st.just(0.05), st.one_of(bad_amount(), st.just(1), st.just(2.0))),
    "max_tries": (st.integers(20, 40), bad_count()),
    "bandwidth": (st.floats(1e6, 1e12), bad_amount()),
    "bn_sd": (st.floats(0.01, 0.3), st.one_of(bad_amount(), st.just(10), st.just(1e3))),
    "no_sd": (st.floats(0.01, 0.3), st.one_of(bad_amount(), st.just(10), st.just(1e3))),
}


@EXAMPLES
@given(data=st.data(), family=st.sampled_from(sorted(lpw.FAMILIES)))
def test_listpack_generate(data, family):
    args, bad = draw_args(data.draw, LP_SPEC)
    # a valid draw may miss the target within max_tries: an InputError then
    out = call(lambda **kw: lpw.generate(family, **kw), args, bad, may_refuse_valid=True)
    if out is not None:
        check_workload_output(lpw.to_batsim(out))


# ------------------------------------------------------------------ dad

def _nodes(n):
    return [platforms.node_name(k, n) for k in range(n)]


DAD_FILES_SPEC = {
    "nb_files": (st.integers(1, 12), bad_count()),
    "size": (st.floats(1, 1e12), bad_amount()),
    "nb_nodes": (st.integers(1, 6), bad_count()),
}


@EXAMPLES
@given(data=st.data())
def test_dad_file_benchmark(data):
    args, bad = draw_args(data.draw, DAD_FILES_SPEC)
    out = call(dadw.file_benchmark, args, bad)
    if out is not None:
        check_workload_output(out, _nodes(args["nb_nodes"]))


DAD_SHARES_SPEC = {
    "slowdown": (st.floats(0.01, 2), bad_amount()),
    "set_bytes": (st.floats(1e6, 1e12), bad_amount()),
    "slots": (st.integers(1, 16), bad_count()),
    "local_bw": (st.floats(1e9, 1e10), bad_amount()),
    "nic_bw": (st.floats(1e7, 2e8), bad_amount()),
    "speed": (st.floats(1e6, 1e12), bad_amount()),
}


@EXAMPLES
@given(data=st.data())
def test_dad_blast_shares(data):
    args, bad = draw_args(data.draw, DAD_SHARES_SPEC)
    out = call(dadw.blast_shares, args, bad)
    if out is not None:
        for key, x in out.items():
            assert math.isfinite(x) and x >= 0, (key, x)


DAD_BLAST_SPEC = {
    "nb_tasks": (st.integers(1, 4), bad_count()),
    "slots": (st.integers(1, 8), bad_count()),
    "nb_nodes": (st.integers(2, 5), bad_count()),
    "set_files": (st.integers(1, 3), bad_count()),
    "set_bytes": (st.floats(1e6, 1e11), bad_amount()),
    "slowdown_x": (st.floats(0.01, 2), bad_amount()),
    "slowdown_n": (st.floats(0.01, 2), bad_amount()),
    "set_bytes_n": (st.one_of(st.none(), st.floats(1e6, 1e11)), bad_amount().filter(lambda v: v is not None)),
    "local_bw": (st.floats(1e9, 1e10), bad_amount()),
    "nic_bw": (st.floats(1e7, 2e8), bad_amount()),
    "speed": (st.floats(1e6, 1e12), bad_amount()),
    "replicas": (st.integers(1, 2), bad_count()),
}


@EXAMPLES
@given(data=st.data())
def test_dad_blast_like(data):
    args, bad = draw_args(data.draw, DAD_BLAST_SPEC)
    out = call(dadw.blast_like, args, bad)
    if out is not None:
        check_workload_output(out, _nodes(args["nb_nodes"]))


DAD_TRACE_SPEC = {
    "nb_nodes": (st.integers(2, 6), bad_count()),
    "slots": (st.integers(1, 8), bad_count()),
    "first": (st.integers(1, 10), bad_count()),
    "seed": (st.integers(0, 2 ** 32), bad_seed()),
    "nb_sets": (st.integers(0, 4), bad_count(zero_ok=True)),
    "files_per_set": (st.integers(1, 3), bad_count()),
    "file_bytes": (st.floats(1, 1e11), bad_amount()),
    "replicas": (st.integers(1, 2), bad_count()),
    "io_queue_share": (st.floats(0, 1), st.one_of(bad_amount(zero_ok=True), st.just(1.5))),
    "speed": (st.floats(1e6, 1e12), bad_amount()),
    "max_runtime": (st.floats(1, 1e5), bad_amount()),
    # a tiny load stretches the arrivals beyond MAX_TIME: refused (tested with the bad values)
    "load": (st.one_of(st.just(0.0), st.floats(0.01, 4)), st.one_of(bad_amount(zero_ok=True), st.just(1e-300))),
}


@EXAMPLES
@given(data=st.data())
def test_dad_trace_driven(swf, data):
    args, bad = draw_args(data.draw, DAD_TRACE_SPEC)
    out = call(lambda **kw: dadw.trace_driven(swf, **kw), args, bad)
    if out is not None:
        check_workload_output(out, _nodes(args["nb_nodes"]))


# ------------------------------------------------------------------ pfsbw

PFS_SPEC = {
    "waves": (st.integers(1, 2), bad_count()),
    "sleep": (st.floats(0.001, 1e5), bad_amount()),
    "walltime": (st.floats(1, 1e5), bad_amount()),
    "noise": (st.floats(0, 0.99), st.one_of(bad_amount(zero_ok=True), st.just(1), st.just(1.5))),
    "seed": (st.integers(0, 2 ** 32), bad_seed()),
}


@EXAMPLES
@given(data=st.data())
def test_pfsbw_workload(data):
    args, bad = draw_args(data.draw, PFS_SPEC)
    out = call(lambda **kw: pfsw.workload(phases=((8, 2), (2, 1), ("sleep", 2)), **kw), args, bad)
    if out is not None:
        check_workload_output(out)


@FEW
@given(data=st.data(), which=st.sampled_from([pfsw.workload1, pfsw.workload2]))
def test_pfsbw_workload1_2(data, which):
    spec = {k: PFS_SPEC[k] for k in ("sleep", "noise", "seed")}
    spec["waves"] = (st.just(1), bad_count())
    args, bad = draw_args(data.draw, spec)
    out = call(which, args, bad)
    if out is not None:
        check_workload_output(out)


# ------------------------------------------------------------------ platforms

def quantity(units: tuple, lo: float, hi: float):
    """A valid SimGrid quantity: a number or a string with a unit."""
    return st.one_of(st.floats(lo, hi), st.integers(int(max(lo, 1)), int(hi)),
                     st.builds(lambda x, u: f"{x:g}{u}", st.floats(lo, hi), st.sampled_from(units)))


BAD_QUANTITY = st.one_of(bad_amount(), st.sampled_from(["12 parsecs", "1e400Bps", "-5MBps", "nanGf", "MBps"]))
BAD_LATENCY = st.one_of(bad_amount(zero_ok=True), st.sampled_from(["1e400s", "-1us", "infs", "us"]))

CLUSTER_SPEC = {
    "nb_nodes": (st.integers(1, 6), bad_count()),
    "speed": (quantity(("Gf", "Mf", "f"), 1, 1e12), BAD_QUANTITY),
    "bw": (quantity(("MBps", "GBps", "Bps"), 1, 1e12), BAD_QUANTITY),
    "lat": (quantity(("us", "ms", "s"), 0, 1), BAD_LATENCY),
    "bb_bw": (quantity(("MBps", "GBps"), 1, 1e6), BAD_QUANTITY),
    "bb_lat": (quantity(("us", "ms"), 0, 1000), BAD_LATENCY),
}


@EXAMPLES
@given(data=st.data(), with_pfs=st.booleans())
def test_cluster_xml(data, with_pfs):
    spec = dict(CLUSTER_SPEC)
    if with_pfs:
        spec["pfs_bw"] = CLUSTER_SPEC["bw"]
        spec["pfs_lat"] = CLUSTER_SPEC["lat"]
    args, bad = draw_args(data.draw, spec)

    def run(pfs_bw=None, pfs_lat=None, **kw):
        return platforms.cluster_xml(pfs=None if pfs_bw is None else {"bw": pfs_bw, "lat": pfs_lat}, **kw)

    out = call(run, args, bad, {"pfs_bw": ("pfs.bw",), "pfs_lat": ("pfs.lat",)})
    if out is not None:
        check_platform_output(out)


NUSA_SPEC = {
    "nb_nodes": (st.integers(1, 4), bad_count()),
    "slots": (st.integers(1, 4), bad_count()),
    "speed": (quantity(("Gf", "Mf"), 1, 1e6), BAD_QUANTITY),
    "nic_bw": (quantity(("MBps", "GBps"), 1, 1e6), BAD_QUANTITY),
    "nic_lat": (quantity(("us", "ms"), 0, 1000), BAD_LATENCY),
    "local_bw": (quantity(("MBps", "GBps"), 1, 1e6), BAD_QUANTITY),
}


@EXAMPLES
@given(data=st.data())
def test_nusa_xml(data):
    args, bad = draw_args(data.draw, NUSA_SPEC)
    out = call(platforms.nusa_xml, args, bad)
    if out is not None:
        check_platform_output(out)


LOC_PLATFORM_SPEC = {
    "nodes": (st.integers(1, 4), bad_count()),
    "cores": (st.integers(1, 4), bad_count()),
    "bandwidth": (st.floats(1e3, 1e12), bad_amount()),
    "memory": (st.floats(1e3, 1e12), bad_amount()),
    "pfs_bandwidth": (st.floats(1e3, 1e12), bad_amount()),
}


@EXAMPLES
@given(data=st.data(), io_model=st.sampled_from(platforms.LOCALITY_IO_MODELS))
def test_locality_xml(data, io_model):
    args, bad = draw_args(data.draw, LOC_PLATFORM_SPEC)
    out = call(lambda **kw: platforms.locality_xml(io_model=io_model, **kw), args, bad)
    if out is not None:
        check_platform_output(out)
        memory = re.findall(r'<prop id="memory" value="([^"]*)"', out)
        assert memory and all(math.isfinite(float(m)) and float(m) > 0 for m in memory)


PFSBW_PLATFORM_SPEC = {
    "nb_nodes": (st.integers(1, 4), bad_count()),
    "node_bw": (st.floats(1e3, 1e12), bad_amount()),
    "pfs_bw": (st.floats(1e3, 1e12), bad_amount()),
    "thread_bw": (st.floats(1e3, 1e12), bad_amount()),
    "cores": (st.integers(1, 8), bad_count()),
}


@EXAMPLES
@given(data=st.data())
def test_pfsbw_xml(data):
    args, bad = draw_args(data.draw, PFSBW_PLATFORM_SPEC)
    out = call(platforms.pfsbw_xml, args, bad)
    if out is not None:
        check_platform_output(out)


@FEW
@given(nb_nodes=st.one_of(st.integers(1, 6), bad_count()))
def test_listpack_xml(nb_nodes):
    valid = isinstance(nb_nodes, int) and not isinstance(nb_nodes, bool) and nb_nodes >= 1
    out = call(platforms.listpack_xml, {"nb_nodes": nb_nodes}, None if valid else "nb_nodes")
    if out is not None:
        check_platform_output(out)


@settings(max_examples=30, deadline=None)
@given(routing=st.one_of(_JUNK, _NONFINITE, st.sampled_from(["Minimal", "SIMGRID", " minimal"])))
def test_dragonfly96_xml_bad_routing(routing):
    with pytest.raises(InputError) as info:
        platforms.dragonfly96_xml(routing)
    assert "\n" not in str(info.value) and "routing" in str(info.value)


def test_dragonfly96_xml_valid():
    for routing in platforms.DRAGONFLY_ROUTINGS:
        check_platform_output(platforms.dragonfly96_xml(routing))


def test_the_rule_catches_what_it_should():
    """The checks above can fail: a non-finite number, a negative one, a
    message of two lines or one not naming the argument are caught."""
    with pytest.raises(AssertionError):
        check_workload_output({"nb_res": 1, "jobs": [], "profiles": {"p": {"type": "delay", "delay": math.nan}}})
    with pytest.raises(AssertionError):
        check_workload_output({"nb_res": 1, "jobs": [], "profiles": {"p": {"type": "delay", "delay": -1}}})
    with pytest.raises(AssertionError):
        check_platform_output(platforms.pfsbw_xml(1).replace('speed="1Gf"', 'speed="0Gf"'))

    def two_lines(x):
        raise InputError("x is bad\nreally")

    def other_name(x):
        raise InputError("something is bad")

    for fn in (two_lines, other_name):
        with pytest.raises(AssertionError):
            call(fn, {"x": 1}, "x")
    with pytest.raises(AssertionError):
        call(two_lines, {"x": 1}, None)


#: The holes the properties found in the generators (issue 31): each call
#: returned a wrong output or raised another exception before the fix.
HOLES = [
    ("bb generate nb_storage=0 (ZeroDivisionError)", lambda swf: bbw.generate(swf, nb_storage=0), "nb_storage"),
    ("bb generate seed=-1 (numpy ValueError)", lambda swf: bbw.generate(swf, seed=-1), "seed"),
    ("bb generate capacity -1 (negative burst buffer)",
     lambda swf: bbw.generate(swf, capacity_per_storage=-1), "capacity_per_storage"),
    ("bb generate runtime_factor nan (ValueError)", lambda swf: bbw.generate(swf, runtime_factor=math.nan),
     "runtime_factor"),
    ("bb generate bandwidth 'x' (TypeError)", lambda swf: bbw.generate(swf, bandwidth="x"), "bandwidth"),
    ("bb campaign part_days None (TypeError)",
     lambda swf: bbw.campaign_workload(swf=swf, parts=2, part_days=None), "part_days"),
    ("locality memory 1e300 (infinite file size)", lambda swf: locw.from_swf(LOC_RECORDS, memory_gb=1e300),
     "memory per node"),
    ("locality to_batsim start nan (ValueError)",
     lambda swf: locw.to_batsim(locw.from_swf(LOC_RECORDS), start=math.nan), "start"),
    ("listpack bandwidth 1.7e308 (infinite volumes)", lambda swf: lpw.generate("U-BN", 0.4, bandwidth=1.7e308),
     "bandwidth"),
    ("dad file_benchmark size inf (inf in profiles)", lambda swf: dadw.file_benchmark(size=math.inf), "size"),
    ("dad file_benchmark nb_files '3' (TypeError)", lambda swf: dadw.file_benchmark(nb_files="3"), "nb_files"),
    ("dad blast_shares speed nan (NaN shares)",
     lambda swf: dadw.blast_shares(0.2, 1e9, 4, 2e9, 1e8, math.nan), "speed"),
    ("dad trace_driven load 1e-300 (infinite subtimes)",
     lambda swf: dadw.trace_driven(swf, 4, 2, first=5, load=1e-300), "load"),
    ("dad trace_driven seed -1 (numpy ValueError)", lambda swf: dadw.trace_driven(swf, 4, 2, seed=-1), "seed"),
    ("pfsbw workload sleep 'x' (TypeError)", lambda swf: pfsw.workload1(1, sleep="x"), "sleep"),
    ("pfsbw workload seed -1 (numpy ValueError)", lambda swf: pfsw.workload1(1, seed=-1), "seed"),
    ("pfsbw_xml pfs_bw inf (infBps)", lambda swf: platforms.pfsbw_xml(2, pfs_bw=math.inf), "pfs_bw"),
    ("cluster_xml bw 10**400 (OverflowError)", lambda swf: platforms.cluster_xml(2, bw=10 ** 400), "bw"),
    ("locality_xml memory 10**400 (OverflowError)", lambda swf: platforms.locality_xml(2, 2, memory=10 ** 400),
     "memory"),
]


@pytest.mark.parametrize("what, make, name", HOLES, ids=[h[0] for h in HOLES])
def test_the_holes_found_are_closed(swf, what, make, name):
    with pytest.raises(InputError) as info:
        make(swf)
    msg = str(info.value)
    assert "\n" not in msg and name in msg, msg

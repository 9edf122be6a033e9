"""The file system under overload (issue 30 item 2): ``--link-overload``, a
link whose capacity is a curve of its concurrent transfers, an
embedded-only feature behind ``--embedded-extensions``
(:mod:`iosched.engine.overload`)."""

import csv
import json

import pytest

import iosched
from iosched.engine.overload import OverloadCurve, parse_bandwidth, parse_overload
from iosched.errors import InputError
from iosched.experiments.pfsbw.workload import OVERLOAD, overload_args
from test_engine_e2e import engine

GIB = 2.0 ** 30

#: Compute hosts h0..h3 (one 100 GiB/s link each, no latency) and a storage
#: host pfs behind the shared link pfs_link (20 GiB/s in the XML); no
#: latency anywhere, so a transfer's duration is its bytes over its rate.
_HOSTS = range(4)
PLATFORM = (
    "<?xml version='1.0'?>\n"
    '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
    '<platform version="4.1"><zone id="AS0" routing="Full">\n'
    '<host id="master_host" speed="1Gf"><prop id="role" value="master"/></host>\n'
    '<host id="pfs" speed="1Gf"><prop id="role" value="storage"/></host>\n'
    '<link id="pfs_link" bandwidth="20GiBps" latency="0s"/><link id="ctl" bandwidth="100GiBps" latency="0s"/>\n'
    + "".join(f'<host id="h{i}" speed="1Gf"/><link id="l{i}" bandwidth="100GiBps" latency="0s"/>\n'
              for i in _HOSTS)
    + "".join(f'<route src="h{i}" dst="pfs"><link_ctn id="l{i}"/><link_ctn id="pfs_link"/></route>\n'
              f'<route src="h{i}" dst="master_host"><link_ctn id="ctl"/></route>\n' for i in _HOSTS)
    + '<route src="pfs" dst="master_host"><link_ctn id="ctl"/></route>\n</zone></platform>\n'
)


def _write(n_res, nbytes, walltimes=None):
    """One job per entry of *nbytes*: ``n_res`` executors each writing that
    many bytes to ``pfs``, all submitted at t = 0."""
    walltimes = walltimes or [1000.0] * len(nbytes)
    return {"nb_res": 4, "jobs": [{"id": str(i), "subtime": 0, "res": n_res, "walltime": w,
                                   "profile": f"p{i}"} for i, w in enumerate(walltimes)],
            "profiles": {f"p{i}": {"type": "parallel_homogeneous_pfs", "bytes_to_write": float(b),
                                   "storage": "pfs"} for i, b in enumerate(nbytes)}}


def _run(tmp_path, wl, overload=None, name="o", extra=()):
    plat = tmp_path / "platform.xml"
    plat.write_text(PLATFORM)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(wl))
    args = ["--embedded-extensions", f"--link-overload={overload}"] if overload else []
    df = iosched.simulate(plat, path, "fcfs", output_dir=tmp_path / name,
                          engine_args=args + list(extra), in_process=True)
    return df.set_index("job_id").sort_index()


# ----------------------------------------------------------- specification
def test_curve_is_piecewise_linear_and_constant_outside_its_points():
    c = parse_overload("pfs_link:20GiB@5,15GiB@10")
    assert c == OverloadCurve("pfs_link", ((5, 20 * GIB), (10, 15 * GIB)), "tasks")
    assert [c.capacity(n) / GIB for n in (0, 1, 5, 6, 7, 9, 10, 11, 100)] == \
        [20, 20, 20, 19, 18, 16, 15, 15, 15]
    assert parse_overload("a:b:1e9@1:flows") == OverloadCurve("a:b", ((1, 1e9),), "flows")
    assert parse_bandwidth("15GiBps", "x") == 15 * GIB
    assert parse_bandwidth("2.5GB/s", "x") == 2.5e9
    assert parse_bandwidth("1e3", "x") == 1000.0


@pytest.mark.parametrize("spec, message", [
    ("pfs_link", "expected LINK:BW@N"),
    (":20GiB@1", "no link name"),
    ("pfs_link:", "expected LINK:BW@N"),
    ("pfs_link:20GiB", "is not BW@N"),
    ("pfs_link:20GiB@0", "N must be an integer >= 1"),
    ("pfs_link:20GiB@1.5", "N must be an integer >= 1"),
    ("pfs_link:20GiB@5,15GiB@5", "N must increase"),
    ("pfs_link:20XB@1", "is not a number with an optional unit"),
    ("pfs_link:0GiB@1", "must be > 0"),
    ("pfs_link:1e400@1", "must be > 0"),
    ("pfs_link:20GiB@1:threads", "unknown count 'threads'"),
])
def test_bad_curve_specs_are_refused_in_one_line(spec, message):
    with pytest.raises(InputError, match=message) as info:
        parse_overload(spec)
    text = str(info.value)
    assert "\n" not in text and text.startswith("--link-overload")


def test_bad_spec_unknown_link_and_missing_flag_are_one_line_errors(tmp_path):
    plat = tmp_path / "platform.xml"
    plat.write_text(PLATFORM)
    w = tmp_path / "w.json"
    w.write_text(json.dumps(_write(1, [GIB])))
    base = ["-p", plat, "-w", w, "-e", tmp_path / "out"]
    cases = [(["--embedded-extensions", "--link-overload", "pfs_link:20GiB"], 2, "is not BW@N"),
             (["--link-overload", OVERLOAD], 1, "give --embedded-extensions"),
             (["--embedded-extensions", "--link-overload", "nope:1GiB@1"], 1, "has no link 'nope'")]
    for args, code, message in cases:
        r = engine(*base, *args)
        assert r.returncode == code, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0] and "--link-overload" in lines[0], r.stderr
    with pytest.raises(InputError, match="--link-overload"):
        overload_args("pfs_link:x@1")
    assert overload_args("") == [] and overload_args(OVERLOAD)[0] == "--embedded-extensions"


# ------------------------------------------------------------------ physics
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_overload_n_concurrent_writers_get_the_curves_total(tmp_path, n):
    """n one-executor jobs writing together: total rate = curve(n) (tasks)."""
    curve = "pfs_link:20GiB@1,16GiB@2,10GiB@4"
    cap = parse_overload(curve).capacity(n)
    df = _run(tmp_path, _write(1, [8 * GIB] * n), curve)
    span = df["finish_time"].max() - df["starting_time"].min()
    assert n * 8 * GIB / span == pytest.approx(cap, rel=1e-6)
    lin = _run(tmp_path, _write(1, [8 * GIB] * n), None, name="linear")
    lin_span = lin["finish_time"].max() - lin["starting_time"].min()
    assert n * 8 * GIB / lin_span == pytest.approx(20 * GIB, rel=1e-6)  # the XML's 20 GiB/s


def test_overload_counts_flows_when_asked(tmp_path):
    """One job of 4 executors: 1 task but 4 flows on the link."""
    wl = _write(4, [10 * GIB])
    tasks = _run(tmp_path, wl, "pfs_link:12GiB@1,6GiB@4", name="tasks")
    flows = _run(tmp_path, wl, "pfs_link:12GiB@1,6GiB@4:flows", name="flows")
    assert 40 * GIB / tasks["execution_time"].iloc[0] == pytest.approx(12 * GIB, rel=1e-6)
    assert 40 * GIB / flows["execution_time"].iloc[0] == pytest.approx(6 * GIB, rel=1e-6)


@pytest.mark.parametrize("direct", [True, False])
def test_sharing_nonlinear_capacity_returns_when_writers_leave(tmp_path, direct):
    """Curve 10 GiB/s alone, 4 GiB/s for two. A (4 GiB) and B (8 GiB) share
    4 GiB/s: A ends at 2 s, B has 4 GiB left at 10 GiB/s: ends at 2.4 s
    (linear 10 GiB/s: 0.8 s and 1.2 s). Same with every task on a worker
    actor (``--no-direct-tasks``)."""
    extra = [] if direct else ["--no-direct-tasks"]
    df = _run(tmp_path, _write(1, [4 * GIB, 8 * GIB]), "pfs_link:10GiB@1,4GiB@2", extra=extra)
    assert df.iloc[0]["execution_time"] == pytest.approx(2.0, rel=1e-6)
    assert df.iloc[1]["execution_time"] == pytest.approx(2.4, rel=1e-6)


def test_overload_writer_killed_at_walltime_leaves_the_link(tmp_path):
    """A (100 GiB, walltime 1 s) and B (8 GiB) share 4 GiB/s for 1 s; then B
    is alone at 10 GiB/s: 6 GiB more, 0.6 s: B ends at 1.6 s."""
    df = _run(tmp_path, _write(1, [100 * GIB, 8 * GIB], walltimes=[1.0, 1000.0]),
              "pfs_link:10GiB@1,4GiB@2")
    assert df.iloc[0]["final_state"] == "COMPLETED_WALLTIME_REACHED"
    assert df.iloc[1]["execution_time"] == pytest.approx(1.6, rel=1e-6)


def test_extension_constant_curve_at_the_xml_bandwidth_changes_nothing(tmp_path):
    """A curve equal to the XML's bandwidth gives the linear run's outputs
    byte for byte (the option only sets the link's bandwidth)."""
    wl = _write(1, [3 * GIB, 5 * GIB, 7 * GIB, 11 * GIB])
    _run(tmp_path, wl, None, name="linear")
    _run(tmp_path, wl, "pfs_link:20GiB@1", name="constant")
    a = (tmp_path / "linear" / "out_jobs.csv").read_bytes()
    b = (tmp_path / "constant" / "out_jobs.csv").read_bytes()
    assert a == b and len(list(csv.reader(a.decode().splitlines()))) == 5

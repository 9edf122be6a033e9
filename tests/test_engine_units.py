"""Unit tests of the embedded engine's pure parts (no SimGrid run)."""

import json
from types import SimpleNamespace

import pytest
from hypothesis import given, strategies as st

from iosched.engine import export
from iosched.engine.execution import TIE_RESIDUE, ExecutionMixin
from iosched.engine.export import ExportMixin
from iosched.engine.platform import build_resources, parse_role_maps, read_hosts
from iosched.engine.tasks import Delay, PTask, build_steps, merge_ptasks, total_delay
from iosched.engine.workload import load_workload
from iosched.errors import InputError, ProtocolError

PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="AS0" routing="Full">
  <cluster id="c" prefix="n" suffix="" radical="0-2,5" speed="1Gf" bw="125MBps" lat="50us"/>
  <host id="master_host" speed="1Gf"/>
  <host id="disk" speed="1Gf"><prop id="role" value="storage"/><prop id="kind" value="ssd"/></host>
</zone>
</platform>
"""


def write(tmp_path, name, content):
    p = tmp_path / name
    p.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(p)


def test_read_hosts_expands_clusters_and_properties(tmp_path):
    hosts = read_hosts(write(tmp_path, "p.xml", PLATFORM))
    assert sorted(hosts) == ["disk", "master_host", "n0", "n1", "n2", "n5"]
    assert hosts["disk"].properties == {"role": "storage", "kind": "ssd"}


def test_build_resources_numbers_compute_then_storage(tmp_path):
    path = write(tmp_path, "p.xml", PLATFORM)
    names = sorted(["disk", "master_host", "n0", "n1", "n2", "n5"])
    res = build_resources(path, names)
    assert [r.name for r in res.compute] == ["n0", "n1", "n2", "n5"]
    assert [(r.id, r.name) for r in res.storage] == [(4, "disk")]
    assert res.master == "master_host"
    # -r moves a compute host to storage, --mmax limits compute hosts
    res = build_resources(path, names, role_maps=["n1:storage"], mmax=2)
    assert [r.name for r in res.compute] == ["n0", "n2"]
    assert [r.name for r in res.storage] == ["disk", "n1"]
    assert res.storage[0].to_json()["properties"]["role"] == "storage"


def test_unknown_host_in_role_map_is_an_input_error(tmp_path):
    path = write(tmp_path, "p.xml", PLATFORM)
    with pytest.raises(InputError, match="unknown host 'nope'"):
        build_resources(path, ["master_host", "n0"], role_maps=["nope:storage"])
    with pytest.raises(InputError, match="unsupported role"):
        parse_role_maps(["n0:gpu"])


def test_invalid_platform_xml(tmp_path):
    with pytest.raises(InputError, match="invalid platform XML"):
        read_hosts(write(tmp_path, "p.xml", "<platform><zone></platform>"))
    with pytest.raises(InputError, match="not found"):
        read_hosts(str(tmp_path / "missing.xml"))


GOOD = {
    "nb_res": 4,
    "jobs": [{"id": 1, "subtime": 0, "walltime": 10, "res": 2, "profile": "d"}],
    "profiles": {"d": {"type": "delay", "delay": 5}},
}


@pytest.mark.parametrize("mutate, message", [
    (lambda w: w["profiles"].update(x={"type": "nope"}), "unknown profile type 'nope'"),
    (lambda w: w["profiles"].update(x={"type": "smpi", "trace": "t"}), "out of scope"),
    (lambda w: w["jobs"].append({"id": 2, "subtime": 0, "res": 1, "profile": "zz"}), "unknown profile 'zz'"),
    (lambda w: w["jobs"].append({"id": 1, "subtime": 0, "res": 1, "profile": "d"}), "duplicate job id '1'"),
    (lambda w: w["jobs"][0].update(subtime="3"), r"jobs\[0\] \(id '1'\): field 'subtime': not a number"),
    (lambda w: w["jobs"][0].update(walltime="ten"), r"jobs\[0\] \(id '1'\): field 'walltime'"),
    (lambda w: w["jobs"][0].update(walltime=-5), "walltime': must be > 0 or -1"),
    (lambda w: w["jobs"][0].update(res=-1), r"jobs\[0\] \(id '1'\): field 'res': must be >= 0"),
    (lambda w: w["profiles"]["d"].update(delay=-1), "profile 'd'.*delay"),
    (lambda w: w["profiles"].update(c={"type": "composed", "seq": ["c"]}), "cycle"),
    (lambda w: w["profiles"].update(p={"type": "parallel", "cpu": [1, 2], "com": [0]}), "expected 2\\^2"),
    (lambda w: w.pop("profiles"), "no 'profiles' field"),
])
def test_bad_workloads_name_file_and_field(tmp_path, mutate, message):
    w = json.loads(json.dumps(GOOD))
    mutate(w)
    path = write(tmp_path, "w.json", w)
    with pytest.raises(InputError, match=message) as exc:
        load_workload(path, "w0")
    assert path in str(exc.value) and "\n" not in str(exc.value)


def test_invalid_json_workload(tmp_path):
    path = write(tmp_path, "w.json", '{"jobs": [}')
    with pytest.raises(InputError, match="invalid JSON"):
        load_workload(path, "w0")


def test_jobs_get_workload_prefixed_ids_and_keep_extra_fields(tmp_path):
    w = json.loads(json.dumps(GOOD))
    w["jobs"][0]["user_id"] = 7
    wl = load_workload(write(tmp_path, "w.json", w), "w3")
    (job,) = wl.jobs
    assert job.id == "w3!1" and job.json["id"] == "w3!1" and job.json["user_id"] == 7
    assert job.walltime == 10.0


PROFILES = {
    "d": {"type": "delay", "delay": 3},
    "ph": {"type": "parallel_homogeneous", "cpu": 10.0, "com": 2.0},
    "pht": {"type": "parallel_homogeneous_total", "cpu": 12.0, "com": 6.0},
    "pfs": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 5.0, "bytes_to_write": 7.0},
    "stage": {"type": "data_staging", "nb_bytes": 9.0, "from": "a", "to": "b"},
    "seq": {"type": "composed", "repeat": 2, "seq": ["d", "ph"]},
    "par": {"type": "parallel", "cpu": [1.0, 2.0], "com": [0.0, 3.0, 4.0, 0.0]},
}


def test_parallel_homogeneous_matrices():
    (t,) = build_steps("j", "ph", PROFILES, [4, 6, 9], None, [])
    assert t.hosts == [4, 6, 9] and t.cpu == [10.0] * 3
    assert t.com == [0, 2, 2, 2, 0, 2, 2, 2, 0]


def test_parallel_homogeneous_total_divides_by_n_as_batsim_421():
    (t,) = build_steps("j", "pht", PROFILES, [0, 1, 2], None, [])
    assert t.cpu == [4.0] * 3
    assert t.com[1] == pytest.approx(2.0)  # com / n, what the real Batsim 4.2.1 does


def test_pfs_profile_uses_the_only_storage_or_the_mapping():
    (t,) = build_steps("j", "pfs", PROFILES, [0, 1], None, [8])
    assert t.hosts == [0, 1, 8]
    m = 3
    assert t.com[2 * m + 0] == 5.0 and t.com[2 * m + 1] == 5.0  # reads: storage -> hosts
    assert t.com[0 * m + 2] == 7.0 and t.com[1 * m + 2] == 7.0  # writes: hosts -> storage
    (t,) = build_steps("j", "pfs", PROFILES, [0, 1], {"pfs": 9}, [8, 9])
    assert t.hosts[-1] == 9
    with pytest.raises(ProtocolError, match="storage_mapping"):
        build_steps("j", "pfs", PROFILES, [0, 1], None, [8, 9])


def test_data_staging_and_composed():
    (t,) = build_steps("j", "stage", PROFILES, [0], {"a": 5, "b": 6}, [5, 6])
    assert t.hosts == [5, 6] and t.com == [0.0, 9.0, 0.0, 0.0]
    steps = build_steps("j", "seq", PROFILES, [0, 1], None, [])
    assert [type(s) for s in steps] == [Delay, PTask, Delay, PTask]
    assert total_delay(steps) is None
    assert total_delay(build_steps("j", "d", PROFILES, [0], None, [])) == 3.0


def test_parallel_profile_size_must_match_the_allocation():
    with pytest.raises(ProtocolError, match="describes 2 executors but the job has 3"):
        build_steps("j", "par", PROFILES, [0, 1, 2], None, [])


@given(st.lists(st.integers(0, 6), min_size=1, max_size=4, unique=True),
       st.lists(st.integers(0, 6), min_size=1, max_size=4, unique=True),
       st.data())
def test_merge_ptasks_preserves_totals(h1, h2, data):
    def rnd(hosts):
        n = len(hosts)
        cpu = data.draw(st.lists(st.floats(0, 1e6), min_size=n, max_size=n))
        com = data.draw(st.lists(st.floats(0, 1e6), min_size=n * n, max_size=n * n))
        return PTask(hosts, cpu, com)

    a, b = rnd(h1), rnd(h2)
    m = merge_ptasks(a, b)
    assert set(m.hosts) == set(h1) | set(h2) and len(m.hosts) == len(set(m.hosts))
    assert sum(m.cpu) == pytest.approx(sum(a.cpu) + sum(b.cpu))
    assert sum(m.com) == pytest.approx(sum(a.com) + sum(b.com))


def _alloc_parser(nb_res=8):
    from types import SimpleNamespace

    return SimpleNamespace(nb_res=nb_res, _allocs={}, _alloc_ids=0)


@pytest.mark.parametrize("text, ids, canonical, itvs", [
    ("0-3 7", (0, 1, 2, 3, 7), "0-3 7", ((0, 3), (7, 7))),
    ("5", (5,), "5", ((5, 5),)),
    ("7 0-1", (0, 1, 7), "0-1 7", ((0, 1), (7, 7))),      # not sorted: normalised
    ("0-1 2-3", (0, 1, 2, 3), "0-3", ((0, 3),)),          # adjacent intervals: merged
])
def test_parse_alloc_returns_ids_and_canonical_text(text, ids, canonical, itvs):
    from iosched.engine.server import Simulation

    fake = _alloc_parser()
    first = Simulation._parse_alloc(fake, text, "EXECUTE_JOB x")
    assert first == (ids, canonical, itvs)
    assert Simulation._parse_alloc(fake, text, "EXECUTE_JOB y") is first   # from the table
    assert fake._alloc_ids == len(ids)


def test_parse_alloc_table_is_emptied_when_full(monkeypatch):
    """The table of parsed allocations holds at most _ALLOC_TABLE resource
    ids; when the next string would pass that, it starts again empty, and
    the answers stay the parser's."""
    from iosched.engine import protocol
    from iosched.engine.server import Simulation

    monkeypatch.setattr(protocol, "_ALLOC_TABLE", 6)
    fake = _alloc_parser()
    assert Simulation._parse_alloc(fake, "0-3", "x")[0] == (0, 1, 2, 3)
    assert Simulation._parse_alloc(fake, "5", "x")[0] == (5,)
    assert set(fake._allocs) == {"0-3", "5"} and fake._alloc_ids == 5
    assert Simulation._parse_alloc(fake, "6-7", "x")[0] == (6, 7)      # 5 + 2 > 6: emptied first
    assert set(fake._allocs) == {"6-7"} and fake._alloc_ids == 2
    assert Simulation._parse_alloc(fake, "0-3", "x") == ((0, 1, 2, 3), "0-3", ((0, 3),))


@pytest.mark.parametrize("text, message", [
    ("0-8", "outside the machine"), ("a-b", "invalid allocation"), (3, "interval-set string"),
])
def test_parse_alloc_errors(text, message):
    from iosched.engine.server import Simulation

    fake = _alloc_parser()
    for _ in range(2):  # refused again: a refused string is not kept
        with pytest.raises(ProtocolError, match=message):
            Simulation._parse_alloc(fake, text, "EXECUTE_JOB x")
    assert fake._allocs == {}


@pytest.mark.parametrize("profile", [
    {"type": "parallel", "cpu": [1, 2.5], "com": [0, 1, 2, 0]},
    {"type": "parallel_homogeneous", "cpu": 1, "com": 0, "generation_strategy": "DefinedAmountsUsedForEachValue"},
    {"type": "parallel_homogeneous_total", "cpu": 1e9, "com": 1e6},
    {"type": "parallel_homogeneous_pfs", "bytes_to_read": 1, "bytes_to_write": 0, "storage": "nfs"},
    {"type": "data_staging", "nb_bytes": 3, "from": "a", "to": "b"},
    {"type": "composed", "seq": ["x"], "repeat": 2},
])
def test_valid_profiles_are_accepted(profile):
    from iosched.engine.workload import validate_profile

    assert validate_profile("p", profile, "f") is None


@given(st.sampled_from(["parallel", "parallel_homogeneous", "parallel_homogeneous_pfs",
                        "data_staging", "composed", "delay"]),
       st.dictionaries(st.sampled_from(["cpu", "com", "delay", "bytes_to_read", "bytes_to_write",
                                        "storage", "host", "nb_bytes", "from", "to", "seq", "repeat",
                                        "generation_strategy", "ret"]),
                       st.one_of(st.integers(-3, 3), st.floats(-1, 1e3, allow_nan=False), st.booleans(),
                                 st.sampled_from(["", "a", "DefinedAmountsSpreadUniformly"]),
                                 st.lists(st.integers(-1, 3), max_size=4),
                                 st.lists(st.sampled_from(["a", "b"]), max_size=3)),
                       max_size=5))
def test_profile_check_answers_with_one_line_or_accepts(ptype, fields):
    from iosched.engine.workload import validate_profile

    try:
        validate_profile("p", {"type": ptype, **fields}, "f")
    except InputError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("f: profile 'p': ")


def test_allocation_intervals_and_masks():
    from iosched.engine.jobs import intervals_of, mask_of

    assert intervals_of("") == ()
    assert intervals_of("0-3 7 9-10") == ((0, 3), (7, 7), (9, 10))
    assert mask_of(intervals_of("0-3 7 9-10")) == sum(1 << i for i in (0, 1, 2, 3, 7, 9, 10))
    assert mask_of(()) == 0


# ------------------------------------------------ per-machine totals (export)
class _Ended:
    """What ExportMixin._row reads of a job that ran."""

    def __init__(self, start, finish, itv):
        self.start, self.finish, self.alloc_itv = start, finish, itv
        self.walltime, self.subtime, self.res, self.state = -1, 0.0, 1, "COMPLETED_SUCCESSFULLY"
        self.local_id, self.workload, self.profile, self.alloc_str, self.metadata = "1", "w0", "p", "0", ""


_itvs = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 5)), min_size=1, max_size=4).map(
    lambda xs: tuple(sorted({(lo, min(lo + w, 47)) for lo, w in xs})))
_jobs = st.lists(st.tuples(st.floats(0, 1e6), st.floats(1e-3, 1e5), _itvs), min_size=1, max_size=40)


@given(_jobs, st.integers(1, 64))
def test_machine_totals_in_batches_as_one_interval_at_a_time(jobs, batch):
    """Per machine: the end of its last job, its summed run times (the same
    float additions in the same order) and the rank of its first job, as
    the interval-by-interval rule gives them, whatever the batch size."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(export, "_MACHINE_BATCH", batch)
        _check_machine_totals(jobs)


def _check_machine_totals(jobs):
    m = ExportMixin()
    m.nb_res = 48
    m._init_export()
    last, comp, first = [-1.0] * 48, [0.0] * 48, [-1] * 48
    for rank, (start, ran, itv) in enumerate(jobs):
        j = _Ended(start, start + ran, itv)
        m._row(j)
        ex = j.finish - j.start
        for lo, hi in itv:
            for r in range(lo, hi + 1):
                last[r] = max(last[r], j.finish)
                comp[r] += ex
                if first[r] < 0:
                    first[r] = rank
    got_last, got_comp, got_first = m._machine_totals()
    assert got_last.tolist() == last and got_first.tolist() == first
    assert got_comp.tolist() == comp    # bit for bit


def _task(left, started):
    return SimpleNamespace(exec=SimpleNamespace(remaining_ratio=left), step_started=started)


def test_float_residue_needs_a_task_that_ran():
    """The tie rule's float residue (``_residue_only``): what is left of a
    task that ran counts as residue when, at the task's rate so far, it takes
    at most TIE_RESIDUE s; a task started at this very instant is never
    residue, even when SimGrid already counts a hair of it done. The ratio
    below is what SimGrid 3.32 reported for a 1,280 s read of the Uppmax day
    (locality lea-bf) handed to a worker at its start while another worker's
    job ended at that instant: the rule ended the whole read at once."""
    now = 6110634.00000005
    sim = SimpleNamespace(now=now)
    assert not ExecutionMixin._residue_only(sim, _task(0.999999999999981, now))
    assert not ExecutionMixin._residue_only(sim, _task(1.0, now - 5.0))
    # 64 s run, 1.5e-8 left: 9.6e-7 s more at its rate -> residue
    assert ExecutionMixin._residue_only(sim, _task(1.5e-8, now - 64.0))
    # 64 s run, 1e-6 left: 6.4e-5 s more -> a real remainder
    assert not ExecutionMixin._residue_only(sim, _task(1e-6, now - 64.0))
    left = TIE_RESIDUE / 64.0
    assert ExecutionMixin._residue_only(sim, _task(left * 0.99, now - 64.0))
    assert not ExecutionMixin._residue_only(sim, SimpleNamespace(exec=None, step_started=now - 1.0))


_text = st.text(alphabet=st.sampled_from("ab1,\"\n -!"), max_size=6)
_num = st.floats(-1e7, 1e9, allow_nan=False)


@given(st.lists(st.tuples(_text, _text, _num, st.integers(1, 99), _num,
                          st.sampled_from(["COMPLETED_SUCCESSFULLY", "COMPLETED_KILLED", "REJECTED"]),
                          st.none() | st.tuples(_num, _num, _num, _num, _num, _num), _text),
                max_size=5))
def test_jobs_csv_lines_are_the_fields_batsim_writes(rows):
    """Each _jobs.csv line (one % formatting per line) is the row's fields
    as f6 writes the numbers, joined by commas, a field holding a comma,
    a quote or a line break quoted as CSV does, the metadata always quoted;
    csv reads the fields back."""
    import csv
    import io
    import tempfile

    from iosched.batsim.outputs import JOBS_COLUMNS, f6

    recs = []
    for jid, prof, sub, res, req, state, ran, md in rows:
        times = ran if ran is not None else (None,) * 6
        recs.append(export.JobRow(jid, "w0", prof, sub, res, req, state, *times, "0-3 7", md))
    with tempfile.TemporaryDirectory() as d:
        path = export.write_jobs(f"{d}/out", recs)
        text = open(path, newline="").read()
    got = list(csv.reader(io.StringIO(text)))
    assert got[0] == list(JOBS_COLUMNS)
    assert len(got) == len(recs) + 1
    for r, fields in zip(recs, got[1:]):
        ran = r.start is not None
        want = [r.job_id, "w0", r.profile, f6(r.submit), str(r.res), f6(r.requested),
                "1" if r.final_state == "COMPLETED_SUCCESSFULLY" else "0", r.final_state]
        want += [f6(x) for x in (r.start, r.runtime, r.finish, r.wait, r.turnaround, r.stretch)] \
            if ran else [""] * 6
        want += ["0-3 7" if ran else "", "-1.000000", r.metadata]
        assert fields == want == r.fields()

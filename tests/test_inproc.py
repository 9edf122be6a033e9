"""The in-process path (``iosched run --in-process``, :mod:`iosched.engine.inproc`)
against the two-process path.

* Byte for byte: ``out_jobs.csv``, ``out_machine_states.csv`` and
  ``out_schedule.csv`` without its wall-clock columns (``scheduling_time``,
  ``simulation_time``) are the same on both paths, on every golden run's
  inputs (``tests/test_golden.py``, ``tests/test_golden_families.py``: the
  scheduler and options each is run with there; FillerSched with the golden
  tie-break order, as its own order changes from run to run on either
  path) and on each family's small inputs (those of
  ``tests/test_real_batsim.py``). iosched's own schedulers are run on both
  in-process layers (direct and pybatsim's ``Batsim``).
* The messages themselves: the transcripts of both paths are the same
  text, and every message the scheduler is given in-process is the
  structure ``json.loads`` gives for its text (strict types).
* Failures as on the two-process path (tests/test_runner.py): bad inputs,
  a scheduler that cannot be loaded, raises, exits, hangs (the runner's
  timeout, or the engine's own per-reply timeout), SIGTERM and Ctrl-C on
  ``iosched run``: one line, a non-zero status, no process left.
* The flag on ``iosched run``, campaigns (file and command line) and
  ``iosched.simulate``; the run record and its robin replay.

The full KTH-SP2 golden run (g8) is marked slow.
"""

from __future__ import annotations

import csv
import json
import math
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st

from test_golden import CASES, FCFSIO_CASES, G8, ORDER_DEPENDENT, HERE, case_inputs, read_jobs
from test_golden_families import ABORTED, AGREEING, REFUSED, engine_flags, scheduler_and_options
from test_golden_families import case as golden_case
from test_real_batsim import family_inputs, small_workload
from processes import RECORD as PROCESS_RECORD

from iosched.batsim.wire import batsim_numbers, parse_reply
from iosched.engine.inproc import wire_copy
from iosched.errors import InputError
from iosched.run.result import RunError
from iosched.run.simulation import run_simulation, strip_in_process_flags
from iosched.sched.bbrun import Numbers

REPO = HERE.parent
SRC = REPO / "src"
#: the wall-clock columns of out_schedule.csv
WALL_CLOCK = ("scheduling_time", "simulation_time")


# --------------------------------------------------------------------------
# helpers


def schedule_without_wall_clock(path: Path) -> list[list[str]]:
    rows = list(csv.reader(path.open(newline="")))
    keep = [i for i, name in enumerate(rows[0]) if name not in WALL_CLOCK]
    assert len(keep) == len(rows[0]) - len(WALL_CLOCK)
    return [[r[i] for i in keep] for r in rows]


def assert_same_outputs(a: Path, b: Path):
    for name in ("out_jobs.csv", "out_machine_states.csv"):
        x, y = (a / name).read_bytes(), (b / name).read_bytes()
        assert x == y, f"{name} differs between {a.name} and {b.name}"
    assert schedule_without_wall_clock(a / "out_schedule.csv") == \
        schedule_without_wall_clock(b / "out_schedule.csv")


def run_paths(tmp_path, platform, workload, scheduler, options, engine_args=(),
              layers=("auto",), timeout=600, two_layers=("auto",)):
    """The run on two processes with each layer of *two_layers* (``iosched
    run --layer``), then in-process with each layer of *layers*
    (``--in-process-layer``); every output folder is compared with the first
    two-process one."""
    two = tmp_path / "two"
    run_simulation(platform, workload, scheduler, two, options=options,
                   engine_args=list(engine_args), timeout=timeout, layer=two_layers[0])
    for layer in two_layers[1:]:
        d = tmp_path / f"two-{layer}"
        res = run_simulation(platform, workload, scheduler, d, options=options,
                             engine_args=list(engine_args), timeout=timeout, layer=layer)
        assert res.scheduler_returncode == 0 and res.engine_returncode == 0
        assert_same_outputs(two, d)
    for layer in layers:
        d = tmp_path / f"in-{layer}"
        res = run_simulation(platform, workload, scheduler, d, options=options,
                             engine_args=[*engine_args, "--in-process-layer", layer],
                             timeout=timeout, in_process=True)
        assert res.scheduler_returncode is None and res.engine_returncode == 0
        assert_same_outputs(two, d)
    return two


def golden_filler_order(shared, case) -> list[str]:
    gold = read_jobs(shared / "golden" / case / "out_jobs.csv")
    return [f"{g['workload_name']}!{g['job_id']}"
            for g in sorted(gold.values(), key=lambda r: float(r["starting_time"]))]


# --------------------------------------------------------------------------
# byte for byte: every golden run's inputs


@pytest.mark.parametrize("case", sorted(set(CASES) | set(FCFSIO_CASES)))
def test_golden_inputs_same_bytes(shared, case, tmp_path):
    """g1-g7, g9-g11 with pybatsim's schedulers (pybatsim layer in-process)."""
    plat, wl, sched, opts, eargs = case_inputs(shared, case, tmp_path)
    if case in ORDER_DEPENDENT:
        sched, opts = HERE / "schedulers" / "orderedFiller.py", {"order": golden_filler_order(shared, case)}
    run_paths(tmp_path, plat, wl, sched, opts, eargs)


@pytest.mark.slow
def test_golden_kth_full_parallel_homogeneous_same_bytes(shared, tmp_path):
    """g8: the whole KTH-SP2 trace (28,467 jobs) under easyBackfill."""
    plat, wl, sched, opts, eargs = case_inputs(shared, G8, tmp_path)
    run_paths(tmp_path, plat, wl, sched, opts, eargs, timeout=3600)


@pytest.mark.parametrize("name", [*AGREEING, ABORTED])
def test_golden_family_inputs_same_bytes(shared, name, tmp_path):
    """g12-g20 (and g17's inputs): iosched's own schedulers, on both
    in-process layers and both two-process launchers (the direct layer's,
    the default for them, and pybatsim's)."""
    c = golden_case(shared, name)
    sched, options = scheduler_and_options(shared, c)
    g = shared / "golden"
    run_paths(tmp_path, g / c["platform"], [g / w for w in c["workloads"]], sched, options,
              engine_flags(c), layers=("direct", "pybatsim"), two_layers=("auto", "pybatsim"))


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_golden_inputs_same_one_line(shared, name, tmp_path):
    """g18, g19: refused in one line on both paths, with the same reason."""
    c = golden_case(shared, name)
    sched, options = scheduler_and_options(shared, c)
    g = shared / "golden"
    reasons = []
    for in_process in (False, True):
        with pytest.raises(RunError) as ei:
            run_simulation(g / c["platform"], [g / w for w in c["workloads"]], sched,
                           tmp_path / str(in_process), options=options,
                           engine_args=engine_flags(c), timeout=600, in_process=in_process)
        msg = str(ei.value)
        assert "\n" not in msg and REFUSED[name] in msg
        reasons.append(msg.split(": ", 1)[1])
    assert reasons[0] == reasons[1]


# --------------------------------------------------------------------------
# byte for byte: each family's small inputs (tests/test_real_batsim.py)

#: one input set and scheduler names per family (every registered name was
#: checked once, docs/benchmarks.md; these cover each family's code paths)
FAMILY_RUNS = [
    ("kth1000", ["easy", "conservative"]),
    ("bb", ["sjf-bb", "plan-2"]),
    ("listpack-exclusive", ["io-pack-char-bf"]),
    ("listpack-shared", ["io-list-bf"]),
    ("dad", ["dad", "torque-fifo"]),
    ("pfsbw", ["adaptive", "io-aware"]),
    ("locality", ["loc-eft-bf"]),
]


@pytest.mark.parametrize("inputs, name", [(k, n) for k, names in FAMILY_RUNS for n in names])
def test_family_small_inputs_same_bytes(shared, inputs, name, tmp_path):
    """The direct layer (the default for iosched's schedulers; the golden
    family runs above also run the pybatsim layer)."""
    plat, wl, options = family_inputs(shared, inputs)
    run_paths(tmp_path, plat, wl, name, options, layers=("direct",))


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("small")
    plat = d / "cluster16.xml"
    subprocess.run([sys.executable, "-m", "iosched.cli", "platform", "cluster", str(plat),
                    "--nb-nodes", "16"], check=True)
    return plat, small_workload(d / "small.json", 16)


@pytest.mark.parametrize("name", ["fcfs", "easy", "easy-sjf", "conservative", "filler"])
def test_baselines_small_same_bytes(small, name, tmp_path):
    plat, wl = small
    run_paths(tmp_path, plat, wl, name, {}, layers=("direct", "pybatsim"),
              two_layers=("auto", "pybatsim"))


# --------------------------------------------------------------------------
# the messages


def test_transcripts_same_text(shared, tmp_path):
    """g7 (kills, PFS transfers) and g12 (dynamic jobs, burst buffers): the
    messages both ways are the same text on both paths."""
    plat, wl, sched, opts, eargs = case_inputs(shared, "g7_kill_pfs_fcfsio", tmp_path)
    c = golden_case(shared, "g12_bb200_plan3")
    bsched, boptions = scheduler_and_options(shared, c)
    g = shared / "golden"
    runs = [("g7", plat, wl, sched, opts, eargs),
            ("g12", g / c["platform"], [g / w for w in c["workloads"]], bsched, boptions,
             engine_flags(c))]
    for key, plat, wl, sched, opts, eargs in runs:
        texts = []
        for in_process in (False, True):
            d = tmp_path / f"{key}-{in_process}"
            run_simulation(plat, wl, sched, d, options=opts, timeout=300, in_process=in_process,
                           engine_args=[*eargs, "--transcript", str(d / "t.jsonl")])
            texts.append((d / "t.jsonl").read_text().splitlines())
        assert len(texts[0]) == len(texts[1]) > 10
        assert texts[0] == texts[1]


WIRE_CHECK = textwrap.dedent('''
    import json, sys
    from iosched.engine import inproc, cli

    def strict(a, b, where="msg"):
        assert type(a) is type(b), (where, type(a), type(b))
        if type(a) is dict:
            assert list(a) == list(b), where
            for k in a:
                strict(a[k], b[k], f"{where}.{k}")
        elif type(a) is list:
            assert len(a) == len(b), where
            for i, (x, y) in enumerate(zip(a, b)):
                strict(x, y, f"{where}[{i}]")
        elif type(a) is float and a != a:
            assert b != b, where
        else:
            assert a == b, where

    n = [0]
    for cls in (inproc.PybatsimPeer, inproc.DirectPeer):
        orig = cls.exchange
        def exchange(self, msg, orig=orig):
            strict(msg, json.loads(json.dumps(msg)))   # what the wire would give
            reply = orig(self, msg)
            strict(reply, json.loads(json.dumps(reply)))
            n[0] += 1
            return reply
        cls.exchange = exchange
    rc = cli.main(sys.argv[1:])
    print("checked", n[0], file=sys.stderr)
    sys.exit(rc)
''')


@pytest.mark.parametrize("case", ["g7_kill_pfs_fcfsio", "g10_io2_staging_composed_fcfsio",
                                  "g12_bb200_plan3", "g15_lp_mbn_exclusive_charbf"])
def test_scheduler_gets_what_the_wire_gives(shared, case, tmp_path):
    """Every message handed to the scheduler in-process, and every reply
    handed back, has exactly the types and values ``json.loads`` gives for
    its JSON text (kills with progress, composed profiles, dynamic jobs and
    profiles, forwarded profiles)."""
    if case in FCFSIO_CASES:
        plat, wl, sched, opts, eargs = case_inputs(shared, case, tmp_path)
        wls = [wl]
    else:
        c = golden_case(shared, case)
        sched, opts = scheduler_and_options(shared, c)
        g = shared / "golden"
        plat, wls, eargs = g / c["platform"], [g / w for w in c["workloads"]], engine_flags(c)
    script = tmp_path / "check.py"
    script.write_text(WIRE_CHECK)
    argv = [sys.executable, str(script), "-p", str(plat)]
    for w in wls:
        argv += ["-w", str(w)]
    argv += ["-e", str(tmp_path / "out"), "-q", *eargs, "--in-process-scheduler", str(sched),
             "--scheduler-options", json.dumps(opts or {}), "--scheduler-verbosity", "warning",
             "--forward-profiles-on-submission"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600,
                       env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr[-2000:]
    assert int(p.stderr.split("checked")[-1]) > 10


_scalars = (st.none() | st.booleans() | st.integers(-2**70, 2**70)
            | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=5))
_json = st.recursive(_scalars, lambda kids: st.lists(kids, max_size=4)
                     | st.dictionaries(st.text(max_size=4), kids, max_size=4), max_leaves=25)


def _same(a, b):
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is float:
        return (a != a and b != b) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b


# replies also hold the burst-buffer family's list subclass (bbrun.Numbers)
_reply = st.recursive(_scalars, lambda kids: st.lists(kids, max_size=4)
                      | st.lists(kids, max_size=4).map(Numbers)
                      | st.dictionaries(st.text(max_size=4), kids, max_size=4), max_leaves=25)


@given(_reply)
def test_wire_copy_is_json_round_trip(obj):
    """The reply as the engine parses its text (parse_reply): the same
    values, or the same refusal of NaN and the infinities."""
    try:
        expect = parse_reply(json.dumps(obj))
    except ValueError as exc:
        assert "is not JSON" in str(exc)
        with pytest.raises(ValueError, match="is not JSON"):
            wire_copy(obj)
        return
    assert _same(wire_copy(obj), expect)


@given(_json)
def test_batsim_numbers_is_its_own_json_round_trip(obj):
    """What the in-process scheduler gets (batsim_numbers's structure) is what
    it would parse from that structure's JSON text."""
    x = batsim_numbers(obj)
    assert _same(x, json.loads(json.dumps(x)))


def test_wire_copy_of_number_lists_checks_every_number():
    """Long lists of numbers (the burst-buffer family's matrices) are
    copied whole when their sum is finite; otherwise each number is
    checked, as the JSON text would: a NaN or an infinity anywhere is
    refused, finite numbers whose sum overflows and ints beyond a double
    are kept, and the types (int, float, bool) are those of the text."""
    big = Numbers([0] * 5000)
    big[17], big[4000], big[4999] = 3, 2.5, True
    for obj in (big, [1e308, 1e308, 0], [2 ** 1100, 1.5], [0, -0.0, 7], ["a", 1, None, True]):
        out = wire_copy({"com": obj})
        assert _same(out, parse_reply(json.dumps({"com": obj}))) and out["com"] is not obj
    for bad, name in ((float("nan"), "NaN"), (float("inf"), "Infinity"), (-float("inf"), "-Infinity")):
        for obj in (Numbers([0] * 4999 + [bad]), [1.0, bad, 2], [True, "x", bad]):
            with pytest.raises(ValueError, match=f"^{name} is not JSON"):
                wire_copy({"com": obj})


def test_wire_copy_falls_back_to_json_text():
    class Str(str):
        pass

    src = {"a": (1, 2.5), "b": {3: "x"}, "c": [Str("s"), True]}
    out = wire_copy(src)
    assert out["a"] == [1, 2.5] and out["b"] == {"3": "x"} and type(out["c"][0]) is str
    for bad, name in ((float("nan"), "NaN"), (float("inf"), "Infinity"), (-float("inf"), "-Infinity")):
        for obj in ({"d": bad}, {"d": [bad]}, {"d": (bad,)}, [bad], bad):   # plain, and through the text
            with pytest.raises(ValueError, match=f"^{name} is not JSON"):
                wire_copy(obj)
    class Vector(list):   # like bbrun.Numbers
        def __repr__(self):
            return "<vector>"

    class Evens(list):    # json writes what iterating it gives
        def __iter__(self):
            return iter(list.__getitem__(self, slice(None, None, 2)))

    src = {"cpu": Vector([1, 2.5, Vector([3])]), "com": Vector(), "e": Evens([0, 1, 2])}
    out = wire_copy(src)
    assert _same(out, json.loads(json.dumps(src)))
    assert _same(out, {"cpu": [1, 2.5, [3]], "com": [], "e": [0, 2]})
    with pytest.raises(ValueError, match="^NaN is not JSON"):
        wire_copy({"cpu": Vector([float("nan")])})
    shared_list = [1]
    out = wire_copy({"x": shared_list, "y": shared_list})
    assert out["x"] is not out["y"] and out["x"] is not shared_list
    with pytest.raises(TypeError):
        wire_copy({"x": {1, 2}})
    for cyc in ([], Vector()):
        list.append(cyc, cyc)
        with pytest.raises(ValueError):
            wire_copy({"x": cyc})


# --------------------------------------------------------------------------
# failures: one line, non-zero, no process left

RECORD = PROCESS_RECORD + textwrap.dedent('''
    import time
    from batsim.batsim import BatsimScheduler

    _record = record

    def record(spawn=True):
        _record("INPROC_PIDS", spawn)
''')

SCHEDULERS = {
    "crashImport": '''
        record()
        print("boom: scheduler crashed at import", file=sys.stderr)
        raise ImportError("no module named 'nothere'")
    ''',
    "exitImport": '''
        sys.exit(3)
    ''',
    "noClass": '''
        class SomethingElse(BatsimScheduler):
            pass
    ''',
    "crashMid": '''
        class CrashMid(BatsimScheduler):
            def onSimulationBegins(self):
                record()
                raise RuntimeError("boom in onSimulationBegins")
    ''',
    "exitMid": '''
        class ExitMid(BatsimScheduler):
            def onJobSubmission(self, job):
                sys.exit(7)
    ''',
    "hang": '''
        class Hang(BatsimScheduler):
            def onSimulationBegins(self):
                record()
                while True:
                    time.sleep(0.01)
    ''',
    "spin": '''
        class Spin(BatsimScheduler):
            def onJobSubmission(self, job):
                while True:
                    pass
    ''',
    "badReply": '''
        class BadReply(BatsimScheduler):
            def onJobSubmission(self, job):
                self.bs._events_to_send.append({"timestamp": self.bs.time(), "type": "EXECUTE_JOB",
                                                "data": {"job_id": job.id, "alloc": {1, 2}}})
    ''',
    "unbalanced": '''
        class Unbalanced(BatsimScheduler):
            def onJobSubmission(self, job):
                self.bs.reject_jobs([job])

            def onNoMoreJobsInWorkloads(self):
                self.bs.nb_jobs_rejected += 1  # pybatsim's counts no longer add up
    ''',
}


@pytest.fixture
def fakes(tmp_path, monkeypatch, small):
    d = tmp_path / "fakes"
    d.mkdir()
    for name, body in SCHEDULERS.items():
        (d / f"{name}.py").write_text(RECORD + textwrap.dedent(body))
    pids = tmp_path / "pids"
    monkeypatch.setenv("INPROC_PIDS", str(pids))

    class Fakes:
        dir = d
        platform, workload = small

        @staticmethod
        def sched(name):
            return d / f"{name}.py"

        @staticmethod
        def recorded():
            if not pids.exists():
                return []
            return [tuple(json.loads(line)) for line in pids.read_text().splitlines()]

    return Fakes


def _gone(pid, create_time):
    try:
        return abs(psutil.Process(pid).create_time() - create_time) > 1e-3
    except psutil.NoSuchProcess:
        return True


def assert_nothing_left(fakes, err=None, expect_min=0):
    rec = fakes.recorded()
    assert len(rec) >= expect_min, rec
    for pid, ct in rec:
        assert _gone(pid, ct), f"process {pid} survived"
    if err is not None:
        for pids in err.pids.values():
            for pid in pids:
                assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def run_failing(fakes, name, tmp_path, **kw):
    kw.setdefault("timeout", 60)
    with pytest.raises(RunError) as ei:
        run_simulation(fakes.platform, fakes.workload, fakes.sched(name), tmp_path / "out",
                       in_process=True, **kw)
    msg = str(ei.value)
    assert "\n" not in msg
    assert ei.value.returncodes["engine"] not in (0, None)
    return ei.value, msg


def test_scheduler_crashing_at_import(fakes, tmp_path):
    err, msg = run_failing(fakes, "crashImport", tmp_path)
    assert msg.startswith("engine exited with code 5: iosched-batsim: scheduler crashImport.py "
                          "could not be loaded: ImportError: no module named 'nothere'"), msg
    log = (tmp_path / "out" / "engine.log").read_text()
    assert "boom: scheduler crashed at import" in log and "Traceback" in log
    assert_nothing_left(fakes, err, expect_min=2)


def test_scheduler_exiting_at_import(fakes, tmp_path):
    _, msg = run_failing(fakes, "exitImport", tmp_path)
    assert msg.endswith("scheduler exitImport.py could not be loaded: called sys.exit(3)"), msg


def test_scheduler_file_without_its_class(fakes, tmp_path):
    _, msg = run_failing(fakes, "noClass", tmp_path)
    assert "scheduler noClass.py could not be loaded: called sys.exit(1)" in msg
    assert "contains no scheduler named NoClass" in msg


def test_scheduler_crashing_mid_run(fakes, tmp_path):
    err, msg = run_failing(fakes, "crashMid", tmp_path)
    assert msg == ("engine exited with code 5: iosched-batsim: scheduler crashMid.py failed: "
                   "RuntimeError: boom in onSimulationBegins (t=0.000000)"), msg
    assert "Traceback" in (tmp_path / "out" / "engine.log").read_text()
    assert not (tmp_path / "out" / "out_jobs.csv").exists()
    assert_nothing_left(fakes, err, expect_min=2)


def test_scheduler_exiting_mid_run(fakes, tmp_path):
    _, msg = run_failing(fakes, "exitMid", tmp_path)
    assert msg.endswith("scheduler exitMid.py failed: called sys.exit(7) (t=0.001800)"), msg


def test_reply_json_cannot_encode(fakes, tmp_path):
    """Over the socket pybatsim's json.dumps raises in the scheduler: the same
    error, in one line."""
    _, msg = run_failing(fakes, "badReply", tmp_path)
    assert "scheduler badReply.py failed: TypeError: Object of type set is not JSON serializable" in msg


def test_unbalanced_counts_fail_as_pybatsims_launcher(fakes, tmp_path):
    """pybatsim's launcher exits with 1 when the jobs submitted are not all
    scheduled, rejected or changed; so does the in-process run, after the
    engine wrote its outputs; so does the two-process one."""
    err, msg = run_failing(fakes, "unbalanced", tmp_path)
    assert msg.startswith("engine exited with code 1: iosched-batsim: scheduler unbalanced.py "
                          "exited with code 1 (pybatsim's launcher: 40 jobs submitted, 0 scheduled, "
                          "41 rejected, 0 changed)"), msg
    assert (tmp_path / "out" / "out_jobs.csv").is_file()
    with pytest.raises(RunError) as ei:
        run_simulation(fakes.platform, fakes.workload, fakes.sched("unbalanced"), tmp_path / "two",
                       timeout=60)
    assert str(ei.value).startswith("scheduler exited with code 1")


def test_hanging_scheduler_times_out(fakes, tmp_path):
    t0 = time.monotonic()
    err, msg = run_failing(fakes, "hang", tmp_path, timeout=3)
    assert msg == "simulation timed out after 3 s"
    assert time.monotonic() - t0 < 3 + 2 + 4
    assert_nothing_left(fakes, err, expect_min=2)


def test_engine_reply_timeout_stops_a_spinning_scheduler(fakes, tmp_path):
    """The engine's own --sched-timeout (a scheduler stuck in Python code)."""
    t0 = time.monotonic()
    err, msg = run_failing(fakes, "spin", tmp_path, engine_args=["--sched-timeout", "1"])
    assert msg.startswith("engine exited with code 4: iosched-batsim: no reply from the in-process "
                          "scheduler within 1 s (t=0.001800, "), msg
    assert "event(s) sent, first: JOB_SUBMITTED" in msg
    assert time.monotonic() - t0 < 20


def test_bad_inputs_are_one_line(fakes, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"nb_res": 4, "profiles": {}}))
    with pytest.raises(RunError) as ei:
        run_simulation(fakes.platform, bad, "easy", tmp_path / "o1", in_process=True, timeout=60)
    assert "\n" not in str(ei.value) and "jobs" in str(ei.value)
    with pytest.raises(InputError, match="embedded engine only"):
        run_simulation(fakes.platform, fakes.workload, "easy", tmp_path / "o2", in_process=True,
                       engine_cmd="batsim")
    with pytest.raises(RunError) as ei:
        run_simulation(fakes.platform, fakes.workload, fakes.sched("crashMid"), tmp_path / "o3",
                       in_process=True, engine_args=["--in-process-layer", "direct"], timeout=60)
    assert str(ei.value).startswith("engine exited with code 2: iosched-batsim: "
                                    "--in-process-layer direct: crashMid.py is not one of iosched's")


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "iosched.cli", "run", *map(str, args)],
                          capture_output=True, text=True, timeout=120, **kw)


def test_cli_in_process_success_record_and_robin_replay(fakes, tmp_path):
    out = tmp_path / "out"
    p = _cli("-p", fakes.platform, "-w", fakes.workload, "-s", "easy", "-o", out, "--in-process",
             "--no-metrics")
    assert p.returncode == 0, p.stderr
    rec = json.loads((out / "command.json").read_text())
    assert rec["in_process"] is True and rec["start_order"] == ["engine"]
    argv = rec["engine"]["argv"]
    assert argv[argv.index("--in-process-scheduler") + 1] == rec["scheduler"]["file"]
    # the two-process run's (the direct layer's launcher for a shipped scheduler)
    assert rec["scheduler"]["argv"][1:3] == ["-m", "iosched.run.direct_launcher"]
    assert strip_in_process_flags(argv) == argv[: argv.index("--in-process-scheduler")]
    assert not (out / "sched.log").exists()
    assert "Scheduler: Baseline" in (out / "engine.log").read_text()
    first = (out / "out_jobs.csv").read_bytes()
    # robin's batexec mode: the engine command alone, no external scheduler
    ctx = subprocess.run([*argv, "--dump-execution-context"], capture_output=True, text=True)
    assert json.loads(ctx.stdout)["external_scheduler"] is False
    p = _cli(out / "robin.yaml", "--no-metrics")
    assert p.returncode == 0, p.stderr
    assert (out / "out_jobs.csv").read_bytes() == first
    two = tmp_path / "two"
    p = _cli("-p", fakes.platform, "-w", fakes.workload, "-s", "easy", "-o", two, "--no-metrics")
    assert p.returncode == 0, p.stderr
    assert_same_outputs(two, out)
    assert json.loads((two / "command.json").read_text())["in_process"] is False


def test_cli_failure_is_one_line(fakes, tmp_path):
    p = _cli("-p", fakes.platform, "-w", fakes.workload, "-s", fakes.sched("crashMid"),
             "-o", tmp_path / "out", "--in-process", "--timeout", "60")
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("iosched run: engine exited with code 5: "), p.stderr
    assert "boom in onSimulationBegins" in lines[0]
    assert_nothing_left(fakes, expect_min=2)
    p = _cli("-p", fakes.platform, "-w", fakes.workload, "-s", "easy", "-o", tmp_path / "o2",
             "--in-process", "--engine", "batsim")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "embedded engine only" in p.stderr


@pytest.mark.parametrize("sig, rc, line", [
    (signal.SIGTERM, 128 + signal.SIGTERM, "iosched run: terminated by SIGTERM"),
    (signal.SIGINT, 130, "iosched run: interrupted"),
])
def test_cli_signal_leaves_no_process(fakes, tmp_path, sig, rc, line):
    proc = subprocess.Popen(
        [sys.executable, "-m", "iosched.cli", "run", "-p", str(fakes.platform), "-w",
         str(fakes.workload), "-s", str(fakes.sched("hang")), "-o", str(tmp_path / "out"),
         "--in-process", "--timeout", "60"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while len(fakes.recorded()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(fakes.recorded()) == 2  # the engine (with the scheduler) and its child
        proc.send_signal(sig)
        got = proc.wait(timeout=20)
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert got == rc and err.strip() == line
    assert_nothing_left(fakes, expect_min=2)


# --------------------------------------------------------------------------
# campaigns and iosched.simulate


def test_campaign_in_process_same_runs_and_outputs(tmp_path):
    from test_campaign import write_campaign

    base = write_campaign(tmp_path, seeds=[1])
    spec = yaml_load(base)
    assert "in_process" not in spec
    spec["in_process"] = True
    inproc = tmp_path / "inproc.yaml"
    inproc.write_text(json.dumps({**spec, "output": "out-in"}))
    for f in (base, inproc):
        p = subprocess.run([sys.executable, "-m", "iosched.cli", "campaign", str(f), "-j", "1",
                            "--no-progress", "--no-table"], capture_output=True, text=True,
                           timeout=300, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
    two, inp = tmp_path / "out" / "runs", tmp_path / "out-in" / "runs"
    ids = sorted(x.name for x in two.iterdir())
    assert ids == sorted(x.name for x in inp.iterdir()) and len(ids) == 4
    for rid in ids:
        assert_same_outputs(two / rid, inp / rid)
        assert json.loads((inp / rid / "command.json").read_text())["in_process"] is True
        assert json.loads((inp / rid / "run.json").read_text())["in_process"] is True
        robin = (inp / rid / "robin-batsim.yaml").read_text()
        assert "--in-process" not in robin and "iosched.run.direct_launcher" in robin
    # the command line overrides the file: --two-process re-runs nothing (same ids, done)
    p = subprocess.run([sys.executable, "-m", "iosched.cli", "campaign", str(inproc), "-j", "1",
                        "--no-progress", "--no-table", "--two-process"], capture_output=True,
                       text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0 and "(0 executed now)" in p.stdout, p.stdout + p.stderr
    spec["engine"] = "batsim"
    bad = tmp_path / "bad.yaml"
    bad.write_text(json.dumps(spec))
    p = subprocess.run([sys.executable, "-m", "iosched.cli", "campaign", str(bad), "--no-progress"],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert p.returncode == 2 and "in_process" in p.stderr and p.stderr.count("\n") == 1


def yaml_load(path):
    import yaml

    return yaml.safe_load(Path(path).read_text())


def test_simulate_in_process(small, tmp_path):
    import iosched

    plat, wl = small
    a = iosched.simulate(plat, wl, "conservative", output_dir=tmp_path / "a")
    b = iosched.simulate(plat, wl, "conservative", output_dir=tmp_path / "b", in_process=True)
    assert a.equals(b)
    assert json.dumps(a.attrs["metrics"], sort_keys=True, default=str) == \
        json.dumps(b.attrs["metrics"], sort_keys=True, default=str)
    assert_same_outputs(tmp_path / "a", tmp_path / "b")


# --------------------------------------------------------------------------
# the scheduler's log


_TIMESTAMP = re.compile(r"^\[pybatsim - \d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - ")


def pybatsim_log_lines(folder: Path) -> list[str]:
    """The lines in pybatsim's log format of a run's logs, without their
    wall-clock time."""
    lines = []
    for name in ("sched.log", "engine.log"):
        p = folder / name
        if p.exists():
            lines += [_TIMESTAMP.sub("[pybatsim - ", line)
                      for line in p.read_text().splitlines() if _TIMESTAMP.match(line)]
    return lines


def test_direct_layer_logs_pybatsims_lines(small, tmp_path):
    """At pybatsim's -v info the direct layer (which leaves the source line,
    thread and process out of its log records: ``lean_log_records``) writes
    the lines pybatsim's own layer writes, on two processes and in process."""
    plat, wl = small
    logs = {}
    for in_process, layer in ((False, "pybatsim"), (False, "auto"), (True, "pybatsim"), (True, "direct")):
        d = tmp_path / f"{'in' if in_process else 'two'}-{layer}"
        kw = ({"engine_args": ["--in-process-layer", layer], "in_process": True} if in_process
              else {"layer": layer})
        run_simulation(plat, wl, "easy", d, timeout=600, quiet=False, **kw)
        logs[d.name] = pybatsim_log_lines(d)
    reference = logs.pop("two-pybatsim")
    assert sum("Message Received from Batsim: " in line for line in reference) > 20
    assert sum("Message Sent to Batsim: " in line for line in reference) > 20
    for name, lines in logs.items():
        assert lines == reference, name


def test_lean_log_records_leave_out_what_the_format_never_prints():
    """After ``lean_log_records`` (in a process of its own: it is process-wide)
    a record carries no source line, thread or process, and pybatsim's
    format writes the same line as before."""
    code = textwrap.dedent("""
        import io, logging
        from iosched.engine.inproc import _LOG_FORMAT, lean_log_records
        out = io.StringIO()
        h = logging.StreamHandler(out)
        h.setFormatter(logging.Formatter(_LOG_FORMAT.replace("%(asctime)s", "T")))
        log = logging.getLogger("batsim.batsim")
        log.addHandler(h)
        log.setLevel(logging.INFO)
        records = []
        log.addFilter(lambda r: records.append(r) or True)
        log.info("Message Sent to Batsim: %s", {"now": 1.0})
        lean_log_records()
        log.info("Message Sent to Batsim: %s", {"now": 1.0})
        a, b = out.getvalue().splitlines()
        assert a == b == "[pybatsim - T - batsim.batsim - INFO] Message Sent to Batsim: {'now': 1.0}", (a, b)
        assert records[0].lineno > 0 and records[0].thread is not None and records[0].process
        assert records[1].lineno == 0 and records[1].thread is None and records[1].process is None
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_pybatsim_lines_are_the_lines_logging_writes():
    """``PybatsimLines`` (the direct layer's two INFO lines per message)
    writes, under pybatsim's launcher's set-up, the line ``Logger.info``
    writes at the same instant (fractions of a second, a new second); under
    any other set-up the record goes through ``logging`` (a handler the
    scheduler added receives it; a handler above INFO drops it), and a
    failing stream is reported as ``logging`` reports it, nothing raised.
    In a process of its own: the set-up is process-wide."""
    code = textwrap.dedent("""
        import io, logging, sys, time
        from iosched.engine.inproc import PybatsimLines, configure_logging
        configure_logging("info")
        root = logging.getLogger()
        out = io.StringIO()
        root.handlers[0].setStream(out)
        log = logging.getLogger("batsim.batsim")
        lines = PybatsimLines(log)
        real = time.time
        for k in range(8):
            t = 1700000000.0 + k * 0.4719
            time.time = lambda t=t: t
            log.info("Message Sent to Batsim: {}".format({"now": k * 0.5}))
            lines.info("Message Sent to Batsim: {}".format({"now": k * 0.5}))
        time.time = real
        a = out.getvalue().splitlines()
        assert len(a) == 16 and all(a[i] == a[i + 1] for i in range(0, 16, 2)), a
        assert a[2].startswith("[pybatsim - ") and a[2].endswith(
            " - batsim.batsim - INFO] Message Sent to Batsim: {'now': 0.5}"), a[2]
        assert len({x[:35] for x in a}) == 8, a    # milliseconds and seconds move
        got = []
        h = logging.Handler()
        h.emit = got.append
        log.addHandler(h)
        lines.info("x")
        log.removeHandler(h)
        assert [r.getMessage() for r in got] == ["x"], got
        assert out.getvalue().splitlines()[-1].endswith("INFO] x")
        root.handlers[0].setLevel(logging.WARNING)
        lines.info("dropped")
        root.handlers[0].setLevel(logging.NOTSET)
        assert "dropped" not in out.getvalue()

        class Full(io.StringIO):
            def write(self, s):
                raise OSError("disk full")

        root.handlers[0].setStream(Full())
        err = io.StringIO()
        sys.stderr = err
        lines.info("y")
        sys.stderr = sys.__stderr__
        assert "--- Logging error ---" in err.getvalue() and "OSError: disk full" in err.getvalue()
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr

"""The embedded engine refuses what Batsim 4.2.1 refuses (strict by
default) and serves its own extensions with ``--embedded-extensions`` only.

One test (or one parametrized case) per rule; each fails on the engine
before strictness became the default. The Batsim source of each rule is in
``docs/real-batsim.md`` ("Strict rules"). Protocol rules are checked on the
handlers directly (``Simulation._apply_reply`` with hand-made replies; the
decisions are then run as Batsim's server receives them), a few end to end
with a scheduler faked in the test (ZeroMQ REP).
"""

import heapq
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iosched.engine.ipp import P_DECISION, P_KILLED, T_CALL
from iosched.engine.server import EngineConfig, Simulation
from iosched.engine.workload import load_workload
from iosched.errors import InputError, ProtocolError
from protocol_replay import free_port
from test_engine_e2e import PLATFORM

HERE = Path(__file__).resolve().parent

SPREAD = "DefinedAmountsSpreadUniformly"

PROFILES = {
    "d": {"type": "delay", "delay": 5},
    "ph": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0},
    "pht": {"type": "parallel_homogeneous_total", "cpu": 1e9, "com": 0},
    "pfs": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 1e6, "bytes_to_write": 0},
    "stage": {"type": "data_staging", "nb_bytes": 1e6, "from": "a", "to": "b"},
    "io": {"type": "parallel_homogeneous", "cpu": 0, "com": 1e6},
}


def workload(jobs=None, profiles=None, nb_res=4):
    return {"nb_res": nb_res, "profiles": PROFILES if profiles is None else profiles,
            "jobs": jobs if jobs is not None else [
                {"id": i, "subtime": 0, "res": 2, "profile": p}
                for i, p in enumerate(["d", "ph", "pht", "pfs", "stage", "d", "d"], 1)]}


def write(tmp_path, data, name="w.json"):
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(p)


def load(tmp_path, data):
    return load_workload(write(tmp_path, data), "w0")


def sim_for(tmp_path, w=None, ext=False, dynamic=False, compute=4, storage=(4, 5)):
    """A Simulation whose platform is set by hand (no SimGrid): compute
    resources 0..compute-1, then the storage resources; every job of the
    workload submitted."""
    cfg = EngineConfig(str(tmp_path / "unused.xml"), [write(tmp_path, w or workload())],
                       export_prefix=str(tmp_path / "o"), dynamic_jobs=dynamic)
    cfg.embedded_extensions = ext
    sim = Simulation(cfg)
    sim.nb_compute = compute
    sim.storage_ids = list(storage)
    sim.nb_res = compute + len(storage)
    sim.L_mm = 0.0
    for j in sim.jobs.values():
        j.state = "SUBMITTED"
    return sim


def ev(etype, data, t=0.0):
    return {"timestamp": t, "type": etype, "data": data}


def reply(sim, *events, now=None):
    """The scheduler's reply to the message at ``sim.now``."""
    sim._apply_reply({"now": sim.now if now is None else now, "events": list(events)})


def receive(sim):
    """Run the decisions posted by the last reply as Batsim's server
    receives them (in order, at ``sim.now``); returns the decision chain."""
    chain = []
    for entry in list(sim.inbox):
        if entry[3] == P_DECISION:
            sim.inbox.remove(entry)
            heapq.heapify(sim.inbox)
            chain = entry[4][0]
            for _, fn, args in chain:
                fn(*args)
    return chain


def exchange(sim, *events, now=None):
    """What the server does between two replies: it sends what is pending
    and starts a new list; then the scheduler's reply arrives."""
    sim.pending = []
    reply(sim, *events, now=now)


def refused(sim, *events, match, now=None):
    with pytest.raises(ProtocolError, match=match) as exc:
        reply(sim, *events, now=now)
        receive(sim)
    assert "\n" not in str(exc.value)
    return str(exc.value)


# ============================================================== workloads
@pytest.mark.parametrize("nb_res, message", [
    (None, "no 'nb_res' field"),
    (0, "field 'nb_res': must be an integer > 0"),
    (4.0, "field 'nb_res': must be an integer > 0"),
    (True, "field 'nb_res': must be an integer > 0"),
])
def test_workload_nb_res_is_required_an_integer_above_0(tmp_path, nb_res, message):
    w = workload()
    if nb_res is None:
        del w["nb_res"]
    else:
        w["nb_res"] = nb_res
    with pytest.raises(InputError, match=message):
        load(tmp_path, w)


def test_workload_key_twice_in_one_object_is_refused(tmp_path):
    text = ('{"nb_res": 1, "profiles": {"d": {"type": "delay", "delay": 1}, "d": {"type": "delay", '
            '"delay": 2}}, "jobs": []}')
    with pytest.raises(InputError, match="key 'd' appears twice in one JSON object"):
        load_workload(write(tmp_path, text), "w0")


@pytest.mark.parametrize("jid, name", [
    (7, "7"), ("abc", "abc"), ("w0!12", "12"), ("w0!!12", "12"), ("", ""),
    ("a!b", None),          # a '!' in a job name
    ("w1!3", None),         # another workload's name
    ("x!w0", None),         # names workload 'x'
    ("w0", None),           # contains the workload's name: must be WORKLOAD!NAME
    ("w0!a!b", None),       # three parts
    (2 ** 31, None),        # not a 32-bit integer
    (True, None),
])
def test_workload_job_ids_follow_batsims_jobidentifier(tmp_path, jid, name):
    w = workload(jobs=[{"id": jid, "subtime": 0, "res": 1, "profile": "d"}])
    if name is None:
        with pytest.raises(InputError, match=r"jobs\[0\]"):
            load(tmp_path, w)
    else:
        (job,) = load(tmp_path, w).jobs
        assert job.local_id == name and job.id == f"w0!{name}" and job.json["id"] == f"w0!{name}"


@pytest.mark.parametrize("field, value, ok", [
    ("res", 0, True),                  # Batsim: res >= 0 (such a job can be rejected, or run pht)
    ("res", 2.0, False),               # rapidjson's IsInt: 2.0 is not an integer
    ("res", 2 ** 31, False),
    ("subtime", -3, True),             # Batsim: any number (submitted at once)
    ("subtime", True, False),
    ("walltime", 0, False),
])
def test_workload_job_fields_as_batsim_reads_them(tmp_path, field, value, ok):
    job = {"id": 1, "subtime": 0, "res": 1, "profile": "d"}
    job[field] = value
    w = workload(jobs=[job])
    if ok:
        (spec,) = load(tmp_path, w).jobs
        assert getattr(spec, field) == value
    else:
        with pytest.raises(InputError, match=rf"jobs\[0\] \(id '1'\): field '{field}'"):
            load(tmp_path, w)


@pytest.mark.parametrize("profile, message", [
    ({"type": "delay", "delay": 0}, "field 'delay': must be > 0"),
    ({"type": "parallel", "cpu": [1, 2]}, "no 'com' field"),
    ({"type": "parallel", "com": [0, 1, 1, 0]}, "no 'cpu' field"),
    ({"type": "parallel", "cpu": [], "com": []}, "field 'cpu': empty list"),
    ({"type": "composed", "seq": ["d"], "repeat": 2.0}, "field 'repeat': not an integer"),
    ({"type": "delay", "delay": 1, "ret": 1.5}, "field 'ret': not an integer"),
    ({"type": "delay", "delay": 1, "ret": "0"}, "field 'ret': not an integer"),
    ({"type": "parallel_homogeneous_pfs", "bytes_to_read": 1, "host": 3}, "field 'host': not a string"),
])
def test_profiles_refused_as_batsim_refuses_them(tmp_path, profile, message):
    w = workload(jobs=[], profiles={"d": {"type": "delay", "delay": 1}, "x": profile})
    with pytest.raises(InputError, match=f"profile 'x': {message}"):
        load(tmp_path, w)


@pytest.mark.parametrize("profile", [
    {"type": "parallel_homogeneous_pfs", "bytes_to_read": 1e6},   # either amount may be omitted
    {"type": "parallel_homogeneous_pfs", "bytes_to_write": -5},   # no sign check (SimGrid ignores it)
    {"type": "parallel_homogeneous", "cpu": 1, "com": 0, "generation_strategy": "anything"},
    {"type": "delay", "delay": 1, "ret": -3},
])
def test_profiles_accepted_as_batsim_accepts_them(tmp_path, profile):
    wl = load(tmp_path, workload(jobs=[], profiles={"x": profile}))
    assert wl.profiles["x"] == profile and wl.extensions == []


def test_parallel_profile_job_requests_its_number_of_executors(tmp_path):
    prof = {"p": {"type": "parallel", "cpu": [1, 1], "com": [0, 0, 0, 0]}}
    w = workload(jobs=[{"id": 1, "subtime": 0, "res": 3, "profile": "p"}], profiles=prof)
    with pytest.raises(InputError, match=r"field 'res': 3 resources requested but profile 'p' \(parallel\) "
                                         "describes 2 executors"):
        load(tmp_path, w)


def test_pfs_storage_label_read_from_host_when_storage_is_absent(tmp_path):
    """Batsim 4.2.1 reads ``host`` as the label when ``storage`` is absent;
    the engine used to ignore it and transfer to the ``pfs`` host."""
    from iosched.engine.tasks import build_steps

    profiles = {"p": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 8.0, "host": "disk1"},
                "q": {"type": "parallel_homogeneous_pfs", "bytes_to_read": 8.0, "host": "x",
                      "storage": "disk0"}}
    (t,) = build_steps("j", "p", profiles, [0, 1], {"disk0": 4, "disk1": 5}, [4, 5])
    assert t.hosts == [0, 1, 5]
    (t,) = build_steps("j", "q", profiles, [0, 1], {"disk0": 4, "disk1": 5}, [4, 5])
    assert t.hosts == [0, 1, 4]


# ================================================ generation_strategy
def _spread_workload():
    return workload(jobs=[{"id": 1, "subtime": 0, "res": 2, "profile": "s"}],
                    profiles={"s": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0,
                                    "generation_strategy": SPREAD}})


def test_generation_strategy_spread_refused_unless_extensions(tmp_path):
    """Batsim 4.2.1 ignores ``generation_strategy`` (a Batsim 5 key): a
    spread profile would run n times the work there. Refused at start in
    one line; the engine spreads the amounts with --embedded-extensions."""
    with pytest.raises(InputError, match=r"profile 's': field 'generation_strategy': "
                                         r"'DefinedAmountsSpreadUniformly' is an embedded-engine extension.*"
                                         "divide the amounts by the number of executors, or pass "
                                         "--embedded-extensions"):
        sim_for(tmp_path, _spread_workload())
    sim = sim_for(tmp_path, _spread_workload(), ext=True)
    assert sim.workloads[0].extensions == [("s", "generation_strategy")]


def test_generation_strategy_spread_in_registered_profiles(tmp_path):
    prof = {"type": "parallel_homogeneous_pfs", "bytes_to_write": 1e9, "generation_strategy": SPREAD}
    register = ev("REGISTER_PROFILE", {"workload_name": "dyn", "profile_name": "s", "profile": prof})
    refused(sim_for(tmp_path, dynamic=True), register, match="REGISTER_PROFILE dyn!s .*'generation_strategy'.*"
                                                              "--embedded-extensions only")
    sim = sim_for(tmp_path, dynamic=True, ext=True)
    reply(sim, register)
    assert sim.profiles["dyn"]["s"] is prof
    # DefinedAmountsUsedForEachValue changes nothing: Batsim ignores it, and so does the engine
    sim = sim_for(tmp_path, dynamic=True)
    reply(sim, ev("REGISTER_PROFILE", {"workload_name": "dyn", "profile_name": "u",
                                       "profile": dict(prof, generation_strategy="DefinedAmountsUsedForEachValue")}))


def test_engine_cli_flags(tmp_path):
    """``--embedded-extensions`` serves the extensions (here the engine
    starts, then waits for a scheduler that is not there: exit 4);
    ``--strict-batsim`` is accepted and has no effect."""
    p = write(tmp_path, PLATFORM, "p.xml")
    w = write(tmp_path, _spread_workload())

    def engine(*args):
        return subprocess.run([sys.executable, "-m", "iosched.engine.cli", "-p", p, "-w", w, "-e",
                               str(tmp_path / "o"), "-s", "tcp://127.0.0.1:1", "--sched-timeout", "1", *args],
                              capture_output=True, text=True, timeout=60)

    for args in ([], ["--strict-batsim"]):
        r = engine(*args)
        lines = [ln for ln in r.stderr.splitlines() if "xbt_cfg" not in ln]
        assert r.returncode == 1 and len(lines) == 1 and "--embedded-extensions" in lines[0], r.stderr
    r = engine("--embedded-extensions")
    assert r.returncode == 4 and "no reply from the scheduler" in r.stderr, r.stderr
    r = subprocess.run([sys.executable, "-m", "iosched.engine.cli", "--help"], capture_output=True, text=True)
    assert "--embedded-extensions" in r.stdout and "--strict-batsim" in r.stdout


# ========================================================= message level
def test_event_without_data_is_refused(tmp_path):
    sim = sim_for(tmp_path)
    refused(sim, {"timestamp": 0.0, "type": "ANSWER"}, match=r"events\[0\]: ANSWER .*no 'data'")


def test_event_after_the_replys_now_is_refused(tmp_path):
    sim = sim_for(tmp_path)
    refused(sim, ev("REJECT_JOB", {"job_id": "w0!1"}, t=5 + 5e-10), now=5.0,
            match=r"events\[0\]: REJECT_JOB .*timestamp after the reply's now")


def test_events_need_not_be_in_timestamp_order(tmp_path):
    """Batsim handles each event at max(its timestamp, the current time)."""
    sim = sim_for(tmp_path)
    sim.now = 2.0
    reply(sim, ev("REJECT_JOB", {"job_id": "w0!1"}, t=5.0), ev("REJECT_JOB", {"job_id": "w0!6"}, t=3.0), now=5.0)
    assert [ts for ts, _, _ in receive(sim)] == [5.0, 3.0]
    assert sim.jobs["w0!1"].state == sim.jobs["w0!6"].state == "REJECTED"


def test_reply_now_before_the_requests_now_is_accepted(tmp_path):
    """Batsim does not compare them; a scheduler echoing a now rounded to
    6 decimals may be up to 5e-7 s early."""
    sim = sim_for(tmp_path)
    sim.now = 1.23456789
    reply(sim, ev("REJECT_JOB", {"job_id": "w0!1"}, t=1.234567), now=1.234567)
    assert [ts for ts, _, _ in receive(sim)] == [1.23456789]


# ============================================================= EXECUTE_JOB
def test_execute_job_data_has_2_or_3_members(tmp_path):
    data = {"job_id": "w0!4", "alloc": "0-1", "mapping": {"0": 0, "1": 1}, "storage_mapping": {"pfs": 4}}
    refused(sim_for(tmp_path), ev("EXECUTE_JOB", data),
            match=r"events\[0\]: EXECUTE_JOB .*'data' has 4 members .*Batsim 4.2.1 needs 2 or 3")
    sim = sim_for(tmp_path, ext=True)
    reply(sim, ev("EXECUTE_JOB", data))
    assert sim.jobs["w0!4"].state == "SCHEDULED"


@pytest.mark.parametrize("mapping, executors", [
    ({"0": 1, "1": 0}, [1, 0]),
    ({"0": "1", "1": " 0"}, [1, 0]),
    ({" 1": "0x", "0": "+1"}, [1, 0]),       # std::stoi: white space, sign, trailing garbage
    ({"0": 1.0, "1": 0}, None),              # not an integer
    ({"0": True, "1": 0}, None),
    ({"0": 0, "1": 2}, None),                # the allocation has 2 resources
    ({"1": 0, "2": 1}, None),                # executors 0..k-1
    ({"0": 0, "00": 1}, None),               # one executor: its size is not the job's
    ({}, None),
])
def test_execute_job_mapping_as_batsim_reads_it(tmp_path, mapping, executors):
    sim = sim_for(tmp_path)
    execute = ev("EXECUTE_JOB", {"job_id": "w0!2", "alloc": "0-1", "mapping": mapping})
    if executors is None:
        refused(sim, execute, match="EXECUTE_JOB w0!2 .*mapping")
    else:
        reply(sim, execute)
        ((_, _, args),) = [c for c in sim.inbox[0][4][0]]
        assert args[2] == executors


def test_execute_job_parallel_homogeneous_total_on_any_number_of_resources(tmp_path):
    """Batsim 4.2.1 lets a parallel_homogeneous_total job (or a composed one
    of such profiles) run on another number of resources than it requests."""
    w = workload()
    w["profiles"] = dict(PROFILES, seq={"type": "composed", "seq": ["pht", "pht"]})
    w["jobs"].append({"id": 8, "subtime": 0, "res": 0, "profile": "seq"})
    sim = sim_for(tmp_path, w)
    reply(sim, ev("EXECUTE_JOB", {"job_id": "w0!3", "alloc": "0-2"}),
          ev("EXECUTE_JOB", {"job_id": "w0!8", "alloc": "3"}))
    refused(sim_for(tmp_path, w), ev("EXECUTE_JOB", {"job_id": "w0!2", "alloc": "0-2"}),
            match="allocation '0-2' has 3 resources, the job requests 2")


@pytest.mark.parametrize("data, message", [
    ({"job_id": "w0!4", "alloc": "0-1", "storage_mapping": {"pfs": 4.0}}, "maps 'pfs' to 4.0, not to an integer"),
    ({"job_id": "w0!4", "alloc": "0-1", "storage_mapping": {}}, "non-empty object"),
    ({"job_id": "w0!4", "alloc": "0-1", "storage_mapping": {"other": 4}}, "has no label 'pfs'"),
    ({"job_id": "w0!4", "alloc": "0-1", "storage_mapping": {"pfs": 9}}, "maps 'pfs' to 9, which is not a resource"),
    ({"job_id": "w0!5", "alloc": "0-1"}, "no 'storage_mapping' for the storage label 'a'"),
    ({"job_id": "w0!5", "alloc": "0-1", "storage_mapping": {"a": 4}}, "has no label 'b'"),
])
def test_execute_job_storage_labels_resolved_as_batsim_does(tmp_path, data, message):
    refused(sim_for(tmp_path), ev("EXECUTE_JOB", data), match=message)


def test_execute_job_storage_fallbacks_are_extensions(tmp_path):
    """The engine's former leniency, served with --embedded-extensions only:
    a label missing from the mapping or a data_staging without mapping use
    the only storage host; a label may map to a compute host."""
    cases = [
        {"job_id": "w0!4", "alloc": "0-1", "storage_mapping": {"other": 4}},
        {"job_id": "w0!5", "alloc": "0-1"},
        {"job_id": "w0!4", "alloc": "0-1", "storage_mapping": {"pfs": 3}},
    ]
    for data in cases:
        refused(sim_for(tmp_path, storage=(4,)), ev("EXECUTE_JOB", data),
                match="--embedded-extensions only")
        sim = sim_for(tmp_path, storage=(4,), ext=True)
        reply(sim, ev("EXECUTE_JOB", data))
    # a pfs profile without mapping uses the only storage host (Batsim does)
    reply(sim_for(tmp_path, storage=(4,)), ev("EXECUTE_JOB", {"job_id": "w0!4", "alloc": "0-1"}))


def test_execute_job_computation_on_storage_hosts_is_refused(tmp_path):
    """Batsim 4.2.1: 'Some computation is assigned to storage node' (the
    i-th resource of the allocation against the i-th executor's flops)."""
    refused(sim_for(tmp_path), ev("EXECUTE_JOB", {"job_id": "w0!2", "alloc": "3-4"}),
            match=r"EXECUTE_JOB w0!2 .*1e\+09 flops on storage host 4")
    reply(sim_for(tmp_path, ext=True), ev("EXECUTE_JOB", {"job_id": "w0!2", "alloc": "3-4"}))
    reply(sim_for(tmp_path), ev("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "3-4"}))  # delay: no computation
    reply(sim_for(tmp_path), ev("EXECUTE_JOB", {"job_id": "w0!4", "alloc": "3-4",  # pfs: no computation
                                                "storage_mapping": {"pfs": 5}}))


@pytest.mark.parametrize("io, message", [
    ({"alloc": "2", "profile": {"type": "parallel_homogeneous", "cpu": 0, "com": 1}}, "'profile_name'"),
    ({"alloc": "2", "profile_name": "io", "profile": {"type": "parallel_homogeneous", "cpu": 0, "com": 1}},
     "profile 'io' already exists"),
    ({"alloc": "2", "profile_name": "pfs"}, "is a parallel_homogeneous_pfs profile"),
    ({"alloc": "2", "profile_name": "d"}, "is a delay profile"),
    ({"profile_name": "io"}, "'alloc' must be an interval-set string"),
])
def test_execute_job_additional_io_job(tmp_path, io, message):
    refused(sim_for(tmp_path), ev("EXECUTE_JOB", {"job_id": "w0!2", "alloc": "0-1", "additional_io_job": io}),
            match=f"additional_io_job: .*{message}")


def test_execute_job_additional_io_profile_joins_the_workload(tmp_path):
    """Batsim 4.2.1 adds the given I/O profile to the job's workload under
    its name: a second one of the same name aborts."""
    sim = sim_for(tmp_path)
    io = {"alloc": "2", "profile_name": "new", "profile": {"type": "parallel_homogeneous", "cpu": 0, "com": 1}}
    reply(sim, ev("EXECUTE_JOB", {"job_id": "w0!2", "alloc": "0-1", "additional_io_job": io}))
    assert sim.profiles["w0"]["new"] == io["profile"]
    refused(sim, ev("EXECUTE_JOB", {"job_id": "w0!6", "alloc": "2-3", "additional_io_job": io}),
            match="profile 'new' already exists")


# ===================================================== other decisions
@pytest.mark.parametrize("etype, data, message", [
    ("REJECT_JOB", {"job_id": "w0!1", "reason": "full"}, "exactly {'job_id'"),
    ("KILL_JOB", {"job_ids": ["w0!1"], "x": 1}, "exactly {'job_ids'"),
    ("CALL_ME_LATER", {"timestamp": 5, "x": 1}, "exactly {'timestamp'"),
    ("SET_JOB_METADATA", {"job_id": "w0!1", "metadata": "m", "x": 1}, "exactly {'job_id', 'metadata'}"),
    ("SET_JOB_METADATA", {"job_id": "w0!1", "metadata": 'say "hi"'}, "double quotes"),
    ("ANSWER", {"estimate_waiting_time": 3}, "must be an object"),
    ("ANSWER", {"other": {}}, "unknown ANSWER type 'other'"),
])
def test_event_data_as_batsim_reads_it(tmp_path, etype, data, message):
    refused(sim_for(tmp_path), ev(etype, data), match=message)


def test_call_me_later_in_the_past_of_the_server_is_refused(tmp_path):
    """Batsim's server aborts when the time is not after its clock at
    receipt ('You asked to be awaken in the past!'); the engine used to call
    at once. Served so with --embedded-extensions."""
    sim = sim_for(tmp_path)
    sim.now = 10.0
    refused(sim, ev("CALL_ME_LATER", {"timestamp": 10.0}, t=10.0), now=10.0,
            match="CALL_ME_LATER at t=10.000000: asks for a call at t=10.0, not after")
    sim = sim_for(tmp_path, ext=True)
    sim.now = 10.0
    reply(sim, ev("CALL_ME_LATER", {"timestamp": 9.0}, t=10.0), now=10.0)
    receive(sim)
    assert [(t, kind) for t, _, kind, _ in sim.heap] == [(10.0, T_CALL)]


def test_call_me_later_waits_at_least_10_microseconds(tmp_path):
    """Batsim's waiter sleeps max(t - now, 1e-5) (waiter_process)."""
    sim = sim_for(tmp_path)
    sim.now = 10.0
    reply(sim, ev("CALL_ME_LATER", {"timestamp": 10.000001}, t=10.0),
          ev("CALL_ME_LATER", {"timestamp": 12.5}, t=10.0), now=10.0)
    receive(sim)
    assert sorted(t for t, _, _, _ in sim.heap) == [10.0 + 1e-5, 12.5]


def test_kill_job_of_a_waiting_or_rejected_job_is_refused(tmp_path):
    sim = sim_for(tmp_path)
    refused(sim, ev("KILL_JOB", {"job_ids": ["w0!1"]}), match="KILL_JOB w0!1 .*the job is submitted, neither running")
    sim = sim_for(tmp_path)
    reply(sim, ev("REJECT_JOB", {"job_id": "w0!1"}))
    receive(sim)
    refused(sim, ev("KILL_JOB", {"job_ids": ["w0!1"]}), match="KILL_JOB w0!1 .*(rejected|deleted)")


def test_kill_job_twice_is_skipped(tmp_path):
    """A job whose kill was requested is skipped (Batsim's kill_requested):
    one JOB_KILLED for the first request only, none for the second."""
    sim = sim_for(tmp_path)
    sim.jobs["w0!1"].state = "COMPLETED_SUCCESSFULLY"  # ended, its end not told yet
    reply(sim, ev("KILL_JOB", {"job_ids": ["w0!1", "w0!1"]}))
    receive(sim)
    killed = [e for e in sim.inbox if e[3] == P_KILLED]
    assert len(killed) == 1 and killed[0][4][0] == ["w0!1"]
    sim.inbox.clear()
    reply(sim, ev("KILL_JOB", {"job_ids": ["w0!1"]}))
    receive(sim)
    assert not [e for e in sim.inbox if e[3] == P_KILLED]


def test_jobs_told_ended_are_deleted(tmp_path):
    """Batsim deletes a job once it sent the message announcing its end: a
    KILL_JOB or SET_JOB_METADATA naming it then aborts."""
    sim = sim_for(tmp_path)
    reply(sim)  # the reply to SIMULATION_BEGINS
    sim.jobs["w0!1"].state = "COMPLETED_SUCCESSFULLY"
    sim._emit("JOB_COMPLETED", {"job_id": "w0!1", "job_state": "COMPLETED_SUCCESSFULLY",
                                "return_code": 0, "alloc": "0-1"})
    exchange(sim, ev("SET_JOB_METADATA", {"job_id": "w0!6", "metadata": "ok"}))
    refused(sim, ev("SET_JOB_METADATA", {"job_id": "w0!1", "metadata": "late"}), match="has deleted it")
    refused(sim, ev("KILL_JOB", {"job_ids": ["w0!1"]}), match="KILL_JOB w0!1 .*has deleted it")


@pytest.mark.parametrize("old, new, ext_ok", [
    ("SUBMITTED", "COMPLETED_SUCCESSFULLY", True),
    ("SUBMITTED", "COMPLETED_KILLED", True),
    ("SUBMITTED", "COMPLETED_FAILED", True),        # not an allowed state at all
    ("COMPLETED_SUCCESSFULLY", "COMPLETED_KILLED", True),
    ("REJECTED", "COMPLETED_KILLED", True),
    ("SUBMITTED", "NOT_SUBMITTED", False),
])
def test_change_job_state_transitions(tmp_path, old, new, ext_ok):
    """Batsim 4.2.1: SUBMITTED -> RUNNING or REJECTED, RUNNING ->
    COMPLETED_* only; the engine's wider changes need --embedded-extensions."""
    change = ev("CHANGE_JOB_STATE", {"job_id": "w0!1", "job_state": new})
    sim = sim_for(tmp_path)
    sim.jobs["w0!1"].state = old
    refused(sim, change, match="CHANGE_JOB_STATE w0!1 ")
    sim = sim_for(tmp_path, ext=True)
    sim.jobs["w0!1"].state = old
    if ext_ok:
        reply(sim, change)
        assert sim.jobs["w0!1"].state == new
    else:
        refused(sim, change, match="CHANGE_JOB_STATE w0!1 ")


def test_set_resource_state_needs_energy(tmp_path):
    data = {"resources": "0-1", "state": "2"}
    refused(sim_for(tmp_path), ev("SET_RESOURCE_STATE", data), match="SET_RESOURCE_STATE .*energy")
    refused(sim_for(tmp_path, ext=True), ev("SET_RESOURCE_STATE", {"resources": "0-1", "state": "x"}),
            match="integer")
    sim = sim_for(tmp_path, ext=True)
    reply(sim, ev("SET_RESOURCE_STATE", data))
    receive(sim)
    assert sim.pending[-1]["type"] == "RESOURCE_STATE_CHANGED"


def test_to_job_msg_and_notify_accepted_as_batsim_does(tmp_path):
    """TO_JOB_MSG to an existing job, and NOTIFY without dynamic jobs, are
    accepted by Batsim 4.2.1 (without effect here)."""
    sim = sim_for(tmp_path)
    reply(sim, ev("TO_JOB_MSG", {"job_id": "w0!1", "msg": "hello"}),
          ev("NOTIFY", {"type": "registration_finished"}), ev("NOTIFY", {"type": "continue_registration"}))
    receive(sim)
    assert sim.registration_open is False


# ====================================================== dynamic registration
def _dyn(tmp_path, ext=False):
    sim = sim_for(tmp_path, dynamic=True, ext=ext)
    reply(sim, ev("REGISTER_PROFILE", {"workload_name": "dyn", "profile_name": "d",
                                       "profile": {"type": "delay", "delay": 1}}),
          ev("REGISTER_PROFILE", {"workload_name": "dyn", "profile_name": "p",
                                  "profile": {"type": "parallel", "cpu": [1, 1], "com": [0] * 4}}))
    return sim


def test_register_profile_twice_is_refused_even_identical(tmp_path):
    again = ev("REGISTER_PROFILE", {"workload_name": "dyn", "profile_name": "d",
                                    "profile": {"type": "delay", "delay": 1}})
    refused(_dyn(tmp_path), again, match="REGISTER_PROFILE dyn!d .*aborts even when it is identical")
    reply(_dyn(tmp_path, ext=True), again)


def test_register_profile_after_registration_finished_is_refused(tmp_path):
    sim = _dyn(tmp_path)
    refused(sim, ev("NOTIFY", {"type": "registration_finished"}),
            ev("REGISTER_PROFILE", {"workload_name": "dyn", "profile_name": "e",
                                    "profile": {"type": "delay", "delay": 1}}),
            match="REGISTER_PROFILE dyn!e .*registration was declared finished")


@pytest.mark.parametrize("job_id, job, message", [
    ("dyn!x", {"id": "y", "subtime": 0, "res": 1, "profile": "d"}, "names job 'y', not 'x'"),
    ("dyn!x", {"id": "dyn!x", "subtime": 0, "res": 1.0, "profile": "d"}, "field 'res': not an integer"),
    ("dyn!x", {"id": "dyn!x", "subtime": 0, "res": 3, "profile": "p"}, "describes 2 executors"),
    ("nowhere!x", {"id": "x", "subtime": 0, "res": 1, "profile": "d"}, "workload 'nowhere' does not exist"),
    ("dyn!x!y", {"id": "x", "subtime": 0, "res": 1, "profile": "d"}, "WORKLOAD!JOB"),
])
def test_register_job_as_batsim_reads_it(tmp_path, job_id, job, message):
    refused(_dyn(tmp_path), ev("REGISTER_JOB", {"job_id": job_id, "job": job}), match=message)


def test_register_job_may_name_itself_fully(tmp_path):
    sim = _dyn(tmp_path)
    reply(sim, ev("REGISTER_JOB", {"job_id": "dyn!x", "job": {"id": "dyn!x", "subtime": 0, "res": 0,
                                                              "profile": "d"}}))
    assert sim.jobs["dyn!x"].state == "SUBMITTED" and sim.jobs["dyn!x"].json["id"] == "dyn!x"


# ============================================================ end to end
def run_with(tmp_path, wl, decide, args=()):
    """Run the engine against a scheduler faked here: ``decide(message)``
    returns the events of each reply (or the reply's whole text, a str).
    Returns (exit code, stderr, the messages received)."""
    import zmq

    port = free_port()
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REP)
    sock.setsockopt(zmq.LINGER, 0)
    sock.bind(f"tcp://127.0.0.1:{port}")
    p, w = write(tmp_path, PLATFORM, "p.xml"), write(tmp_path, wl)
    proc = subprocess.Popen([sys.executable, "-m", "iosched.engine.cli", "-p", p, "-w", w, "-e",
                             str(tmp_path / "out"), "-s", f"tcp://127.0.0.1:{port}", "--sched-timeout", "30",
                             *args], stderr=subprocess.PIPE, text=True)
    poller = zmq.Poller()
    poller.register(sock, zmq.POLLIN)
    msgs = []
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            if poller.poll(100):
                msg = json.loads(sock.recv_string())
                msgs.append(msg)
                ends = any(e["type"] == "SIMULATION_ENDS" for e in msg["events"])
                out = [] if ends else decide(msg)
                sock.send_string(out if isinstance(out, str) else json.dumps({"now": msg["now"], "events": out}))
                if ends:
                    break
            elif proc.poll() is not None:
                break
        err = proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
        sock.close()
        ctx.term()
    return proc.returncode, err, msgs


def _one_delay_job():
    return workload(jobs=[{"id": 1, "subtime": 0, "res": 1, "profile": "d"}],
                    profiles={"d": {"type": "delay", "delay": 1}})


def test_end_to_end_kill_of_a_job_told_ended_is_refused(tmp_path):
    def decide(msg):
        out = []
        for e in msg["events"]:
            now = msg["now"]
            if e["type"] == "JOB_SUBMITTED":
                out.append(ev("EXECUTE_JOB", {"job_id": e["data"]["job_id"], "alloc": "0"}, now))
            elif e["type"] == "JOB_COMPLETED":
                out.append(ev("KILL_JOB", {"job_ids": [e["data"]["job_id"]]}, now))
        return out

    code, err, _ = run_with(tmp_path, _one_delay_job(), decide)
    assert code == 3 and "KILL_JOB w0!1 at t=1." in err and "has deleted it" in err, err


def test_end_to_end_call_me_later_now_is_refused_unless_extensions(tmp_path):
    def decide(msg):
        if msg["events"][0]["type"] == "SIMULATION_BEGINS":
            return [ev("CALL_ME_LATER", {"timestamp": msg["now"]}, msg["now"])]
        return [ev("EXECUTE_JOB", {"job_id": e["data"]["job_id"], "alloc": "0"}, msg["now"])
                for e in msg["events"] if e["type"] == "JOB_SUBMITTED"]

    code, err, _ = run_with(tmp_path, _one_delay_job(), decide)
    assert code == 3 and "You asked to be awaken in the past" in err, err
    code, err, msgs = run_with(tmp_path, _one_delay_job(), decide, ["--embedded-extensions"])
    assert code == 0, err
    assert any(e["type"] == "REQUESTED_CALL" for m in msgs for e in m["events"])


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_end_to_end_nan_and_infinity_are_not_json(tmp_path, token):
    """Batsim 4.2.1 parses a reply with rapidjson's default flags: NaN and
    the infinities are a parse error ("Invalid JSON message: could not be
    parsed", checked on the real Batsim), even in a member it never reads;
    Python's json reads them."""
    def decide(msg):
        return '{"now": %s, "events": [], "unread": %s}' % (json.dumps(msg["now"]), token)

    code, err, _ = run_with(tmp_path, _one_delay_job(), decide)
    assert code == 3 and f"is not valid JSON: {token} is not JSON" in err, err
    assert len(err.strip().splitlines()) == 1, err

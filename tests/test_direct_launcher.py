"""The direct layer on two processes (:mod:`iosched.run.direct_launcher`).

Byte-for-byte equality with pybatsim's launcher is checked in
``test_inproc.py`` (golden family inputs and the baselines, both
launchers) and ``test_golden_families.py`` (the golden engine messages
replayed to both launchers); here: what the launcher itself decides.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import zmq
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol_replay import free_port, load_exchanges
from test_inproc import assert_same_outputs, small  # noqa: F401 - small is a fixture

from iosched.run.direct_launcher import parse_message
from iosched.run.result import RunError
from iosched.run.simulation import run_simulation, scheduler_argv
from iosched.schedulers.registry import resolve

pytest.importorskip("batsim")

BASELINE, _ = resolve("easy")


def _launch(*args, cwd=None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "iosched.run.direct_launcher", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)


def _last_line(text: str) -> str:
    return [ln for ln in text.splitlines() if ln.strip()][-1]


@pytest.fixture()
def plain_pybatsim(tmp_path):
    """A scheduler file that is not one of iosched's (pybatsim's API only)."""
    f = tmp_path / "plainSched.py"
    f.write_text(textwrap.dedent("""
        from batsim.batsim import BatsimScheduler
        class PlainSched(BatsimScheduler):
            def onJobSubmission(self, job):
                self.bs.reject_jobs([job])
    """))
    return f


@pytest.fixture()
def crashing(tmp_path):
    """One of iosched's schedulers (a subclass of the shipped baseline)
    that raises on its first job."""
    f = tmp_path / "crashy.py"
    f.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(BASELINE.parent)!r})
        from baseline import Baseline
        class Crashy(Baseline):
            def onJobSubmission(self, job):
                raise RuntimeError("boom at job " + job.id)
    """))
    return f


def test_auto_picks_the_direct_launcher_for_shipped_schedulers_only(plain_pybatsim):
    ep = "tcp://127.0.0.1:1"
    assert scheduler_argv(BASELINE, ep, "{}", None)[1:3] == ["-m", "iosched.run.direct_launcher"]
    assert scheduler_argv(plain_pybatsim, ep, "{}", None)[1:3] == ["-m", "batsim.cmds.launcher"]
    assert scheduler_argv(BASELINE, ep, "{}", None, "pybatsim")[1:3] == ["-m", "batsim.cmds.launcher"]
    argv = scheduler_argv(plain_pybatsim, ep, "{}", "warning", "direct")
    assert argv[1:3] == ["-m", "iosched.run.direct_launcher"] and argv[-2:] == ["--layer", "direct"]
    assert argv[argv.index("-v") + 1] == "warning"


def test_direct_refuses_a_plain_pybatsim_file_in_one_line(plain_pybatsim):
    p = _launch(plain_pybatsim, "-s", f"tcp://127.0.0.1:{free_port()}", "--layer", "direct")
    out, err = p.communicate(timeout=60)
    assert p.returncode == 1
    assert err.strip() == (f"Error: --layer direct: {plain_pybatsim} is not one of iosched's own "
                           "schedulers (iosched.sched.adapter.PybatsimScheduler); use auto")


@pytest.mark.parametrize("opts, line", [
    ("{bad", "Error: -o: not a JSON object:"),
    ("[1, 2]", "Error: -o: expected a JSON object"),
])
def test_bad_options_are_one_line(opts, line):
    p = _launch(BASELINE, "-s", f"tcp://127.0.0.1:{free_port()}", "-o", opts)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 1 and len(err.strip().splitlines()) == 1
    assert err.startswith(line)


@pytest.mark.parametrize("text, line", [
    (b"{not json", "Error: message 1 from the engine is not JSON:"),
    (b"[1, 2]", "Error: message 1 from the engine is not a Batsim message"),
    (b'{"now": 0.0}', "Error: message 1 from the engine is not a Batsim message"),
])
def test_a_message_that_is_not_a_batsim_message_is_one_line(text, line):
    port = free_port()
    p = _launch(BASELINE, "-s", f"tcp://127.0.0.1:{port}", "-o", '{"policy": "easy"}')
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(f"tcp://127.0.0.1:{port}")
        sock.send(text)
        _, err = p.communicate(timeout=60)
    finally:
        sock.close()
        if p.poll() is None:
            p.kill()
    assert p.returncode == 1 and len(err.strip().splitlines()) == 1
    assert err.startswith(line)


def test_a_silent_engine_calls_on_deadlock_then_fails_in_one_line(shared):
    """As pybatsim: once the simulation runs, a receive that waits longer
    than -t calls the scheduler's onDeadlock (pybatsim's raises)."""
    first = next(iter(sorted((shared / "golden").glob("g1*/transcript.jsonl.gz"))))
    begins, _ = load_exchanges(first)[0]
    port = free_port()
    p = _launch(BASELINE, "-s", f"tcp://127.0.0.1:{port}", "-t", "300", "-o", '{"policy": "easy"}')
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(f"tcp://127.0.0.1:{port}")
        sock.send_string(json.dumps(begins))
        reply = json.loads(sock.recv())
        assert reply["now"] == begins["now"]
        t0 = time.monotonic()
        _, err = p.communicate(timeout=60)
    finally:
        sock.close()
        if p.poll() is None:
            p.kill()
    assert p.returncode == 1 and time.monotonic() - t0 >= 0.2
    assert _last_line(err).startswith(
        "Error: baseline.py: no message from the engine in 300 ms: [PYBATSIM]: Batsim is not "
        "responding (maybe deadlocked)")
    assert "Traceback" in err


def test_a_crashing_scheduler_fails_the_run_in_one_line(small, crashing, tmp_path):
    plat, wl = small
    with pytest.raises(RunError) as e:
        run_simulation(plat, wl, crashing, tmp_path / "out", layer="direct", timeout=120)
    log = (tmp_path / "out" / "sched.log").read_text()
    assert "RuntimeError: boom at job" in log  # the traceback, then the one line
    assert _last_line(log).startswith("Error: crashy.py failed: boom at job")
    assert "scheduler" in str(e.value) and "\n" not in str(e.value).strip()


def test_auto_runs_a_plain_pybatsim_file_with_pybatsims_launch(small, plain_pybatsim, tmp_path):
    """--layer auto on a file that is not iosched's: pybatsim's own
    launch_scheduler runs it (its printed counts, its exit status)."""
    plat, wl = small
    port = free_port()
    p = _launch(plain_pybatsim, "-s", f"tcp://127.0.0.1:{port}", "-v", "warning")
    time.sleep(0.5)
    e = subprocess.run([sys.executable, "-m", "iosched.engine.cli", "-p", str(plat), "-w", str(wl),
                        "-e", str(tmp_path / "out"), "-s", f"tcp://127.0.0.1:{port}", "-q"],
                       capture_output=True, text=True, timeout=120)
    out, _ = p.communicate(timeout=60)
    assert e.returncode == 0 and p.returncode == 0
    assert "Scheduler: PlainSched" in out and ", rejected: " in out


def test_same_outputs_and_counts_as_pybatsims_launcher(small, tmp_path):
    """The same run with each launcher: the same outputs, and the same
    lines printed at the end (pybatsim's counts)."""
    plat, wl = small
    logs = {}
    for layer in ("direct", "pybatsim"):
        res = run_simulation(plat, wl, "conservative", tmp_path / layer, layer=layer, timeout=120,
                             io_record=False)
        assert res.scheduler_returncode == 0
        assert res.scheduler_cmd[2] == ("iosched.run.direct_launcher" if layer == "direct"
                                        else "batsim.cmds.launcher")
        logs[layer] = [ln for ln in (tmp_path / layer / "sched.log").read_text().splitlines()
                       if ln.startswith(("Scheduler:", "Job submitted:"))]
    assert_same_outputs(tmp_path / "direct", tmp_path / "pybatsim")
    assert logs["direct"] == logs["pybatsim"] and len(logs["direct"]) == 2


# --------------------------------------------------------------------------
# parsing: orjson where it gives json's objects, json.loads for the rest

_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20)
_NUMBERS = st.from_regex(r"-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,24})?([eE][+-]?[0-9]{1,3})?", fullmatch=True)


@settings(max_examples=400, deadline=None)
@given(_JSON_VALUES)
def test_parse_message_gives_what_json_loads_gives(value):
    """Any value json.dumps writes (ints of any size, NaN and infinities,
    lone surrogates, nesting) reads back as json.loads reads it: same types,
    same floats to the bit (repr tells -0.0, nan and int from float)."""
    data = json.dumps(value).encode()
    assert repr(parse_message(data)) == repr(json.loads(data))


@settings(max_examples=400, deadline=None)
@given(_NUMBERS)
def test_parse_message_numbers_as_json(text):
    """Number literals with up to 25 digits on either side of the point and
    any exponent: the same int or correctly rounded float as json.loads."""
    data = ('{"now": ' + text + ', "events": [' + text + ']}').encode()
    assert repr(parse_message(data)) == repr(json.loads(data))


def test_parse_message_refuses_what_json_refuses():
    for bad in (b"", b"{", b"[1,]", b"{'a': 1}", b"\xff\xfe"):
        with pytest.raises(ValueError):
            parse_message(bad)
    assert parse_message(b"18446744073709551616") == 2 ** 64   # an int, not orjson's float

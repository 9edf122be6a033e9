"""Batsim's wire format (:mod:`iosched.batsim.wire`) and the engine's use of it."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iosched.batsim.wire import batsim_float, batsim_numbers
from iosched.run.simulation import run_simulation
from test_engine_e2e import filler, inputs  # noqa: F401  (fixture)


def test_floats_rounded_to_six_decimals_other_values_kept():
    msg = {"now": 250222.000150000003, "events": [
        {"timestamp": 1e-7, "type": "JOB_SUBMITTED",
         "data": {"job_id": "w0!1", "job": {"res": 4, "subtime": 57.245384205516594, "walltime": -1,
                                             "flag": True, "none": None, "x": [0.1234567, 2, "3.1234567"]}}}]}
    out = batsim_numbers(msg)
    assert out["now"] == 250222.00015
    ev = out["events"][0]
    assert ev["timestamp"] == 0.0
    job = ev["data"]["job"]
    assert job["subtime"] == 57.245384  # Batsim's 6 decimals (golden g2)
    assert job["res"] == 4 and type(job["res"]) is int
    assert job["walltime"] == -1 and type(job["walltime"]) is int
    assert job["flag"] is True and job["none"] is None
    assert job["x"] == [0.123457, 2, "3.1234567"]
    assert msg["now"] == 250222.000150000003  # the input is not modified


@given(st.floats(min_value=-1e15, max_value=1e15, allow_nan=False))
def test_batsim_float_is_what_a_parser_reads_from_printf(x):
    y = batsim_float(x)
    assert y == float("%6f" % x)  # Batsim's Writer::Double: snprintf("%6f")
    assert abs(y - x) <= 5e-7 + 1e-15 * abs(x)
    assert batsim_float(y) == y


def test_engine_sends_batsim_rounded_numbers(inputs, tmp_path):  # noqa: F811
    p, w = inputs
    transcript = tmp_path / "t.jsonl"
    run_simulation(p, w, filler(), tmp_path / "out", timeout=60,
                   engine_args=["--transcript", str(transcript)])
    floats = []

    def walk(o):
        if isinstance(o, float):
            floats.append(o)
        elif isinstance(o, dict):
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    for line in transcript.read_text().splitlines():
        rec = json.loads(line)
        if rec["dir"] == "engine->sched":
            walk(rec["msg"])
    assert floats
    assert all(f == float("%.6f" % f) for f in floats)
    # the clock itself is not rounded: 50 us latencies give times beyond 6 decimals
    assert any(f != round(f, 3) for f in floats)

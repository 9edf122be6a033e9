"""Tests of iosched.workloads.swf (Standard Workload Format reader)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosched.errors import InputError
from iosched.workloads.swf import SWF_FIELDS, SWF_FLOAT_FIELDS, SwfLog, read_swf

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
KTH = SHARED / "data" / "KTH-SP2-1996-2.1-cln.swf"
needs_kth = pytest.mark.skipif(not KTH.is_file(), reason=f"shared data not available: {KTH}")

# A valid job line (18 fields) reused by the error tests.
GOOD = "1 0 5 100 4 -1 -1 4 3600 -1 1 7 3 -1 2 -1 -1 -1"


def write(tmp_path, text, name="t.swf"):
    path = tmp_path / name
    path.write_text(text)
    return path


def assert_one_line_naming(exc, *parts):
    message = str(exc.value)
    assert "\n" not in message
    for part in parts:
        assert part in message, (part, message)


# --------------------------------------------------------------------- KTH


@needs_kth
def test_kth_matches_an_independent_parse():
    log = read_swf(KTH)
    assert isinstance(log, SwfLog)
    jobs, header = log
    assert list(jobs.columns) == list(SWF_FIELDS)
    # Independent reading: every non-comment line, split on whitespace.
    expected_lines, expected_rows = [], []
    for lineno, line in enumerate(KTH.read_text().splitlines(), start=1):
        if line.strip() and not line.lstrip().startswith(";"):
            expected_lines.append(lineno)
            expected_rows.append([float(tok) for tok in line.split()])
    # The data README states 28,476 records, the header MaxRecords too.
    assert len(expected_rows) == 28476 == int(header["MaxRecords"])
    assert jobs.shape == (28476, 18)
    assert list(jobs.index) == expected_lines
    assert jobs.index.name == "line"
    raw = np.array(expected_rows)
    for i, field in enumerate(SWF_FIELDS):
        got = jobs[field].to_numpy(dtype=float, na_value=np.nan)
        want = np.where(raw[:, i] == -1, np.nan, raw[:, i])
        np.testing.assert_array_equal(got, want, err_msg=field)


@needs_kth
def test_kth_header_and_dtypes():
    jobs, header = read_swf(KTH)
    assert header["MaxNodes"] == "100"
    assert header["MaxProcs"] == "100"
    assert header["UnixStartTime"] == "843480031"
    assert header["Computer"] == "IBM SP2"
    assert header["StartTime"] == "Mon Sep 23 14:00:31 CEST 1996"  # colons in the value
    # continuation line of "Information", not a key named "http"
    assert "http" not in header
    assert header["Information"].splitlines()[-1].startswith("http://www.cs.huji.ac.il")
    assert "14 jobs removed" in header["Note"]
    for field in SWF_FIELDS:
        if field in SWF_FLOAT_FIELDS:
            assert jobs[field].dtype == np.float64, field
        else:
            assert str(jobs[field].dtype) == "Int64", field
    # Fields the KTH log does not record are all missing.
    assert jobs["average_cpu_time"].isna().all()
    assert jobs["think_time"].isna().all()


@needs_kth
def test_read_is_deterministic():
    a, ha = read_swf(KTH)
    b, hb = read_swf(str(KTH))
    pd.testing.assert_frame_equal(a, b)
    assert ha == hb


# ------------------------------------------------------------ small files


def test_header_keys_continuations_and_blank_lines(tmp_path):
    text = (
        "; Version: 2.2\n"
        "; Computer: Test machine\n"
        ";   second line of computer\n"
        ";\n"
        "; Note: first note\n"
        "; Note: second note\n"
        ";   continues the second note\n"
        "; MaxProcs: 64\n"
        "\n"
        "; a free comment after a blank line\n"
        f"{GOOD}\n"
        "   \n"
        "; a trailing comment without key\n"
        f"{GOOD}\n"
    )
    jobs, header = read_swf(write(tmp_path, text))
    assert header == {
        "Version": "2.2",
        "Computer": "Test machine\nsecond line of computer",
        "Note": "first note\nsecond note\ncontinues the second note",
        "MaxProcs": "64",
    }
    assert len(jobs) == 2
    assert list(jobs.index) == [11, 14]


def test_missing_values_become_na_and_floats_are_kept(tmp_path):
    line = "7 12.5 -1 99.25 -1 -1 1024.5 8 -1.0 -1 5 -1 -1 -1 -1 -1 3 0.5"
    jobs, _ = read_swf(write(tmp_path, line + "\n"))
    row = {field: jobs[field].iloc[0] for field in SWF_FIELDS}
    assert row["job_number"] == 7
    assert row["submit_time"] == 12.5
    assert math.isnan(row["wait_time"])
    assert row["run_time"] == 99.25
    assert row["allocated_processors"] is pd.NA
    assert row["used_memory"] == 1024.5
    assert row["requested_processors"] == 8
    assert math.isnan(row["requested_time"])  # -1.0 is missing too
    assert row["status"] == 5
    assert row["user_id"] is pd.NA
    assert row["preceding_job_number"] == 3
    assert row["think_time"] == 0.5


def test_empty_file_gives_empty_frame(tmp_path):
    jobs, header = read_swf(write(tmp_path, "; MaxNodes: 4\n"))
    assert jobs.shape == (0, 18)
    assert header == {"MaxNodes": "4"}


# ------------------------------------------------------------- bad input


def test_wrong_field_count(tmp_path):
    path = write(tmp_path, f"; c\n{GOOD}\n1 2 3\n")
    with pytest.raises(InputError) as exc:
        read_swf(path)
    assert_one_line_naming(exc, f"{path}:3", "18 fields", "got 3")


def test_too_many_fields(tmp_path):
    path = write(tmp_path, f"{GOOD} 5\n")
    with pytest.raises(InputError) as exc:
        read_swf(path)
    assert_one_line_naming(exc, f"{path}:1", "got 19")


@pytest.mark.parametrize(
    "index, token, words",
    [
        (3, "abc", ["run_time", "'abc'", "not a number"]),
        (1, "nan", ["submit_time", "not a number"]),
        (1, "1e999", ["submit_time", "finite"]),
        (1, "1_000", ["submit_time", "not a number"]),
        (2, "-5", ["wait_time", "negative"]),
        (4, "2.5", ["allocated_processors", "not an integer"]),
        (11, "x7", ["user_id"]),
    ],
)
def test_bad_field_names_file_line_and_field(tmp_path, index, token, words):
    tokens = GOOD.split()
    tokens[index] = token
    path = write(tmp_path, f"; h: 1\n\n{GOOD}\n{' '.join(tokens)}\n")
    with pytest.raises(InputError) as exc:
        read_swf(path)
    assert_one_line_naming(exc, f"{path}:4", "field", *words)


def test_missing_file(tmp_path):
    path = tmp_path / "nope.swf"
    with pytest.raises(InputError) as exc:
        read_swf(path)
    assert_one_line_naming(exc, str(path), "cannot read")


def test_directory_is_not_a_file(tmp_path):
    with pytest.raises(InputError) as exc:
        read_swf(tmp_path)
    assert_one_line_naming(exc, str(tmp_path))


def test_invalid_utf8(tmp_path):
    path = tmp_path / "bin.swf"
    path.write_bytes(GOOD.encode() + b"\n\xff\xfe 1 2\n")
    with pytest.raises(InputError) as exc:
        read_swf(path)
    assert_one_line_naming(exc, f"{path}:2", "UTF-8")


def test_input_error_is_a_value_error():
    assert issubclass(InputError, ValueError)


# ----------------------------------------------------------- round trips

_missing = st.just(-1)
_ints = st.one_of(_missing, st.integers(min_value=0, max_value=10**9))
_floats = st.one_of(
    _missing,
    st.integers(min_value=0, max_value=10**9),
    st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False),
)
_row = st.tuples(*[(_floats if f in SWF_FLOAT_FIELDS else _ints) for f in SWF_FIELDS])
_key = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,12}", fullmatch=True)
_value = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 .:/=<>()-]{0,30}[A-Za-z0-9]", fullmatch=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_row, max_size=25), header=st.dictionaries(_key, _value, max_size=6), seps=st.sampled_from([" ", "\t", "   "]))
def test_random_rows_round_trip(tmp_path, rows, header, seps):
    lines = [f"; {k}: {v}" for k, v in header.items()]
    lines += [seps.join(repr(v) if isinstance(v, float) else str(v) for v in row) for row in rows]
    path = write(tmp_path, "\n".join(lines) + "\n", name="rt.swf")
    jobs, got_header = read_swf(path)
    assert got_header == header
    assert len(jobs) == len(rows)
    assert list(jobs.index) == [len(header) + i + 1 for i in range(len(rows))]
    for i, row in enumerate(rows):
        for field, value in zip(SWF_FIELDS, row):
            got = jobs[field].iloc[i]
            if value == -1:
                assert pd.isna(got), (field, got)
            else:
                assert got == value, (field, got, value)

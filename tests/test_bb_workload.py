"""KTH-SP2 -> Batsim JSON with burst-buffer requests (iosched.experiments.bb.workload)."""

import math

import numpy as np
import pytest

from iosched.bb.model import MB
from iosched.experiments.bb import workload as W


def test_expected_capacity_closed_form_matches_sampling():
    e = W.expected_bb_per_node()
    rng = np.random.Generator(np.random.PCG64(0))
    z = rng.standard_normal(400_000)
    x = np.maximum((W.LOGNORM_LOC + W.LOGNORM_SCALE * np.exp(W.LOGNORM_S * z)) * 1024, W.BB_MIN)
    assert abs(x.mean() / e - 1) < 0.01
    cap = W.expected_capacity_per_storage()
    assert cap == pytest.approx(96 * e / 12)
    assert 39e9 < cap < 40e9      # the artifact rounds to 40 GB


@pytest.fixture(scope="module")
def kth(shared):
    return shared / "data" / "KTH-SP2-1996-2.1-cln.swf"


@pytest.fixture(scope="module")
def first50(kth):
    return W.generate(kth, seed=7, first=50)


def test_fields_and_rules(first50):
    jobs = first50["jobs"]
    assert len(jobs) == 50 and jobs[0]["subtime"] == 1
    cap_total = 12 * first50["bb_capacity_per_storage"]
    for j in jobs:
        # the job's I/O model (issue 26): the field io, in its canonical form
        assert set(j) == {"id", "subtime", "walltime", "res", "profile", "io"}
        io = j["io"]
        assert io == {"burst_buffer": {"bytes": io["burst_buffer"]["bytes"], "checkpoint_factor": 0.5},
                      "compute": {"com": io["compute"]["com"], "flops": io["compute"]["flops"]}}
        bb, flops, com = io["burst_buffer"]["bytes"], io["compute"]["flops"], io["compute"]["com"]
        assert bb > 0 and bb * j["res"] <= cap_total + j["res"]
        p = first50["profiles"][j["profile"]]
        assert p == {"type": "parallel_homogeneous", "cpu": flops, "com": com, "bb": bb}
        if j["walltime"] <= 120:
            assert bb == 10 * MB
        else:
            assert bb >= 100 * MB - 1
        assert (com == 0) == (j["res"] == 1) or com == 0


def test_same_seed_same_bytes_other_seed_differs(kth, tmp_path, first50):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    W.write_workload(first50, a)
    W.write_workload(W.generate(kth, seed=7, first=50), b)
    assert a.read_bytes() == b.read_bytes()
    other = W.generate(kth, seed=8, first=50)
    assert [j["io"]["burst_buffer"] for j in other["jobs"]] != [j["io"]["burst_buffer"] for j in first50["jobs"]]


def test_first_jobs_is_a_prefix_and_parts_partition(kth):
    full = W.generate(kth, seed=7, first=400)
    head = W.first_jobs(full, 50)
    assert head["jobs"] == W.generate(kth, seed=7, first=50)["jobs"]
    parts = W.three_week_parts(full, nb_parts=3, length=7 * 24 * 3600)
    ids = [j["id"] for p in parts for j in p["jobs"]]
    assert len(ids) == len(set(ids))
    assert ids == [j["id"] for j in full["jobs"] if j["subtime"] < 3 * 7 * 24 * 3600]
    for p in parts:
        if p["jobs"]:
            assert p["jobs"][0]["subtime"] == 1
            assert set(p["profiles"]) == {j["profile"] for j in p["jobs"]}


def test_cli_writes_the_library_workload_and_parts(kth, tmp_path):
    from click.testing import CliRunner

    from iosched.cli import cli as main

    r = CliRunner().invoke(main, ["workload", "bb", str(kth), str(tmp_path / "w.json"),
                                  "--seed", "7", "--first", "50"])
    assert r.exit_code == 0, r.output
    W.write_workload(W.generate(kth, seed=7, first=50), tmp_path / "lib.json")
    assert (tmp_path / "w.json").read_bytes() == (tmp_path / "lib.json").read_bytes()
    r = CliRunner().invoke(main, ["workload", "bb", str(kth), str(tmp_path / "parts"),
                                  "--first", "300", "--parts", "3", "--part-days", "2"])
    assert r.exit_code == 0, r.output
    files = sorted((tmp_path / "parts").glob("part-*.json"))
    assert [f.name for f in files] == ["part-00.json", "part-01.json", "part-02.json"]
    r = CliRunner().invoke(main, ["workload", "bb", str(tmp_path / "missing.swf"), str(tmp_path / "x.json")])
    assert r.exit_code != 0 and "missing.swf" in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1

"""``iosched arena`` (issue 27, item 3): a tiny arena runs to the end and
writes its leaderboard and report, resuming re-runs nothing, and bad
arguments are one-line errors (exit status 2)."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
from click.testing import CliRunner

from iosched.analysis.leaderboard import compare_leaderboards
from iosched.cli import cli
from iosched.experiments.arena.campaign import campaign_spec, parse_names, parse_nodes, parse_seeds, run_arena
from iosched.experiments.arena.machine import ArenaMachine
from iosched.errors import InputError
from iosched.experiments.bench.arena import run_times
from iosched.schedulers.registry import SCHEDULERS as REGISTERED

SCHEDULERS = ["easy", "sjf-bb", "io-list"]


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    out = tmp_path_factory.mktemp("arena")
    res = run_arena(SCHEDULERS, ["mixed"], [1, 2], [100], out, jobs=40, workers=2,
                    in_process=True, echo=lambda s: None)
    return out, res


def test_tiny_arena_writes_the_leaderboard_and_the_report(arena):
    out, res = arena
    assert res["failed"] == {}
    board = pd.read_csv(out / "n100" / "leaderboard" / "leaderboard.csv")
    assert sorted(board["scheduler"]) == sorted(SCHEDULERS)
    assert set(board["regime"]) == {"mixed"} and set(board["machine"]) == {"arena100-dragonfly"}
    assert list(board["runs"]) == [2, 2, 2] and list(board["failed"]) == [0, 0, 0]
    assert sorted(board["rank"]) == [1, 2, 3]
    # rejected jobs are counted, and easy is paired with itself (difference 0)
    assert "jobs_rejected" in board.columns
    easy = board[board["scheduler"] == "easy"].iloc[0]
    assert easy["pairs"] == 2 and easy["bounded_slowdown_mean_diff"] == 0.0
    # the bandwidths the list/pack family takes as options reach the campaign file
    spec = (out / "n100" / "arena.yaml").read_text(encoding="utf-8")
    assert "bandwidth:" in spec and "--enable-dynamic-jobs" in spec
    md = (out / "report.md").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Regime mixed on machine arena100-dragonfly" in md
    assert "I/O of regime mixed" in md and "Bytes moved per tier" in md
    assert "I/O over time" in md
    for name in ("io_arena100-dragonfly_mixed_all_tiers.png", "io_arena100-dragonfly_mixed_tiers.png",
                 "io_arena100-dragonfly_mixed_timeline_easy.png"):
        assert (out / "figures" / name).is_file(), name
    assert html.count("<img") >= 4 and "<table" in html


def test_resuming_runs_nothing_again(arena):
    out, first = arena
    assert len(first["sizes"][0]["result"].executed) == 6
    before = (out / "n100" / "leaderboard" / "leaderboard.csv").read_bytes()
    again = run_arena(SCHEDULERS, ["mixed"], [1, 2], [100], out, jobs=40, workers=1,
                      in_process=True, echo=lambda s: None)
    res = again["sizes"][0]["result"]
    assert res.executed == [] and len(res.skipped) == 6
    assert (out / "n100" / "leaderboard" / "leaderboard.csv").read_bytes() == before


def test_bench_times_per_scheduler_and_refuses_a_used_folder(arena, tmp_path):
    out, res = arena
    times = run_times(res["sizes"][0]["runs"])
    assert sorted(times["per_scheduler"]) == sorted(SCHEDULERS)
    for name, v in times["per_scheduler"].items():
        assert v["runs"] == 2 and 0 < v["median_s"] <= v["sum_s"]
        assert times["per_regime"][name]["mixed"] == v
    assert times["sum_s"] == pytest.approx(sum(v["sum_s"] for v in times["per_scheduler"].values()))
    r = CliRunner().invoke(cli, ["bench", "arena", "--output", str(out), "--result", str(tmp_path / "a.json")])
    assert r.exit_code == 2 and "already holds finished runs" in r.output
    assert not (tmp_path / "a.json").exists()
    # a subset is timed, not judged against the whole arena's target
    r = CliRunner().invoke(cli, ["bench", "arena", "--schedulers", "easy", "--regimes", "mixed", "--seeds", "1",
                                 "--jobs", "10", "--output", str(tmp_path / "b"),
                                 "--result", str(tmp_path / "b.json")])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "b.json").read_text())
    assert doc["whole_arena"] is False and doc["meets_target"] is None
    assert doc["per_scheduler"]["easy"]["runs"] == 1 and doc["wall_time_s"] > 0


def test_parsers():
    assert parse_seeds("3") == [1, 2, 3] and parse_seeds("4,7") == [4, 7]
    assert parse_nodes("100,1000") == [100, 1000]
    assert parse_names("all", ["a", "b"], "--x") == ["a", "b"]
    assert parse_names("b,a,b", ["a", "b"], "--x") == ["b", "a"]
    for fn, arg in ((parse_seeds, "0"), (parse_seeds, "x"), (parse_seeds, "1,1"),
                    (parse_nodes, "0"), (parse_nodes, "100,abc"), (parse_nodes, "200000")):
        with pytest.raises(InputError):
            fn(arg)


@pytest.mark.parametrize("args, words", [
    (["--schedulers", "easy,nope"], ["--schedulers", "'nope'"]),
    (["--schedulers", "sjf-bb"], ["--schedulers", "baseline"]),
    (["--regimes", "wet"], ["--regimes", "'wet'"]),
    (["--seeds", "two"], ["--seeds"]),
    (["--seeds", "0"], ["--seeds"]),
    (["--nodes", "0"], ["--nodes"]),
    (["--topology", "ring"], ["--topology", "ring"]),
    (["--workers", "2", "--cluster", "tcp://127.0.0.1:1"], ["--workers", "--cluster"]),
    (["--engine", "nix"], ["--engine", "'nix'"]),
    (["--schedulers", "easy", "--scheduler-options", "io-list={}"], ["--scheduler-options", "'io-list'"]),
    (["--schedulers", "easy", "--scheduler-options", "easy=[1]"], ["--scheduler-options", "JSON object"]),
    (["--schedulers", "easy", "--scheduler-options", "easy"], ["--scheduler-options", "NAME=JSON"]),
    (["--engine", "batsim", "--in-process"], ["--in-process", "embedded engine only"]),
    (["--engine", "batsim", "--overload", "fig4"], ["--overload", "embedded engine only"]),
])
def test_bad_arguments_are_one_line_errors(tmp_path, args, words):
    res = CliRunner().invoke(cli, ["arena", "--output", str(tmp_path / "o"), *args])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:"), res.output
    for w in words:
        assert w in lines[0]
    assert not (tmp_path / "o").exists()


def test_engine_batsim_goes_into_the_campaign_file(tmp_path):
    m = ArenaMachine(100, "dragonfly", None)
    real = campaign_spec("a", tmp_path / "p.xml", m, ["easy"], ["mixed"], [1], 10, None, False,
                         engine="batsim")
    emb = campaign_spec("a", tmp_path / "p.xml", m, ["easy"], ["mixed"], [1], 10, None, False)
    assert real["engine"] == "batsim" and "engine" not in emb
    assert {k: v for k, v in real.items() if k != "engine"} == emb
    own = campaign_spec("a", tmp_path / "p.xml", m, ["easy", "io-list"], ["mixed"], [1], 10, None, False,
                        own_options={"io-list": {"io_model": "shared"}})
    entry = own["schedulers"][1]
    assert entry["name"] == "io-list" and entry["options"]["io_model"] == "shared"
    assert entry["options"]["bandwidth"] > 0      # the machine's B kept


def test_demo_generator_needs_bb(tmp_path):
    """``iosched demo`` is the arena; ``--generator`` belongs to the burst-buffer showcase."""
    res = CliRunner().invoke(cli, ["demo", "--generator", "--output", str(tmp_path / "o")])
    assert res.exit_code == 2 and "--generator" in res.output and "--bb" in res.output
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(shutil.which("batsim") is None, reason="no 'batsim' on PATH (the real Batsim 4.2.x)")
def test_an_arena_sample_on_the_real_batsim_gives_the_same_leaderboard(tmp_path):
    """Issue 27, item 6: one regime, one seed, every registered scheduler, on
    the real Batsim 4.2.1 and on the embedded engine: the same rank order and
    every metric's mean within 1 %."""
    names = ["easy", *sorted(set(REGISTERED) - {"easy"})]
    boards = {}
    for engine in ("batsim", "embedded"):
        res = run_arena(names, ["mixed"], [1], [100], tmp_path / engine, jobs=30, workers=2,
                        engine=engine, echo=lambda s: None)
        assert res["failed"] == {}, engine
        boards[engine] = res["sizes"][0]["leaderboard"]["board"]
    cmp = compare_leaderboards(boards["batsim"], boards["embedded"], tolerance=0.01)
    assert cmp["order"] == [] and cmp["outside"] == [], cmp
    assert len(boards["batsim"]) == len(names)

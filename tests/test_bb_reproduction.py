"""Tests of iosched.experiments.bb.reproduction (the Kopanski & Rzadca table, figures and
claims) on a campaign folder written by hand in the layout of
iosched.campaign (campaign.json, runs/<id>/ with run.json, out_jobs.csv in the
burst-buffer form -- w0!J REJECTED, bb!J the run --, metrics.json, done.json or
failed.json). No simulation: the values are chosen so that the expected
ratios are known."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from iosched.analysis.campaign import campaign_table, job_table
from iosched.analysis.jobs import load_jobs
from iosched.analysis.metrics import compute_metrics
from iosched.experiments.bb import reproduction as R

HEADER = ("job_id,workload_name,profile,submission_time,requested_number_of_resources,"
          "requested_time,success,final_state,starting_time,execution_time,finish_time,"
          "waiting_time,turnaround_time,stretch,allocated_resources,consumed_energy,metadata")
TAU = 600.0
RUNTIME = 1000.0  # s, > tau: bounded slowdown = 1 + W / RUNTIME
BASE_WAITS = (100.0, 300.0, 0.0, 800.0)  # s, per job, sjf-bb on part 0
# waiting time factor of each policy (x sjf-bb's waits), per part it is also x (1 + part)
FACTORS = {"fcfs": 3.0, "fcfs-easy": 100.0, "filler": 2.0, "fcfs-bb": 1.5, "sjf-bb": 1.0,
           "plan-1": 0.9, "plan-2": 0.75, "plan-3": 0.8, "sjf-bb-head": 0.95}
PARTS = (0, 1, 2)
FAILED_RUN = ("plan-3", "kth3w", 2)       # failed.json
PENDING_RUN = ("filler", "kth3w", 1)      # folder without a marker (killed mid-way)
ABSENT_RUN = ("plan-1", "kth3w", 2)       # not in the manifest
FAILED_FIRST = ("fcfs", "kth1000", None)  # failed.json


def waits(policy: str, workload: str, part) -> list[float]:
    k = 0 if part is None else part
    scale = FACTORS[policy] * (1 + k) * (1.5 if workload == "kth1000" else 1.0)
    return [w * scale for w in BASE_WAITS]


def expected(policy: str, workload: str, part) -> tuple[float, float]:
    """(mean waiting time, mean bounded slowdown) of a run, per workload job."""
    w = np.array(waits(policy, workload, part))
    bsld = np.maximum(1.0, (w + RUNTIME) / max(RUNTIME, TAU))
    return float(w.mean()), float(bsld.mean())


def _stats(v: float) -> dict:
    return {"mean": v, "median": v, "p95": v, "max": v}


def write_run(root: Path, policy: str, workload: str, part, status: str) -> dict:
    p = "" if part is None else f"-p{part}"
    rid = f"dragonfly96__{workload}{p}__{policy}__s1-" + \
        hashlib.sha256(f"{policy} {workload} {part}".encode()).hexdigest()[:10]
    params = {"platform": "dragonfly96", "workload": workload, "part": part, "scheduler": policy,
              "options": {}, "seed": 1, "engine": "embedded", "nb_res": 96}
    d = root / "runs" / rid
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"id": rid, "params": params}))
    entry = {"id": rid, "dir": f"runs/{rid}", "params": params, "identity": {"seed": 1},
             "platform": "inputs/platforms/dragonfly96.xml",
             "workload": f"inputs/workloads/{workload}{p}.json"}
    if status == "failed":
        (d / "failed.json").write_text(json.dumps({"id": rid, "status": "failed",
                                                   "reason": f"{policy} timed out after 86400 s"}))
        return entry
    if status == "pending":
        (d / "out_jobs.csv").write_text(HEADER + "\n")
        return entry
    lines = [HEADER]
    for j, w in enumerate(waits(policy, workload, part), start=1):
        sub = 10.0 * j
        start, fin = sub + w, sub + w + RUNTIME
        lines.append(f"{j},w0,{j},{sub:.6f},4,3600.000000,0,REJECTED,,,,,,,,-1.000000,\"\"")
        lines.append(f"{j},bb,{j},{start:.6f},6,3600.000000,1,COMPLETED_SUCCESSFULLY,{start:.6f},"
                     f"{RUNTIME:.6f},{fin:.6f},0.000000,{RUNTIME:.6f},1.000000,"
                     f"{4 * j}-{4 * j + 3} 96 108,-1.000000,\"\"")
    (d / "out_jobs.csv").write_text("\n".join(lines) + "\n")
    wm, bm = expected(policy, workload, part)
    n = len(BASE_WAITS)
    metrics = {"waiting_time": _stats(wm), "turnaround": _stats(wm + RUNTIME),
               "slowdown": _stats(bm), "bounded_slowdown": _stats(bm), "makespan": 5000.0,
               "utilization": 0.5, "busy_node_seconds": 1000.0, "nb_resources": 96,
               "nb_resources_source": "argument", "nb_jobs": n, "nb_jobs_started": n,
               "nb_jobs_rejected": 0, "slowdown_nb_undefined": 0, "tau": TAU,
               "final_states": {"COMPLETED_SUCCESSFULLY": n}}
    (d / "metrics.json").write_text(json.dumps(metrics, sort_keys=True, indent=2))
    (d / "done.json").write_text(json.dumps({"id": rid, "status": "done", "metrics": metrics,
                                             "wall_time_s": 1.0}))
    return entry


def make_campaign(root: Path, complete: bool = False) -> Path:
    runs = []
    for part in (None, *PARTS):
        wl = "kth1000" if part is None else "kth3w"
        for policy in R.POLICIES:
            key = (policy, wl, part)
            if not complete and key == ABSENT_RUN:
                continue
            status = "done"
            if not complete and key in (FAILED_RUN, FAILED_FIRST):
                status = "failed"
            elif not complete and key == PENDING_RUN:
                status = "pending"
            runs.append(write_run(root, policy, wl, part, status))
    manifest = {"name": "bb_reproduction", "baseline": "sjf-bb", "engine": "embedded",
                "tau_s": TAU, "timeout_s": 86400.0, "seeds": [1], "platforms": ["dragonfly96"],
                "workloads": ["kth1000", "kth3w"], "schedulers": list(R.POLICIES), "runs": runs}
    (root / "campaign.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return root


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    return make_campaign(tmp_path_factory.mktemp("camp"))


@pytest.fixture(scope="module")
def built(campaign, tmp_path_factory):
    out = tmp_path_factory.mktemp("rep") / "bb_reproduction"
    return out, R.build(campaign, out, top=5)


def used_parts(policy: str) -> list[int]:
    bad = {FAILED_RUN, PENDING_RUN, ABSENT_RUN}
    return [k for k in PARTS if (policy, "kth3w", k) not in bad and ("sjf-bb", "kth3w", k) not in bad]


def test_table_values(built):
    out, res = built
    t = res["reproduction"].table
    assert list(t["policy"]) == list(R.POLICIES)
    assert list(t.columns) == ["policy", *R.TABLE_COLUMNS]
    t = t.set_index("policy")
    for policy in R.POLICIES:
        ks = used_parts(policy)
        assert t.at[policy, "nb_parts"] == len(ks)
        for i, key in enumerate(("waiting", "bsld")):
            ratios = np.array([expected(policy, "kth3w", k)[i] / expected("sjf-bb", "kth3w", k)[i]
                               for k in ks])
            for s in ("median", "mean", "min", "max"):
                assert t.at[policy, f"{key}_ratio_{s}"] == pytest.approx(getattr(np, s)(ratios))
        if (policy, "kth1000", None) == FAILED_FIRST:
            assert all(math.isnan(t.at[policy, c]) for c in R.TABLE_COLUMNS if c.startswith("first_"))
            continue
        wm, bm = expected(policy, "kth1000", None)
        bw, bb = expected("sjf-bb", "kth1000", None)
        assert t.at[policy, "first_waiting_time_mean_s"] == pytest.approx(wm)
        assert t.at[policy, "first_bounded_slowdown_mean"] == pytest.approx(bm)
        assert t.at[policy, "first_waiting_ratio"] == pytest.approx(wm / bw)
        assert t.at[policy, "first_bsld_ratio"] == pytest.approx(bm / bb)
    # the baseline's ratios are 1; waiting ratios are the policy factors
    assert all(t.loc["sjf-bb", [f"waiting_ratio_{s}" for s in ("median", "mean", "min", "max")]] == 1)
    assert all(t.loc["sjf-bb", [f"bsld_ratio_{s}" for s in ("median", "mean", "min", "max")]] == 1)
    assert t.at["sjf-bb", "first_waiting_ratio"] == 1 and t.at["sjf-bb", "first_bsld_ratio"] == 1
    assert t.at["fcfs-easy", "waiting_ratio_median"] == pytest.approx(100.0)
    assert t.at["plan-2", "waiting_ratio_max"] == pytest.approx(0.75)


def test_ratios_agree_with_the_campaign_files(built, campaign):
    """The table's ratios are value / sjf-bb's value of the runs' done.json metrics."""
    _, res = built
    done = {}
    for run in json.loads((campaign / "campaign.json").read_text())["runs"]:
        f = campaign / run["dir"] / "done.json"
        if f.is_file():
            m = json.loads(f.read_text())["metrics"]
            p = run["params"]
            done[(p["scheduler"], p["part"])] = (m["waiting_time"]["mean"],
                                                 m["bounded_slowdown"]["mean"])
    parts = res["reproduction"].parts
    assert len(parts) == sum(1 for (s, k) in done if k is not None)
    for r in parts.itertuples(index=False):
        k = int(r.part)
        base = done.get(("sjf-bb", k))
        assert r.waiting_time_mean == pytest.approx(done[(r.policy, k)][0])
        assert r.waiting_ratio == pytest.approx(done[(r.policy, k)][0] / base[0])
        assert r.bsld_ratio == pytest.approx(done[(r.policy, k)][1] / base[1])


def test_outputs_written_and_csv_matches(built):
    out, res = built
    for name in ("table.csv", "table.md", "claims.md", "fig12_waiting.png", "fig12_bsld.png",
                 "tail.png"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert b"Software" not in png.read_bytes()

    csv = pd.read_csv(out / "table.csv")
    t = res["reproduction"].table
    assert list(csv["policy"]) == list(R.POLICIES)
    np.testing.assert_allclose(csv["waiting_ratio_median"].to_numpy(float),
                               t["waiting_ratio_median"].to_numpy(float), equal_nan=True)
    md = (out / "table.md").read_text()
    assert "| fcfs-easy | 3 | 100.0 |" in md


def test_missing_runs_are_listed(built):
    out, res = built
    unused = {(u["policy"], u["workload"], u["part"]): u for u in res["reproduction"].unused}
    assert set(unused) == {FAILED_RUN, PENDING_RUN, ABSENT_RUN, FAILED_FIRST}
    assert unused[FAILED_RUN]["status"] == "failed"
    assert unused[FAILED_RUN]["reason"] == "plan-3 timed out after 86400 s"
    assert unused[PENDING_RUN]["status"] == "pending"
    assert unused[ABSENT_RUN]["status"] == "missing"
    for name in ("table.md", "claims.md"):
        text = (out / name).read_text()
        assert "plan-3 timed out after 86400 s" in text
        assert "| plan-1 | kth3w | 2 | missing |" in text
        assert "| filler | kth3w | 1 | pending |" in text
        assert "| fcfs | kth1000 | - | failed |" in text


def test_claims_follow_the_numbers(built):
    _, res = built
    rep = res["reproduction"]
    t = rep.table.set_index("policy")
    c = {x["id"]: x for x in rep.claims}
    assert sorted(c) == ["a1", "a2", "a3", "a4", "b1", "b2"]
    # (a) fcfs-easy / sjf-bb = its median ratio; / plan-2 = median of per-part quotients
    assert c["a1"]["parts_value"] == pytest.approx(t.at["fcfs-easy", "waiting_ratio_median"])
    assert c["a1"]["parts_value"] == pytest.approx(100.0)
    ks = [k for k in PARTS if k in used_parts("fcfs-easy") and k in used_parts("plan-2")]
    assert c["a2"]["parts_value"] == pytest.approx(np.median(
        [expected("fcfs-easy", "kth3w", k)[0] / expected("plan-2", "kth3w", k)[0] for k in ks]))
    assert c["a2"]["parts_value"] == pytest.approx(100 / 0.75)
    assert c["a3"]["parts_value"] == pytest.approx(t.at["fcfs-easy", "bsld_ratio_median"])
    assert c["a1"]["first_value"] == pytest.approx(100.0)
    # (b) improvements
    assert c["b1"]["parts_value"] == pytest.approx(1 - t.at["plan-2", "waiting_ratio_median"])
    assert c["b1"]["parts_value"] == pytest.approx(0.25)
    assert c["b2"]["parts_value"] == pytest.approx(1 - t.at["plan-2", "bsld_ratio_median"])
    assert c["b2"]["first_value"] == pytest.approx(1 - t.at["plan-2", "first_bsld_ratio"])
    for x in rep.claims:
        kind = "a" if x["id"].startswith("a") else x["id"]
        for where in ("parts", "first"):
            v = x[f"{where}_value"]
            want = ("no data" if not math.isfinite(v)
                    else "holds" if R.CRITERIA[kind][1](v) else "does not hold")
            if kind == "a":     # the paper makes (a) on the whole log only
                want = R.WHOLE_LOG_ONLY
            assert x[f"{where}_verdict"] == want, (x["id"], where, v)
    assert c["b1"]["parts_verdict"] == "holds"          # 25% > 20%
    assert c["a3"]["parts_value"] < c["a1"]["parts_value"]  # bounded slowdowns differ less
    md = (res["paths"]["claims.md"]).read_text()
    assert "| a1 |" in md and "100.0x (n=3)" in md and "25.0%" in md


def test_claim_verdicts_at_the_boundaries():

    def table(easy_w, plan_w, plan_b):
        rows = []
        for p in R.POLICIES:
            w = {"fcfs-easy": easy_w, "plan-2": plan_w}.get(p, 1.0)
            b = {"plan-2": plan_b}.get(p, 1.0)
            rows.append({"policy": p, "nb_parts": 1, "waiting_ratio_median": w,
                         "bsld_ratio_median": b, "first_waiting_time_mean_s": 10.0 * w,
                         "first_bounded_slowdown_mean": 2.0 * b, "first_waiting_ratio": w,
                         "first_bsld_ratio": b})
        return pd.DataFrame(rows)

    parts = pd.DataFrame({"policy": list(R.POLICIES), "platform": "p", "part": 0, "seed": 1,
                          "engine": "e", "waiting_time_mean": 1.0, "bounded_slowdown_mean": 1.0,
                          "waiting_ratio": 1.0, "bsld_ratio": 1.0, "baseline_done": True})

    def verdicts(easy_w, plan_w, plan_b):
        p = parts.copy()
        sel = {q: i for i, q in enumerate(R.POLICIES)}
        p.loc[sel["fcfs-easy"], ["waiting_time_mean", "waiting_ratio"]] = easy_w
        p.loc[sel["plan-2"], ["waiting_time_mean", "waiting_ratio"]] = plan_w
        p.loc[sel["plan-2"], ["bounded_slowdown_mean", "bsld_ratio"]] = plan_b
        return {c["id"]: (c["parts_verdict"], c["first_verdict"])
                for c in R.claims(table(easy_w, plan_w, plan_b), p)}

    v = verdicts(1000.0, 0.81, 0.74)   # 3 orders of magnitude; 19%; 26%
    assert v["a1"] == (R.WHOLE_LOG_ONLY, R.WHOLE_LOG_ONLY)
    assert v["b1"] == ("does not hold", "does not hold")
    assert v["b2"] == ("does not hold", "does not hold")
    v = verdicts(40.0, 0.79, 0.73)     # 40x; 21%; 27%
    assert v["a1"] == (R.WHOLE_LOG_ONLY, R.WHOLE_LOG_ONLY)
    assert v["b1"] == ("holds", "holds")
    assert v["b2"] == ("holds", "holds")
    v = verdicts(float("nan"), float("nan"), float("nan"))
    assert v["b2"] == ("no data", "no data")


def _whole_log_claims(whole):
    """Claims by id, with only whole-log values (no parts, no first 1000 jobs)."""
    table = pd.DataFrame([{"policy": p, "nb_parts": 0, "waiting_ratio_median": math.nan,
                           "bsld_ratio_median": math.nan, "first_waiting_time_mean_s": math.nan,
                           "first_bounded_slowdown_mean": math.nan,
                           "first_waiting_ratio": math.nan, "first_bsld_ratio": math.nan}
                          for p in R.POLICIES])
    parts = pd.DataFrame(columns=["policy", "platform", "part", "seed", "engine",
                                  "waiting_time_mean", "bounded_slowdown_mean", "waiting_ratio",
                                  "bsld_ratio", "baseline_done"])
    rep = SimpleNamespace(whole=whole, claims=R.claims(table, parts))
    R._whole_claims(rep)
    return {x["id"]: x for x in rep.claims}


@pytest.mark.parametrize("easy,fcfs_bb,verdict_a,verdict_c", [
    (1000.0, 1.05, "does not hold", "holds"),   # 1000x; sjf-bb 4.8 % better than fcfs-bb
    (40.0, 0.95, "holds", "does not hold"),     # 40x; sjf-bb worse than fcfs-bb
])
def test_whole_log_claims(easy, fcfs_bb, verdict_a, verdict_c):
    """Claim (a) is judged on the whole log (fcfs-easy / sjf-bb), and claim
    (c): sjf-bb's mean waiting time below fcfs-bb's there."""
    whole = pd.DataFrame({"policy": ["fcfs-easy", "fcfs-bb", "sjf-bb"], "seed": 1,
                          "waiting_time_mean": [100.0 * easy, 100.0 * fcfs_bb, 100.0],
                          "bounded_slowdown_mean": [2.0 * easy, 2.0, 2.0]})
    c = _whole_log_claims(whole)
    assert c["a1"]["whole_value"] == pytest.approx(easy) and c["a1"]["whole_verdict"] == verdict_a
    assert c["a3"]["whole_value"] == pytest.approx(easy)
    assert c["a2"]["whole_verdict"] == "no data"           # no plan-2 on the whole log
    assert c["c"]["whole_value"] == pytest.approx(1 - 1 / fcfs_bb)
    assert c["c"]["whole_verdict"] == verdict_c


@pytest.mark.parametrize("plan_wait,plan_bsld,verdicts", [
    (70.0, 1.4, ("holds", "holds")),                # 30 % / 30 % better than sjf-bb
    (96.0, 1.8, ("does not hold", "does not hold")),  # 4 % / 10 %
])
def test_whole_log_claims_with_plan2(plan_wait, plan_bsld, verdicts):
    """With plan-2 on the whole log, claims a2/a4 (fcfs-easy / plan-2) and
    b1/b2 (1 - plan-2 / sjf-bb) get whole-log values and verdicts."""
    whole = pd.DataFrame({"policy": ["fcfs-easy", "fcfs-bb", "sjf-bb", "plan-2"], "seed": 1,
                          "waiting_time_mean": [7500.0, 102.0, 100.0, plan_wait],
                          "bounded_slowdown_mean": [180.0, 2.1, 2.0, plan_bsld]})
    c = _whole_log_claims(whole)
    assert c["a2"]["whole_value"] == pytest.approx(7500.0 / plan_wait)
    assert c["a4"]["whole_value"] == pytest.approx(180.0 / plan_bsld)
    assert c["b1"]["whole_value"] == pytest.approx(1 - plan_wait / 100.0)
    assert c["b2"]["whole_value"] == pytest.approx(1 - plan_bsld / 2.0)
    assert (c["b1"]["whole_verdict"], c["b2"]["whole_verdict"]) == verdicts


def test_tail_is_the_highest_waiting_times_of_the_parts(built, campaign):
    _, res = built
    runs = campaign_table(campaign, baseline="sjf-bb")
    done = runs[(runs["workload"] == "kth3w") & (runs["status"] == "done")]
    jobs = job_table(campaign, done, tau=TAU)
    tails = R.tail_values(jobs, top=5)
    assert list(tails) == [p for p in R.POLICIES if p in set(jobs["scheduler"])]
    for p, v in tails.items():
        w = np.sort(jobs.loc[jobs["scheduler"] == p, "waiting_time"].to_numpy(float))[::-1]
        np.testing.assert_array_equal(v, w[:5])
        assert list(v) == sorted(v, reverse=True)
    assert set(jobs["workload"]) == {"kth3w"}


def test_outputs_are_deterministic(campaign, built, tmp_path):
    out, _ = built
    again = tmp_path / "again"
    R.build(campaign, again, top=5)
    for f in sorted(out.iterdir()):
        assert (again / f.name).read_bytes() == f.read_bytes(), f.name


def test_cli_incomplete_campaign_lists_runs_and_exits_1(campaign, tmp_path):
    r = CliRunner().invoke(R.reproduction_command, [str(campaign), "-o", str(tmp_path / "o"),
                                                    "--top", "5"])
    assert r.exit_code == 1, r.output
    assert "FAILED " in r.output and "plan-3 timed out after 86400 s" in r.output
    assert "MISSING plan-1 kth3w part 2: no such run in the campaign" in r.output
    assert "PENDING dragonfly96__kth3w-p1__filler" in r.output
    assert "incomplete campaign: 4 expected runs not finished" in r.output
    assert (tmp_path / "o" / "claims.md").is_file()


def test_cli_complete_campaign_exits_0(tmp_path):
    camp = make_campaign(tmp_path / "c", complete=True)
    r = CliRunner().invoke(R.reproduction_command, [str(camp), "-o", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    assert "FAILED" not in r.output and "MISSING" not in r.output
    t = R.analyse(camp).table.set_index("policy")
    assert (t["nb_parts"] == len(PARTS)).all()
    assert "Every expected run finished." in (tmp_path / "o" / "table.md").read_text()


def test_cli_errors_are_one_line(tmp_path):
    runner = CliRunner()
    r = runner.invoke(R.reproduction_command, [str(tmp_path / "nope")])
    assert r.exit_code == 2 and "no such campaign folder" in r.output
    assert len(r.output.strip().splitlines()) == 1
    (tmp_path / "empty").mkdir()
    r = runner.invoke(R.reproduction_command, [str(tmp_path / "empty")])
    assert r.exit_code == 2 and "no campaign manifest" in r.output
    # a campaign without the parts workload is not a reproduction campaign
    camp = make_campaign(tmp_path / "c", complete=True)
    m = json.loads((camp / "campaign.json").read_text())
    m["runs"] = [x for x in m["runs"] if x["params"]["workload"] != "kth3w"]
    (camp / "campaign.json").write_text(json.dumps(m))
    r = runner.invoke(R.reproduction_command, [str(camp), "-o", str(tmp_path / "o")])
    assert r.exit_code == 2 and "no run of workload 'kth3w'" in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_iosched_repro_bb_entry_point(tmp_path):
    r = subprocess.run([sys.executable, "-m", "iosched", "repro", "bb", str(tmp_path / "nope")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().startswith("Error:") and len(r.stderr.strip().splitlines()) == 1


def test_fixture_metrics_are_those_of_iosched_metrics(campaign):
    """The hand-written done.json metrics are what iosched.analysis computes from
    the run's out_jobs.csv (w0!J REJECTED rows merged with their bb!J runs), so
    the fixture has the layout and values of a real campaign."""

    for run in json.loads((campaign / "campaign.json").read_text())["runs"]:
        d = campaign / run["dir"]
        if not (d / "done.json").is_file():
            continue
        m = compute_metrics(load_jobs(d), nb_resources=96, tau=TAU)
        p = run["params"]
        wm, bm = expected(p["scheduler"], p["workload"], p["part"])
        assert m["waiting_time"]["mean"] == pytest.approx(wm)
        assert m["bounded_slowdown"]["mean"] == pytest.approx(bm)
        assert m["nb_jobs"] == len(BASE_WAITS)


def test_tail_values_are_the_per_job_waits(campaign):
    runs = campaign_table(campaign, baseline="sjf-bb")
    done = runs[(runs["workload"] == "kth3w") & (runs["status"] == "done")]
    tails = R.tail_values(job_table(campaign, done, tau=TAU), top=3)
    for p, v in tails.items():
        ks = [k for k in PARTS if (p, "kth3w", k) not in {FAILED_RUN, PENDING_RUN, ABSENT_RUN}]
        want = sorted((w for k in ks for w in waits(p, "kth3w", k)), reverse=True)[:3]
        np.testing.assert_allclose(v, want)


def _campaign_of(root: Path, policies, name: str) -> Path:
    runs = [write_run(root, p, "kth1000" if part is None else "kth3w", part, "done")
            for part in (None, *PARTS) for p in policies]
    manifest = {"name": name, "baseline": "sjf-bb", "engine": "embedded", "tau_s": TAU,
                "timeout_s": 86400.0, "seeds": [1], "platforms": ["dragonfly96"],
                "workloads": ["kth1000", "kth3w"], "schedulers": list(policies), "runs": runs}
    (root / "campaign.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return root


def test_several_campaigns_are_analysed_together(tmp_path):
    """plan-2 alone in a second campaign is compared with the sjf-bb runs of
    the first (same platform, workload, part, seed, engine): the same table
    as one campaign holding everything."""
    whole = R.analyse(make_campaign(tmp_path / "all", complete=True))
    others = [p for p in R.POLICIES if p != "plan-2"]
    a = _campaign_of(tmp_path / "a", others, "a")
    b = _campaign_of(tmp_path / "b", ["plan-2"], "b")
    split = R.analyse([a, b])
    assert split.name == "a + b"
    got = split.table.set_index("policy").loc["plan-2"]
    want = whole.table.set_index("policy").loc["plan-2"]
    for col in ("waiting_ratio_median", "bsld_ratio_median", "first_waiting_ratio"):
        assert got[col] == pytest.approx(want[col])
    assert got["waiting_ratio_median"] == pytest.approx(FACTORS["plan-2"])
    # no parts: box statistics over the seeds of the first 1000 jobs
    seeds = R.analyse([a, b], parts_workload=None)
    assert seeds.by_seeds and seeds.parts["policy"].nunique() == len(R.POLICIES)

"""Locality family (Gonthier et al., RR-9497): cache rules, scores, policies, inputs."""

import random

import numpy as np
import pytest

from iosched.errors import InputError
from iosched.experiments.locality.replay import replay
from iosched.experiments.locality.workload import from_swf, read_artifact, to_batsim
from iosched.locality.cluster import Cluster, eviction_time, f32, load_time, score, transfer_seconds
from iosched.locality.metrics import summarize
from iosched.locality.planner import POLICIES, LJob, Planner
from iosched.locality.policy import history_order, second


def iosched(*args):
    """Run ``iosched ARGS`` in this process (click's test runner): its result
    (``exit_code``, ``stdout``, ``stderr``)."""
    from click.testing import CliRunner

    from iosched.cli import cli
    return CliRunner().invoke(cli, [str(a) for a in args])


def J(i, sub, delay, wall, cores, f, size, role=1):
    return LJob(str(i), sub, delay, wall, cores, f, size, role, seq=i)


def run(jobs, policy="lea", nodes=1, cores=4, bw=1.0, rule="artifact", **kw):
    c = Cluster(nodes, cores, bw, 128, cache_rule=rule)
    # one warm-up job marks day 0 at t=0 (it asks nothing of interest)
    res = replay([J(0, 0, 1, 1, 1, 0, 0, role=0)] + jobs, Planner(c, policy, **kw), until_evaluated=False)
    return {j.id: j for j in res["jobs"]}, res


def test_transfer_seconds_binary32():
    assert transfer_seconds(128.0, 0.1) == 1280
    assert transfer_seconds(6.4, 0.1) == int(np.float32(6.4) / np.float32(0.1))


def test_reuse_in_parallel_and_wait_for_load():
    # two jobs of file 1 submitted together on a 4-core node: the first loads
    # (10 s), the second starts with it and waits for that load
    got, res = run([J(1, 5, 100, 1000, 2, 1, 10.0), J(2, 5, 100, 1000, 2, 1, 10.0)])
    assert got["1"].transfer == 10 and got["1"].waiting == 0
    assert got["2"].transfer == 0 and got["2"].waiting == 10
    assert got["2"].end == got["2"].start + 100 + 10
    assert res["reuses"] == 1   # job 2 waited for job 1's load


def test_wait_for_load_in_progress_started_later():
    # job 2 arrives while job 1 loads: it waits for the rest of the load only
    got, _ = run([J(1, 5, 100, 1000, 2, 1, 10.0), J(2, 9, 100, 1000, 2, 1, 10.0)])
    assert got["1"].start == 5 and got["1"].transfer == 10
    assert got["2"].start == 9 and got["2"].waiting == 15 - 9 and got["2"].transfer == 0


def test_consecutive_reuse_same_second_only_in_artifact_rule():
    # job 2 (4 cores) must wait for job 1 to end; it starts in the same second
    # and reuses the file; job 3, starting after a gap, reloads it (artifact)
    # (walltime = delay + load: the artifact re-plans only when a job ends with
    # jobs waiting, so cores keep their planned ends until then)
    jobs = [J(1, 5, 50, 60, 4, 1, 10.0), J(2, 6, 50, 60, 4, 1, 10.0), J(3, 500, 50, 60, 4, 1, 10.0)]
    got, _ = run(jobs)
    assert got["2"].start == got["1"].end and got["2"].transfer == 0 and got["2"].waiting == 0
    assert got["3"].start == 500 and got["3"].transfer == 10
    # the paper's reading keeps the copy while no other file displaced it
    got, _ = run(jobs, rule="paper")
    assert got["3"].transfer == 0


def test_loss_after_a_job_of_another_file_paper_rule():
    jobs = [J(1, 5, 50, 60, 4, 1, 10.0), J(2, 100, 50, 60, 4, 2, 10.0), J(3, 300, 50, 60, 4, 1, 10.0)]
    got, _ = run(jobs, rule="paper")
    assert got["2"].transfer == 10
    assert got["3"].transfer == 10   # file 2's job displaced file 1


def _no_overlap(jobs):
    busy = {}
    for j in jobs:
        for k in j.cores_used:
            busy.setdefault((j.node.index, k), []).append((j.start, j.end, j.id))
    for ivs in busy.values():
        ivs.sort()
        for a, b in zip(ivs, ivs[1:]):
            assert a[1] <= b[0], (a, b)


@pytest.mark.parametrize("policy", POLICIES)
def test_no_core_used_twice_and_every_job_runs(policy):
    rnd = random.Random(7)
    jobs = []
    for i in range(1, 80):
        cores = rnd.choice([1, 2, 4])
        d = rnd.randint(5, 300)
        jobs.append(J(i, rnd.randint(1, 2000), d, d + rnd.randint(0, 400), cores, rnd.randint(1, 6),
                      cores * 8.0))
    got, res = run(jobs, policy, nodes=3, cores=4)
    assert len(got) == 80
    _no_overlap(list(got.values()))
    for j in got.values():
        assert j.start >= j.subtime
        assert j.end - j.start <= j.walltime


def test_score_functions_hand_computed():
    c = Cluster(1, 20, 0.1, 128)
    n = c.nodes[0]
    c.plan_interval(n, 7, 12.8, 100, 128, 1000)   # file 7 used on (100, 228, 1000)
    c.plan_interval(n, 8, 25.6, 0, 256, 50)       # file 8 last used until 50
    assert load_time(n, 7, 12.8, 300, 90) == 0          # loaded by 300
    assert load_time(n, 7, 12.8, 150, 90) == 228 - 90   # being loaded: until 228, from t
    assert load_time(n, 7, 12.8, 2000, 90) == f32(12.8) / f32(0.1)   # outside: full load
    # eviction at 60 of a 10-core job: file 8 (25.6 GB) ended, x 10/20, / 0.1
    assert eviction_time(n, 7, 60, 10) == f32(f32(f32(25.6) * f32(0.5)) / f32(0.1))
    assert eviction_time(n, 7, 40, 10) == 0
    # LEA score: t_k + 500*load + 1*evict, binary32 then truncated
    assert score(1000, 500, f32(12.8) / f32(0.1), 1, f32(128.0)) == int(f32(f32(1000 + f32(500 * (f32(12.8) / f32(0.1)))) + 128))
    assert score(6_200_001, 1, f32(0.3), 0, f32(0)) == 6_200_001   # binary32 step is 0.5 there


def test_eft_prefers_loaded_node_lea_waits_for_it():
    # node 0 holds file 1 (job 1 running until 100); node 1 is free.
    # job 2 (file 1, 4 cores): EFT picks the free node when t + load < t_k;
    # LEA waits for node 0 (W*load is large)
    jobs = [J(1, 1, 99, 99, 4, 1, 50.0), J(2, 2, 10, 10, 4, 1, 50.0)]
    got, _ = run(jobs, "eft", nodes=2, cores=4)
    assert got["2"].node.index == 1 and got["2"].start == 2
    got, _ = run(jobs, "lea", nodes=2, cores=4)
    # job 1 runs on node 0 from 1 to 51+... ; LEA plans job 2 on node 0 at its end
    assert got["2"].node.index == got["1"].node.index
    assert got["2"].start == got["1"].end and got["2"].transfer == 0


def test_leo_and_lem_switch_to_eft():
    jobs = [J(1, 1, 99, 99, 4, 1, 50.0), J(2, 2, 10, 10, 4, 1, 50.0)]
    got, _ = run(jobs, "leo", nodes=2, cores=4)
    assert got["2"].node.index == 1          # a node starts it now: EFT's score
    got, _ = run(jobs, "lem", nodes=2, cores=4)
    assert got["2"].node.index == 1          # 1 of 2 nodes busy = 50% < 80%: EFT
    got, _ = run(jobs, "lem", nodes=2, cores=4, threshold=40)
    assert got["2"].node.index == got["1"].node.index   # above the threshold: LEA


@pytest.mark.parametrize("policy", [p for p in POLICIES if p.endswith("-bf")])
def test_backfilling_never_delays_an_earlier_reservation(policy):
    rnd = random.Random(3)
    c0 = Cluster(2, 4, 1.0, 128)
    queue = [J(i, 0, 0, rnd.randint(10, 200), rnd.choice([1, 2, 3, 4]), rnd.randint(1, 3), 4.0)
             for i in range(1, 25)]
    for k in range(1, len(queue) + 1):
        c = Cluster(2, 4, 1.0, 128)
        # a running job on node 0 so that holes exist
        for node in c.nodes[:1]:
            c.start(node, [0, 1], 9, 4.0, 0, 150)
        p = Planner(c, policy)
        p.reset(0)
        jobs = [LJob(j.id, 0, 1, j.walltime, j.cores, j.file, j.size) for j in queue[:k]]
        p.plan(jobs, 0)
        starts = [j.start for j in jobs]
        if k > 1:
            for a, b in zip(prev, starts):
                if a >= 0:
                    assert b <= a or b == a
        prev = starts
    assert c0.nb_cores == 8


def test_history_order_matches_artifact_insertion():
    js = [LJob(str(i), 0, 1, 1, 1, 0, 0, -2, hist_start=h) for i, h in enumerate([5, 3, 5, 3, 9])]
    assert [j.id for j in history_order(js)] == ["3", "1", "0", "2", "4"]


def test_summary_metrics():
    j = J(1, 10, 100, 1000, 1, 1, 10.0)
    j.start, j.end, j.transfer, j.waiting = 20, 220, 100, 0
    s = summarize([j], "x", 0.1)
    assert s["mean_stretch"] == pytest.approx((220 - 10) / (100 + 100))
    assert s["mean_bounded_stretch"] == pytest.approx(210 / 300)
    assert s["reuses"] == 0 and s["mean_queue_s"] == 10


BAD = [
    ("{ id: 1 subtime: 0 delay: 5 walltime: 9 cores: 1 user: u data: 1 data_size: 6.4 workload: 1 "
     "start_time_from_history: 0 }", "start_node_from_history is missing"),
    ("{ id: 1 subtime: 0 delay: 5 walltime: 9 cores: 1 user: u data: 1 data_size: 6.4 workload: 7 "
     "start_time_from_history: 0 start_node_from_history: 0 }", "workload=7 is not a known role"),
    ("{ id: 1 subtime: 0 delay: 5 walltime: 9 cores: 21 user: u data: 1 data_size: 6.4 workload: 1 "
     "start_time_from_history: 0 start_node_from_history: 0 }", "cores=21 is more than a node has"),
    ("{ id: 1 subtime: x delay: 5 walltime: 9 cores: 1 user: u data: 1 data_size: 6.4 workload: 1 "
     "start_time_from_history: 0 start_node_from_history: 0 }", "subtime='x' is not an integer"),
]


@pytest.mark.parametrize("line,msg", BAD)
def test_bad_artifact_input_one_line(tmp_path, line, msg):
    p = tmp_path / "w.txt"
    p.write_text("{ id: 0 subtime: 0 delay: 5 walltime: 9 cores: 1 user: u data: 1 data_size: 6.4 "
                 "workload: 0 start_time_from_history: 0 start_node_from_history: 0 }\n" + line + "\n")
    with pytest.raises(InputError) as e:
        read_artifact(p)
    assert "line 2" in str(e.value) and msg in str(e.value) and "\n" not in str(e.value)


def test_swf_sharing_rule_and_batsim_conversion():
    recs = [{"id": 1, "subtime": 0, "runtime": 10, "walltime": 20, "cores": 4, "user": 3},
            {"id": 2, "subtime": 700, "runtime": 10, "walltime": 20, "cores": 4, "user": 3},
            {"id": 3, "subtime": 900, "runtime": 10, "walltime": 20, "cores": 4, "user": 3},
            {"id": 4, "subtime": 10, "runtime": 10, "walltime": 20, "cores": 2, "user": 3},
            {"id": 5, "subtime": 10, "runtime": 10, "walltime": 20, "cores": 4, "user": 4},
            {"id": 6, "subtime": 20, "runtime": 10, "walltime": 20, "cores": 30, "user": 5}]
    jobs = {j.id: j for j in from_swf(recs)}
    assert jobs["1"].file == jobs["2"].file != jobs["3"].file
    assert len({jobs["1"].file, jobs["4"].file, jobs["5"].file}) == 3
    assert jobs["1"].size == pytest.approx(4 / 20 * 128)
    assert jobs["6.0"].cores == 20 and jobs["6.1"].cores == 10
    wl = to_batsim(list(jobs.values()))
    assert {r["id"] for r in wl["jobs"]} == set(jobs)
    assert all(r["io"]["inputs"][0]["bytes"] > 0 for r in wl["jobs"])


def test_engine_end_to_end_loads_reuse_and_walltime(tmp_path):
    """LEA on the embedded engine (paper platform, 1 GB/s per core): loads are
    SimGrid transfers of size/bandwidth, a job waits for its neighbour's load,
    a job whose load + duration exceeds its walltime is killed."""
    import csv

    from iosched.api import simulate
    from iosched.experiments.platforms import locality_xml

    (tmp_path / "p.xml").write_text(locality_xml(2, 4, 1e9, 128e9, "paper"))
    jobs = [J(0, 0, 1, 5, 1, 0, 0, 0), J(1, 5, 100, 1000, 2, 1, 10.0), J(2, 5, 100, 1000, 2, 1, 10.0),
            J(3, 9, 50, 1000, 4, 2, 20.0), J(4, 9, 50, 1000, 4, 2, 20.0), J(5, 20, 30, 31, 4, 3, 20.0)]
    to_batsim(jobs, tmp_path / "w.json", nb_res=8)
    df = simulate(tmp_path / "p.xml", tmp_path / "w.json", "loc-lea",
                  {"out": str(tmp_path / "r"), "bandwidth": 1e9}, output_dir=tmp_path / "o")
    rows = {r["id"]: r for r in csv.DictReader(open(tmp_path / "r_jobs.csv"))}
    assert set(rows) == {"w0!1", "w0!2", "w0!3", "w0!4", "w0!5"}
    one, two = rows["w0!1"], rows["w0!2"]
    assert one["node"] == two["node"] and int(one["transfer"]) == 10 and int(two["waiting"]) == 10
    assert float(one["end"]) - float(one["start"]) == pytest.approx(110, abs=0.02)
    assert float(two["end"]) - float(two["start"]) == pytest.approx(110, abs=0.02)
    # job 4 (file 2) goes after job 3 on its node and reuses the file
    assert rows["w0!4"]["node"] == rows["w0!3"]["node"] and int(rows["w0!4"]["transfer"]) == 0
    assert float(rows["w0!3"]["end"]) - float(rows["w0!3"]["start"]) == pytest.approx(70, abs=0.02)
    # job 5: 20 s load + 30 s > 31 s walltime
    assert float(rows["w0!5"]["end"]) - float(rows["w0!5"]["start"]) == pytest.approx(31, abs=0.02)
    assert "COMPLETED_WALLTIME_REACHED" in set(df["final_state"])


def test_usage_trace_and_figures(tmp_path):
    from iosched.experiments.locality.figures import UsageTrace
    from iosched.locality.metrics import write_jobs

    rnd = random.Random(5)
    jobs = [J(i, rnd.randint(1, 500), rnd.randint(5, 200), 400, rnd.choice([1, 2, 4]), rnd.randint(1, 4), 8.0)
            for i in range(1, 40)]
    for pol in ("fcfs", "lea"):
        c = Cluster(2, 4, 1.0, 128)
        tr = UsageTrace()
        res = replay([J(0, 0, 1, 1, 1, 0, 0, role=0)] + [LJob(j.id, j.subtime, j.delay, j.walltime, j.cores,
                     j.file, j.size, 1, seq=j.seq) for j in jobs], Planner(c, pol), until_evaluated=False, trace=tr)
        assert all(0 <= r[1] <= 8 and r[3] <= r[1] and r[4] <= r[1] and r[5] <= r[2] for r in tr.rows)
        assert tr.rows[-1][1] == 0 and tr.rows[-1][2] == 0
        tr.write(tmp_path / f"usage_{pol}.csv")
        write_jobs(res["jobs"], tmp_path / f"jobs_{pol}.csv", 1.0)
    r = iosched("repro", "locality", "figures", "--dir", tmp_path, "--total", "8")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "fig5_ratio_lea.png").stat().st_size > 1000
    assert (tmp_path / "fig3_usage_fcfs.png").stat().st_size > 1000


def test_engine_job_after_a_walltime_kill_waits_for_its_report(tmp_path):
    """Job 2 is planned at job 1's walltime end on the same cores; Batsim
    reports the kill a few ms later, and job 2 starts only then."""
    import csv

    from iosched.api import simulate
    from iosched.experiments.platforms import locality_xml

    (tmp_path / "p.xml").write_text(locality_xml(1, 4, 1e9, 128e9, "paper"))
    jobs = [J(0, 0, 1, 5, 1, 0, 0, 0), J(1, 5, 100, 50, 4, 1, 10.0), J(2, 6, 20, 100, 4, 1, 10.0)]
    to_batsim(jobs, tmp_path / "w.json", nb_res=4)
    simulate(tmp_path / "p.xml", tmp_path / "w.json", "loc-fcfs", {"out": str(tmp_path / "r"), "bandwidth": 1e9},
             output_dir=tmp_path / "o")
    rows = {r["id"]: r for r in csv.DictReader(open(tmp_path / "r_jobs.csv"))}
    one, two = rows["w0!1"], rows["w0!2"]
    assert float(one["end"]) - float(one["start"]) == pytest.approx(50, abs=0.02)
    assert float(one["end"]) <= float(two["start"]) < float(one["end"]) + 1.01
    # the file is still valid: job 1's copy ended within that second (artifact rule)
    assert int(two["transfer"]) == 0 and int(two["waiting"]) == 0


def test_swf_cli(tmp_path):
    import json

    swf = tmp_path / "t.swf"
    swf.write_text("; MaxProcs: 40\n"
                   "1 0 5 100 4 -1 -1 4 200 -1 1 7 -1 -1 -1 -1 -1 -1\n"
                   "2 300 5 100 4 -1 -1 4 200 -1 1 7 -1 -1 -1 -1 -1 -1\n"
                   "3 400 5 100 30 -1 -1 30 200 -1 1 8 -1 -1 -1 -1 -1 -1\n")
    r = iosched("workload", "locality", "swf", swf, tmp_path / "o.json", "--nb-res", "40")
    assert r.exit_code == 0, r.output
    wl = json.loads((tmp_path / "o.json").read_text())
    files = {j["id"]: j["io"]["inputs"][0]["file"] for j in wl["jobs"]}
    assert files["1"] == files["2"] and files["3.0"] != files["1"] and {j["res"] for j in wl["jobs"]} == {4, 20, 10}
    bad = tmp_path / "bad.swf"
    bad.write_text("1 0 5 100 4 -1 -1 4 200 -1 1 -1 -1 -1 -1 -1 -1 -1\n")
    assert iosched("workload", "locality", "swf", bad, tmp_path / "b.json").exit_code == 1


@pytest.mark.parametrize("args, word", [
    (["--cores", "0"], "cores per node"),           # looped forever before
    (["--memory", "nan"], "memory per node"),       # wrote file_size NaN before
    (["--memory", "-1"], "memory per node"),
    (["--window", "inf"], "window"),
    (["--nb-res", "0"], "--nb-res"),
])
def test_swf_cli_bad_arguments_one_line(tmp_path, args, word):
    """A bad generator argument: exit 1, one line naming it, no output file."""
    swf = tmp_path / "t.swf"
    swf.write_text("1 0 5 100 4 -1 -1 4 200 -1 1 7 -1 -1 -1 -1 -1 -1\n")
    out = tmp_path / "o.json"
    r = iosched("workload", "locality", "swf", swf, out, *args)
    assert r.exit_code == 1
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and word in err
    assert not out.exists()


def test_swf_cli_missing_output_folder_checked_first(tmp_path):
    out = tmp_path / "missing" / "o.json"
    r = iosched("workload", "locality", "swf", tmp_path / "no.swf", out)
    assert r.exit_code == 1
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "missing" in err and "does not exist" in err


def test_registry_names_and_engine_flag():
    from iosched.paths import REPO_ROOT
    from iosched.schedulers.registry import required_engine_args, resolve

    for p in POLICIES:
        path, opts = resolve(f"loc-{p}")
        assert path.name == "locality.py" and opts == {"policy": p}
        assert required_engine_args(path) == ("--enable-dynamic-jobs",)
    assert required_engine_args(REPO_ROOT / "schedulers" / "locality.py") == ("--enable-dynamic-jobs",)


# --------------------------------------------------------------------------
# The planner's vectorised node choice (Planner._best, _base) against the
# paper's straightforward rule: score every node with cluster.score() and
# take the first minimum (Algorithm 3 lines 4-9; the artifact's tie-breaks).

class ReferencePlanner(Planner):
    """The same policies, choosing the node by scoring every node with
    load_time / eviction_time / score (no vectorisation, no cache; the
    Python passes, which call it)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, evaluator="python", **kw)

    def _best(self, j, t, W, E, extra=None):
        c = self.c
        nodes = c.nodes
        eat = [max(n.eat(j.cores), t) for n in nodes]
        if self.base == "fcfs":
            if extra:
                for k in range(self.P):
                    if eat[k] == t:
                        return k, t, 0, False
                    if k in extra:
                        return k, t, 0, True
            k = min(range(self.P), key=lambda i: (eat[i], i))
            return k, eat[k], 0, False
        w = [(W, E)] * self.P
        if self.base == "leo":
            now = [k for k in range(self.P) if eat[k] == t]
            if now and self.leo_rule == "artifact":
                w = [(W, E) if k < now[0] else (1, 0) for k in range(self.P)]
            elif now:
                w = [(1, 0) if k in now else (W, E) for k in range(self.P)]
        best = None
        for k, n in enumerate(nodes):
            ld = load_time(n, j.file, j.size, eat[k], t) if j.file else f32(j.size) / n.bandwidth
            ev = eviction_time(n, j.file, eat[k], j.cores, c.m)
            cand = (score(eat[k], w[k][0], ld, w[k][1], ev), k, 0, eat[k], ld)
            if best is None or cand[:3] < best[:3]:
                best = cand
        for k in sorted(extra or ()):
            ld = load_time(nodes[k], j.file, j.size, t, t) if j.file else f32(0.0)
            ev = eviction_time(nodes[k], j.file, t, j.cores, c.m)
            cand = (score(t, w[k][0], ld, w[k][1], ev), k, 1, t, ld)
            if cand[:3] < best[:3]:
                best = cand
        _, k, hole, start, ld = best
        return k, start, int(ld), bool(hole)


def random_cluster(rnd, planner_cls, policy, leo_rule):
    """A small random cluster (3-8 nodes of 2-4 cores) with jobs running on
    it and a planner of ``policy`` over it, drawn from ``rnd``; times from a
    small set so that scores tie often. Returns ``(cluster, planner, file
    sizes, running (node, core ids, file) triples, t = 10)``."""
    P, m = rnd.choice([(3, 2), (5, 4), (8, 4)])
    c = Cluster(P, m, rnd.choice([0.1, 0.5, 1.0]), 128)
    p = planner_cls(c, policy, W=rnd.choice([1, 3, 500]), E=rnd.choice([0, 1, 2]),
                    threshold=rnd.choice([0, 50, 80]), leo_rule=leo_rule)
    sizes = {f: rnd.choice([1.6, 3.2, 6.4, 12.8]) for f in range(1, 5)}
    running = []
    t = 10
    for i in range(rnd.randint(0, P * 2)):
        n = c.nodes[rnd.randrange(P)]
        k = rnd.randint(1, m)
        if n.free < k:
            continue
        ids = [x for x in range(m) if n.running_end[x] is None][:k]
        f = rnd.randint(0, 4)
        end = t + rnd.choice([5, 20, 40])
        for x in ids:
            n.avail[x] = end
        n.resort()
        c.start(n, ids, f, sizes.get(f, 0.0), t - rnd.choice([0, 3]), end)
        running.append((n, ids, f))
    return c, p, sizes, running, t


def _scenario(seed, policy, planner_cls, leo_rule):
    """A small random cluster with running jobs, ended files and a queue;
    times from a small set so that scores tie often. Returns the plans of
    three passes (a full re-plan, new jobs only, a re-plan after an end)."""
    rnd = random.Random(seed)
    c, p, sizes, running, t = random_cluster(rnd, planner_cls, policy, leo_rule)
    m = c.m
    for n, ids, f in running[: rnd.randint(0, len(running))]:
        c.end(n, ids, f, t)                      # files whose last user ended now
    out = []
    jobs = []
    for step in range(3):
        new = []
        for i in range(rnd.randint(1, 12)):
            f = rnd.randint(0, 4)
            new.append(LJob(f"{step}.{i}", t, 1, rnd.choice([1, 5, 20, 60]), rnd.randint(1, m), f,
                            sizes.get(f, 0.0)))
        if step != 1:
            p.reset(t)
            jobs = jobs + new
            p.plan(jobs, t)
        else:
            p.plan(new, t)
            jobs = jobs + new
        out.append([(j.id, j.start, j.node.index if j.start >= 0 else None, list(j.cores_used),
                     j.planned_load) for j in jobs])
        t += rnd.choice([0, 1, 7])
    return out


@pytest.mark.parametrize("evaluator", ["python", "compiled"])
@pytest.mark.parametrize("policy,leo_rule", [(p, "artifact") for p in POLICIES] +
                         [("leo", "paper"), ("leo-bf", "paper")])
def test_fast_node_choice_equals_scoring_every_node(policy, leo_rule, evaluator):
    """The planner's node choice (the Python path's vectorised ``_best``, or
    the compiled passes) plans as scoring every node."""
    import functools

    from hypothesis import given, settings, strategies as st

    fast = functools.partial(Planner, evaluator=evaluator)

    @settings(max_examples=40, deadline=None, derandomize=True)
    @given(st.integers(0, 10**6))
    def check(seed):
        assert _scenario(seed, policy, fast, leo_rule) == _scenario(seed, policy, ReferencePlanner, leo_rule)

    check()


class RebuildCluster(Cluster):
    """reset_intervals as the artifact's get_current_intervals: every
    interval rebuilt from the running state at t (no incremental update)."""

    def reset_intervals(self, t):
        for d in list(self.live):
            d.iv = []
            self._unlive(d)
        self._touched = set()
        for d in self._used:
            d.iv = [(t, t if d.load_end < t else d.load_end, d.end)]
            self._live(d, d.node)
        keep = []
        for te, d in self._ended:
            if d.users or (self.cache_rule == "paper" and d.foreign_since) or \
                    (self.cache_rule == "artifact" and te < t):
                continue
            keep.append((te, d))
            d.iv = [(t, t, t if self.cache_rule == "artifact" else 2 ** 62)]
            self._live(d, d.node)
        self._ended = keep


@pytest.mark.parametrize("rule", ["artifact", "paper"])
def test_incremental_reset_intervals_answers_as_a_rebuild(rule):
    """After random starts, ends and planned intervals, the incremental
    reset gives every load_time / eviction_time at pt >= t of a rebuild."""
    from hypothesis import given, settings, strategies as st

    @settings(max_examples=60, deadline=None, derandomize=True)
    @given(st.integers(0, 10**6))
    def check(seed):
        answers = []
        for cls in (Cluster, RebuildCluster):
            rnd = random.Random(seed)
            c = cls(3, 4, 0.5, 128, cache_rule=rule)
            running = []
            got = []
            t = 0
            for step in range(12):
                t += rnd.choice([0, 1, 3, 10])
                for r in [r for r in running if r[3] <= t]:
                    c.end(r[0], r[1], r[2], t)
                    running.remove(r)
                for _ in range(rnd.randint(0, 3)):
                    n = c.nodes[rnd.randrange(3)]
                    free = [k for k in range(4) if n.running_end[k] is None]
                    if not free:
                        continue
                    ids = free[: rnd.randint(1, len(free))]
                    f = rnd.randint(0, 3)
                    end = t + rnd.choice([1, 5, 30])
                    c.start(n, ids, f, 2.0 * f, t, end)
                    running.append((n, ids, f, end))
                c.reset_intervals(t)
                for pt in (t, t + 1, t + 4, t + 20, t + 100):
                    for n in c.nodes:
                        for f in range(1, 4):
                            got.append((load_time(n, f, 2.0 * f, pt, t), eviction_time(n, f, pt, 2, 4)))
                for _ in range(rnd.randint(0, 4)):   # a pass plans some jobs
                    n = c.nodes[rnd.randrange(3)]
                    s = t + rnd.choice([0, 2, 8])
                    c.plan_interval(n, rnd.randint(1, 3), 2.0, s, rnd.choice([0, 4]), s + rnd.choice([3, 9]))
                for pt in (t, t + 5, t + 50):
                    for n in c.nodes:
                        for f in range(1, 4):
                            got.append((load_time(n, f, 2.0 * f, pt, t), eviction_time(n, f, pt, 2, 4)))
            answers.append(got)
        assert answers[0] == answers[1]

    check()


def test_merge_rows_and_bench_statistics(tmp_path):
    from iosched.experiments.bench.locality import bucket_stats
    from iosched.experiments.locality.reproduction import merge_rows

    row = {k: 0 for k in ("jobs", "reuses", "total_waiting_for_load_s", "total_transfer_s", "makespan_s")}
    row.update(mean_stretch=1.5, max_stretch=2.0, mean_bounded_stretch=1.5, max_bounded_stretch=2.0,
               mean_queue_s=3.0)
    merge_rows(tmp_path / "t", [{**row, "policy": "lea"}])
    merge_rows(tmp_path / "t", [{**row, "policy": "fcfs", "mean_stretch": 2.25}])
    rows = merge_rows(tmp_path / "t", [{**row, "policy": "lea", "mean_stretch": 1.25}])
    assert [r["policy"] for r in rows] == ["fcfs", "lea"]           # paper order, lea replaced
    text = (tmp_path / "t.csv").read_text()
    lines = text.splitlines()
    assert len(lines) == 3 and lines[1].startswith("fcfs,0,2.2500,") and lines[2].startswith("lea,0,1.2500,")
    st = bucket_stats([(1, 0.5, 1), (5, 1.0, 4), (5, 3.0, 0), (500, 2.0, 100)])
    assert st["1"]["per_decision_median_s"] == 0.5
    assert st["2-9"]["passes"] == 2 and st["2-9"]["decisions"] == 4
    assert st["2-9"]["per_decision_median_s"] == 0.25       # the pass without decision is left out
    assert st["100-999"]["per_decision_p99_s"] == pytest.approx(0.02)


class _Launcher:
    """Records the core's decisions."""

    def __init__(self):
        self.started, self.rejected, self.calls = [], [], []

    def start(self, rec):
        self.started.append(rec)

    def reject(self, job, reason):
        self.rejected.append((job.id, reason))

    def call_me_later(self, t):
        self.calls.append(t)


def _locality_core(policy="fcfs"):
    """The shared core as the locality launcher builds it, on 2 nodes x 2 cores."""
    from iosched.sched.machine import Machine
    from iosched.schedulers.locality import Locality

    sched = Locality({"policy": policy, "bandwidth": 1e9})
    s, launcher = sched.core, _Launcher()
    s.launcher = launcher
    sched.pol.clock = lambda: 10.0
    s.begin(Machine([{"id": i, "name": f"c{i}", "properties": {"node": f"n{i // 2}"}} for i in range(4)],
                    [{"id": 4, "name": "pfs"}]), 0.0)
    return s, launcher


def _batsim_job(i, cores, f=1, delay=10):
    from types import SimpleNamespace

    return SimpleNamespace(id=f"w0!{i}", requested_resources=cores, requested_time=100.0, submit_time=0.0,
                           json_dict={"file": f, "file_size": 0, "delay": delay, "role": 1, "seq": i})


def test_locality_policy_runs_on_the_shared_core_with_its_holds_only_model():
    """The locality launcher builds the shared core, with no subclass: the
    policy keeps its own availability model (the planner's cluster), so
    the core holds the started jobs' cores in its holds-only model
    (``Scheduler(profile=HoldsOnly)``), which refuses a core given twice; a
    job asking more cores than a node has is rejected at submission by the
    placer, with its reason."""
    from iosched.errors import ProfileError
    from iosched.locality.policy import LocalityPolicy, OneNodePlacer
    from iosched.sched.core import Scheduler
    from iosched.sched.holds import HoldsOnly
    from iosched.sched.placer import Allocation

    s, launcher = _locality_core()
    assert type(s) is Scheduler and isinstance(s.policy, LocalityPolicy)
    assert isinstance(s.placer, OneNodePlacer) and isinstance(s.profile, HoldsOnly)
    for i, cores in enumerate((2, 3, 2, 1)):
        s.submit(_batsim_job(i, cores, delay=30 if i == 2 else 10))
    assert launcher.rejected == [("w0!1", "requests 3 cores but a node has 2 (a locality job runs on one node)")]
    assert s.rejections == {"w0!1": launcher.rejected[0][1]}
    s.schedule(0.0)
    started = {r.job.id: set(r.resources) for r in launcher.started}
    assert set(started) == {"w0!0", "w0!2"}          # one node each; w0!3 waits for a core
    assert started["w0!0"] | started["w0!2"] == {0, 1, 2, 3}
    assert s.profile.free_count() == 0
    waiting = s.waiting("w0!3")
    with pytest.raises(ProfileError, match="already held"):    # a core given twice is refused
        s.reserve(waiting, 0.0, Allocation([min(started["w0!0"])]))
    s.end("w0!0", "COMPLETED_SUCCESSFULLY", 10.0)
    s.schedule(10.0)                                 # the end re-plans: w0!3 starts on a freed core
    assert [r.job.id for r in launcher.started][-1] == "w0!3"
    assert set(launcher.started[-1].resources) <= started["w0!0"]
    assert s.profile.free_count() == 1


def _engine_vs_loop_jobs(seed):
    """A small day with every role: history jobs running at day 0 on their
    node, queued jobs, warm-up and evaluated jobs sharing files (loads and
    waits for loads ending in the same second as other jobs), walltime kills."""
    rnd = random.Random(seed)
    day0 = 100
    size = {1: 4.0, 2: 8.0, 3: 8.0, 4: 4.0}   # GB: loads of 4 and 8 s at 1 GB/s
    jobs = [J(0, day0, 3, 5, 1, 0, 0, 0)]
    for i in (1, 2, 3):   # history: started before day 0 on node (i - 1)
        jb = J(i, 10, rnd.randint(60, 200), 400, rnd.choice([1, 2, 4]), i, size[i], -2)
        jb.hist_start, jb.hist_node = 50 + i, i
        jobs.append(jb)
    for i in range(4, 8):
        f = rnd.randint(1, 4)
        jobs.append(J(i, 20 + i, rnd.randint(5, 80), 300, rnd.choice([1, 2, 4]), f, size[f], -1))
    for i in range(8, 40):
        delay, f = rnd.randint(5, 80), rnd.randint(1, 4)
        jobs.append(J(i, day0 + rnd.randint(0, 250), delay, rnd.choice([delay + 30, delay + 2, 300]),
                      rnd.choice([1, 1, 2, 4]), f, size[f], 1))
    jobs.sort(key=lambda j: j.subtime)
    for k, j in enumerate(jobs):
        j.seq = k
    return jobs


@pytest.mark.parametrize("policy", ["fcfs", "lea", "fcfs-bf"])
def test_engine_schedule_equals_the_artifact_loop(tmp_path, policy):
    """The same scheduler on the embedded engine (SimGrid transfers, job
    ends of one second reported in several messages, history jobs arriving
    after the pass at SIMULATION_BEGINS) gives the artifact loop's schedule:
    same node, start and end second, transfer and wait of every job."""
    import copy
    import csv

    from iosched.api import simulate
    from iosched.experiments.platforms import locality_xml

    jobs = _engine_vs_loop_jobs(11)
    loop = replay(copy.deepcopy(jobs), Planner(Cluster(3, 4, 1.0, 128), policy), until_evaluated=False)
    want = {f"w0!{j.id}": (j.node.index, j.start, j.end, j.transfer, j.waiting)
            for j in loop["jobs"] if j.role == 1}
    (tmp_path / "p.xml").write_text(locality_xml(3, 4, 1e9, 128e9, "paper"))
    to_batsim(jobs, tmp_path / "w.json", nb_res=12)
    simulate(tmp_path / "p.xml", tmp_path / "w.json", f"loc-{policy}", {"out": str(tmp_path / "r"), "bandwidth": 1e9},
             output_dir=tmp_path / "o")
    got = {r["id"]: (int(r["node"]), second(float(r["start"])), second(float(r["end"])), int(r["transfer"]),
                     int(r["waiting"])) for r in csv.DictReader(open(tmp_path / "r_jobs.csv"))}
    assert len(want) == 32 and any(v[3] == 0 and v[4] > 0 for v in want.values())   # waits for a load happen
    assert got == want


def test_shipped_uppmax_platform_is_the_generators_default():
    """``platforms/locality_uppmax.xml`` is ``locality_xml()``: 486 nodes x 20
    cores, 128 GB, 0.1 GB/s per core, ``paper`` model."""
    from iosched.experiments.platforms import locality_xml
    from iosched.paths import REPO_ROOT

    assert (REPO_ROOT / "platforms" / "locality_uppmax.xml").read_text() == locality_xml()


def test_engine_runs_makes_its_bench_folder_before_the_runs(tmp_path):
    """--bench naming a folder that does not exist is made at the start (it
    failed after the whole day's runs, on writing the timing file)."""
    work = tmp_path / "w"
    work.mkdir()
    (work / "uppmax.json").write_text("{}")   # the day's workload, already converted
    bench = tmp_path / "new" / "bench"
    r = iosched("repro", "locality", "engine-runs", "--collect", "--models", "paper", "--policies", "fcfs",
                "--work", work, "--results", tmp_path / "r", "--bench", bench)
    assert r.exit_code == 0, r.output
    assert (bench / "locality_engine_day.json").is_file()


def test_engine_runs_agreement_table_and_bad_option(tmp_path):
    from iosched.experiments.locality.engine_runs import engine_table, same_as_loop

    head = "id,subtime,start,end,cores,node,transfer,waiting,stretch\n"
    (tmp_path / "loop.csv").write_text(head + "1,0,10,20,1,3,4,0,1.0\n2,0,10,30,1,3,0,4,1.0\n3,0,10,30,1,4,0,0,1.0\n")
    # job 1 as the loop (times a few us off), job 2 on another node, job 3 missing
    (tmp_path / "eng.csv").write_text(head + "w0!1,0,9.99999,20.00002,1,3,4,0,1.0\nw0!2,0,10.0,30.0,1,5,0,4,1.0\n")
    assert same_as_loop(tmp_path / "eng.csv", tmp_path / "loop.csv") == "1/3"
    assert same_as_loop(tmp_path / "eng.csv", tmp_path / "none.csv") == ""
    row = {"io_model": "paper", "policy": "fcfs", "jobs": 3, "mean_stretch": 1.5, "max_stretch": 2.0,
           "mean_bounded_stretch": 1.5, "max_bounded_stretch": 2.0, "reuses": 1, "total_waiting_for_load_s": 4,
           "total_transfer_s": 4, "mean_queue_s": 0.0, "makespan_s": 30, "same_as_loop": "1/3"}
    engine_table([row], tmp_path / "t")
    assert "| paper | fcfs | 3 | 1.5000 |" in (tmp_path / "t.md").read_text()
    r = iosched("repro", "locality", "engine-runs", "--models", "paper,bogus", "--work", tmp_path / "w")
    assert r.exit_code == 1
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "--models" in err[0] and "bogus" in err[0]


@pytest.mark.parametrize("command, argv", [
    ("platform locality", ["p.xml", "--io-model", "bogus"]),          # printed 8 lines of usage before
    ("workload locality", ["bogus-kind", "in", "out"]),
    ("repro locality engine-runs", ["--no-such-flag"]),
])
def test_command_line_usage_errors_one_line(command, argv):
    """A bad value or flag on a locality command line: one line, exit 2."""
    r = iosched(*command.split(), *argv)
    assert r.exit_code == 2
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Error:" in err and "usage" not in err.lower()


def test_job_without_file_size_is_rejected_with_its_reason(tmp_path):
    """A job without its file's size (io.inputs[0].bytes; the field file_size
    of the earlier format) is refused with a logged reason naming it (it ran
    with a 0-byte file before); the other jobs run."""
    import csv
    import json

    from iosched.api import simulate
    from iosched.experiments.platforms import locality_xml

    jobs = [LJob(str(i), i * 10, 50, 100, 2, 1 + i % 2, 1.0, 1, seq=i) for i in range(4)]
    (tmp_path / "p.xml").write_text(locality_xml(3, 4, 1e9, 128e9, "paper"))
    to_batsim(jobs, tmp_path / "w.json", nb_res=12)
    w = json.loads((tmp_path / "w.json").read_text())
    del w["jobs"][1]["io"]["inputs"][0]["bytes"]
    (tmp_path / "w.json").write_text(json.dumps(w))
    simulate(tmp_path / "p.xml", tmp_path / "w.json", "loc-fcfs", {}, output_dir=tmp_path / "o")
    ran = {r["job_id"].split(":")[0] for r in csv.DictReader(open(tmp_path / "o" / "out_jobs.csv"))
           if r["final_state"] == "COMPLETED_SUCCESSFULLY"}
    assert ran == {"0", "2", "3"}
    assert "job w0!1: io.inputs[0].bytes: is missing" in (tmp_path / "o" / "sched.log").read_text()


def test_job_with_more_cores_than_a_node_is_rejected_with_its_reason(tmp_path):
    """A job asking more cores than a node has is refused with a logged
    reason naming it (an IndexError in the planner before); the others run."""
    import csv

    from iosched.api import simulate
    from iosched.experiments.platforms import locality_xml

    jobs = [LJob(str(i), i * 10, 50, 100, 5 if i == 2 else 2, 1 + i % 2, 1.0, 1, seq=i) for i in range(4)]
    (tmp_path / "p.xml").write_text(locality_xml(3, 4, 1e9, 128e9, "paper"))
    to_batsim(jobs, tmp_path / "w.json", nb_res=12)
    simulate(tmp_path / "p.xml", tmp_path / "w.json", "loc-lea", {}, output_dir=tmp_path / "o")
    ran = {r["job_id"].split(":")[0] for r in csv.DictReader(open(tmp_path / "o" / "out_jobs.csv"))
           if r["final_state"] == "COMPLETED_SUCCESSFULLY"}
    assert ran == {"0", "1", "3"}
    assert "rejecting job w0!2: requests 5 cores but a node has 4" in (tmp_path / "o" / "sched.log").read_text()

"""Check that a code change keeps the simulation outputs byte-identical.

Runs a fixed set of cases with the code of one source tree and writes their
outputs to a folder; ``compare`` then diffs two such folders byte by byte
(``_jobs.csv``, ``_machine_states.csv``, and ``_schedule.csv`` without its two
wall-clock columns, ``scheduling_time`` and ``simulation_time``).

The cases: the six golden cases g1-g6 (``../shared/golden``; g1 and g4 with
``tests/schedulers/orderedFiller.py`` in the golden tie-break order, as
``tests/test_golden.py``), the first 5,000 KTH-SP2 jobs on 100 nodes with
easy, conservative and filler, and sjf-bb and plan-2 (seed 1) on the first
300 burst-buffer jobs on ``platforms/dragonfly96.xml``.

Usage::

    python scripts/same_outputs.py run TREE OUTDIR [--shared DIR]
    python scripts/same_outputs.py compare OUTDIR_A OUTDIR_B

``run`` uses ``TREE/src`` on ``PYTHONPATH`` and runs ``python -m iosched.cli``
from ``TREE`` (so an old commit checked out with ``git worktree add`` runs its
own code and schedulers). Exit status of ``compare``: 0 when every file
agrees, 1 otherwise (each difference printed).
"""

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from test_golden import CASES as GOLDEN, ORDER_DEPENDENT  # noqa: E402  (the golden cases, once)

FILES = ("out_jobs.csv", "out_machine_states.csv", "out_schedule.csv")
WALL_CLOCK = {"scheduling_time", "simulation_time"}


def _iosched(tree: Path, *args):
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    subprocess.run([sys.executable, "-m", "iosched.cli", *map(str, args)], cwd=tree, env=env,
                   check=True, stdout=subprocess.DEVNULL)


def run(tree: Path, out: Path, shared: Path):
    import batsim  # noqa: F401  (pybatsim, for its example schedulers)
    import schedulers as pyb_schedulers

    out.mkdir(parents=True, exist_ok=True)
    inputs = shared / "golden" / "inputs"
    for case, (plat, wl, sched) in GOLDEN.items():
        extra = []
        sched_file = Path(pyb_schedulers.__file__).parent / f"{sched}.py"
        if case in ORDER_DEPENDENT:
            with open(shared / "golden" / case / "out_jobs.csv", newline="") as f:
                gold = list(csv.DictReader(f))
            order = [f"{g['workload_name']}!{g['job_id']}"
                     for g in sorted(gold, key=lambda r: float(r["starting_time"]))]
            sched_file = tree / "tests" / "schedulers" / "orderedFiller.py"
            extra = ["--options", json.dumps({"order": order})]
        _iosched(tree, "run", "-p", inputs / plat, "-w", inputs / wl, "-s", sched_file,
                 "-o", out / case, "--no-metrics", *extra)
    kth = out / "kth5000.json"
    # `iosched workload swf` since issue 26; `iosched workload swf2json` in older trees
    swf_kind = "swf" if '"swf":' in (tree / "src" / "iosched" / "cli.py").read_text() else "swf2json"
    _iosched(tree, "workload", swf_kind, shared / "data" / "KTH-SP2-1996-2.1-cln.swf", kth,
             "--nb-res", 100, "--first", 5000)
    for policy in ("easy", "conservative", "filler"):
        _iosched(tree, "run", "-p", inputs / "cluster100.xml", "-w", kth, "-s", policy,
                 "-o", out / f"kth5000_{policy}", "--no-metrics")
    bb = out / "bb300.json"
    _iosched(tree, "workload", "bb", shared / "data" / "KTH-SP2-1996-2.1-cln.swf", bb,
             "--first", 300)
    for policy in ("sjf-bb", "plan-2"):
        _iosched(tree, "run", "-p", tree / "platforms" / "dragonfly96.xml", "-w", bb, "-s", policy,
                 "--options", json.dumps({"seed": 1}), "-o", out / f"bb300_{policy}", "--no-metrics")


def _content(path: Path) -> bytes:
    data = path.read_bytes()
    if path.name != "out_schedule.csv":
        return data
    rows = list(csv.DictReader(io.StringIO(data.decode())))
    return json.dumps([{k: v for k, v in r.items() if k not in WALL_CLOCK} for r in rows]).encode()


def compare(a: Path, b: Path) -> int:
    bad = 0
    cases = sorted(p.name for p in a.iterdir() if p.is_dir())
    for case in cases:
        for name in FILES:
            pa, pb = a / case / name, b / case / name
            if not pb.is_file():
                print(f"{case}/{name}: missing in {b}")
                bad += 1
            elif _content(pa) != _content(pb):
                print(f"{case}/{name}: differs")
                bad += 1
            else:
                print(f"{case}/{name}: identical")
    print(f"{len(cases)} cases, {bad} differences")
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 4 and argv[1] == "run":
        shared = Path(argv[5]) if len(argv) > 5 and argv[4] == "--shared" else \
            Path(__file__).resolve().parents[1].parent / "shared"
        run(Path(argv[2]).resolve(), Path(argv[3]).resolve(), shared.resolve())
        return 0
    if len(argv) == 4 and argv[1] == "compare":
        return compare(Path(argv[2]), Path(argv[3]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Print, for each golden run of ../shared/golden, how the embedded engine
compares with the real Batsim 4.2.1 (same inputs, same scheduler; for g1 and
g4 FillerSched with the golden run's tie-break order, see
tests/test_golden.py): jobs whose final state or allocation differs, and the
largest difference in start and finish times.

Usage: .venv/bin/python scripts/golden_diff.py [SHARED_DIR] [--no-g8]
(g8, the full KTH-SP2 trace, takes about 20 s)
"""

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from test_golden import CASES, FCFSIO_CASES, G8, ORDER_DEPENDENT, read_jobs, run_case  # noqa: E402


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    shared = Path(args[0]) if args else REPO.parent / "shared"
    cases = sorted(CASES) + sorted(FCFSIO_CASES) + ([] if "--no-g8" in argv else [G8])
    for case in cases:
        scheduler = options = None
        if case in ORDER_DEPENDENT:
            gold = read_jobs(shared / "golden" / case / "out_jobs.csv")
            order = [f"{g['workload_name']}!{g['job_id']}"
                     for g in sorted(gold.values(), key=lambda r: float(r["starting_time"]))]
            scheduler = REPO / "tests" / "schedulers" / "orderedFiller.py"
            options = {"order": order}
        with tempfile.TemporaryDirectory() as tmp:
            ours, gold = run_case(shared, case, Path(tmp), scheduler=scheduler, options=options,
                                  timeout=3600)
        diff = max(abs(float(ours[j][c]) - float(g[c])) for j, g in gold.items()
                   for c in ("starting_time", "finish_time") if g[c])
        states = sum(ours[j]["final_state"] != g["final_state"] for j, g in gold.items())
        allocs = sum(ours[j]["allocated_resources"] != g["allocated_resources"] for j, g in gold.items())
        print(f"{case}: {len(gold)} jobs, final states differ: {states}, allocations differ: {allocs}, "
              f"max |start/finish difference| = {diff:.6f} s")


if __name__ == "__main__":
    main(sys.argv)

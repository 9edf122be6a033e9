"""Print, for each golden run of ../shared/golden, the largest difference in
start and finish times between the real Batsim 4.2.1 and the embedded engine
(same inputs, same pybatsim scheduler; for g1 and g4 FillerSched with the
golden run's tie-break order, see tests/test_golden.py).

Usage: .venv/bin/python scripts/golden_diff.py [SHARED_DIR]
"""

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from test_golden import CASES, ORDER_DEPENDENT, read_jobs, run_case  # noqa: E402


def main(argv):
    shared = Path(argv[1]) if len(argv) > 1 else REPO.parent / "shared"
    for case in sorted(CASES):
        scheduler = options = None
        if case in ORDER_DEPENDENT:
            gold = read_jobs(shared / "golden" / case / "out_jobs.csv")
            order = [f"{g['workload_name']}!{g['job_id']}"
                     for g in sorted(gold.values(), key=lambda r: float(r["starting_time"]))]
            scheduler = REPO / "tests" / "schedulers" / "orderedFiller.py"
            options = {"order": order}
        with tempfile.TemporaryDirectory() as tmp:
            ours, gold = run_case(shared, case, Path(tmp), scheduler=scheduler, options=options)
        diff = max(abs(float(ours[j][c]) - float(g[c])) for j, g in gold.items()
                   for c in ("starting_time", "finish_time"))
        same = all(ours[j]["allocated_resources"] == g["allocated_resources"]
                   and ours[j]["final_state"] == g["final_state"] for j, g in gold.items())
        print(f"{case}: {len(gold)} jobs, same states and allocations: {same}, "
              f"max |start/finish difference| = {diff:.6f} s")


if __name__ == "__main__":
    main(sys.argv)

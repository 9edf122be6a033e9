"""One timed run of a benchmark case with the code of a given source tree.

Run as a file, never imported from another tree: ``PYTHONPATH=TREE/src
python .../tree_run.py SPEC.json`` makes every ``iosched`` import (and the
engine and scheduler processes the run starts, which inherit
``PYTHONPATH``) come from ``TREE``, so that a benchmark can time a
reference tree (e.g. a worktree of main) and the current one side by side
in the same command (:func:`iosched.experiments.common.run_in_tree`). Only
functions that both trees have are used here (:func:`iosched.run.simulation.run_simulation`,
:func:`iosched.experiments.locality.reproduction.run_policy`, found under
its earlier name in a tree from before issue 26), so the measurement is the
same code for both.

``SPEC.json`` is an object with ``kind``:

* ``"simulation"``: ``platform``, ``workload``, ``scheduler`` (a registered
  name, or ``"burstbuffer"`` / ``"listpack"`` for the tree's
  ``schedulers/<name>.py``), ``options`` (object), ``out`` (output folder,
  kept), ``timeout`` (s), optional ``engine_args`` (list) and ``in_process``
  (bool: the scheduler inside the engine's process);
* ``"locality"``: ``workload``, ``cluster`` (the Uppmax files), ``policy``,
  ``out`` (folder: ``jobs.csv`` is written there).

Prints one JSON object: ``wall_s`` (s, around the run), ``cpu_s`` (s: this
process's and its children's user + system CPU time), ``load_1min``
(before, after), the tree's ``iosched`` path, and for a simulation the
``scheduling_time`` and ``simulation_time`` of ``out_schedule.csv`` (s)
and the makespan (s). Exit status 1 (message on stderr) if the run fails.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import sys
import time
from pathlib import Path


def _cpu() -> float:
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def _locality_run_policy():
    """``run_policy`` of the locality reproduction wherever the tree has it
    (``iosched.experiments.locality.reproduction`` since issue 26, the
    module ``reproduce`` of the package ``iosched.locality`` before), so that
    trees of either layout can be timed side by side."""
    try:
        from iosched.experiments.locality.reproduction import run_policy
    except ImportError:   # a tree from before issue 26
        run_policy = importlib.import_module(".".join(("iosched", "locality", "reproduce"))).run_policy
    return run_policy


def main(argv=None) -> int:
    """Entry point: ``tree_run.py SPEC.json`` (module documentation)."""
    spec = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    import iosched
    out = Path(spec["out"])
    out.mkdir(parents=True, exist_ok=True)
    load0 = os.getloadavg()[0]
    res = {"iosched": str(Path(iosched.__file__).parent)}
    if spec["kind"] == "simulation":
        from iosched.run.simulation import run_simulation
        sched = spec["scheduler"]
        if sched in ("burstbuffer", "listpack"):   # the tree's thin launcher (run_in_tree's cwd is the tree)
            sched = str(Path.cwd() / "schedulers" / f"{sched}.py")
        c0, t0 = _cpu(), time.perf_counter()
        kw = {"in_process": True} if spec.get("in_process") else {}
        run_simulation(spec["platform"], spec["workload"], sched, out, options=spec.get("options"),
                       timeout=spec["timeout"], engine_args=spec.get("engine_args", []), **kw)
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
        with open(out / "out_schedule.csv") as f:
            header, values = f.read().splitlines()[:2]
        sch = dict(zip(header.split(","), values.split(",")))
        res.update(scheduling_time_s=float(sch["scheduling_time"]),
                   simulation_time_s=float(sch["simulation_time"]), makespan_s=float(sch["makespan"]))
    elif spec["kind"] == "locality":
        from iosched.locality.metrics import write_jobs
        run_policy = _locality_run_policy()
        c0, t0 = _cpu(), time.perf_counter()
        row, run, _ = run_policy(spec["workload"], spec["cluster"], spec["policy"])
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
        write_jobs(run["jobs"], out / "jobs.csv")
        res.update(passes=run["passes"], decisions=run["decisions"], mean_stretch=row["mean_stretch"])
    else:
        print(f"tree_run: unknown kind {spec['kind']!r}", file=sys.stderr)
        return 1
    res.update(wall_s=round(wall, 3), cpu_s=round(cpu, 3),
               load_1min=[round(load0, 2), round(os.getloadavg()[0], 2)])
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Job-by-job comparison of two runs' ``out_jobs.csv`` rows, at the
project's bar (0.05 s + 0.1 %), shared by the family tests that compare
encodings and engines."""

from __future__ import annotations


def facts(rows) -> dict:
    """job id -> [final_state, allocated_resources, start (s), finish (s)]
    from ``csv.DictReader`` rows of a ``_jobs.csv`` (a list of rows, or a
    dict job id -> row); NaN times for a rejected job."""
    items = rows.items() if isinstance(rows, dict) else ((r["job_id"], r) for r in rows)
    return {j: [r["final_state"], r["allocated_resources"], float(r["starting_time"] or "nan"),
                float(r["finish_time"] or "nan")] for j, r in items}


def schedule_differences(ours: dict, ref: dict, abs_tol=0.05, rel_tol=1e-3) -> list:
    """Job by job: final state, allocation, start and finish within
    ``abs_tol + rel_tol * max(|a|, |b|)`` s (the project's bar, 0.05 s + 0.1 %).
    ``ours``/``ref``: :func:`facts` dicts. Returns one line per difference."""
    out = [] if ours.keys() == ref.keys() else [f"jobs {sorted(set(ours) ^ set(ref))[:5]}"]
    for j in sorted(set(ours) & set(ref)):
        a, b = ours[j], ref[j]
        if a[:2] != b[:2]:
            out.append(f"{j}: {a[:2]} != {b[:2]}")
        for x, y, what in ((a[2], b[2], "start"), (a[3], b[3], "finish")):
            if abs(x - y) > abs_tol + rel_tol * max(abs(x), abs(y)):
                out.append(f"{j}: {what} {x} != {y}")
    return out

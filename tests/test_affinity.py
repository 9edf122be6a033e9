"""Tests of iosched.run.affinity: which CPU a simulation's two processes get."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from iosched.run import affinity
from iosched.errors import InputError


@pytest.fixture
def four_cpus(tmp_path, monkeypatch):
    """Pretend this process may use CPUs 0-3; lock files in tmp_path."""
    monkeypatch.setattr(affinity, "allowed_cpus", lambda: [0, 1, 2, 3])
    monkeypatch.setattr(affinity, "lock_dir", lambda: tmp_path)
    return tmp_path


@pytest.mark.parametrize("value, expected", [
    ("auto", "auto"), ("NONE", "none"), (" auto ", "auto"),
])
def test_parse_cpu_policies(value, expected):
    assert affinity.parse_cpu(value) == expected


def test_parse_cpu_number_must_be_allowed():
    cpu = affinity.allowed_cpus()[0]
    assert affinity.parse_cpu(str(cpu)) == cpu
    assert affinity.parse_cpu(cpu) == cpu
    with pytest.raises(InputError, match="CPU 100000 is not available"):
        affinity.parse_cpu(100000)


@pytest.mark.parametrize("value", ["fast", "-1", "1.5", True, 2.0, None, ""])
def test_parse_cpu_rejects(value):
    with pytest.raises(InputError, match="cpu: expected auto, none or a CPU number"):
        affinity.parse_cpu(value)


def test_concurrent_runs_claim_different_cpus_until_none_is_left(four_cpus):
    with affinity.claim_cpu() as a, affinity.claim_cpu() as b:
        assert a == {0} and b == {1}
        with affinity.claim_cpu() as c, affinity.claim_cpu() as d:
            assert (c, d) == ({2}, {3})
            with affinity.claim_cpu() as e:
                assert e is None  # every CPU is taken: not pinned
        with affinity.claim_cpu() as c2:
            assert c2 == {2}  # released when the block ended
    with affinity.claim_cpu() as a2:
        assert a2 == {0}


def test_a_claim_held_by_another_process_is_respected(four_cpus):
    # another process holds CPU 0's lock (flock is per open file, across processes)
    code = ("import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(four_cpus / "cpu0.lock")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with affinity.claim_cpu() as a:
            assert a == {1}
    finally:
        holder.kill()
        holder.wait()
    with affinity.claim_cpu() as a:
        assert a == {0}  # the lock died with its process


def test_explicit_cpu_and_none_take_no_lock(four_cpus, monkeypatch):
    monkeypatch.setattr(affinity, "parse_cpu", lambda v: v if v == "none" else int(v))
    with affinity.claim_cpu("2") as a, affinity.claim_cpu("2") as b:
        assert a == b == {2}
    with affinity.claim_cpu("none") as n:
        assert n is None
    assert not list(four_cpus.glob("*.lock"))


def test_one_cpu_machine_is_not_pinned(tmp_path, monkeypatch):
    monkeypatch.setattr(affinity, "allowed_cpus", lambda: [0])
    monkeypatch.setattr(affinity, "lock_dir", lambda: tmp_path)
    with affinity.claim_cpu() as a:
        assert a is None


def test_spawned_process_inherits_cpu_and_sched_batch_and_the_thread_is_restored():
    cpu = affinity.allowed_cpus()[-1]
    before = (os.sched_getaffinity(0), os.sched_getscheduler(0))
    code = "import os; print(sorted(os.sched_getaffinity(0)), os.sched_getscheduler(0))"
    with affinity.spawning_on({cpu}):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout.strip()
    assert out == f"[{cpu}] {os.SCHED_BATCH}"
    assert (os.sched_getaffinity(0), os.sched_getscheduler(0)) == before
    with affinity.spawning_on(None):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout.strip()
    assert out == f"{sorted(before[0])} {before[1]}"


def test_a_refused_affinity_leaves_the_spawn_unpinned(monkeypatch):
    def refuse(pid, mask):
        raise PermissionError(1, "Operation not permitted")

    before = os.sched_getaffinity(0)
    monkeypatch.setattr(affinity.os, "sched_setaffinity", refuse)
    with affinity.spawning_on({affinity.allowed_cpus()[0]}):
        out = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert out == str(sorted(before))

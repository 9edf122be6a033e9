"""Tests of iosched.run.hosts: the compute hosts of an engine command line."""

from __future__ import annotations

import sys
from pathlib import Path

from iosched.engine.platform import count_compute_hosts
from iosched.record import compute_hosts
from iosched.run.hosts import compute_hosts_of_argv
from iosched.run.simulation import run_simulation

REPO = Path(__file__).resolve().parent.parent


def test_compute_hosts_of_argv_skips_the_engine_command(tmp_path):
    """The host named master_host is Batsim's default master even without a
    role property; the `-m` of `python -m iosched.engine.cli` is not
    --master-host."""
    plat = tmp_path / "p.xml"
    plat.write_text(
        "<?xml version='1.0'?>\n"
        "<!DOCTYPE platform SYSTEM 'https://simgrid.org/simgrid.dtd'>\n"
        "<platform version='4.1'><zone id='z' routing='Full'>\n"
        "<host id='node_0' speed='1Gf'/><host id='node_1' speed='1Gf'/>"
        "<host id='node_2' speed='1Gf'/><host id='master_host' speed='1Gf'/>\n"
        "</zone></platform>\n")
    embedded = [sys.executable, "-m", "iosched.engine.cli", "-p", str(plat)]
    assert compute_hosts_of_argv(embedded) == 3
    assert compute_hosts_of_argv(["batsim", "-p", str(plat), "-r", "node_2:storage"]) == 2
    assert compute_hosts_of_argv([*embedded, "-m", "node_0"]) == 3  # master_host computes then
    assert compute_hosts_of_argv([*embedded, "--mmax", "2"]) == 2
    assert compute_hosts_of_argv(["batsim", "-w", "w.json"]) is None  # no platform


def test_the_runner_records_the_compute_hosts_once(tmp_path):
    """run_simulation counts the engine command's compute hosts when it builds
    it and records them in command.json (iosched.record); the storage
    hosts of the PFS platform are not counted."""
    platform = REPO / "platforms" / "cluster16_pfs.xml"
    res = run_simulation(platform, REPO / "workloads" / "example_io.json", "fcfs", tmp_path,
                         timeout=120)
    assert res.compute_hosts == count_compute_hosts(str(platform))
    assert compute_hosts(tmp_path) == res.compute_hosts

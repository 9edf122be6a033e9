"""The ``iosched`` command line: the experiment groups ``workload``,
``platform``, ``repro`` and ``bench`` (issue 26), resolved lazily from the one
table :data:`iosched.cli.KINDS`; one-line usage errors (exit status 2) and
input errors (exit status 1); the ``python -m`` entry points they replace are
gone."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from iosched.cli import DEFAULT_BENCH, KINDS, cli

GROUPS = ("workload", "platform", "repro", "bench")

SWF = ("; MaxProcs: 40\n"
       "1 0 5 100 4 -1 -1 4 200 -1 1 7 -1 -1 -1 -1 -1 -1\n"
       "2 300 5 100 4 -1 -1 4 200 -1 1 7 -1 -1 -1 -1 -1 -1\n"
       "3 400 5 300 30 -1 -1 30 600 -1 1 8 -1 -1 -1 -1 -1 -1\n")


def iosched(*args):
    """``iosched ARGS`` in this process: click's result (exit_code, stdout, stderr)."""
    return CliRunner().invoke(cli, [str(a) for a in args], prog_name="iosched")


def commands(help_text):
    """The command names a click help text lists (its wrapped lines skipped)."""
    lines = help_text.split("Commands:")[1].splitlines()
    return [line.split()[0] for line in lines if line.startswith("  ") and not line.startswith("   ")]


def leaves(table, path=()):
    """(command path, module, attribute) of every command of a KINDS table."""
    for kind, entry in table.items():
        if isinstance(entry[1], dict):
            yield from leaves(entry[1], (*path, kind))
        else:
            yield (*path, kind), entry[0], entry[1]


ALL_COMMANDS = [(g, *leaf) for g, (_, table) in KINDS.items() for leaf in leaves(table)]


def test_top_level_help_lists_the_groups():
    r = iosched("--help")
    assert r.exit_code == 0
    listed = set(commands(r.output))
    assert set(GROUPS) <= listed
    assert {"run", "sched", "metrics", "demo", "campaign", "report", "leaderboard"} <= listed


@pytest.mark.parametrize("group, kinds", [
    ("workload", ["swf", "bb", "locality", "listpack", "dad", "pfsbw", "arena"]),
    ("platform", ["cluster", "dragonfly96", "dad", "locality", "listpack", "pfsbw", "arena"]),
    ("repro", ["bb", "locality", "listpack", "pfsbw", "dad"]),
    ("bench", ["kth", "bb", "listpack", "locality", "dad", "pfsbw", "scale", "campaign", "arena"]),
])
def test_group_help_lists_its_kinds(group, kinds):
    r = iosched(group, "--help")
    assert r.exit_code == 0, r.output
    assert commands(r.output) == kinds


def test_locality_reproduction_is_a_group_of_its_commands():
    r = iosched("repro", "locality", "--help")
    assert r.exit_code == 0
    assert commands(r.output) == ["loop", "engine-runs", "figures"]


@pytest.mark.parametrize("group, path, module, attr", ALL_COMMANDS,
                         ids=[" ".join((g, *p)) for g, p, _, _ in ALL_COMMANDS])
def test_every_table_entry_is_a_click_command_with_help(group, path, module, attr):
    """The table names an existing click command; its help is reached through
    the group and shows the command's path."""
    command = getattr(importlib.import_module(module), attr)
    assert isinstance(command, click.Command)
    r = iosched(group, *path, "--help")
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"Usage: iosched {group} {' '.join(path)} ")


HELP_IMPORTS = """
import json
import sys

from iosched.cli import main

for args in json.loads(sys.argv[1]):
    try:
        main(args)
    except SystemExit:
        pass
print(json.dumps(sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules)))
"""


def modules_after_help(*helps, watch):
    """The modules of ``watch`` imported by a fresh process that printed ``helps``."""
    p = subprocess.run([sys.executable, "-c", HELP_IMPORTS, json.dumps(helps), json.dumps(watch)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_help_does_not_import_the_experiment_modules():
    """The groups' help stays fast: no experiment module (nor matplotlib) is
    imported; `iosched --help` imports no reproduction or benchmark."""
    every = sorted({m for _, _, m, _ in ALL_COMMANDS} | {"matplotlib"})
    groups = [[g, "--help"] for g in GROUPS] + [["repro", "locality", "--help"]]
    assert modules_after_help(*groups, watch=every) == []
    heavy = sorted({m for g, _, m, _ in ALL_COMMANDS if g in ("repro", "bench")})
    assert modules_after_help(["--help"], watch=heavy) == []


def test_platform_locality_writes_the_generator_output(tmp_path):
    from iosched.experiments.platforms import locality_xml

    out = tmp_path / "p.xml"
    r = iosched("platform", "locality", out, "--nodes", "2", "--cores", "3", "--io-model", "shared-pfs")
    assert r.exit_code == 0, r.output
    assert out.read_text() == locality_xml(2, 3, 0.1e9, 128e9, "shared-pfs", 10e9)


@pytest.mark.parametrize("args, expected", [
    (["dad", "--nodes", "3", "--slots", "2"], lambda P: P.nusa_xml(3, 2)),
    (["listpack", "--machine", "mira"], lambda P: P.listpack_xml(96)),
    (["listpack", "--machine", "uniform"], lambda P: P.listpack_xml(2048)),
    (["pfsbw", "--nb-nodes", "4"], lambda P: P.pfsbw_xml(4)),
    (["cluster", "--nb-nodes", "3"], lambda P: P.cluster_xml(3)),
])
def test_platform_kinds_write_the_one_generator_modules_output(tmp_path, args, expected):
    """Every family's platform kind is a command of iosched.experiments.platforms
    writing what its generator there returns."""
    from iosched.experiments import platforms

    kind, *options = args
    assert KINDS["platform"][1][kind][0] == "iosched.experiments.platforms"
    r = iosched("platform", kind, tmp_path / "p.xml", *options)
    assert r.exit_code == 0, r.output
    assert (tmp_path / "p.xml").read_text() == expected(platforms)


def test_platform_listpack_is_the_workload_commands_platform(tmp_path):
    """`iosched platform listpack` writes the platform that `iosched workload
    listpack --platform` writes for the same machine."""
    r = iosched("workload", "listpack", "U-No", "0.4", tmp_path / "w.json", "--n-jobs", "5",
                "--platform", tmp_path / "a.xml")
    assert r.exit_code == 0, r.output
    r = iosched("platform", "listpack", tmp_path / "b.xml", "--machine", "uniform")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "a.xml").read_bytes() == (tmp_path / "b.xml").read_bytes()


def test_workload_bb_on_a_tiny_trace_is_the_library_workload(tmp_path):
    from iosched.experiments.bb import workload as W

    swf = tmp_path / "t.swf"
    swf.write_text(SWF)
    r = iosched("workload", "bb", swf, tmp_path / "w.json", "--seed", "3")
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"wrote {tmp_path / 'w.json'}: 3 jobs")
    W.write_workload(W.generate(swf, seed=3), tmp_path / "lib.json")
    assert (tmp_path / "w.json").read_bytes() == (tmp_path / "lib.json").read_bytes()


def test_workload_swf_converts_a_tiny_trace(tmp_path):
    swf = tmp_path / "t.swf"
    swf.write_text(SWF)
    r = iosched("workload", "swf", swf, tmp_path / "w.json")
    assert r.exit_code == 0, r.output
    assert len(json.loads((tmp_path / "w.json").read_text())["jobs"]) == 3


@pytest.mark.parametrize("args, word", [
    (["workload", "locality", "--bogus"], "--bogus"),
    (["workload", "locality", "bogus-kind", "in", "out"], "bogus-kind"),
    (["platform", "locality", "p.xml", "--io-model", "bogus"], "--io-model"),
    (["repro", "locality", "figures", "--total", "x"], "--total"),
    (["repro", "listpack", "out-only"], "CAMPAIGN_DIR"),
    (["repro", "pfsbw", "--repeats", "x"], "--repeats"),
    (["bench", "locality", "--no-such-flag"], "--no-such-flag"),
    (["bench", "--nb-res", "0"], "--nb-res"),                 # the default benchmark's option
    (["bench", "--bogus"], "--bogus"),
    (["repro", "nope"], "nope"),
    (["bench", "lcality"], "lcality"),                       # a typo is not taken for the default's argument
    (["workload", "dad", "nope"], "nope"),
])
def test_usage_errors_are_one_line_exit_2(args, word):
    r = iosched(*args)
    assert r.exit_code == 2, r.output
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("Error:") and word in err[0], r.stderr
    assert "Traceback" not in r.output and "Usage" not in r.stderr


@pytest.mark.parametrize("args, word", [
    (["workload", "locality", "swf", "{tmp}/no.swf", "{tmp}/o.json"], "no.swf"),
    (["platform", "locality", "{tmp}/missing/p.xml"], "missing"),
    (["workload", "dad", "kth", "{tmp}/w.json", "--swf", "{tmp}/no.swf"], "no.swf"),
    (["repro", "listpack", "{tmp}/out", "{tmp}/no-campaign"], "no-campaign"),
])
def test_input_errors_are_one_line_exit_1(tmp_path, args, word):
    r = iosched(*[a.format(tmp=tmp_path) for a in args])
    assert r.exit_code == 1, r.output
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("Error:") and word in err[0], r.stderr
    assert "Traceback" not in r.output


def test_bench_without_a_family_is_the_kth_benchmark():
    assert DEFAULT_BENCH == "kth"
    r = iosched("bench", "--nb-res", "0")
    assert "Error: Invalid value for '--nb-res'" in r.stderr
    r = iosched("bench", "kth", "--nb-res", "0")
    assert "Error: Invalid value for '--nb-res'" in r.stderr


def test_python_m_iosched_runs_the_groups(tmp_path):
    p = subprocess.run([sys.executable, "-m", "iosched", "platform", "dad", str(tmp_path / "n.xml"),
                        "--nodes", "2", "--slots", "2"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    from iosched.experiments.platforms import nusa_xml
    assert (tmp_path / "n.xml").read_text() == nusa_xml(2, 2)


@pytest.mark.parametrize("module", ["iosched.bench.__main__", "iosched.listpack.__main__",
                                    "iosched.dad.__main__", "iosched.experiments.bench.__main__",
                                    "iosched.experiments.listpack.__main__", "iosched.experiments.dad.__main__",
                                    "iosched.experiments.locality.platform"])
def test_the_replaced_python_m_entry_points_are_gone(module):
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError:  # its package is gone too
        spec = None
    assert spec is None


def test_experiment_modules_have_no_main_block():
    """The experiment modules of the table are commands, not scripts."""
    for _, _, module, _ in ALL_COMMANDS:
        text = open(importlib.util.find_spec(module).origin).read()
        assert 'if __name__ == "__main__"' not in text, module


def test_command_line_records_what_was_given():
    from iosched.clicommon import command_line

    seen = {}

    @click.command(name="demo")
    @click.argument("out")
    @click.option("--nodes", type=int, default=4)
    @click.option("--name", default="a b")
    @click.option("--fast", is_flag=True)
    def demo(out, nodes, name, fast):
        seen["line"] = command_line(click.get_current_context())

    assert CliRunner().invoke(demo, ["o dir", "--fast", "--nodes", "8"]).exit_code == 0
    assert seen["line"] == "demo 'o dir' --nodes 8 --fast"

"""The default paths (iosched.paths) and the default trace's precedence
(iosched.workloads.default_swf): the shared data folder, else the KTH-SP2
copy shipped in the package, unpacked into the user cache with the same
bytes (issue 29)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from iosched import demo, paths
from iosched.cli import cli
from iosched.errors import InputError
from iosched.experiments.bb import artifact
from iosched.schedulers.registry import SCHEDULERS, resolve
from iosched.workloads import default_swf
from iosched.workloads.default_swf import (DEFAULT_SWF_NAME, DEFAULT_SWF_SHA256, PACKAGED_SWF,
                                           find_default_swf, unpack_packaged_swf)
from iosched.workloads.swf import read_swf

REPO = Path(__file__).resolve().parents[1]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _no_shared(monkeypatch, tmp_path):
    """No shared data folder anywhere; the user cache in tmp_path/cache."""
    monkeypatch.setattr(default_swf, "shared_data_candidates", lambda name: [tmp_path / "absent" / name])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_the_source_tree_is_recognised():
    assert paths.IN_SOURCE_TREE
    assert paths.PACKAGE_DIR == REPO / "src" / "iosched"
    assert paths.REPO_ROOT == REPO
    assert paths.RESULTS_DIR == REPO / "results"
    assert paths.LAUNCHERS_DIR == REPO / "schedulers"


def test_the_shipped_platforms_are_package_data_and_the_checkout_links_to_them():
    names = sorted(p.name for p in paths.PLATFORMS_DIR.glob("*.xml"))
    assert names == ["cluster16_pfs.xml", "dragonfly96.xml", "locality_uppmax.xml", "pfsbw15.xml"]
    assert (REPO / "platforms").resolve() == paths.PLATFORMS_DIR
    assert (REPO / "platforms" / "pfsbw15.xml").read_bytes() == (paths.PLATFORMS_DIR / "pfsbw15.xml").read_bytes()


def test_every_registered_scheduler_file_is_in_the_package():
    for name in SCHEDULERS:
        path, _ = resolve(name)
        assert path.parent == paths.SCHEDULERS_DIR and path.is_file()


def test_the_packaged_trace_is_the_archive_file_gzipped_reproducibly():
    raw = PACKAGED_SWF.read_bytes()
    # gzip -9n: no file name, no time stamp (bytes 4..7 are the mtime)
    assert raw[:3] == b"\x1f\x8b\x08" and raw[3] & 0x08 == 0 and raw[4:8] == b"\0\0\0\0"
    plain = gzip.decompress(raw)
    assert _sha(plain) == DEFAULT_SWF_SHA256
    assert len(plain) == 2620495
    assert b"; Acknowledge: Lars Malinowsky" in plain[:400]


def test_the_packaged_trace_is_byte_identical_to_the_shared_one(shared):
    assert gzip.decompress(PACKAGED_SWF.read_bytes()) == (shared / "data" / DEFAULT_SWF_NAME).read_bytes()


def test_the_acknowledgement_is_beside_the_trace():
    text = (paths.PACKAGE_DATA_DIR / "README.md").read_text(encoding="utf-8")
    assert "Lars Malinowsky" in text and "Feitelson" in text and "Parallel Workloads Archive" in text
    assert DEFAULT_SWF_SHA256 in text


def test_user_cache_follows_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert paths.user_cache("x.swf") == tmp_path / "iosched" / "x.swf"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")  # ignored, as the specification says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert paths.user_cache() == tmp_path / "home" / ".cache" / "iosched"


def test_the_shared_trace_comes_first_when_it_exists(monkeypatch, tmp_path):
    plain = tmp_path / "shared" / DEFAULT_SWF_NAME
    plain.parent.mkdir()
    plain.write_bytes(b"; a trace\n")
    monkeypatch.setattr(default_swf, "shared_data_candidates", lambda name: [plain])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert default_swf.default_swf_candidates() == [plain, PACKAGED_SWF]
    assert find_default_swf() == plain
    assert not (tmp_path / "cache").exists()


def test_without_shared_data_the_packaged_trace_is_unpacked_once(monkeypatch, tmp_path):
    _no_shared(monkeypatch, tmp_path)
    got = find_default_swf()
    assert got == tmp_path / "cache" / "iosched" / DEFAULT_SWF_NAME
    assert _sha(got.read_bytes()) == DEFAULT_SWF_SHA256
    stamp = os.stat(got).st_mtime_ns
    assert find_default_swf() == got and os.stat(got).st_mtime_ns == stamp  # reused, not rewritten
    assert [p.name for p in got.parent.iterdir()] == [DEFAULT_SWF_NAME]  # no temporary file left
    assert len(read_swf(got).jobs) == 28476


def test_a_damaged_cached_copy_is_rewritten(monkeypatch, tmp_path):
    _no_shared(monkeypatch, tmp_path)
    cached = tmp_path / "cache" / "iosched" / DEFAULT_SWF_NAME
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"; truncated\n")
    assert find_default_swf() == cached
    assert _sha(cached.read_bytes()) == DEFAULT_SWF_SHA256


def test_an_unwritable_cache_gives_the_gzipped_trace_itself(monkeypatch, tmp_path):
    _no_shared(monkeypatch, tmp_path)
    (tmp_path / "cache").write_text("a file where the cache folder should be")
    assert find_default_swf() == PACKAGED_SWF
    assert len(read_swf(PACKAGED_SWF).jobs) == 28476


def test_a_damaged_packaged_trace_is_a_one_line_error(tmp_path):
    bad = tmp_path / f"{DEFAULT_SWF_NAME}.gz"
    bad.write_bytes(gzip.compress(b"; not the trace\n"))
    with pytest.raises(InputError, match=r"damaged \(SHA-256") as e:
        unpack_packaged_swf(bad, tmp_path / "cache" / DEFAULT_SWF_NAME)
    assert "\n" not in str(e.value)
    bad.write_bytes(b"\x1f\x8b not gzip")
    with pytest.raises(InputError, match="cannot read the packaged trace"):
        unpack_packaged_swf(bad, tmp_path / "cache" / DEFAULT_SWF_NAME)


def test_nothing_found_names_every_place_looked_at(monkeypatch, tmp_path):
    _no_shared(monkeypatch, tmp_path)
    monkeypatch.setattr(default_swf, "PACKAGED_SWF", tmp_path / "no-package-data.swf.gz")
    with pytest.raises(InputError, match="absent.*no-package-data.swf.gz; pass the SWF path"):
        find_default_swf()


#: generator commands that read the default trace without an SWF argument:
#: (arguments before OUT, arguments after OUT)
_DEFAULT_TRACE_COMMANDS = {
    "swf": (["workload", "swf"], ["--first", "300"]),
    "bb": (["workload", "bb"], ["--first", "300"]),
    "locality": (["workload", "locality", "swf"], ["--first", "300", "--nb-res", "40"]),
    "dad-kth": (["workload", "dad", "kth"], ["--first", "300"]),
}


@pytest.mark.parametrize("kind", sorted(_DEFAULT_TRACE_COMMANDS))
def test_commands_give_the_same_bytes_from_the_shared_or_the_packaged_trace(kind, shared, monkeypatch, tmp_path):
    """The default trace without ../shared (the packaged copy) gives the
    files the shared trace gives, byte for byte."""
    before, after = _DEFAULT_TRACE_COMMANDS[kind]
    swf = shared / "data" / DEFAULT_SWF_NAME
    explicit = tmp_path / "explicit.json"
    swf_option = ["--swf", swf] if kind == "dad-kth" else []
    args = [*before, *([] if swf_option else [swf]), explicit, *after, *swf_option]
    r = CliRunner().invoke(cli, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    _no_shared(monkeypatch, tmp_path)
    packaged = tmp_path / "packaged.json"
    r = CliRunner().invoke(cli, [str(a) for a in [*before, packaged, *after]])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "cache" / "iosched" / DEFAULT_SWF_NAME).is_file()
    assert packaged.read_bytes() == explicit.read_bytes()
    assert len(json.loads(packaged.read_text())["jobs"]) > 0


@pytest.mark.parametrize("name, args", [
    ("dragonfly96.xml", ["dragonfly96"]),
    ("locality_uppmax.xml", ["locality"]),
    ("pfsbw15.xml", ["pfsbw"]),
    ("cluster16_pfs.xml", ["cluster", "--nb-nodes", "16", "--pfs-bw", "1GBps"]),
])
def test_each_shipped_platform_is_what_its_generator_writes(name, args, tmp_path):
    """docs/data.md: outside a checkout, `iosched platform ...` gives the
    shipped file."""
    out = tmp_path / name
    r = CliRunner().invoke(cli, ["platform", args[0], str(out), *args[1:]])
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == (paths.PLATFORMS_DIR / name).read_bytes()


def test_the_demo_falls_back_to_the_generator_without_the_artifact(monkeypatch, tmp_path):
    def absent():
        raise InputError("the artifact's workloads are not at x; pass their folder")

    said = []
    monkeypatch.setattr(artifact, "default_dir", absent)
    assert demo.default_runs(said.append) is demo.GENERATOR_RUNS
    assert len(said) == 1 and "using iosched's generator" in said[0]
    monkeypatch.setattr(artifact, "default_dir", lambda: tmp_path)
    said.clear()
    assert demo.default_runs(said.append) is demo.RUNS and said == []

"""The nix expressions parse (``nix-instantiate --parse``, Debian package
nix-bin), and pin exact revisions (no branch tarballs such as master)."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

NIX = Path(__file__).resolve().parent.parent / "nix"
FILES = sorted(NIX.glob("*.nix"))
INSTANTIATE = shutil.which("nix-instantiate")


def test_nix_files_exist():
    assert NIX / "default.nix" in FILES


@pytest.mark.skipif(INSTANTIATE is None, reason="no nix-instantiate on PATH (apt-get install nix-bin)")
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_parses(path):
    proc = subprocess.run([INSTANTIATE, "--parse", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_pins_are_exact_revisions(path):
    text = "\n".join(line.split("#", 1)[0] for line in path.read_text().splitlines())
    urls = re.findall(r"(?:github\.com/[\w.-]+/[\w.-]+/archive/|github:[\w.-]+/[\w.-]+/)([\w.]+)", text)
    assert urls, "no pinned source"
    for rev in urls:
        rev = rev.removesuffix(".tar.gz")
        assert re.fullmatch(r"[0-9a-f]{40}", rev), f"{path.name}: {rev!r} is not a commit hash"
    if path.name == "default.nix":
        assert len(re.findall(r"sha256 = \"sha256-[A-Za-z0-9+/]{43}=\"", text)) == 2

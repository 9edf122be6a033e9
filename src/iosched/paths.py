"""Where iosched's files are: the repository root, the shared data folder,
scratch folders. The one place these are worked out; no other module holds
an absolute path (``tests/test_layout.py`` checks it).

* :data:`REPO_ROOT` -- the source checkout holding this package
  (``src/iosched/paths.py`` -> two levels above ``src/iosched``): the
  shipped ``platforms/``, ``results/`` and the thin ``schedulers/*.py``
  launcher files; meaningful for a source checkout only.
* the shared data folder -- ``<repo>/../shared/data`` (the traces and the
  papers' artifacts, kept out of the repository), else
  ``<cwd>/../shared/data`` (the current directory taken as the repository):
  :func:`shared_data_candidates`, :func:`shared_data`.
* scratch folders -- :func:`scratch`, under the system's temporary folder
  (:func:`tempfile.gettempdir`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

__all__ = ["REPO_ROOT", "PLATFORMS_DIR", "RESULTS_DIR", "LAUNCHERS_DIR", "shared_data_candidates",
           "shared_data", "scratch"]

#: Source-tree root (the folder holding ``src/iosched``).
REPO_ROOT = Path(__file__).resolve().parents[2]
#: The shipped platform XMLs (``<repo>/platforms``).
PLATFORMS_DIR = REPO_ROOT / "platforms"
#: The committed results (``<repo>/results``).
RESULTS_DIR = REPO_ROOT / "results"
#: The source tree's thin pybatsim launcher files (``<repo>/schedulers``).
LAUNCHERS_DIR = REPO_ROOT / "schedulers"


def shared_data_candidates(name: str = "") -> list[Path]:
    """The places searched for ``name`` in the shared data folder, in order:
    ``<repo>/../shared/data/<name>``, then ``<cwd>/../shared/data/<name>``
    (once if both are the same). Raises nothing.

    :param name: a file or folder name (or relative path) inside the shared
        data folder; ``""`` for the folder itself.
    :returns: a list of absolute Paths.
    """
    candidates = [REPO_ROOT.parent / "shared" / "data" / name]
    cwd_candidate = Path.cwd().resolve().parent / "shared" / "data" / name
    if cwd_candidate not in candidates:
        candidates.append(cwd_candidate)
    return candidates


def shared_data(name: str = "") -> Path:
    """``name`` in the shared data folder: the first of
    :func:`shared_data_candidates` that exists, else the first (for a
    default shown in ``--help``, checked when it is read). Raises nothing."""
    candidates = shared_data_candidates(name)
    for path in candidates:
        if path.exists():
            return path
    return candidates[0]


def scratch(name: str) -> Path:
    """A scratch folder ``name`` under the system's temporary folder
    (:func:`tempfile.gettempdir`; it is not created). Raises nothing."""
    return Path(tempfile.gettempdir()) / name

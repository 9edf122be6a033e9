"""Where iosched's files are: the package's own data, the source checkout,
the shared data folder, the user cache and scratch folders. The one place
these are worked out; no other module holds an absolute path
(``tests/test_layout.py`` checks it), and every default path of a command
comes from here.

* :data:`PACKAGE_DIR` -- the installed ``iosched`` package (a source
  checkout's ``src/iosched`` or a wheel's ``site-packages/iosched``); it
  holds the package data, which travels with any install:

  - :data:`PLATFORMS_DIR` -- the shipped SimGrid platform XMLs
    (``iosched/platforms``; the source tree's ``platforms/`` is a link to
    it);
  - :data:`PACKAGE_DATA_DIR` -- the shipped KTH-SP2 trace, gzipped, and its
    acknowledgement (``iosched/data``);
  - :data:`SCHEDULERS_DIR` -- the scheduler launcher files that ``iosched
    run`` hands to pybatsim (``iosched/schedulers/launchers``).

* :data:`REPO_ROOT` -- the source checkout holding this package (two levels
  above ``src/iosched``); :data:`IN_SOURCE_TREE` says whether there is one
  (a ``pyproject.toml`` beside ``src/iosched``). :data:`RESULTS_DIR` is its
  ``results/`` in a checkout, else ``results`` relative to the working
  directory (:data:`CAMPAIGNS_DIR`: a campaign's default output, always
  relative to the working directory); :data:`LAUNCHERS_DIR` the checkout's
  thin ``schedulers/*.py`` files.
* the shared data folder -- ``<repo>/../shared/data`` (the traces and the
  papers' artifacts, kept out of the repository), else
  ``<cwd>/../shared/data`` (the current directory taken as the repository):
  :func:`shared_data_candidates`, :func:`shared_data`.
* the user cache -- :func:`user_cache`: ``$XDG_CACHE_HOME/iosched``, else
  ``~/.cache/iosched`` (freedesktop.org's XDG Base Directory
  Specification), where the shipped trace is unpacked on first use.
* scratch folders -- :func:`scratch`, under the system's temporary folder
  (:func:`tempfile.gettempdir`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["PACKAGE_DIR", "PLATFORMS_DIR", "PACKAGE_DATA_DIR", "SCHEDULERS_DIR", "REPO_ROOT",
           "IN_SOURCE_TREE", "RESULTS_DIR", "CAMPAIGNS_DIR", "LAUNCHERS_DIR", "shared_data_candidates",
           "shared_data", "user_cache", "scratch"]

#: The ``iosched`` package folder (source checkout or installed wheel).
PACKAGE_DIR = Path(__file__).resolve().parent
#: The shipped platform XMLs (package data, ``iosched/platforms``).
PLATFORMS_DIR = PACKAGE_DIR / "platforms"
#: The shipped data files (package data, ``iosched/data``): the gzipped
#: KTH-SP2 trace and its README (the archive's acknowledgement).
PACKAGE_DATA_DIR = PACKAGE_DIR / "data"
#: The scheduler launcher files (``iosched/schedulers/launchers``), one per
#: family, launchable with ``pybatsim <file>``.
SCHEDULERS_DIR = PACKAGE_DIR / "schedulers" / "launchers"

#: Source-tree root (the folder holding ``src/iosched``); meaningful when
#: :data:`IN_SOURCE_TREE`.
REPO_ROOT = PACKAGE_DIR.parents[1]
#: True when this package runs from a source checkout (``<repo>/src/iosched``
#: with ``<repo>/pyproject.toml``), False when installed from a wheel.
IN_SOURCE_TREE = (REPO_ROOT / "pyproject.toml").is_file() and PACKAGE_DIR == REPO_ROOT / "src" / "iosched"
#: Default folder of the results (demo, benchmarks): ``<repo>/results`` in a
#: source checkout, else ``results`` relative to the working directory.
RESULTS_DIR = REPO_ROOT / "results" if IN_SOURCE_TREE else Path("results")
#: Default parent of a campaign's output folder when neither the campaign
#: file nor the command line names one: ``results/campaigns`` relative to the
#: working directory.
CAMPAIGNS_DIR = Path("results") / "campaigns"
#: The source tree's thin pybatsim launcher files (``<repo>/schedulers``;
#: absent from an installed wheel, which has :data:`SCHEDULERS_DIR`).
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


def user_cache(name: str = "") -> Path:
    """``name`` in iosched's user cache folder: ``$XDG_CACHE_HOME/iosched``
    when that variable holds an absolute path, else ``~/.cache/iosched``
    (XDG Base Directory Specification). Nothing is created. Raises nothing.

    :param name: a file name (or relative path) inside the cache folder;
        ``""`` for the folder itself.
    :returns: an absolute Path.
    """
    base = os.environ.get("XDG_CACHE_HOME", "")
    if base and Path(base).is_absolute():
        root = Path(base)
    else:
        try:
            root = Path.home() / ".cache"
        except (RuntimeError, KeyError):  # no home folder known: the temporary folder
            root = Path(tempfile.gettempdir())
    return root / "iosched" / name


def scratch(name: str) -> Path:
    """A scratch folder ``name`` under the system's temporary folder
    (:func:`tempfile.gettempdir`; it is not created). Raises nothing."""
    return Path(tempfile.gettempdir()) / name

#!/usr/bin/env bash
# Idempotent setup for a Debian 12 machine: SimGrid's Python bindings from
# Debian, a virtualenv made from the system Python with system site packages
# (so that `import simgrid` works), the project, and pybatsim 3.2.1 without
# its pyzmq<23 pin (no wheel of pyzmq 22 exists for Python 3.11).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

need_apt=()
/usr/bin/python3 -c 'import simgrid' >/dev/null 2>&1 || need_apt+=(python3-simgrid)
/usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_apt+=(python3-venv)
# nix-instantiate (tests/test_nix.py parses the nix/ expressions)
command -v nix-instantiate >/dev/null 2>&1 || need_apt+=(nix-bin)
# headless Chromium (tests/test_report_browser.py opens the demo's report)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${need_apt[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv from /usr/bin/python3 (with system site packages)"
    /usr/bin/python3 -m venv --system-site-packages .venv
fi

.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test,campaign,jobqueue,fast,docs]'
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps 'pybatsim==3.2.1'
.venv/bin/python -c 'import simgrid, batsim, zmq, iosched' 2>/dev/null \
    || { echo "setup: the environment is incomplete (simgrid, batsim, zmq or iosched does not import)" >&2; exit 1; }
# the extra "fast" (numba): CI and make test run the compiled evaluator
.venv/bin/python -c 'import numba' 2>/dev/null \
    || { echo "setup: numba (the extra fast) does not import" >&2; exit 1; }
# the extra "jobqueue" (dask-jobqueue): the tests of campaigns as batch jobs
.venv/bin/python -c 'import dask_jobqueue' 2>/dev/null \
    || { echo "setup: dask-jobqueue (the extra jobqueue) does not import" >&2; exit 1; }
# the extra "docs" (MkDocs): tests/test_docs_site.py builds the site
.venv/bin/python -c 'import mkdocs, material, mkdocstrings_handlers.python' 2>/dev/null \
    || { echo "setup: mkdocs, mkdocs-material or mkdocstrings[python] (the extra docs) does not import" >&2; exit 1; }
touch .venv/.iosched-setup-done
echo "setup: done"

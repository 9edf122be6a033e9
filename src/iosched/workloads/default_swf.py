"""The default SWF trace: the KTH-SP2 log of the Parallel Workloads Archive
(cleaned), in the shared data folder next to the repository, and where it
is looked for (:func:`find_default_swf`).
"""

from __future__ import annotations

from iosched.errors import InputError
from iosched.paths import shared_data_candidates

__all__ = ["DEFAULT_SWF_NAME", "default_swf_candidates", "find_default_swf"]

#: File name of the default trace (Parallel Workloads Archive, cleaned log).
DEFAULT_SWF_NAME = "KTH-SP2-1996-2.1-cln.swf"


def default_swf_candidates():
    """Return the places searched for the default SWF, in order (list of Path).

    ``<repo>/../shared/data/<DEFAULT_SWF_NAME>`` where ``<repo>`` is the
    checkout holding this package, then ``<cwd>/../shared/data/<DEFAULT_SWF_NAME>``
    (the current directory taken as the repository), as
    :func:`iosched.paths.shared_data_candidates`.  Raises nothing.
    """
    return shared_data_candidates(DEFAULT_SWF_NAME)


def find_default_swf():
    """The default trace (KTH-SP2), the first of :func:`default_swf_candidates`
    that exists.

    :returns: its ``Path``.
    :raises InputError: none exists (the message names the places looked at).
    """
    candidates = default_swf_candidates()
    for path in candidates:
        if path.is_file():
            return path
    raise InputError(
        f"the default trace {DEFAULT_SWF_NAME} is not at {' nor '.join(map(str, candidates))}; "
        "pass the SWF path"
    )

"""The default SWF trace: the KTH-SP2 log of the Parallel Workloads Archive
(cleaned), and where it is looked for (:func:`find_default_swf`).

Precedence (the first that exists wins; an explicit path given by the user
is taken before any of these by the commands):

1. the shared data folder, ``<repo>/../shared/data/KTH-SP2-1996-2.1-cln.swf``
   then ``<cwd>/../shared/data/...`` (:func:`iosched.paths.shared_data_candidates`;
   a developer's checkout);
2. the copy shipped in the package, ``iosched/data/KTH-SP2-1996-2.1-cln.swf.gz``
   (:data:`PACKAGED_SWF`, ``gzip -9n`` of the same file), unpacked once into
   the user cache (:func:`iosched.paths.user_cache`) as
   ``KTH-SP2-1996-2.1-cln.swf`` and checked against :data:`DEFAULT_SWF_SHA256`.
   The unpacked copy has the same name and bytes as the shared file, so
   everything derived from the trace (workload descriptions, campaign
   checksums) is byte-identical whichever of the two is used. When the cache
   folder cannot be written, the ``.swf.gz`` itself is returned (the SWF
   reader, :func:`iosched.workloads.swf.read_swf`, reads gzip transparently).

Acknowledgement requested by the archive: the log was graciously provided by
Lars Malinowsky (KTH); the archive is maintained by Dror Feitelson (see
``iosched/data/README.md``).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import zlib
from pathlib import Path

from iosched.errors import InputError
from iosched.paths import PACKAGE_DATA_DIR, shared_data_candidates, user_cache

__all__ = ["DEFAULT_SWF_NAME", "DEFAULT_SWF_SHA256", "PACKAGED_SWF", "DEFAULT_SWF_HELP", "default_swf_candidates",
           "find_default_swf", "unpack_packaged_swf"]

#: File name of the default trace (Parallel Workloads Archive, cleaned log).
DEFAULT_SWF_NAME = "KTH-SP2-1996-2.1-cln.swf"
#: SHA-256 (hex) of the trace's uncompressed bytes, as the archive distributes it.
DEFAULT_SWF_SHA256 = "fba36494c4e4257f72182e8b629ebb0bcb054b3b82851ef957445bd627adcc87"
#: The copy shipped as package data (gzip -9n).
PACKAGED_SWF = PACKAGE_DATA_DIR / f"{DEFAULT_SWF_NAME}.gz"
#: How the default trace is named in the commands' help texts.
DEFAULT_SWF_HELP = f"../shared/data/{DEFAULT_SWF_NAME}, else the KTH-SP2 copy shipped with iosched"


def default_swf_candidates():
    """Return the places searched for the default SWF, in order (list of Path).

    ``<repo>/../shared/data/<DEFAULT_SWF_NAME>`` where ``<repo>`` is the
    checkout holding this package, then ``<cwd>/../shared/data/<DEFAULT_SWF_NAME>``
    (the current directory taken as the repository), as
    :func:`iosched.paths.shared_data_candidates`, then the packaged copy
    :data:`PACKAGED_SWF`.  Raises nothing.
    """
    return [*shared_data_candidates(DEFAULT_SWF_NAME), PACKAGED_SWF]


def unpack_packaged_swf(packaged: Path = PACKAGED_SWF, cache: Path | None = None) -> Path:
    """The packaged trace as a plain SWF file in the user cache.

    :param packaged: the gzipped trace (default :data:`PACKAGED_SWF`).
    :param cache: the plain file to use or write (default
        ``user_cache(DEFAULT_SWF_NAME)``).
    :returns: ``cache`` when it holds (or now holds, written atomically:
        a temporary file renamed) the bytes of SHA-256
        :data:`DEFAULT_SWF_SHA256`; ``packaged`` itself when the cache
        cannot be written.
    :raises InputError: ``packaged`` cannot be read or decompressed, or its
        content does not have the expected checksum (one line naming it).
    """
    cache = user_cache(DEFAULT_SWF_NAME) if cache is None else Path(cache)
    try:
        if hashlib.sha256(cache.read_bytes()).hexdigest() == DEFAULT_SWF_SHA256:
            return cache
    except OSError:
        pass
    try:
        raw = gzip.decompress(packaged.read_bytes())
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"{packaged}: cannot read the packaged trace: {exc}") from None
    if hashlib.sha256(raw).hexdigest() != DEFAULT_SWF_SHA256:
        raise InputError(f"{packaged}: the packaged trace is damaged (SHA-256 is not "
                         f"{DEFAULT_SWF_SHA256}); reinstall iosched or pass the SWF path")
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{DEFAULT_SWF_NAME}.", dir=cache.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(raw)
            os.replace(tmp, cache)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return packaged
    return cache


def find_default_swf():
    """The default trace (KTH-SP2): the first of :func:`default_swf_candidates`
    that exists; the packaged copy is returned unpacked
    (:func:`unpack_packaged_swf`).

    :returns: its ``Path``.
    :raises InputError: none exists (the message names the places looked
        at), or the packaged copy is unreadable or damaged.
    """
    candidates = default_swf_candidates()
    for path in candidates:
        if path.is_file():
            return unpack_packaged_swf(path) if path == PACKAGED_SWF else path
    raise InputError(
        f"the default trace {DEFAULT_SWF_NAME} is not at {' nor '.join(map(str, candidates))}; "
        "pass the SWF path"
    )

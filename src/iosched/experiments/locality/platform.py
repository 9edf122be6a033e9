"""Command line of the locality platforms: n nodes x m cores and a file-system host.

Each core is a Batsim compute host ``n<i>_c<k>`` with the properties
``node`` (``n<i>``, read by :class:`iosched.sched.machine.Machine` to group
cores into nodes) and ``memory`` (bytes). Node ``i`` is a SimGrid
``<cluster>`` whose cores each have a private link of ``bandwidth`` bytes/s
and 0 latency to the node's router; a storage host ``pfs``
(``role=storage``) holds the input files. Two I/O models:

* ``paper``: the node routers reach ``pfs`` through a FATPIPE link of
  unlimited bandwidth (1 PB/s), so a load (one core reading ``size`` bytes
  from ``pfs``) takes exactly ``size / bandwidth`` whatever else loads, as
  in the paper (Section 3) and its artifact;
* ``shared-pfs``: the same, but every load also crosses one shared link of
  ``pfs_bandwidth`` bytes/s, so concurrent loads contend (SimGrid's max-min
  sharing).

The master host (Batsim's) and the backbone have no latency: Batsim's
messages travel through the platform (``iosched.engine.server``), so with
the usual 0.6 ms master-to-master route the 9,000 decisions of the Uppmax
day's first pass would take 1.8 s of simulated time and shift the loads
against the artifact's integer clock, where a decision takes effect in the
second it is made.

:func:`iosched.experiments.platforms.locality_xml` returns the XML text
(the generators are all in :mod:`iosched.experiments.platforms`); this
module's command line, ``python -m iosched.experiments.locality.platform
OUT.xml [--nodes N --cores M ...]``, writes it.
"""

from __future__ import annotations

import sys

from iosched.clicommon import OneLineArgumentParser
from iosched.errors import InputError
from iosched.experiments.platforms import LOCALITY_IO_MODELS, locality_xml

__all__ = ["main"]


def main(argv=None) -> int:
    """``python -m iosched.experiments.locality.platform OUT.xml [options]``; exit status 2 on bad input."""
    ap = OneLineArgumentParser(prog="python -m iosched.experiments.locality.platform")
    ap.add_argument("out")
    ap.add_argument("--nodes", type=int, default=486)
    ap.add_argument("--cores", type=int, default=20)
    ap.add_argument("--bandwidth", type=float, default=0.1e9, help="bytes/s per core link")
    ap.add_argument("--memory", type=float, default=128e9, help="bytes per node")
    ap.add_argument("--io-model", default="paper", choices=LOCALITY_IO_MODELS)
    ap.add_argument("--pfs-bandwidth", type=float, default=10e9, help="bytes/s (shared-pfs)")
    a = ap.parse_args(argv)
    try:
        text = locality_xml(a.nodes, a.cores, a.bandwidth, a.memory, a.io_model, a.pfs_bandwidth)
        with open(a.out, "w") as f:
            f.write(text)
    except (InputError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

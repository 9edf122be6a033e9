"""What reaches the engine's server: timers and Batsim's internal messages
(Batsim's ``src/ipp.hpp``, the inter-process protocol of its actors).

The server (:mod:`iosched.engine.server`) keeps two time-ordered heaps:

* timers, ``(t, seq, kind, data)``: things that happen on the platform at
  ``t`` (in Batsim, an actor wakes up: the static submitter, a job's
  executor, its walltime watcher, the CALL_ME_LATER waiter);
* the inbox, ``(t, seq, latency, kind, data)``: a message posted at ``t`` to
  Batsim's server, received ``latency`` s after the server is free, in
  posting order.
"""

from __future__ import annotations

__all__ = ["T_SUBMIT", "T_END", "T_WALLTIME", "T_CALL",
           "P_SUBMIT", "P_BYE", "P_COMPLETED", "P_DECISION", "P_READY", "P_CALL", "P_HELLO",
           "P_KILLED"]

# timer kinds (things that happen on the platform)
T_SUBMIT, T_END, T_WALLTIME, T_CALL = range(4)
# kinds of messages received by Batsim's server
P_SUBMIT, P_BYE, P_COMPLETED, P_DECISION, P_READY, P_CALL, P_HELLO, P_KILLED = range(8)

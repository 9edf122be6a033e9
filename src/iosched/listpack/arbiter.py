"""The scheduler-side I/O arbiter (Jeannot, Pallez & Vidal, IJHPCA 2023,
section "Machine Model": one application at a time does I/O on the I/O node,
no preemption; FIFO as in Aupy et al. 2018).

Each I/O phase is a dynamic Batsim job the scheduler launches; the arbiter
decides *when*:

* ``exclusive``: at most one I/O phase at a time; a phase whose compute
  phase ended while another one transfers waits in FIFO order (its
  application waits, holding its nodes) and starts when the I/O node is
  released;
* ``shared``: every phase starts at once; SimGrid shares the I/O node's
  link among concurrent transfers (max-min fairness) -- the situation
  without an I/O middleware.

The arbiter is pure bookkeeping; :meth:`request` and :meth:`release` return
the phases to launch now.
"""

from __future__ import annotations

from collections import deque

__all__ = ["IO_MODELS", "IOArbiter"]

IO_MODELS = ("exclusive", "shared")


class IOArbiter:
    """FIFO I/O arbiter.

    :param model: ``"exclusive"`` or ``"shared"``.
    :raises ValueError: unknown model.

    Attributes: ``active`` (set of phase keys transferring), ``waiting``
    (deque of keys), ``max_waiting`` (largest queue length seen).
    """

    def __init__(self, model: str = "exclusive"):
        if model not in IO_MODELS:
            raise ValueError(f"unknown I/O model {model!r}")
        self.model = model
        self.active: set = set()
        self.waiting: deque = deque()
        self.max_waiting = 0

    def request(self, key) -> list:
        """An application asks to do I/O phase ``key`` (hashable); returns
        the keys to launch now (``[key]`` or ``[]``)."""
        if self.model == "shared" or not self.active:
            self.active.add(key)
            return [key]
        self.waiting.append(key)
        self.max_waiting = max(self.max_waiting, len(self.waiting))
        return []

    def release(self, key) -> list:
        """Phase ``key`` ended; returns the keys to launch now (the next
        waiting one in the exclusive model).

        :raises KeyError: ``key`` was not active.
        """
        self.active.remove(key)
        if self.model == "exclusive" and self.waiting and not self.active:
            nxt = self.waiting.popleft()
            self.active.add(nxt)
            return [nxt]
        return []

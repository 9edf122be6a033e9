"""pybatsim launcher file: the scheduler is
:class:`iosched.schedulers.pfsbw.Pfsbw` (see that module for its options)."""

from iosched.schedulers.pfsbw import Pfsbw

__all__ = ["Pfsbw"]

"""pybatsim launcher file: the scheduler is
:class:`iosched.schedulers.burstbuffer.Burstbuffer` (see that module for its options)."""

from iosched.schedulers.burstbuffer import Burstbuffer

__all__ = ["Burstbuffer"]

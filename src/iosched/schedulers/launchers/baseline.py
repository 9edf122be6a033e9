"""pybatsim launcher file: the scheduler is
:class:`iosched.schedulers.baseline.Baseline` (see that module for its options)."""

from iosched.schedulers.baseline import Baseline

__all__ = ["Baseline"]

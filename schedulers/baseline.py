"""Thin launcher file for ``pybatsim schedulers/baseline.py``: the scheduler is
:class:`iosched.schedulers.baseline.Baseline` (see that module for its options)."""

from iosched.schedulers.baseline import Baseline

__all__ = ["Baseline"]

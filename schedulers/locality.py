"""Thin launcher file for ``pybatsim schedulers/locality.py``: the scheduler is
:class:`iosched.schedulers.locality.Locality` (see that module for its options)."""

from iosched.schedulers.locality import Locality

__all__ = ["Locality"]

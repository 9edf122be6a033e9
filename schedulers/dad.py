"""Thin launcher file for ``pybatsim schedulers/dad.py``: the scheduler is
:class:`iosched.schedulers.dad.Dad` (see that module for its options)."""

from iosched.schedulers.dad import Dad

__all__ = ["Dad"]

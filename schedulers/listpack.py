"""Thin launcher file for ``pybatsim schedulers/listpack.py``: the scheduler is
:class:`iosched.schedulers.listpack.Listpack` (see that module for its options)."""

from iosched.schedulers.listpack import Listpack

__all__ = ["Listpack"]

"""pybatsim launcher files of the shipped schedulers: ``pybatsim
<this folder>/baseline.py`` loads :class:`iosched.schedulers.baseline.Baseline`.

They sit one folder below the scheduler modules on purpose: pybatsim's
launcher puts a scheduler file's folder *and its parent* on ``sys.path``; from
here that adds only ``iosched/schedulers`` and this folder, whose names
shadow nothing (``iosched/`` itself holds ``batsim`` and ``schedulers``,
which would shadow pybatsim's own packages).
"""

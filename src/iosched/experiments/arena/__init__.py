"""The I/O arena (issue 27): the reference machine every family's schedulers
run on (:mod:`~iosched.experiments.arena.machine`) and the I/O regimes that
annotate a real trace with the I/O job model
(:mod:`~iosched.experiments.arena.regimes`); ``docs/arena.md``."""

"""Experiments of the data-aware dispatch family (Li & Tatebe, IEEE Systems
Journal 2017): the workload generators (:mod:`~iosched.experiments.dad.workload`)
and the reproduction (:mod:`~iosched.experiments.dad.reproduction`);
``python -m iosched.experiments.dad`` (platform, workload, check, reproduce)."""

"""Experiments of the data-aware dispatch family (Li & Tatebe, IEEE Systems
Journal 2017): the workload generators (:mod:`~iosched.experiments.dad.workload`)
and the reproduction (:mod:`~iosched.experiments.dad.reproduction`);
``iosched workload dad`` (workloads, check) and ``iosched repro dad``; the
platform is :func:`iosched.experiments.platforms.nusa_xml` (``iosched platform dad``)."""

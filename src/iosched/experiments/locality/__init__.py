"""Experiments of the data-locality family (Gonthier et al., RR-9497): the
Uppmax workload reader and converter (:mod:`~iosched.experiments.locality.workload`),
the artifact's event loop, a reference for checks
(:mod:`~iosched.experiments.locality.replay`), the reproduction
(:mod:`~iosched.experiments.locality.reproduction`), the engine runs
(:mod:`~iosched.experiments.locality.engine_runs`) and the figures
(:mod:`~iosched.experiments.locality.figures`)."""

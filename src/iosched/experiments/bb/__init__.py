"""Experiments of the burst-buffer family (Kopanski & Rzadca, Euro-Par 2021):
the KTH-SP2 workload generator (:mod:`~iosched.experiments.bb.workload`),
the artifact's workloads (:mod:`~iosched.experiments.bb.artifact`) and the
reproduction's tables and figures (:mod:`~iosched.experiments.bb.reproduction`)."""

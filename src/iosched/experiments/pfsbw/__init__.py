"""Experiments of the PFS-bandwidth-aware family (Goponenko et al., PMBS
2024): the workload generator and pretraining (:mod:`~iosched.experiments.pfsbw.workload`)
and the reproduction (:mod:`~iosched.experiments.pfsbw.reproduction`)."""

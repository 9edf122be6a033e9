"""Experiments of the list-vs-pack family (Jeannot, Pallez & Vidal, IJHPCA
2023): the workload generator (:mod:`~iosched.experiments.listpack.workload`,
``iosched workload listpack``) and the reproduction's tables and
figures (:mod:`~iosched.experiments.listpack.reproduction`, ``iosched repro listpack``)."""

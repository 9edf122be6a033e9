"""Data-locality batch scheduling (Gonthier, Marchal, Thibault, Larsson,
Nettelblad, "Locality-aware batch scheduling of I/O intensive workloads",
Inria RR-9497, 2023).

* :mod:`iosched.locality.cluster` -- nodes of cores keeping input files in
  memory, the artifact's validity rule, load and eviction times, scores;
* :mod:`iosched.locality.planner` -- the ten policies (fcfs, eft, lea, leo,
  lem and their -bf variants) as planning passes;
* :mod:`iosched.locality.policy` -- the policies' passes as a policy of the
  shared core (:class:`~iosched.locality.policy.LocalityPolicy`), its placer
  (one node per job), queue order and integer clock;
* :mod:`iosched.locality.metrics` -- stretch, reuses, load times, figures.

Its workload and platform generators, the artifact's event loop (the
reference for the reproduction) and its reproduction are in the experiment
wing, :mod:`iosched.experiments.locality`.

The Batsim launcher (options, running the started jobs) is
:mod:`iosched.schedulers.locality`. See ``docs/locality.md``.
"""

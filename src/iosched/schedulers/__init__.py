"""The launchable schedulers, one module per family, each a pybatsim
scheduler (a :class:`~iosched.sched.adapter.PybatsimScheduler` subclass named
after its file, as pybatsim's launcher expects):

* :mod:`iosched.schedulers.baseline` -- ``Baseline``: FCFS, EASY (FCFS or
  SJF order), conservative backfilling, filler;
* :mod:`iosched.schedulers.burstbuffer` -- ``Burstbuffer``: the burst-buffer
  policies of Kopanski & Rzadca (Euro-Par 2021);
* :mod:`iosched.schedulers.listpack` -- ``Listpack``: I/O-aware list and pack
  scheduling of Jeannot, Pallez & Vidal (IJHPCA 2023);
* :mod:`iosched.schedulers.dad` -- ``Dad``: Torque FIFO, data-aware dispatch
  and delay scheduling of Li & Tatebe (IEEE Systems Journal 2017).

:mod:`iosched.schedulers.registry` maps scheduler names to these files and
their options. Launch one by name with ``iosched run -s easy`` (:mod:`iosched.schedulers.registry`),
or with pybatsim's launcher on its file in :mod:`iosched.schedulers.launchers`
(or the source tree's thin ``schedulers/baseline.py``).
"""

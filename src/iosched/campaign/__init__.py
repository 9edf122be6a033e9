"""Experiment campaigns: the cross product of platforms x workloads x schedulers x seeds.

A campaign is a YAML file (read with ``yaml.safe_load``, validated with
jsonschema against :data:`~iosched.campaign.schema.CAMPAIGN_SCHEMA`; the format is documented in
``docs/campaigns.md``)::

    name: small
    output: ../results/campaigns/small      # relative to the YAML file
    platforms:
      - {cluster: {nb_nodes: 8}}             # or a path, or {file: PATH}
    workloads:
      - {synthetic: {nb_jobs: 20}}           # seeded by the campaign seed
      - {swf: default, first: 1000, parts: {weeks: 1, count: 3}}
    schedulers: [easy, {name: fcfs, options: {}}]
    seeds: [1, 2]
    baseline: fcfs
    timeout: 600                             # s per run
    jobqueue: {system: slurm, jobs: 4}       # optional: the workers as batch jobs

Life of a campaign (:func:`iosched.campaign.execute.run_campaign`):

1. :func:`~iosched.campaign.schema.load_campaign` validates the file;
   :func:`~iosched.campaign.inputs.prepare_runs` writes the
   generated inputs under ``OUTPUT/inputs/`` (platform XMLs, workload JSONs,
   deterministic, written atomically) and expands the runs. A run's identity
   is a stable hash of its parameters (input contents, scheduler and options,
   seed, engine); its folder is ``OUTPUT/runs/<slug>-<hash>``.
2. ``OUTPUT/campaign.json`` (the manifest: campaign, runs and their
   parameters) is written; it is what :mod:`iosched.analysis` and
   ``iosched report`` read.
3. Runs whose folder has ``done.json`` are skipped; runs with ``failed.json``
   are skipped unless ``retry_failed``; any other folder (a run killed
   mid-way) is removed and the run executed again.
4. The runs execute on Dask (:func:`~iosched.campaign.execute.execute_run` per run): a local cluster
   bound to 127.0.0.1 whose workers are threads of this process (each run's
   work happens in its own scheduler and engine processes), an existing
   distributed scheduler (``cluster=ADDRESS``), or workers started as batch
   jobs of Slurm or PBS (the campaign's ``jobqueue`` settings,
   :mod:`~iosched.campaign.jobqueue`); off this machine, the campaign folder
   and its inputs must be on a file system shared with the workers, at the
   same path (``docs/campaigns.md``, "Running on a cluster").
5. A run folder holds ``run.json`` (parameters, inputs with sha256, seed,
   versions), ``command.json`` and ``robin.yaml`` (from
   :func:`iosched.run.simulation.run_simulation`: the run record with the
   exact command lines, :mod:`iosched.record`; the robin file
   replays the run with the embedded engine), ``robin-batsim.yaml`` (the same
   run with the real ``batsim`` command, outputs under ``replay/``), the
   engine's ``out_*.csv``, ``metrics.json``, and last ``done.json`` (written
   atomically) or ``failed.json`` (the one-line reason).

Interruption: SIGINT / SIGTERM on the campaign kills the scheduler and
engine processes of the running runs (they are children of this process),
leaves those runs without a marker (they run again on the next invocation),
closes the Dask cluster and exits with 128 + signal number.

Refreshing the metrics (:mod:`iosched.campaign.refresh`, ``iosched campaign FILE
--refresh-metrics``): the metrics of every finished run are recomputed from
the run's own ``out_*.csv`` with the current :mod:`iosched.analysis` code,
through the same function as a fresh run (:func:`~iosched.campaign.rundir.run_metrics`, same
nb_resources and tau), and ``metrics.json`` and ``done.json`` are rewritten
atomically; nothing is simulated, no Dask cluster is started.

Modules: :mod:`~iosched.campaign.schema` (the file), :mod:`~iosched.campaign.generators`
(synthetic workloads, parts), :mod:`~iosched.campaign.inputs` (inputs, run
specs, manifest), :mod:`~iosched.campaign.rundir` (a run folder's markers and
metrics), :mod:`~iosched.campaign.execute` (Dask execution),
:mod:`~iosched.campaign.jobqueue` (workers as batch jobs),
:mod:`~iosched.campaign.refresh`, :mod:`~iosched.campaign.progress`,
:mod:`~iosched.campaign.files` (atomic writes, hashes) and
:mod:`~iosched.campaign.cli` (``iosched campaign``).
"""

"""Analysis of Batsim outputs: metrics, tables, figures and reports.

* :mod:`iosched.analysis.jobs` -- find and read ``<prefix>_jobs.csv``,
  parse it, merge each burst-buffer run ``bb!J`` into its workload job
  ``w0!J``;
* :mod:`iosched.analysis.resources` -- the number of compute resources a
  run's utilization is computed over, and its source;
* :mod:`iosched.analysis.metrics` -- per-job and run metrics (pure
  functions of a jobs table);
* :mod:`iosched.analysis.metrics_file` -- a run folder's ``metrics.json``;
* :mod:`iosched.analysis.format` -- rounding, the plain-text metrics table,
  Markdown tables;
* :mod:`iosched.analysis.campaign` -- the tidy runs table of a campaign,
  ratios to a baseline, the per-job table;
* :mod:`iosched.analysis.plots` -- figures of runs and campaigns (PNG);
* :mod:`iosched.analysis.report` -- Markdown and HTML campaign reports;
* :mod:`iosched.analysis.bb_reproduction` -- the burst-buffer paper's
  reproduction (``iosched repro bb``);
* :mod:`iosched.analysis.cli` -- ``iosched metrics`` and ``iosched report``.
"""

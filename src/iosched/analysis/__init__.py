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
* :mod:`iosched.analysis.leaderboard` -- a campaign's leaderboard: per
  regime, machine and scheduler, 95 % t intervals over seeds and paired
  differences to a baseline;
* :mod:`iosched.analysis.cli` -- ``iosched metrics``, ``iosched report``
  and ``iosched leaderboard``.

The papers' reproductions are in the experiment wing
(:mod:`iosched.experiments`, e.g. :mod:`iosched.experiments.bb.reproduction`).
"""

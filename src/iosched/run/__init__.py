"""Running simulations: one run (engine + scheduler), process supervision,
robin files, and the record each run leaves in its output folder."""

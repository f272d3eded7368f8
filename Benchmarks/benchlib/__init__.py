"""The benchmark driver's parts (Benchmarks/bench.py is the entry point; docs/benchmarks.md).

  common   sizes, constants, percentiles
  context  Bench: the run's settings, database connection, results, seeding and queue helpers
  worker   worker processes (config overlay, start/stop) and their memory (/proc/PID/status)
  floor    pgbench: our per-step SQL (pgbench/ours.sql static, ours_functions.sql) and the upstream-shaped
           SQL, with checks
  drain    worker drain, PgQueuer drain, and the interleaved throughput phase
  latency  open-loop Poisson sends, Hybrid / EventDrivenOnly / PollingOnly
  e2e      tasker-dev orchestrate + run, 4-step linear task
  report   machine, ratios, targets, table, plot
"""

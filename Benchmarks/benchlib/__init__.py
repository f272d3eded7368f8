"""The benchmark driver's parts (Benchmarks/bench.py is the entry point; docs/benchmarks.md).

  common   sizes, constants, percentiles
  context  Bench: the run's settings, database connection, results, seeding and queue helpers
  worker   worker processes (config overlay, start/stop) and their memory (/proc/PID/status)
  floor    pgbench: our per-step SQL (pgbench/ours.template.sql rendered: ours.sql static, ours_functions.sql) and the upstream-shaped
           SQL, with checks
  drain    worker drain, PgQueuer drain, and the interleaved throughput phase
  latency  open-loop Poisson sends, Hybrid / EventDrivenOnly / PollingOnly, and PgQueuer
           (pgqueuer_consumer: its consumer process) with the same arrival times
  commit_floor  durable commit round trip p50/p99 and pg_test_fsync: the latency floor
  e2e      tasker-dev orchestrate + run, 4-step linear task
  ffi      Swift no-op, Python no-op on our FFI channel, Python no-op on upstream's worker
  network  the same through delay_proxy (0.5 and 2 ms round trips)
  levers   A/B drains with one setting switched; `alternate`, the one A/B helper
  baseline the landed build against the current one (alternated drains, e2e)
  callgrind  the worker's instructions per no-op step (valgrind)
  fleet    N worker processes on one PostgreSQL, directly and through PgBouncer, on PGMQ and RabbitMQ
           (issue #29: drain, sessions, idle load, recovery after SIGKILL, fairness)
  report   machine, ratios, issue #16's targets, table (side by side at c = 16), plot
"""

#!/usr/bin/env python3
"""The benchmark driver behind scripts/bench (issues #6, #16). Run it through scripts/bench, which starts
the private PostgreSQL, migrates it and builds the release binary; see docs/benchmarks.md.
The phases live in benchlib/ (one module each).

Phases (all against the same server and database, in one run):
  floor     pgbench: our per-step SQL (pgbench/ours.template.sql rendered with the worker's statement texts:
            ours.sql, static statements, -M prepared and -M extended; ours_functions.sql, PGMQ's functions, -M prepared) and the
            upstream-shaped SQL (pgbench/upstream.sql), c = 1, 4, 16, durable and synchronous_commit=off;
            every run is checked (each step claimed, completed, its result message sent)
  drain     tasker-worker run, max_concurrent_handlers = c, N no-op steps enqueued as orchestration does
  pgqueuer  PgQueuer draining N no-op jobs, batch_size = c
  commit    the latency floor: durable commit round trip p50/p99 (direct connection) and pg_test_fsync
  latency   open-loop pgmq_send_with_notify, Poisson arrivals, Hybrid / EventDrivenOnly / PollingOnly,
            and PgQueuer (its own consumer process) with the same arrival times
  memory    worker RSS (anon/file split, threads) idle and at peak during the largest drain
  e2e       tasker-dev orchestrate + run, 4-step linear task, request → task `complete`
  ffi       no-op drain: Swift handler, Python handler on our FFI channel (bindings/python), Python
            handler on upstream's worker (PyPI tasker-py 0.1.8), same c, same run
  network   the same through a TCP proxy delaying each direction 0.25 ms and 1 ms (delay_proxy):
            round trip, our SQL floor, the upstream-shaped floor, our worker, upstream's worker
  levers    A/B drains (c = 16, durable) with one worker setting switched, alternated: server CPU
            per step and steps/s with and without each lever (benchlib/levers.py)
  baseline  the landed build (--baseline-worker-bin) against the current one, A/B alternated drains
            (c = 16, durable); with --baseline-dev-bin also the 4-step end-to-end p50
  callgrind the worker's instructions per no-op step under valgrind callgrind (start-up excluded,
            idle subtracted)
  rabbitmq  our worker on RabbitMQ vs on PGMQ, alternated: drain (c = 16, durable) and handler start
            latency (the latency phase's arrivals), server and broker (beam.smp) CPU per step
            (benchlib/rabbitmq.py; the broker from scripts/bench: --rabbitmq-url, --rabbitmq-pid-file)
  fleet     (on request) N = 1, 4, 16, 64 worker processes (quick: 1, 4, 16; small pools) on one PostgreSQL,
            directly and through PgBouncer (transaction mode), on PGMQ and on RabbitMQ: drain, server CPU per
            step, server sessions, the idle fleet's transactions/s and server CPU, recovery after SIGKILL of a
            quarter of the fleet, steps per worker (benchlib/fleet.py; TASKER_BENCH_FLEET_N/_ROUTES/_TRANSPORTS)
  telemetry (on request) the drain with span export off and on (every span, OTLP/HTTP to a local
            collector), alternating rounds: steps/s and worker CPU per step, on ÷ off (benchlib/telemetry.py)
"""
import argparse
import json
import os
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ in the repository
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchlib import drain, ffi, report  # noqa: E402
from benchlib.baseline import baseline  # noqa: E402
from benchlib.callgrind import callgrind  # noqa: E402
from benchlib.commit_floor import commit_floor  # noqa: E402
from benchlib.common import LATENCY_C, LATENCY_SEED, POLL_MS, log  # noqa: E402
from benchlib.context import Bench  # noqa: E402
from benchlib.e2e import e2e  # noqa: E402
from benchlib.fleet import fleet, lines as fleet_lines  # noqa: E402
from benchlib.latency import latency  # noqa: E402
from benchlib.levers import levers  # noqa: E402
from benchlib.network import network  # noqa: E402
from benchlib.rabbitmq import rabbitmq  # noqa: E402
from benchlib.telemetry import lines as telemetry_lines, telemetry  # noqa: E402

# The default: every phase a target needs (levers and fleet only on request).
PHASES = "floor,drain,pgqueuer,commit,latency,e2e,ffi,network,baseline,callgrind,rabbitmq"
ON_REQUEST = ("levers", "fleet", "telemetry")


def run(b):
    b.load_start = list(os.getloadavg())
    t0 = time.time()
    b.setup()
    phases = b.a.phases.split(",")
    unknown = set(phases) - set(PHASES.split(",")) - set(ON_REQUEST)
    if unknown:
        raise SystemExit(f"unknown phase(s) {', '.join(sorted(unknown))}; phases: {PHASES},{','.join(ON_REQUEST)}")
    if "e2e" in phases and not b.a.dev_bin:
        raise SystemExit("the e2e phase needs --dev-bin (tasker-dev: orchestrate, submit, the example handlers)")
    p0 = time.time()
    if {"floor", "drain", "pgqueuer"} & set(phases):
        drain.throughput(b, phases)
        b.results.setdefault("phase_seconds", {})["throughput"] = round(time.time() - p0, 1)
        log(f"throughput: {time.time() - p0:.1f} s")
    if "network" in phases and not b.a.delay_proxy:
        raise SystemExit("the network phase needs --delay-proxy (Benchmarks/delayproxy, built by scripts/bench)")
    for name, phase in (("commit", commit_floor), ("latency", latency), ("e2e", e2e), ("ffi", ffi.ffi), ("network", network),
                        ("baseline", baseline), ("callgrind", callgrind), ("rabbitmq", rabbitmq), ("levers", levers),
                        ("fleet", fleet), ("telemetry", telemetry)):
        if name in phases:
            p0 = time.time()
            phase(b)
            b.results.setdefault("phase_seconds", {})[name] = round(time.time() - p0, 1)
            log(f"{name}: {time.time() - p0:.1f} s")
    R = b.results
    R["machine"] = report.machine(b)
    R["settings"] = {"latency_and_e2e_max_concurrent_handlers": LATENCY_C, "polling_interval_ms": POLL_MS,
                     "latency_arrivals": f"poisson, seed {LATENCY_SEED}", "server": b.a.server_settings,
                     "worker_bin": b.a.worker_bin, "dev_bin": b.a.dev_bin, "baseline_worker_bin": b.a.baseline_worker_bin,
                     "baseline_dev_bin": b.a.baseline_dev_bin, "config": b.cfg}
    R["phases"] = phases
    R["ratios"] = report.ratios(R)
    R["targets"] = report.targets(R)
    R["elapsed_s"] = round(time.time() - t0, 1)
    with open(b.a.out, "w") as f:
        json.dump(R, f, indent=2, default=str)
    if "latency" in R:
        report.plot(R, b.cfg["rates"], b.a.plot)
    print(report.table(R) + "\n".join([""] + fleet_lines(R) if "fleet" in R else [])
          + "\n".join(telemetry_lines(R)))
    log(f"wrote {b.a.out}" + (f" and {b.a.plot}" if "latency" in R else "")
        + f" in {R['elapsed_s']} s (logs: {b.work})")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db-url", required=True)
    p.add_argument("--worker-bin", required=True, help="the production tasker-worker (drain, latency)")
    p.add_argument("--dev-bin", help="tasker-dev (e2e: orchestrate, submit, run with the example handlers)")
    p.add_argument("--pgbench", required=True)
    p.add_argument("--repo", required=True)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--phases", default=PHASES)
    p.add_argument("--baseline-worker-bin", help="the landed build's tasker-worker (baseline phase)")
    p.add_argument("--baseline-dev-bin", help="the landed build's tasker-dev (baseline phase: end to end)")
    p.add_argument("--delay-proxy", help="delay_proxy binary (the network phase)")
    p.add_argument("--rabbitmq-url", help="amqp:// URL of the broker (the rabbitmq phase)")
    p.add_argument("--rabbitmq-pid-file", help="the broker's pid file: its beam.smp pid (the rabbitmq phase)")
    p.add_argument("--out", default="bench-results.json")
    p.add_argument("--plot", default="bench-latency.png")
    p.add_argument("--server-settings", default="")
    run(Bench(p.parse_args()))


if __name__ == "__main__":
    main()

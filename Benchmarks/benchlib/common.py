"""Sizes, constants and small helpers shared by the phases."""
import pathlib
import socket
import sys

# scripts/lib/python (upstream_worker: the upstream worker's configuration, shared with the binding tests).
REPO_SCRIPTS_PYTHON = str(pathlib.Path(__file__).resolve().parents[2] / "scripts" / "lib" / "python")
if REPO_SCRIPTS_PYTHON not in sys.path:
    sys.path.insert(0, REPO_SCRIPTS_PYTHON)

QUEUE = "worker_bench_queue"
RESULTS_QUEUE = "orchestration_step_results"

# floor_steps / drain_n per concurrency c; async_c: the c measured with synchronous_commit=off too;
# rabbitmq_rounds: alternated drains per transport in the rabbitmq phase (drain_n[16] steps each).
QUICK = dict(floor_steps={1: 100, 4: 200, 16: 400}, drain_n={1: 200, 4: 400, 16: 1000}, async_c=[16],
             rates=[50, 200], rate_seconds=2.0, e2e_tasks=20, e2e_rate=10, e2e_cli=3,
             ffi_c=[16], ffi_upstream_n=300, commit_round_trips=500, callgrind_steps=100, callgrind_idle_s=5,
             rabbitmq_rounds=1)
FULL = dict(floor_steps={1: 1000, 4: 3000, 16: 8000}, drain_n={1: 2000, 4: 5000, 16: 10000}, async_c=[1, 4, 16],
            rates=[50, 200, 1000], rate_seconds=10.0, e2e_tasks=200, e2e_rate=10, e2e_cli=10,
            ffi_c=[4, 16], ffi_upstream_n=2000, commit_round_trips=2000, callgrind_steps=300, callgrind_idle_s=10,
            rabbitmq_rounds=3)
LATENCY_C = 16          # max_concurrent_handlers of the latency and end-to-end workers
POLL_MS = 100           # fallback_poller.polling_interval_ms of every bench worker
MODES = ["Hybrid", "EventDrivenOnly", "PollingOnly"]
LATENCY_SEED = 6        # seed of the Poisson arrivals (the same arrival times in every mode)


def log(msg):
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def pct(values, p):
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def summary(values):
    return {"n": len(values), "p50": pct(values, 50), "p95": pct(values, 95), "p99": pct(values, 99),
            "max": max(values) if values else None}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

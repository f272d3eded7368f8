"""Phase `baseline` (issue #16): the landed build against the current one in the same run. Drains
at c = 16 durable (N = drain_n[16]), the baseline binary (TASKER_BENCH_BASELINE_WORKER_BIN) and the
current one alternated over `levers.ROUNDS` rounds by `levers.alternate` (the one A/B
implementation): medians of steps/s, server CPU per step and worker CPU per step. Then the latency
of each (Hybrid, LATENCY_C, LATENCY_RATE/s Poisson arrivals, benchlib/latency.py's `measure`),
alternated over LATENCY_ROUNDS rounds: medians of the handler start p50 and p99. With a baseline
tasker-dev (TASKER_BENCH_BASELINE_DEV_BIN), also the end-to-end 4-step task (benchlib/e2e.py),
alternated over E2E_ROUNDS rounds: median of the p50s.

Both builds get the same overlay (worker.worker_config, no lever keys); before anything runs, the
baseline binary's `config check` must accept it without an "unknown key" warning (an older build
ignores keys it does not know, which would quietly make the two sides differ)."""
import os
import subprocess

from . import worker
from .common import log
from . import latency
from .common import LATENCY_C
from .e2e import measure as e2e_measure
from .levers import C, DRAIN_KEYS, alternate, drain_run

E2E_ROUNDS = 4
LATENCY_RATE = 200
# A latency run is short (rate_seconds of arrivals) and its p50 moves by a few tenths of a ms from run
# to run, so it alternates over more rounds than the drain.
LATENCY_ROUNDS = 5
LATENCY_KEYS = ("start_p50_ms", "start_p99_ms")
E2E_KEYS = ("submit_to_complete_p50_ms", "submit_to_complete_p99_ms", "worker_share_p50_ms")


def check_config(b, binary):
    """Fails the run unless `binary config check` accepts the bench overlay with no unknown key."""
    config = worker.worker_config(b, "Hybrid", C)
    p = subprocess.run([binary, "config", "check"], capture_output=True, text=True,
                       env={**os.environ, "TASKER_CONFIG_PATH": config, "DATABASE_URL": b.a.db_url})
    warnings = [l for l in (p.stdout + p.stderr).splitlines() if "unknown key" in l]
    if p.returncode != 0 or warnings:
        raise SystemExit(f"bench: baseline {binary} does not accept the bench overlay {config} "
                         f"(exit {p.returncode}): {warnings or (p.stdout + p.stderr)[-2000:]}")


def _e2e_run(b, dev_bin):
    def run():
        r = e2e_measure(b, dev_bin)
        return {"submit_to_complete_p50_ms": r["submit_to_complete_ms"]["p50"],
                "submit_to_complete_p99_ms": r["submit_to_complete_ms"]["p99"],
                "worker_share_p50_ms": r["worker_share_ms"]["p50"], "completed": r["completed"],
                "ok": r["completed"] == r["tasks"]}
    return run


def _latency_run(b, sender, binary):
    def run():
        w = worker.start_worker(b, "Hybrid", LATENCY_C, binary=binary)
        try:
            r = latency.measure(b, sender, LATENCY_RATE)
        finally:
            worker.stop(w)
        s = r["to_handler_start_ms"]
        return {"start_p50_ms": s["p50"], "start_p99_ms": s["p99"], "completed": r["received"],
                "ok": r["received"] == r["sent"]}
    return run


def _ratio(r, current, baseline):
    if r.get(current) is None or not r.get(baseline):
        return None
    return round(r[current] / r[baseline], 3)


def baseline(b):
    R = b.results["baseline"] = {}
    if not b.a.baseline_worker_bin:
        R["not_measured"] = "no baseline build (TASKER_BENCH_BASELINE_WORKER_BIN not set)"
        log(f"baseline: {R['not_measured']}")
        return
    b.set_sync(True)
    check_config(b, b.a.baseline_worker_bin)
    n = b.cfg["drain_n"][C]
    R.update({"baseline_worker_bin": b.a.baseline_worker_bin, "current_worker_bin": b.a.worker_bin, "c": C, "steps": n})
    R["drain"] = d = alternate([("baseline", drain_run(b, n, binary=b.a.baseline_worker_bin)), ("current", drain_run(b, n))],
                               DRAIN_KEYS, label=f"baseline drain c={C}")
    for key in DRAIN_KEYS:
        d[f"{key}_current_over_baseline"] = _ratio(d, f"current_median_{key}", f"baseline_median_{key}")
    log(f"baseline: current ÷ baseline: server CPU per step {d['server_cpu_ms_per_step_current_over_baseline']}, "
        f"steps/s {d['steps_per_s_current_over_baseline']}, worker CPU per step {d['worker_cpu_ms_per_step_current_over_baseline']}")
    b.set_sync(True)
    sender = latency.sender_connection(b)
    try:
        R["latency"] = t = alternate([("baseline", _latency_run(b, sender, b.a.baseline_worker_bin)),
                                      ("current", _latency_run(b, sender, None))],
                                     LATENCY_KEYS, rounds=LATENCY_ROUNDS, label=f"baseline latency Hybrid {LATENCY_RATE}/s")
    finally:
        sender.close()
    t.update({"mode": "Hybrid", "rate": LATENCY_RATE, "c": LATENCY_C})
    for key in LATENCY_KEYS:
        t[f"{key}_current_over_baseline"] = _ratio(t, f"current_median_{key}", f"baseline_median_{key}")
    log(f"baseline: latency Hybrid {LATENCY_RATE}/s current ÷ baseline: start p50 {t['start_p50_ms_current_over_baseline']}, "
        f"p99 {t['start_p99_ms_current_over_baseline']}")
    if not b.a.baseline_dev_bin:
        R["e2e"] = {"not_measured": "no baseline tasker-dev (TASKER_BENCH_BASELINE_DEV_BIN not set)"}
    elif not b.a.dev_bin:
        R["e2e"] = {"not_measured": "no current tasker-dev (TASKER_BENCH_DEV_BIN)"}
    else:
        # A tasker-dev has no `config check`: its worker configuration is its build's tasker-worker's,
        # checked above; an older baseline whose tasker-worker takes `run --examples` is checked itself.
        if os.path.basename(b.a.baseline_dev_bin) != "tasker-dev":
            check_config(b, b.a.baseline_dev_bin)
        R["e2e"] = e = alternate([("baseline", _e2e_run(b, b.a.baseline_dev_bin)), ("current", _e2e_run(b, b.a.dev_bin))],
                                 E2E_KEYS, rounds=E2E_ROUNDS, label="baseline e2e 4-step")
        e.update({"baseline_dev_bin": b.a.baseline_dev_bin, "current_dev_bin": b.a.dev_bin,
                  "p50_current_over_baseline": _ratio(e, "current_median_submit_to_complete_p50_ms",
                                                      "baseline_median_submit_to_complete_p50_ms")})
        log(f"baseline: e2e 4-step p50 current ÷ baseline {e['p50_current_over_baseline']}")
    if "not_measured" in R["e2e"]:
        log(f"baseline e2e: not measured: {R['e2e']['not_measured']}")

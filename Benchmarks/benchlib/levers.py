"""Levers (issue #16): A/B drains of the same build with one worker setting switched, alternated in
one run (c = 16, durable), so that each lever is judged by server CPU per step and steps/s measured
minutes apart on the same server. Add a lever as (name, TOML that turns it on, TOML that turns it off).
TASKER_BENCH_LEVERS=name,… runs only the named levers.

`alternate` is the one A/B implementation: the `baseline` phase (benchlib/baseline.py) uses it for
the landed build against the current one."""
import os
import statistics

from . import worker
from .common import log
from .drain import drain_with

C = 16
ROUNDS = 3
DRAIN_KEYS = ("steps_per_s", "server_cpu_ms_per_step", "worker_cpu_ms_per_step")
# name → (overlay with the lever on, overlay with it off)
LEVERS = {
    "pgmq_static_sql": ('[worker.pgmq]\nstatements = "auto"\n', '[worker.pgmq]\nstatements = "functions"\n'),
    # Notified messages arriving while a claim of their queue is in flight: read and claimed together
    # after it (one round trip, one transaction) or each on its own.
    "burst_claims": ("[worker.event_systems.worker.processing]\nclaim_notified_bursts = true\n",
                     "[worker.event_systems.worker.processing]\nclaim_notified_bursts = false\n"),
}


def alternate(sides, keys, rounds=ROUNDS, label=""):
    """sides: [(name A, run A), (name B, run B)], each run() giving a dict with `keys`. Runs
    A, B in even rounds and B, A in odd ones (so neither side always goes first, e.g. into a freshly
    checkpointed or a warmer server), and returns {"runs": {name: [{key: value}…]},
    "<name>_median_<key>": median over the rounds}."""
    runs = {name: [] for name, _ in sides}
    for i in range(rounds):
        for name, run in (sides if i % 2 == 0 else sides[::-1]):
            r = run()
            runs[name].append({k: r.get(k) for k in keys + ("completed", "ok") if k in r})
            log(f"{label} {name} (round {i + 1}/{rounds}): "
                + ", ".join(f"{k} {r[k]:.3f}" if isinstance(r.get(k), float) else f"{k} {r.get(k)}" for k in keys))
    out = {"runs": runs}
    for name in runs:
        for key in keys:
            values = [x[key] for x in runs[name] if x.get(key) is not None]
            out[f"{name}_median_{key}"] = statistics.median(values) if values else None
    return out


def drain_run(b, n, binary=None, extra=""):
    """run() for `alternate`: a drain of n steps at c = C (Hybrid) by `binary` (default: the run's
    worker) with the overlay plus `extra`."""
    return lambda: drain_with(b, n, lambda: worker.start_worker(b, "Hybrid", C, extra=extra, binary=binary))


def levers(b):
    R = b.results.setdefault("levers", {})
    b.set_sync(True)
    n = b.cfg["drain_n"][C]
    chosen = [x for x in os.environ.get("TASKER_BENCH_LEVERS", "").split(",") if x]
    unknown = sorted(set(chosen) - LEVERS.keys())
    if unknown:
        raise SystemExit(f"bench: TASKER_BENCH_LEVERS names unknown levers {unknown}; known: {sorted(LEVERS)}")
    for name, (on, off) in LEVERS.items():
        if chosen and name not in chosen:
            continue
        r = R[name] = {"c": C, "steps": n, **alternate([("off", drain_run(b, n, extra=off)), ("on", drain_run(b, n, extra=on))],
                                                       DRAIN_KEYS, label=f"lever {name}")}
        r["cpu_on_over_off"] = round(r["on_median_server_cpu_ms_per_step"] / max(1e-9, r["off_median_server_cpu_ms_per_step"]), 3)
        r["steps_on_over_off"] = round(r["on_median_steps_per_s"] / r["off_median_steps_per_s"], 3)
        log(f"lever {name}: server CPU on/off {r['cpu_on_over_off']}, steps/s on/off {r['steps_on_over_off']}")

"""Levers (issue #16): A/B drains of the same build with one worker setting switched, alternated in
one run (c = 16, durable), so that each lever is judged by server CPU per step and steps/s measured
minutes apart on the same server. Add a lever as (name, TOML that turns it on, TOML that turns it off).
TASKER_BENCH_LEVERS=name,… runs only the named levers."""
import os

from . import worker
from .common import log
from .drain import drain_with

C = 16
ROUNDS = 3
# name → (overlay with the lever on, overlay with it off)
LEVERS = {
    "pgmq_static_sql": ('[worker.pgmq]\nstatements = "auto"\n', '[worker.pgmq]\nstatements = "functions"\n'),
    # Notified messages arriving while a claim of their queue is in flight: read and claimed together
    # after it (one round trip, one transaction) or each on its own.
    "burst_claims": ("[worker.event_systems.worker.processing]\nclaim_notified_bursts = true\n",
                     "[worker.event_systems.worker.processing]\nclaim_notified_bursts = false\n"),
}


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
        runs = {"on": [], "off": []}
        for i in range(ROUNDS):
            for side, extra in (("off", off), ("on", on)) if i % 2 == 0 else (("on", on), ("off", off)):
                r = drain_with(b, n, lambda: worker.start_worker(b, "Hybrid", C, extra=extra))
                runs[side].append({k: r[k] for k in ("steps_per_s", "server_cpu_ms_per_step", "worker_cpu_ms_per_step",
                                                     "completed", "ok")})
                log(f"lever {name} {side:3} c={C}: {r['steps_per_s']:8.1f} steps/s, "
                    f"server CPU {r['server_cpu_ms_per_step']:.3f} ms/step, worker CPU {r['worker_cpu_ms_per_step']:.3f} ms/step")

        def median(side, key):
            v = sorted(x[key] for x in runs[side])
            return v[len(v) // 2]

        R[name] = {"c": C, "steps": n, "runs": runs,
                   **{f"{side}_median_{key}": median(side, key) for side in runs for key in ("steps_per_s", "server_cpu_ms_per_step", "worker_cpu_ms_per_step")}}
        R[name]["cpu_on_over_off"] = round(R[name]["on_median_server_cpu_ms_per_step"]
                                           / max(1e-9, R[name]["off_median_server_cpu_ms_per_step"]), 3)
        R[name]["steps_on_over_off"] = round(R[name]["on_median_steps_per_s"] / R[name]["off_median_steps_per_s"], 3)
        log(f"lever {name}: server CPU on/off {R[name]['cpu_on_over_off']}, steps/s on/off {R[name]['steps_on_over_off']}")

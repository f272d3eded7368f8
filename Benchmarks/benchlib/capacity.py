"""The capacity model of docs/capacity.md (issue #29), computed from the fleet phase's figures, and
its check against the same figures.

Inputs, per transport (PGMQ, RabbitMQ) and route (direct, PgBouncer), all measured by the fleet phase
(benchlib/fleet.py, results JSON `fleet.runs`):
  c(N)    PostgreSQL's CPU per drained step, ms, at fleet size N: fitted as a + b·N (least squares over
          the sizes measured). On PGMQ with LISTEN, b is the herd: every listening worker of the
          namespace is notified of every message and reads.
  i       PostgreSQL's CPU per idle worker, ms per second (the largest N measured: the most clock ticks).
  p       PgBouncer's CPU per step, ms (one process, one core: its own ceiling).
and the worker's settings (docs/capacity.md):
  idle transactions/s = N · (6/grace + [PGMQ] namespaces/poll) + 2/scan     (the fleet's one scanner)
  sessions, idle      = direct: N · (1 + L);  PgBouncer: N · L + its server sessions
  sessions, busy      = direct: N · (P + L);  PgBouncer: N · L + default_pool_size
                        (L = 1 with a LISTEN session: PGMQ; P = pool.max_connections)

For a PostgreSQL of K cores, M max_connections (R of them for others: superuser_reserved_connections,
the orchestration's pool, operators) run at utilisation u:
  workers by sessions  N_M = (M − R) / (P + L)                     directly
                       N_M = (M − R − default_pool_size) / L       through PgBouncer (no bound if L = 0)
  steps/s at N         S(N) = (u · K · 1000 − N · i) / c(N)        PostgreSQL's CPU
                       S_p  = u · 1000 / p                         PgBouncer's CPU (one core)

The check (`check`): on the bench machine PostgreSQL, the workers, PgBouncer and the broker share its
cores, so a CPU-bound drain runs at  cores · 1000 / (every process's CPU per step); the measured steps/s
over that is how much of the machine the drain used. The idle transactions and sessions are checked
against the formulas above.

    python3 Benchmarks/benchlib/capacity.py bench-results.json --cores 16 --connections 400
prints the check, then the model for such a server from a run's figures (standard library only: runs
as a script)."""
import argparse
import json

# The fleet's workers run the built-in defaults of these (config/tasker/base/worker.toml); the phase
# records them in its settings.
DEFAULTS = {"grace_period_ms": 4000, "polling_interval_ms": 1000, "scan_interval_ms": 2000, "namespaces": 1}


def listens(transport, route):
    """LISTEN sessions per worker: PGMQ's intake listens (directly, or on listen_url behind PgBouncer);
    RabbitMQ's needs none."""
    return 1 if transport == "pgmq" else 0


def idle_transactions(n, transport, settings=DEFAULTS):
    """Transactions per second of an idle fleet of n workers (Runtime/IdleStatementBudget.swift)."""
    s = {**DEFAULTS, **settings}
    per_worker = 6000.0 / s["grace_period_ms"]
    if transport == "pgmq":
        per_worker += s["namespaces"] * 1000.0 / s["polling_interval_ms"]
    return n * per_worker + 2000.0 / s["scan_interval_ms"]


def idle_sessions(n, transport, route, pooled=0):
    """Server sessions of an idle fleet; `pooled`: PgBouncer's server sessions (measured)."""
    listen = listens(transport, route)
    return n * (1 + listen) if route == "direct" else n * listen + pooled


def busy_sessions(n, transport, route, pool_max, pgbouncer_pool):
    """The most server sessions a fleet can open (every pool full)."""
    listen = listens(transport, route)
    return n * (pool_max + listen) if route == "direct" else n * listen + pgbouncer_pool


def fit(points):
    """Least squares c = a + b·N over [(N, c)]; one point: b = 0."""
    if len(points) == 1:
        return points[0][1], 0.0
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
    return my - b * mx, b


def _ok(r):
    return "drain" in r and "idle" in r and "error" not in r


def inputs(fleet):
    """The model's measured inputs per (transport, route): c(N) = a + b·N, i, p, and the points."""
    groups = {}
    for r in fleet["runs"]:
        if _ok(r):
            groups.setdefault((r["transport"], r["route"]), []).append(r)
    out = {}
    for key, runs in sorted(groups.items()):
        runs.sort(key=lambda r: r["workers"])
        points = [(r["workers"], r["drain"]["server_cpu_ms_per_step"]) for r in runs]
        a, b = fit(points)
        largest = runs[-1]
        out[key] = {"a": a, "b": b, "points": points, "largest_n": largest["workers"],
                    "idle_ms_per_s_per_worker": largest["idle"]["server_cpu_ms_per_s_per_worker"],
                    "pgbouncer_ms_per_step": max((r["drain"].get("pgbouncer_cpu_ms_per_step", 0.0) for r in runs),
                                                 default=0.0)}
    return out


def check(fleet, cores):
    """Per measured configuration: the formulas against the figures. Rows of dicts."""
    s = fleet["settings"]
    rows = []
    for r in fleet["runs"]:
        if not _ok(r):
            continue
        n, t, route, d, i = r["workers"], r["transport"], r["route"], r["drain"], r["idle"]
        per_step = (d["server_cpu_ms_per_step"] + d.get("worker_cpu_ms_per_step", 0.0)
                    + d.get("enqueue_cpu_ms_per_step", 0.0) + d.get("broker_cpu_ms_per_step", 0.0)
                    + d.get("pgbouncer_cpu_ms_per_step", 0.0))
        pooled = i.get("pgbouncer_server_sessions") or 0
        rows.append({"transport": t, "route": route, "workers": n,
                     "idle_xact_predicted": idle_transactions(n, t, s), "idle_xact_measured": i["xact_per_s"],
                     "idle_sessions_predicted": idle_sessions(n, t, route, pooled), "idle_sessions_measured": i["sessions"],
                     "peak_sessions_bound": busy_sessions(n, t, route, s["pool_max_connections"],
                                                          s["pgbouncer_default_pool_size"]),
                     "peak_sessions_measured": d["sessions_peak"],
                     "cpu_ms_per_step": per_step, "steps_per_s_cpu_bound": cores * 1000.0 / per_step if per_step else None,
                     "steps_per_s_measured": d["steps_per_s"]})
    return rows


def check_lines(fleet, cores):
    rows = check(fleet, cores)
    if not rows:
        return []
    out = ["", f"Capacity model check (docs/capacity.md): the formulas against the figures above; {cores} cores shared "
               "by PostgreSQL, the workers, PgBouncer and the broker",
           f"{'transport':9} {'route':9} {'N':>3} {'idle xact/s pred':>16} {'meas':>6} {'idle sess pred':>14} {'meas':>5}"
           f" {'peak bound':>10} {'meas':>5} {'cpu ms/st':>9} {'cpu-bound st/s':>14} {'meas':>6} {'used':>5}"]
    for w in rows:
        bound = w["steps_per_s_cpu_bound"]
        used = w["steps_per_s_measured"] / bound if bound and w["steps_per_s_measured"] else None
        out.append(f"{w['transport']:9} {w['route']:9} {w['workers']:>3} {w['idle_xact_predicted']:>16.1f}"
                   f" {w['idle_xact_measured']:>6.1f} {w['idle_sessions_predicted']:>14d} {w['idle_sessions_measured']:>5d}"
                   f" {w['peak_sessions_bound']:>10d} {w['peak_sessions_measured']:>5d} {w['cpu_ms_per_step']:>9.2f}"
                   f" {bound or 0:>14.0f} {w['steps_per_s_measured'] or 0:>6.0f} {used or 0:>5.0%}")
    out.append("  idle xact/s pred = N·(6/grace + [PGMQ] namespaces/poll) + 2/scan; idle sess pred = N·(1+L) directly, "
               "N·L + PgBouncer's server sessions; peak bound = N·(pool max + L) directly, N·L + default_pool_size; "
               "cpu-bound st/s = cores·1000 / (server + workers + enqueue + broker + PgBouncer CPU per step); "
               "used = measured / cpu-bound")
    for (t, route), m in inputs(fleet).items():
        pts = ", ".join(f"{n}: {c:.2f}" for n, c in m["points"])
        out.append(f"  c(N) {t}/{route}: {m['a']:.2f} + {m['b']:.4f}·N ms/step (measured {pts}); "
                   f"idle {m['idle_ms_per_s_per_worker']:.2f} ms/s per worker (N = {m['largest_n']})"
                   + (f"; PgBouncer {m['pgbouncer_ms_per_step']:.2f} ms/step" if route == "pgbouncer" else ""))
    return out


def model(fleet, cores, connections, reserved, utilisation, pool_max, pgbouncer_pool, sizes):
    """Rows: per (transport, route) and fleet size, the sessions needed, PostgreSQL's steps/s, PgBouncer's
    ceiling and what saturates first."""
    rows = []
    budget = utilisation * cores * 1000.0
    for (t, route), m in inputs(fleet).items():
        listen = listens(t, route)
        if route == "direct":
            n_max = (connections - reserved) // (pool_max + listen)
        else:
            n_max = (connections - reserved - pgbouncer_pool) // listen if listen else None
        for n in sizes:
            c = m["a"] + m["b"] * n
            free = budget - n * m["idle_ms_per_s_per_worker"]
            s = free / c if free > 0 and c > 0 else 0.0
            sp = utilisation * 1000.0 / m["pgbouncer_ms_per_step"] if route == "pgbouncer" and m["pgbouncer_ms_per_step"] else None
            first = ("sessions" if n_max is not None and n > n_max else
                     "PgBouncer's core" if sp is not None and sp < s else "PostgreSQL's CPU")
            rows.append({"transport": t, "route": route, "workers": n,
                         "sessions": busy_sessions(n, t, route, pool_max, pgbouncer_pool), "workers_by_sessions": n_max,
                         "server_ms_per_step": c, "idle_share": n * m["idle_ms_per_s_per_worker"] / budget,
                         "steps_per_s": min(s, sp) if sp is not None else s, "saturates": first,
                         "extrapolated": n > m["largest_n"]})
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", help="a results JSON of scripts/bench --phases fleet")
    p.add_argument("--cores", type=int, required=True, help="PostgreSQL's cores")
    p.add_argument("--connections", type=int, required=True, help="its max_connections")
    p.add_argument("--reserved", type=int, default=20, help="sessions for others (superuser reserve, orchestration, operators)")
    p.add_argument("--utilisation", type=float, default=0.7, help="the CPU share to plan for")
    p.add_argument("--pool-max", type=int, default=4, help="each worker's pool.max_connections")
    p.add_argument("--pgbouncer-pool", type=int, default=20, help="PgBouncer's default_pool_size")
    p.add_argument("--workers", default="16,64,256,1024", help="fleet sizes")
    a = p.parse_args()
    with open(a.results) as f:
        R = json.load(f)
    fleet = R["fleet"]
    print("\n".join(check_lines(fleet, R.get("machine", {}).get("cores") or 2)[1:]) + "\n")
    sizes = [int(x) for x in a.workers.split(",")]
    print(f"PostgreSQL of {a.cores} cores at {a.utilisation:.0%}, max_connections {a.connections} ({a.reserved} for others); "
          f"workers with pool.max_connections {a.pool_max}; PgBouncer default_pool_size {a.pgbouncer_pool}")
    print(f"{'transport':9} {'route':9} {'N':>5} {'sessions':>8} {'N by sess':>9} {'srv ms/st':>9} {'idle CPU':>8}"
          f" {'steps/s':>8}  saturates first")
    for w in model(fleet, a.cores, a.connections, a.reserved, a.utilisation, a.pool_max, a.pgbouncer_pool, sizes):
        nb = "-" if w["workers_by_sessions"] is None else str(w["workers_by_sessions"])
        print(f"{w['transport']:9} {w['route']:9} {w['workers']:>5} {w['sessions']:>8} {nb:>9} {w['server_ms_per_step']:>9.2f}"
              f" {w['idle_share']:>8.0%} {w['steps_per_s']:>8.0f}  {w['saturates']}"
              + ("  (c(N) extrapolated)" if w["extrapolated"] else ""))


if __name__ == "__main__":
    main()

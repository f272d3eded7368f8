"""The run's summary: machine, ratios, targets, the printed table and the latency plot."""
import os
import platform

from .common import LATENCY_C, POLL_MS


def machine(b):
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    mem = next((l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal")), "0")
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": round(int(mem) / 1048576, 1),
            "kernel": platform.release(), "postgres": b.q("SHOW server_version")[0][0],
            "load_average_start": b.load_start, "load_average_end": list(os.getloadavg())}


def _sps(src, key, c):
    return (src or {}).get(key, {}).get(c, {}).get("steps_per_s")


def ratios(R):
    """Per (durability, c). The SQL floor is `floor.ours` (-M prepared, static statements on the PGMQ
    tables, as the worker by default); `floor.ours_functions` is the same step through PGMQ's functions."""
    r = {}
    f, d, p = R.get("floor", {}), R.get("drain", {}), R.get("pgqueuer", {})
    for key in ("durable", "async"):
        for c, w in d.get(key, {}).items():
            entry = {}
            for name, src in (("worker_over_sql_floor", f.get("ours")), ("worker_over_upstream_floor", f.get("upstream")),
                              ("worker_over_sql_floor_extended", f.get("ours_extended")),
                              ("worker_over_sql_floor_functions", f.get("ours_functions"))):
                if _sps(src, key, c):
                    entry[name] = round(w["steps_per_s"] / _sps(src, key, c), 3)
            if c in p.get(key, {}):
                entry["worker_over_pgqueuer"] = round(w["steps_per_s"] / p[key][c]["steps_per_s"], 3)
            r.setdefault(key, {})[c] = entry
        for c in f.get("ours", {}).get(key, {}):
            entry = r.setdefault(key, {}).setdefault(c, {})
            if _sps(f.get("upstream"), key, c):
                entry["sql_floor_over_upstream_floor"] = round(_sps(f["ours"], key, c) / _sps(f["upstream"], key, c), 3)
            if _sps(f.get("ours_extended"), key, c):
                entry["sql_floor_prepared_over_extended"] = round(_sps(f["ours"], key, c) / _sps(f["ours_extended"], key, c), 3)
            if _sps(f.get("ours_functions"), key, c):
                entry["sql_floor_static_over_functions"] = round(_sps(f["ours"], key, c) / _sps(f["ours_functions"], key, c), 3)
    return r


def targets(R):
    t = {}
    ratio = R["ratios"].get("durable", {}).get("16", {})
    if "worker_over_sql_floor" in ratio:
        t["drain >= 0.8x SQL floor (c=16 durable)"] = [ratio["worker_over_sql_floor"], ratio["worker_over_sql_floor"] >= 0.8]
    if "worker_over_upstream_floor" in ratio:
        t["drain >= 1.5x upstream floor (c=16 durable)"] = [ratio["worker_over_upstream_floor"],
                                                          ratio["worker_over_upstream_floor"] >= 1.5]
    net = R.get("network", {}).get("250us")
    if net:   # issue #16: 0.5 ms round trip added
        t["drain >= 3x upstream-shaped floor, 0.5 ms round trip added (c=16 durable)"] = [
            net["worker_over_upstream_floor"], net["worker_over_upstream_floor"] >= 3.0]
    h = R.get("latency", {}).get("Hybrid", {}).get("200", {}).get("to_handler_start_ms")
    if h:
        t["Hybrid 200/s start p50 <= 1.5 ms"] = [round(h["p50"], 2), h["p50"] <= 1.5]
        t["Hybrid 200/s start p99 <= 5 ms"] = [round(h["p99"], 2), h["p99"] <= 5]
    pol = R.get("latency", {}).get("PollingOnly", {})
    if pol:
        p50 = min(v["to_handler_start_ms"]["p50"] for v in pol.values())
        t[f"PollingOnly p50 within 10% of {POLL_MS / 2:g} ms"] = [round(p50, 2), abs(p50 - POLL_MS / 2) <= POLL_MS / 20]
    m = R.get("memory")
    if m:
        t["RSS idle <= 40 MB"] = [m["rss_idle_mb"], m["rss_idle_mb"] <= 40]
        t[f"RSS peak <= 80 MB ({m['queued']} queued; target at 10000)"] = [m["rss_peak_mb"], m["rss_peak_mb"] <= 80]
    f = R.get("ffi", {}).get("16")
    if f:
        t["Python drain >= 0.8x Swift drain (c=16, FFI channel)"] = [round(f["python_over_swift"], 2), f["python_over_swift"] >= 0.8]
        t["Python drain >= 4x upstream worker, same handler (c=16)"] = [round(f["python_over_upstream"], 2),
                                                                       f["python_over_upstream"] >= 4]
        w = f.get("wakeup_us", {})
        if w.get("p50") is not None:
            t["poll wake-up after a claim p50 <= 0.2 ms (c=16, one step every 20 ms)"] = [round(w["p50"] / 1000, 3),
                                                                                      w["p50"] <= 200]
    e = R.get("e2e", {}).get("submit_to_complete_ms")
    if e and e["p50"] is not None:
        t["e2e 4-step p50 <= 40 ms"] = [round(e["p50"], 1), e["p50"] <= 40]
    return t


def _fmt(v, spec):
    return format(v, spec) if v is not None else "-"


def table(R):
    M = R["machine"]
    lines = [f"tasker-worker benchmark ({R['mode']}), {M['cpu']}, {M['cores']} cores, PostgreSQL {M['postgres']}, "
             f"load {M['load_average_start'][0]:.1f}→{M['load_average_end'][0]:.1f}", "",
             f"{'throughput (steps/s)':24} {'c':>3} {'SQL floor':>10} {'(extended)':>10} {'(functions)':>11} {'upstream':>10}"
             f" {'worker':>10}"
             f" {'PgQueuer':>10} {'w/floor':>8} {'w/upstr':>8} {'w/PgQ':>8}"]
    f = R.get("floor", {})
    for key in ("durable", "async"):
        for c in ("1", "4", "16"):
            row = [_sps(f.get("ours"), key, c), _sps(f.get("ours_extended"), key, c), _sps(f.get("ours_functions"), key, c),
                   _sps(f.get("upstream"), key, c), _sps(R.get("drain"), key, c), _sps(R.get("pgqueuer"), key, c)]
            if all(v is None for v in row):
                continue
            rt = R.get("ratios", {}).get(key, {}).get(c, {})
            lines.append(f"{key:24} {c:>3} " + " ".join(f"{_fmt(v, '10.0f'):>{11 if i == 2 else 10}}" for i, v in enumerate(row))
                         + f" {_fmt(rt.get('worker_over_sql_floor'), '8.2f'):>8}"
                         f" {_fmt(rt.get('worker_over_upstream_floor'), '8.2f'):>8} {_fmt(rt.get('worker_over_pgqueuer'), '8.2f'):>8}")
    if f:
        lines.append("  SQL floor = pgbench/ours.sql -M prepared (the worker's default statements: static SQL on the PGMQ tables); "
                     "(extended) = same, unnamed; (functions) = pgbench/ours_functions.sql, PGMQ's functions")
    cpu = [(key, c, v) for key, by_c in R.get("drain", {}).items() for c, v in by_c.items() if "server_cpu_ms_per_step" in v]
    if cpu:
        lines.append("  server CPU per step (ms, all PostgreSQL processes but the bench's enqueueing backend): "
                     + ", ".join(f"{key} c={c} {v['server_cpu_ms_per_step']:.3f}" for key, c, v in cpu))
    if R.get("latency"):
        lines += ["", f"{'latency (ms, c=%d)' % LATENCY_C:24} {'rate':>5} {'sent/s':>7} {'start p50':>10} {'p95':>8} {'p99':>8}"
                      f" {'result p50':>11} {'p95':>8} {'p99':>8}   (Poisson arrivals)"]
    for mode, rates in R.get("latency", {}).items():
        for rate, v in rates.items():
            s, r = v["to_handler_start_ms"], v["to_result_ms"]
            lines.append(f"{mode:24} {rate:>5} {v['achieved_rate']:7.0f} {s['p50']:10.2f} {s['p95']:8.2f} {s['p99']:8.2f}"
                         f" {_fmt(r['p50'], '11.2f')} {_fmt(r['p95'], '8.2f')} {_fmt(r['p99'], '8.2f')}")
    for name, v in R.get("levers", {}).items():
        lines.append(f"lever {name} (c={v['c']}, {v['steps']} steps, median of {len(v['runs']['on'])}): steps/s on "
                     f"{v['on_median_steps_per_s']:.0f} / off {v['off_median_steps_per_s']:.0f}; server CPU ms/step on "
                     f"{v['on_median_server_cpu_ms_per_step']:.3f} / off {v['off_median_server_cpu_ms_per_step']:.3f}; "
                     f"worker CPU ms/step on {v['on_median_worker_cpu_ms_per_step']:.3f} / off {v['off_median_worker_cpu_ms_per_step']:.3f}")
    m = R.get("memory")
    if m:
        lines += ["", f"memory: RSS idle {m['rss_idle_mb']} MB = anon {m['rss_anon_idle_mb']} + file {m['rss_file_idle_mb']}"
                      f" + shmem {m['rss_shmem_idle_mb']} MB, {m['threads_idle']} threads;",
                  f"        peak (VmHWM) {m['rss_peak_mb']} MB with {m['queued']} queued; at the largest sampled RSS"
                  f" {m['rss_sampled_peak_mb']} MB = anon {m['rss_anon_peak_mb']} + file {m['rss_file_peak_mb']}"
                  f" + shmem {m['rss_shmem_peak_mb']} MB; up to {m['threads_peak']} threads"]
    e = R.get("e2e")
    if e:
        s, c = e["submit_to_complete_ms"], e["cli_submit_to_complete_ms"]
        lines.append(f"end to end (linear 4-step, {e['completed']} tasks at {e['rate_per_s']}/s): p50 {s['p50']:.1f} ms,"
                     f" p99 {s['p99']:.1f} ms; via `tasker-dev submit` (process start included) p50 "
                     f"{c['p50'] if c['p50'] is None else round(c['p50'], 1)} ms; worker share p50 "
                     f"{e['worker_share_ms']['p50'] and round(e['worker_share_ms']['p50'], 1)} ms")
    if R.get("ffi"):
        lines += ["", f"{'no-op drain (steps/s)':24} {'c':>3} {'Swift':>10} {'Python':>10} {'upstream':>10} {'Py/Swift':>9}"
                      f" {'Py/upstr':>9}   (Python: ours on the FFI channel; upstream: tasker-py 0.1.8, same handler)"]
        for c, v in R["ffi"].items():
            lines.append(f"{'ffi':24} {c:>3} {v['swift']['steps_per_s']:10.0f} {v['python']['steps_per_s']:10.0f}"
                         f" {v['upstream']['steps_per_s']:10.0f} {v['python_over_swift']:9.2f} {v['python_over_upstream']:9.2f}")
            lines.append(f"{'  server CPU ms/step':24} {'':>3} " + " ".join(
                f"{_fmt(v[k].get('server_cpu_ms_per_step'), '10.3f'):>10}" for k in ("swift", "python", "upstream")))
            lines.append(f"{'  in flight max/mean':24} {'':>3} " + " ".join(
                f"{str(v[k].get('in_flight_max')) + '/' + str(v[k].get('in_flight_mean')):>10}" for k in ("swift", "python", "upstream")))
            lines.append(f"{'  RSS peak (MB)':24} {'':>3} {_fmt(v['swift'].get('rss_peak_mb'), '10.1f'):>10}"
                         f" {_fmt(v['python'].get('rss_peak_mb'), '10.1f'):>10} {_fmt(v['upstream'].get('rss_peak_mb'), '10.1f'):>10}")
    if R.get("network"):
        n = R["network"]
        lines += ["", f"{'network (c=16 durable)':24} {'RTT':>6} {'commit':>7} {'SQL floor':>10} {'upstream':>10} {'worker':>10}"
                      f" {'upstr wkr':>10} {'w/upfl':>7} {'w/upwk':>7}   (delay each way; RTT = SELECT 1 p50, ms)"]
        direct = n.get("direct", {})
        lines.append(f"{'direct':24} {direct.get('select_ms', 0):6.2f} {direct.get('commit_ms', 0):7.2f}")
        for key, v in n.items():
            if key == "direct":
                continue
            lines.append(f"{'+%.2f ms' % v['delay_each_way_ms']:24} {v['round_trip']['select_ms']:6.2f} {v['round_trip']['commit_ms']:7.2f}"
                         f" {v['floor_ours']['steps_per_s']:10.0f} {v['floor_upstream']['steps_per_s']:10.0f}"
                         f" {v['worker']['steps_per_s']:10.0f} {v['upstream_worker']['steps_per_s']:10.1f}"
                         f" {v['worker_over_upstream_floor']:7.2f} {v['worker_over_upstream_worker']:7.1f}")
    lines += ["", "targets:"] + [f"  {'ok  ' if ok else 'MISS'} {name}: {value}" for name, (value, ok) in R["targets"].items()]
    return "\n".join(lines)


def plot(R, rates_cfg, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, key, title in ((axes[0], "to_handler_start_ms", "send commit → handler start"),
                           (axes[1], "to_result_ms", "send commit → result message")):
        for mode, rates in R.get("latency", {}).items():
            xs = [int(r) for r in rates]
            for p, style in (("p50", "-o"), ("p99", "--x")):
                ax.plot(xs, [rates[r][key][p] for r in rates], style, label=f"{mode} {p}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks([int(r) for r in rates_cfg], [str(r) for r in rates_cfg])
        ax.minorticks_off()
        ax.set_xlabel("open-loop enqueue rate (steps/s, Poisson arrivals)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("latency (ms)")
    axes[1].legend(fontsize=7)
    fig.suptitle(f"tasker-worker latency ({R['mode']}, max_concurrent_handlers={LATENCY_C}, poll {POLL_MS} ms)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)

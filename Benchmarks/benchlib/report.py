"""The run's summary: machine, ratios, targets, the printed table and the latency plot."""
import os
import platform

from .common import LATENCY_C, POLL_MS
from .rabbitmq import lines as rabbitmq_lines


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


def _target(value, op, bound, detail=""):
    """A measured target: {"value", "target", "ok", "detail"}."""
    ok = value <= bound if op == "<=" else value >= bound
    return {"value": value, "target": f"{op} {bound:g}", "ok": ok, "detail": detail}


def _missing(why, op, bound):
    return {"value": None, "target": f"{op} {bound:g}", "ok": None, "not_measured": why}


def _why(R, phases, detail=None):
    """Why a figure is missing: the first of `phases` this run did not include, else `detail`."""
    ran = R.get("phases", [])
    absent = [p for p in phases if p not in ran]
    if absent:
        return f"phase {', '.join(absent)} not run (--phases)"
    return detail or "no figure (see the log)"


def targets(R):
    """Issue #16's targets, each a ratio (or count) from this run: {name: {"value", "target", "ok",
    "detail"}} or, where this run could not measure it, {"value": None, "ok": None, "not_measured": why}."""
    t = {}
    d16 = R.get("drain", {}).get("durable", {}).get("16")
    p16 = R.get("pgqueuer", {}).get("durable", {}).get("16")
    name = "drain ÷ PgQueuer drain (c=16 durable, no-op)"
    t[name] = (_target(round(d16["steps_per_s"] / p16["steps_per_s"], 3), ">=", 1.0,
                       f"{d16['steps_per_s']:.0f} / {p16['steps_per_s']:.0f} steps/s")
               if d16 and p16 else _missing(_why(R, ("drain", "pgqueuer")), ">=", 1.0))

    f = R.get("ffi", {}).get("16")
    name = "Python drain ÷ upstream worker drain (same Python no-op, c=16)"
    t[name] = (_target(round(f["python_over_upstream"], 2), ">=", 4.0,
                       f"{f['python']['steps_per_s']:.0f} / {f['upstream']['steps_per_s']:.1f} steps/s")
               if f else _missing(_why(R, ("ffi",)), ">=", 4.0))

    net = R.get("network", {}).get("250us")
    name = "drain ÷ upstream-shaped floor, 0.5 ms round trip added (c=16 durable)"
    t[name] = (_target(net["worker_over_upstream_floor"], ">=", 3.0,
                       f"{net['worker']['steps_per_s']:.0f} / {net['floor_upstream']['steps_per_s']:.0f} steps/s")
               if net else _missing(_why(R, ("network",)), ">=", 3.0))

    h = R.get("latency", {}).get("Hybrid", {}).get("200", {}).get("to_handler_start_ms")
    cf = R.get("commit_floor", {}).get("direct")
    name = "Hybrid 200/s handler start p50 ÷ durable commit round trip p50"
    if h and cf:
        fs = R["commit_floor"].get("pg_test_fsync", {})
        t[name] = _target(round(h["p50"] / cf["durable_commit_ms"], 2), "<=", 1.5,
                          f"{h['p50']:.2f} / {cf['durable_commit_ms']:.3f} ms; pg_test_fsync fdatasync 8 kB "
                          + (f"{fs['fdatasync_8kb_ms']} ms" if "fdatasync_8kb_ms" in fs else fs.get("not_measured", "-")))
    else:
        t[name] = _missing(_why(R, ("latency", "commit")), "<=", 1.5)
    name = "Hybrid 200/s handler start p99 ÷ p50"
    t[name] = (_target(round(h["p99"] / h["p50"], 2), "<=", 3.0, f"{h['p99']:.2f} / {h['p50']:.2f} ms")
               if h else _missing(_why(R, ("latency",)), "<=", 3.0))
    q = R.get("latency", {}).get("PgQueuer", {}).get("200", {}).get("to_handler_start_ms")
    name = "Hybrid 200/s handler start p50 ÷ PgQueuer enqueue→start p50 (same arrivals)"
    t[name] = (_target(round(h["p50"] / q["p50"], 2), "<=", 1.0, f"{h['p50']:.2f} / {q['p50']:.2f} ms")
               if h and q else _missing(_why(R, ("latency",)), "<=", 1.0))

    bl = R.get("baseline", {})
    d = bl.get("drain")
    name = "server CPU per step, current ÷ landed build (drain c=16 durable, medians)"
    t[name] = (_target(d["server_cpu_ms_per_step_current_over_baseline"], "<=", 0.70,
                       f"{d['current_median_server_cpu_ms_per_step']:.3f} / {d['baseline_median_server_cpu_ms_per_step']:.3f} ms")
               if d else _missing(_why(R, ("baseline",), bl.get("not_measured")), "<=", 0.70))

    cg = R.get("callgrind", {})
    name = "worker instructions per step (callgrind, millions)"
    t[name] = (_target(round(cg["instructions_per_step"] / 1e6, 3), "<=", 1.0,
                       f"{cg['steps']} steps, idle subtracted; raw {cg['raw_per_step'] / 1e6:.3f} M")
               if "instructions_per_step" in cg else _missing(_why(R, ("callgrind",), cg.get("not_measured")), "<=", 1.0))

    m = R.get("memory") or {}
    swift = (f or {}).get("swift", {})
    name = "idle RSS of the production binary (MB)"
    if m.get("rss_idle_mb") is not None:
        t[name] = _target(m["rss_idle_mb"], "<=", 30, "drain c=16 durable, 1 s after ready")
    elif swift.get("rss_idle_mb") is not None:
        t[name] = _target(swift["rss_idle_mb"], "<=", 30, "ffi phase's Swift drain c=16, 1 s after ready")
    else:
        t[name] = _missing(_why(R, ("drain",)), "<=", 30)

    e = bl.get("e2e", {})
    name = "e2e 4-step p50, current ÷ landed build"
    t[name] = (_target(e["p50_current_over_baseline"], "<=", 0.6,
                       f"{e['current_median_submit_to_complete_p50_ms']:.1f} / {e['baseline_median_submit_to_complete_p50_ms']:.1f} ms")
               if e.get("p50_current_over_baseline") is not None
               else _missing(_why(R, ("baseline",), e.get("not_measured") or bl.get("not_measured")), "<=", 0.6))
    return t


def _targets_block(T):
    lines = ["", "targets (issue #16; ratios from this run):"]
    for name, v in T.items():
        if v.get("not_measured"):
            lines.append(f"  n/m  {name} {v['target']}: not measured: {v['not_measured']}")
        else:
            lines.append(f"  {'ok  ' if v['ok'] else 'MISS'} {name} {v['target']}: {v['value']}"
                         + (f"  ({v['detail']})" if v.get("detail") else ""))
    return lines


def _side_row(label, src, lat=None, rss=None, source=""):
    src = src or {}
    return (f"{label:34} {_fmt(src.get('steps_per_s'), '9.0f'):>9} {_fmt(src.get('server_cpu_ms_per_step'), '9.3f'):>9}"
            f" {_fmt(src.get('worker_cpu_ms_per_step'), '9.3f'):>9} {_fmt((lat or {}).get('p50'), '9.2f'):>9}"
            f" {_fmt((lat or {}).get('p99'), '9.2f'):>9} {_fmt(rss, '8.1f'):>8}  {source}")


def side_by_side(R):
    """c = 16 durable, one row per party: steps/s, server CPU per step, worker (client) CPU per step,
    handler start p50/p99 at 200/s, idle RSS; "-" where the run did not measure it."""
    f = R.get("ffi", {}).get("16", {})
    d16 = R.get("drain", {}).get("durable", {}).get("16")
    p16 = R.get("pgqueuer", {}).get("durable", {}).get("16")
    lat = R.get("latency", {})
    fl = R.get("floor", {})
    ours_drain, ours_src = (d16, "drain phase") if d16 else (f.get("swift"), "ffi phase")
    rss = (R.get("memory") or {}).get("rss_idle_mb") or (f.get("swift") or {}).get("rss_idle_mb")
    pgq_lat = lat.get("PgQueuer", {}).get("200")
    rows = [
        _side_row("ours (Swift no-op)", ours_drain, lat.get("Hybrid", {}).get("200", {}).get("to_handler_start_ms"), rss,
                  f"{ours_src}; latency Hybrid 200/s"),
        _side_row("ours (Python no-op via FFI)", f.get("python"), None, (f.get("python") or {}).get("rss_idle_mb"), "ffi phase"),
        _side_row("upstream worker (Python no-op)", f.get("upstream"), None, (f.get("upstream") or {}).get("rss_idle_mb"),
                  "ffi phase, tasker-py 0.1.8"),
        _side_row("PgQueuer", p16, (pgq_lat or {}).get("to_handler_start_ms"), (pgq_lat or {}).get("consumer_rss_idle_mb"),
                  "pgqueuer phase (in the bench's process: worker CPU = its CPU); latency 200/s, own process"),
        _side_row("SQL floor (pgbench ours.sql)", fl.get("ours", {}).get("durable", {}).get("16"), None, None, "floor phase"),
        _side_row("upstream-shaped floor (pgbench)", fl.get("upstream", {}).get("durable", {}).get("16"), None, None, "floor phase"),
    ]
    if not (f or d16 or p16 or fl or lat):
        return []
    return ["", f"{'side by side (c=16 durable)':34} {'steps/s':>9} {'srv ms/st':>9} {'wkr ms/st':>9} {'start p50':>9}"
                f" {'p99':>9} {'idle MB':>8}  source", *rows,
            "  srv = server CPU per step (all PostgreSQL processes but the bench's own backend; the floors' include"
            " pgbench's c backends starting), wkr = the worker process's CPU per step; start = enqueue commit →"
            " handler start (ms) at 200/s"]


def _fmt(v, spec):
    return format(v, spec) if v is not None else "-"


def table(R):
    M = R["machine"]
    lines = [f"tasker-worker benchmark ({R['mode']}), {M['cpu']}, {M['cores']} cores, PostgreSQL {M['postgres']}, "
             f"load {M['load_average_start'][0]:.1f}→{M['load_average_end'][0]:.1f}"]
    if R.get("floor") or R.get("drain") or R.get("pgqueuer"):
        lines += ["", f"{'throughput (steps/s)':24} {'c':>3} {'SQL floor':>10} {'(extended)':>10} {'(functions)':>11} {'upstream':>10}"
                      f" {'worker':>10} {'PgQueuer':>10} {'w/floor':>8} {'w/upstr':>8} {'w/PgQ':>8}"]
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
        lines.append("  SQL floor = ours.sql (pgbench/ours.template.sql rendered) -M prepared (the worker's default statements: static SQL on the PGMQ tables); "
                     "(extended) = same, unnamed; (functions) = ours_functions.sql, PGMQ's functions")
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
                         f" {_fmt(r['p50'], '11.2f'):>11} {_fmt(r['p95'], '8.2f'):>8} {_fmt(r['p99'], '8.2f'):>8}")
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
    lines += _commit_floor_lines(R) + _baseline_lines(R) + _callgrind_lines(R) + rabbitmq_lines(R)
    lines += side_by_side(R) + _targets_block(R["targets"])
    return "\n".join(lines)


def _commit_floor_lines(R):
    c = R.get("commit_floor")
    if not c:
        return []
    d, fs = c["direct"], c.get("pg_test_fsync", {})
    return ["", f"commit floor (direct, {d['n']} each): durable commit round trip p50 {d['durable_commit_ms']:.3f} p99 "
                f"{d['durable_commit_p99_ms']:.3f} ms; BEGIN;SELECT 1;COMMIT p50 {d['commit_ms']:.3f} ms; SELECT 1 p50 "
                f"{d['select_ms']:.3f} ms; pg_test_fsync fdatasync 8 kB "
                + (f"{fs['fdatasync_8kb_ms']} ms ({fs['fdatasync_8kb_ops_per_s']:.0f}/s)" if "fdatasync_8kb_ms" in fs
                   else f"not measured: {fs.get('not_measured')}")]


def _baseline_lines(R):
    bl = R.get("baseline")
    if not bl:
        return []
    if "drain" not in bl:
        return ["", f"baseline: not measured: {bl.get('not_measured')}"]
    d = bl["drain"]
    lines = ["", f"baseline (landed build {bl['baseline_worker_bin']}) vs current, c={bl['c']} durable, {bl['steps']} steps, "
                 f"median of {len(d['runs']['current'])} alternated:"]
    for key, label, spec in (("steps_per_s", "steps/s", ".0f"), ("server_cpu_ms_per_step", "server CPU ms/step", ".3f"),
                             ("worker_cpu_ms_per_step", "worker CPU ms/step", ".3f")):
        lines.append(f"  {label:20} baseline {_fmt(d[f'baseline_median_{key}'], spec):>8}  current "
                     f"{_fmt(d[f'current_median_{key}'], spec):>8}  current/baseline {_fmt(d[f'{key}_current_over_baseline'], '.3f')}")
    t = bl.get("latency")
    if t:
        for key, label in (("start_p50_ms", "handler start p50"), ("start_p99_ms", "handler start p99")):
            lines.append(f"  {label + ' ms':20} baseline {_fmt(t[f'baseline_median_{key}'], '.2f'):>8}  current "
                         f"{_fmt(t[f'current_median_{key}'], '.2f'):>8}  current/baseline "
                         f"{_fmt(t[f'{key}_current_over_baseline'], '.3f')}  ({t['mode']}, {t['rate']}/s)")
    e = bl.get("e2e", {})
    if "not_measured" in e:
        lines.append(f"  e2e 4-step p50: not measured: {e['not_measured']}")
    else:
        lines.append(f"  e2e 4-step p50 (median of {len(e['runs']['current'])}) baseline "
                     f"{e['baseline_median_submit_to_complete_p50_ms']:.1f} ms, current {e['current_median_submit_to_complete_p50_ms']:.1f}"
                     f" ms, current/baseline {e['p50_current_over_baseline']}")
    return lines


def _callgrind_lines(R):
    cg = R.get("callgrind")
    if not cg:
        return []
    if "not_measured" in cg:
        return ["", f"callgrind: not measured: {cg['not_measured']}"]
    return ["", f"callgrind: {cg['instructions_per_step']:,} instructions per no-op step ({cg['steps']} steps, c={cg['c']}; "
                f"idle {cg['idle_instructions_per_s']:,}/s × {cg['drain_window_s']} s subtracted; raw {cg['raw_per_step']:,})"]


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
                ys = [rates[r][key][p] for r in rates]
                if any(y is not None for y in ys):   # PgQueuer has no result message
                    ax.plot(xs, ys, style, label=f"{mode} {p}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks([int(r) for r in rates_cfg], [str(r) for r in rates_cfg])
        ax.minorticks_off()
        ax.set_xlabel("open-loop enqueue rate (steps/s, Poisson arrivals)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("latency (ms)")
    axes[0].legend(fontsize=7)   # the left plot has every series (PgQueuer has no result message)
    fig.suptitle(f"tasker-worker latency ({R['mode']}, max_concurrent_handlers={LATENCY_C}, poll {POLL_MS} ms)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)

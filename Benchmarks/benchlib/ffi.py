"""Handlers of other languages: the same no-op drain five ways in one run (issues #13, #28).

  swift       tasker-worker run, the built-in Swift no-op (`tasker.noop`)
  python      Benchmarks/ffi_worker.py --impl ours: this repository's Python package, the Swift worker
              embedded, a Python no-op on its FFI dispatch channel (c poll threads)
  typescript  Benchmarks/ffi_worker.mjs: the TypeScript SDK (bindings/typescript), the Swift worker
              embedded in Node, a TypeScript no-op (c at once)
  ruby        Benchmarks/ffi_worker.rb: the Ruby SDK (bindings/ruby), the Swift worker embedded in Ruby,
              a Ruby no-op (c handler threads)
  upstream    Benchmarks/ffi_worker.py --impl upstream: PyPI tasker-py 0.1.8, upstream's Rust worker
              embedded, the same Python no-op through upstream's own FFI channel and poller

Each at max_concurrent_handlers = c on the same database. The bench's one step gets the Python
callable through a template directory of its own (registration at boot rewrites the step's handler).
The upstream worker reads ONE pre-merged TOML file (it does not merge base + environment): the
test configuration of config/tasker/generated with the bench's settings applied.
"""
import json
import os
import pathlib
import shutil
import sys
import time

from . import worker
from .common import REPO_SCRIPTS_PYTHON  # noqa: F401  (puts scripts/lib/python on sys.path)
from upstream_worker import merged_config, upstream_url  # noqa: E402
from .common import POLL_MS, free_port, log
from .drain import drain_with

PY_CALLABLE = "bench.python_noop"


def _python_templates(b):
    path = os.path.join(b.work, "templates-python")
    if not os.path.isdir(path):
        os.makedirs(path)
        with open(os.path.join(b.templates, "bench.yaml")) as f:
            text = f.read()
        with open(os.path.join(path, "bench.yaml"), "w") as f:
            f.write(text.replace("callable: tasker.noop", f"callable: {PY_CALLABLE}"))
    return path


def upstream_config(b, c, web, grpc):
    """The merged test configuration with the bench's settings, for upstream's worker."""
    path = os.path.join(b.work, f"upstream-{c}.toml")
    with open(path, "w") as f:
        f.write(merged_config(pathlib.Path(b.a.repo), {
            "common.database.url": upstream_url(b.a.db_url),
            "common.database.pool.max_connections": c + 10,
            "common.database.pool.min_connections": 2,
            "worker.event_systems.worker.deployment_mode": "Hybrid",
            "worker.event_systems.worker.metadata.fallback_poller.polling_interval_ms": POLL_MS,
            "worker.mpsc_channels.handler_dispatch.max_concurrent_handlers": c,
            "worker.web.bind_address": f"127.0.0.1:{web}",
            "worker.grpc.bind_address": f"127.0.0.1:{grpc}",
        }))
    return path


def _start_python(b, impl, c, config, port, env):
    name = f"python-{impl}-{c}"
    # Poll threads: min(c, 4) unless TASKER_BENCH_PY_THREADS says otherwise. The no-op handler is
    # CPU-bound under the GIL: more threads than that only add GIL hand-offs (measured: 16 threads at
    # c = 16 drained ~8% slower than 4 on this 2-core machine). The worker's permits stay c.
    threads = int(os.environ.get("TASKER_BENCH_PY_THREADS", min(c, 4)))
    args = [os.path.join(b.a.repo, "Benchmarks/ffi_worker.py"), "--impl", impl, "--threads", str(threads),
            "--metrics-out", os.path.join(b.work, f"{name}-metrics.json")]
    proc = worker.spawn(b, args, config, name, binary=sys.executable,
                        env={"TASKER_TEMPLATE_PATH": _python_templates(b), **env})
    return worker.wait_ready(proc, port, name, b, timeout=90)


#: How each SDK's no-op host starts: (program, its arguments for c handlers at once).
FOREIGN_HOSTS = {
    "typescript": ("node", lambda c: ["Benchmarks/ffi_worker.mjs", "--concurrency", str(c)]),
    "ruby": ("ruby", lambda c: ["-I", "bindings/ruby/lib", "Benchmarks/ffi_worker.rb", "--threads", str(c)]),
}


def _start_foreign(b, language, c, config, port):
    """The TypeScript or Ruby no-op host (FOREIGN_HOSTS) at c, ready."""
    program, arguments = FOREIGN_HOSTS[language]
    name = f"{language}-{c}"
    proc = worker.spawn(b, arguments(c), config, name, binary=shutil.which(program) or program,
                        env={"TASKER_TEMPLATE_PATH": _python_templates(b)})
    return worker.wait_ready(proc, port, name, b, timeout=90)


def wakeup(b, c, n=300, interval_s=0.02):
    """Poll wake-up after a claim, unsaturated: our Python worker idle with its poll threads waiting,
    then n steps sent one at a time every `interval_s` (as orchestration sends them). Each claimed
    step's event goes to a waiting poller; the channel measures claim → that poller has the event
    (`wakeup_after_claim_us`), read from the worker when it stops."""
    config = worker.worker_config(b, "Hybrid", c)
    b.purge_results()
    proc = _start_python(b, "ours", c, config, worker.web_port(config), {})
    try:
        a, z = b.seed(n)
        for k in range(a, z + 1):
            b.mark_enqueued(k, k)
            b.send_steps(k, k)
            time.sleep(interval_s)
        ok = b.wait_results(n, timeout=60)
    finally:
        worker.stop(proc)
    with open(os.path.join(b.work, f"python-ours-{c}-metrics.json")) as f:
        m = json.load(f)
    w, h = m.get("wakeup_after_claim_us", {}), m.get("handoff_to_poller_us", {})
    return {"steps": n, "ok": ok, "interval_ms": interval_s * 1000, **{k: w.get(k) for k in ("count", "p50", "p99", "max")},
            "handoff_p50": h.get("p50"), "handoff_p99": h.get("p99")}


def upstream_drain(b, c, n):
    """The Python no-op on upstream's worker (tasker-py 0.1.8) draining n steps at c, on b.a.db_url."""
    web, grpc = free_port(), free_port()
    up = upstream_config(b, c, web, grpc)
    env = {"TASKER_ENV": "test", "DATABASE_URL": upstream_url(b.a.db_url),
           "TASKER_WEB_BIND_ADDRESS": f"127.0.0.1:{web}", "TASKER_WORKER_GRPC_BIND_ADDRESS": f"127.0.0.1:{grpc}",
           "RUST_LOG": "warn"}
    return drain_with(b, n, lambda: _start_python(b, "upstream", c, up, web, env), measure_memory=True)


def ffi(b):
    """Swift no-op, Python no-op on our FFI channel, Python no-op on upstream's worker; c = 16."""
    R = b.results.setdefault("ffi", {})
    b.set_sync(True)
    for c in b.cfg["ffi_c"]:
        n = b.cfg["drain_n"][c]
        r = R.setdefault(str(c), {})
        r["swift"] = drain_with(b, n, lambda: worker.start_worker(b, "Hybrid", c), measure_memory=True)
        log(f"ffi swift    c={c:2}: {r['swift']['steps_per_s']:8.1f} steps/s, in flight max {r['swift']['in_flight_max']}"
            f" mean {r['swift']['in_flight_mean']}")

        config = worker.worker_config(b, "Hybrid", c)
        port = worker.web_port(config)
        r["python"] = drain_with(b, n, lambda: _start_python(b, "ours", c, config, port, {}), measure_memory=True)
        with open(os.path.join(b.work, f"python-ours-{c}-metrics.json")) as f:
            r["python"]["ffi_dispatch"] = json.load(f)
        wake = r["python"]["ffi_dispatch"].get("wakeup_after_claim_us", {})
        log(f"ffi python   c={c:2}: {r['python']['steps_per_s']:8.1f} steps/s (ours), in flight max {r['python']['in_flight_max']}"
            f" mean {r['python']['in_flight_mean']}; poll wake-up after a claim "
            f"p50 {wake.get('p50')} us, p99 {wake.get('p99')} us ({wake.get('count')} wake-ups)")

        for language in FOREIGN_HOSTS:
            r[language] = drain_with(b, n, lambda: _start_foreign(b, language, c, config, port), measure_memory=True)
            log(f"ffi {language:10} c={c:2}: {r[language]['steps_per_s']:8.1f} steps/s, in flight max "
                f"{r[language]['in_flight_max']} mean {r[language]['in_flight_mean']}")
            r[f"{language}_over_swift"] = r[language]["steps_per_s"] / r["swift"]["steps_per_s"]

        r["upstream"] = upstream_drain(b, c, b.cfg["ffi_upstream_n"])
        log(f"ffi upstream c={c:2}: {r['upstream']['steps_per_s']:8.1f} steps/s (tasker-py 0.1.8), in flight max "
            f"{r['upstream']['in_flight_max']} mean {r['upstream']['in_flight_mean']}")
        r["wakeup_us"] = wakeup(b, c)
        log(f"ffi wake-up  c={c:2}: claim → waiting poller p50 {r['wakeup_us']['p50']} us, p99 {r['wakeup_us']['p99']} us "
            f"({r['wakeup_us']['count']} steps, one every {r['wakeup_us']['interval_ms']:.0f} ms); of it the hand-over to "
            f"the poller thread p50 {r['wakeup_us']['handoff_p50']} us, p99 {r['wakeup_us']['handoff_p99']} us")
        r["python_over_swift"] = r["python"]["steps_per_s"] / r["swift"]["steps_per_s"]
        r["python_over_upstream"] = r["python"]["steps_per_s"] / r["upstream"]["steps_per_s"]
        log(f"ffi ratios   c={c:2}: python/swift {r['python_over_swift']:.2f}, python/upstream {r['python_over_upstream']:.2f}, "
            + ", ".join(f"{language}/swift {r[f'{language}_over_swift']:.2f}" for language in FOREIGN_HOSTS))
    shutil.rmtree(os.path.join(b.work, "templates-python"), ignore_errors=True)

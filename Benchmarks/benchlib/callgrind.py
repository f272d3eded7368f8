"""Phase `callgrind` (issue #16): the worker's instructions per no-op step, counted by valgrind's
callgrind (this VM has no hardware counters for `perf stat`). valgrind 3.19 cannot read the static
release binary's DWARF 5, so the phase runs a copy with its debug info stripped (`objcopy
--strip-debug`; symbols stay, so a dump still names functions).

Method (start-up excluded, idle work subtracted):
  1. the stripped worker starts under `valgrind --tool=callgrind --instr-atstart=no` (no counting,
     and a faster start) with the bench overlay (Hybrid, c = 16) and becomes ready;
  2. `callgrind_control -i on`, then `-z` (zero), IDLE_S seconds idle, `callgrind_control -d`: the
     idle instructions I_idle over the wall time T_idle (fallback poller, health, timers);
  3. N steps seeded and enqueued as in a drain (`pending→enqueued` committed, then one
     pgmq_send_with_notify per step), all N results awaited, `callgrind_control -d`: I_drain over
     T_drain (from the first dump to this one);
  4. instructions per step = (I_drain − I_idle × T_drain / T_idle) / N; `raw_per_step` = I_drain / N
     (an upper bound). Counts are of every thread of the process (Ir: instructions executed)."""
import glob
import os
import re
import shutil
import subprocess
import time

from . import worker
from .common import log

C = 16
READY_TIMEOUT_S = 240


def _control(*args):
    p = subprocess.run(["callgrind_control", *args], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise SystemExit(f"bench: callgrind_control {' '.join(args)} failed: {p.stdout}{p.stderr}")
    return p.stdout


def _total(path):
    """Ir total of one callgrind dump (its `totals:` or `summary:` line)."""
    with open(path) as f:
        text = f.read()
    m = re.search(r"^(?:totals|summary):\s+(\d+)", text, re.M)
    if not m:
        raise SystemExit(f"bench: no totals line in callgrind dump {path}")
    return int(m.group(1))


def _dump(pid, out_prefix, seen):
    """`callgrind_control -d` (dump, then counters zeroed); returns the new dump's Ir total."""
    _control("-d", str(pid))
    deadline = time.time() + 60
    while time.time() < deadline:
        new = sorted(set(glob.glob(out_prefix + "*")) - seen, key=os.path.getmtime)
        if new and os.path.getsize(new[-1]) > 0:
            time.sleep(0.2)   # the file is written in one go; let it finish
            seen.update(new)
            return _total(new[-1])
        time.sleep(0.2)
    raise SystemExit(f"bench: callgrind dump did not appear ({out_prefix}*)")


def missing_tools():
    return [t for t in ("valgrind", "callgrind_control", "objcopy") if not shutil.which(t)]


def callgrind(b):
    missing = missing_tools()
    if missing:
        b.results["callgrind"] = {"not_measured": f"{', '.join(missing)} missing"}
        log(f"callgrind: not measured: {b.results['callgrind']['not_measured']}")
        return
    b.set_sync(True)
    n, idle_s = b.cfg["callgrind_steps"], b.cfg["callgrind_idle_s"]
    t0 = time.time()
    stripped = os.path.join(b.work, "tasker-worker.nodebug")
    subprocess.run(["objcopy", "--strip-debug", b.a.worker_bin, stripped], check=True)
    out_prefix = os.path.join(b.work, "callgrind.out")
    config = worker.worker_config(b, "Hybrid", C)
    b.purge_results()
    proc = worker.spawn(b, ["--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out_prefix}", stripped, "run"],
                        config, "worker-callgrind", binary="valgrind")
    seen = set()
    try:
        worker.wait_ready(proc, worker.web_port(config), "worker-callgrind", b, timeout=READY_TIMEOUT_S)
        start_s = time.time() - t0
        _control("-i", "on", str(proc.pid))
        _control("-z", str(proc.pid))
        t_zero = time.time()
        time.sleep(idle_s)
        idle = _dump(proc.pid, out_prefix, seen)
        t_idle = time.time()
        a, z = b.seed(n)
        b.mark_enqueued(a, z)
        b.send_steps(a, z)
        ok = b.wait_results(n, timeout=300)
        drained = _dump(proc.pid, out_prefix, seen)
        t_drain = time.time()
    finally:
        worker.stop(proc)
        if os.path.exists(stripped):
            os.remove(stripped)
    idle_window, drain_window = t_idle - t_zero, t_drain - t_idle
    per_step = (drained - idle * drain_window / idle_window) / n
    r = b.results["callgrind"] = {
        "steps": n, "ok": ok, "c": C, "idle_window_s": round(idle_window, 2), "idle_instructions": idle,
        "drain_window_s": round(drain_window, 2), "drain_instructions": drained,
        "instructions_per_step": round(per_step), "raw_per_step": round(drained / n),
        "idle_instructions_per_s": round(idle / idle_window), "start_under_valgrind_s": round(start_s, 1),
        "phase_s": round(time.time() - t0, 1)}
    log(f"callgrind: {r['instructions_per_step']:,} instructions per step ({n} steps, idle "
        f"{r['idle_instructions_per_s']:,}/s subtracted over {r['drain_window_s']} s; raw {r['raw_per_step']:,}); "
        f"start under valgrind {r['start_under_valgrind_s']} s, phase {r['phase_s']} s")

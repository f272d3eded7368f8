"""Worker processes: the config overlay, start (until /health/ready), stop, and memory from
/proc/PID/status (VmRSS/VmHWM, RssAnon/RssFile/RssShmem, Threads)."""
import os
import re
import signal
import subprocess
import threading
import time
import urllib.request

from .common import LATENCY_C, POLL_MS, free_port

STATUS_FIELDS = ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem", "Threads")


def worker_config(b, mode, c, extra=""):
    """The overlay; `extra`: more TOML appended (the levers phase switches settings with it)."""
    path = os.path.join(b.work, f"worker-{mode}-{c}.toml")
    with open(path, "w") as f:
        f.write(f"""# bench overlay, merged over the built-in defaults (= config/tasker/base)
[common.database]
url = "{b.a.db_url}"
[common.database.pool]
max_connections = {c + 10}
min_connections = 2
[worker.event_systems.worker]
deployment_mode = "{mode}"
[worker.event_systems.worker.metadata.fallback_poller]
polling_interval_ms = {POLL_MS}
[worker.mpsc_channels.handler_dispatch]
max_concurrent_handlers = {c}
[worker.web]
bind_address = "127.0.0.1:{free_port()}"
[worker.grpc]
bind_address = "127.0.0.1:{free_port()}"
[orchestration.web]
bind_address = "127.0.0.1:0"
{extra}""")
    return path


def spawn(b, args, config, name, binary=None, env=None):
    """Starts `binary args…` (default: the production tasker-worker) with the run's environment."""
    env = {**os.environ, "TASKER_CONFIG_PATH": config, "TASKER_TEMPLATE_PATH": b.templates,
           "DATABASE_URL": b.a.db_url, "TASKER_LOG_LEVEL": os.environ.get("TASKER_LOG_LEVEL", "info"), **(env or {})}
    logf = open(os.path.join(b.work, f"{name}.log"), "ab")
    return subprocess.Popen([binary or b.a.worker_bin] + args, env=env, stdout=logf, stderr=subprocess.STDOUT, cwd=b.a.repo)


def web_port(config):
    """The REST port of a bench configuration file (worker_config writes it)."""
    return int(re.search(r'web\]\nbind_address = "127.0.0.1:(\d+)"', open(config).read()).group(1))


def wait_ready(proc, port, name, b, timeout=60):
    """Returns `proc` once GET /health/ready answers 200 on `port`; exits the bench if it dies first."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{name} exited with {proc.returncode}; see {b.work}/{name}.log")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/ready", timeout=1) as r:
                if r.status == 200:
                    time.sleep(0.3)   # listener connected, first catch-up read done
                    return proc
        except Exception:
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"{name} not ready after {timeout} s; see {b.work}/{name}.log")


_RUN_FLAGS = {}


def examples_args(binary):
    """["run"], or ["run", "--examples"] for a build whose `run` registers the example handlers only
    on request (the tasker-worker of 2026-11-26, before tasker-dev existed; read from its `help run`)."""
    if binary not in _RUN_FLAGS:
        p = subprocess.run([binary, "help", "run"], capture_output=True, text=True)
        _RUN_FLAGS[binary] = ["run", "--examples"] if "--examples" in p.stdout + p.stderr else ["run"]
    return _RUN_FLAGS[binary]


def start_worker(b, mode="Hybrid", c=LATENCY_C, examples=False, extra="", binary=None, env=None, name_suffix=""):
    """`binary`: another build (the baseline phase's landed build); default the run's worker, or with
    `examples` its tasker-dev. `env`: more environment (the telemetry phase's); `name_suffix`: of its log."""
    config = worker_config(b, mode, c, extra)
    # examples: the e2e phase runs examples/linear_workflow, whose handlers are in `tasker-dev run`
    # (production `tasker-worker run` has the built-ins only: the drain and latency phases use tasker.noop).
    name = f"worker-{mode}-{c}{name_suffix}"
    if binary:   # another build: its own log, named after the binary's directory
        name += "-" + re.sub(r"[^\w.-]", "_", os.path.basename(os.path.dirname(os.path.abspath(binary))))
    binary = binary or (b.a.dev_bin if examples else b.a.worker_bin)
    proc = spawn(b, examples_args(binary) if examples else ["run"], config, name, binary=binary, env=env)
    return wait_ready(proc, web_port(config), name, b)


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def memory(proc):
    """The worker's /proc/PID/status memory lines in MB (Threads as a count). RssAnon is private
    memory (heap, stacks), RssFile the mapped files (mostly the executable's code pages, shared
    with the page cache), RssShmem shared memory; VmRSS is their sum, VmHWM the peak of VmRSS."""
    fields = {}
    with open(f"/proc/{proc.pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in STATUS_FIELDS:
                n = int(v.split()[0])
                fields[k] = n if k == "Threads" else n / 1024.0
    return fields


class PeriodicSampler:
    """Calls `sample()` every `period` s in a thread between `__enter__` and `__exit__`, until it
    raises one of `errors` (the process or connection sampled is gone). Subclasses keep what they need
    of each sample (a peak); `close()` runs after the thread stopped."""

    errors = ()

    def __init__(self, period):
        self.period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self):
        raise NotImplementedError

    def close(self):
        pass

    def _run(self):
        while not self._stop.is_set():
            try:
                self.sample()
            except self.errors:
                return
            self._stop.wait(self.period)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.close()


class MemorySampler(PeriodicSampler):
    """Samples /proc/PID/status every `period` s in a thread: keeps the sample with the largest
    VmRSS (its RssAnon/RssFile split is the peak's) and the most threads seen."""

    errors = (OSError, ValueError)

    def __init__(self, proc, period=0.05):
        super().__init__(period)
        self.proc = proc
        self.peak, self.max_threads = None, 0

    def sample(self):
        m = memory(self.proc)
        if self.peak is None or m.get("VmRSS", 0) > self.peak.get("VmRSS", 0):
            self.peak = m
        self.max_threads = max(self.max_threads, m.get("Threads", 0))

"""The fleet: the workers (`tasker-dev run`; two, or sixteen in the fleet profile) and the orchestration
(`tasker-dev orchestrate`), each a child in its own session with its log in the work directory; started,
signalled and restarted by the faults, watched for exits nobody asked for."""
import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

from .common import log, tail

# A worker's own id on its log lines (`worker_id=worker-<uuid>`; `worker_<uuid>` is the form stored in
# results). The bare uuid is what the claims record as metadata.worker_uuid.
WORKER_ID = re.compile(rb"worker_id=worker[-_]([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Process:
    """One long-running child. `rest_port` is set for workers (readiness is GET /health/ready)."""

    def __init__(self, name, args, config, env, work, repo, rest_port=None):
        self.name, self.args, self.config, self.env = name, args, config, env
        self.work, self.repo, self.rest_port = work, repo, rest_port
        self.log_path = os.path.join(work, f"{name}.log")
        self.popen = None
        self.last_not_ready = None    # the last answer of a readiness probe that failed
        self.expected_exit = False
        self.starts = 0
        self.worker_uuids = []        # one per start (workers)
        self.unexpected_exits = []    # (time, status)
        self.exit_statuses = []       # (time, status, after_signal)
        self.lock = threading.RLock()

    def start(self):
        with self.lock:
            with open(self.log_path, "ab") as f:
                f.write(f"===== chaos: start {self.starts + 1} of {self.name} at {time.time():.3f}\n".encode())
                self._offset = f.tell()
            logf = open(self.log_path, "ab")
            env = {**os.environ, "TASKER_CONFIG_PATH": self.config, **self.env}
            self.popen = subprocess.Popen(self.args, env=env, stdout=logf, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, cwd=self.repo, start_new_session=True)
            logf.close()
            self.starts += 1
            self.expected_exit = False

    def alive(self):
        return self.popen is not None and self.popen.poll() is None

    def ready(self, timeout=1.0):
        """Workers: /health/ready answers 200. The orchestration: alive and started."""
        if not self.alive():
            return False
        if self.rest_port is None:
            return b"tasker orchestration starting" in self._log_since_start()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.rest_port}/health/ready", timeout=timeout) as r:
                return r.status == 200
        except urllib.error.HTTPError as error:
            self.last_not_ready = f"HTTP {error.code}: {error.read()[:2000].decode(errors='replace')}"
            return False
        except Exception as error:
            self.last_not_ready = f"{type(error).__name__}: {error}"
            return False

    def wait_ready(self, timeout=90):
        started = time.time()
        deadline = started + timeout
        self.last_not_ready = None
        while time.time() < deadline:
            if self.popen.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.popen.returncode} during start-up\n"
                                   + tail(self.log_path))
            if self.ready():
                if time.time() - started > 3 and self.last_not_ready:
                    log(f"{self.name} ready after {time.time() - started:.1f} s; before: {self.last_not_ready}")
                if self.rest_port is not None:
                    match, seen_by = WORKER_ID.search(self._log_since_start()), time.time() + 5
                    while not match and time.time() < seen_by:   # a log line may lag the readiness
                        time.sleep(0.1)
                        match = WORKER_ID.search(self._log_since_start())
                    if not match:
                        raise RuntimeError(f"{self.name} is ready but its log names no worker_id=worker-<uuid>: "
                                           "the faults could not find its claims\n" + tail(self.log_path))
                    self.worker_uuids.append(match.group(1).decode())
                return time.time()
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} not ready after {timeout} s\n" + tail(self.log_path))

    def _log_since_start(self):
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._offset)
                return f.read(4 * 1024 * 1024)
        except OSError:
            return b""

    def signal_and_wait(self, sig, timeout):
        """Sends `sig` and waits for the exit; returns (seconds to exit, status). SIGKILL after `timeout`."""
        with self.lock:
            self.expected_exit = True
            start = time.time()
            self.popen.send_signal(sig)
            try:
                status = self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                status = self.popen.wait()
                log(f"{self.name} did not exit within {timeout} s of {signal.Signals(sig).name}; killed")
            self.exit_statuses.append((time.time(), status, signal.Signals(sig).name))
            return time.time() - start, status

    def current_uuid(self):
        return self.worker_uuids[-1] if self.worker_uuids else None

    def stop(self, timeout=60):
        if self.alive():
            self.signal_and_wait(signal.SIGTERM, timeout)

    def send_sigterm(self):
        """The first half of `stop` (the fleet stops its processes together): SIGTERM, no wait."""
        with self.lock:
            if not self.alive():
                return False
            self.expected_exit = True
            self.popen.send_signal(signal.SIGTERM)
            return True

    def await_exit(self, timeout):
        """The second half: waits for the exit after `send_sigterm`; SIGKILL after `timeout`."""
        with self.lock:
            try:
                status = self.popen.wait(max(0.1, timeout))
            except subprocess.TimeoutExpired:
                self.popen.kill()
                status = self.popen.wait()
                log(f"{self.name} did not exit within {timeout:.0f} s of SIGTERM; killed")
            self.exit_statuses.append((time.time(), status, "SIGTERM"))


class WorkerSpec:
    """How one worker connects: `url` (directly or through the pooler), `transaction_pooler` (the
    worker's pooler mode), `listen_url` (its direct LISTEN session; None: none, the poller reads)."""

    def __init__(self, name, url, transaction_pooler=False, listen_url=None):
        self.name, self.url = name, url
        self.transaction_pooler, self.listen_url = transaction_pooler, listen_url

    @property
    def mode(self):
        if not self.transaction_pooler:
            return "direct"
        return "pooler+listen" if self.listen_url else "pooler+poll"


class Fleet:
    """The workers of `specs` (default: worker-a and worker-b, connected directly) and the
    orchestration (always connected directly); `watch` restarts a process that exited by itself
    (recorded as a failure, its last log lines printed). `pool` (max, min) overrides the workers'
    pool size ([common.database.pool]); None keeps the defaults. Every process gets
    PGMQ_DATABASE_URL = `args.queue_db_url` (empty: the queues are in the main database, whatever
    the caller's environment says), read through its overlay's `[common.pgmq_database] url`."""

    def __init__(self, args, work, templates, specs=None, pool=None):
        self.work = work
        self.processes = {}
        self.specs = {}
        if specs is None:
            specs = [WorkerSpec(name, args.db_url) for name in ("worker-a", "worker-b")]
        self.worker_names = [spec.name for spec in specs]
        queues = {"PGMQ_DATABASE_URL": args.queue_db_url or ""}
        for spec in specs:
            rest, grpc = free_port(), free_port()
            config = self._config(spec.name, spec, rest, grpc, pool)
            self.specs[spec.name] = spec
            self.processes[spec.name] = Process(spec.name, [args.dev_bin, "run"], config,
                                                {"TASKER_TEMPLATE_PATH": templates, **queues}, work, args.repo,
                                                rest_port=rest)
        config = self._config("orchestration", WorkerSpec("orchestration", args.db_url), None, None, None)
        self.processes["orchestration"] = Process("orchestration", [args.dev_bin, "orchestrate"], config, queues,
                                                  work, args.repo)
        self._stop = threading.Event()
        self._thread = None
        self.failures = []

    def _config(self, name, spec, rest, grpc, pool):
        path = os.path.join(self.work, f"{name}.toml")
        with open(path, "w") as f:
            f.write(f'# scripts/chaos overlay over the built-in defaults (= config/tasker/base)\n'
                    f'[common.database]\nurl = "{spec.url}"\n')
            if spec.transaction_pooler:
                f.write('transaction_pooler = true\n')
                if spec.listen_url:
                    f.write(f'listen_url = "{spec.listen_url}"\n')
            # The queues' database from PGMQ_DATABASE_URL (empty: the main one), as config/tasker/base
            # reads it: a single TASKER_CONFIG_PATH file replaces base, placeholders included.
            f.write('[common.pgmq_database]\nurl = "${PGMQ_DATABASE_URL:-}"\n')
            if pool is not None:
                f.write(f'[common.database.pool]\nmax_connections = {pool[0]}\nmin_connections = {pool[1]}\n')
            f.write('[orchestration.web]\nbind_address = "127.0.0.1:0"\n')
            if rest is not None:
                f.write(f'[worker.web]\nbind_address = "127.0.0.1:{rest}"\n'
                        f'[worker.grpc]\nbind_address = "127.0.0.1:{grpc}"\n')
        return path

    def __getitem__(self, name):
        return self.processes[name]

    def workers(self):
        return [self.processes[name] for name in self.worker_names]

    def start_all(self):
        for p in self.processes.values():
            p.start()
        for p in self.processes.values():
            p.wait_ready()
            log(f"{p.name} ready (pid {p.popen.pid}{', ' + p.current_uuid() if p.current_uuid() else ''}"
                f"{', ' + self.specs[p.name].mode if p.name in self.specs and len(self.specs) > 2 else ''})")
    def watch(self):
        def loop():
            while not self._stop.wait(0.2):
                for p in self.processes.values():
                    with p.lock:
                        if p.popen is None or p.expected_exit or p.popen.poll() is None:
                            continue
                        status = p.popen.returncode
                        p.unexpected_exits.append((time.time(), status))
                        message = f"{p.name} exited by itself with status {status}"
                        self.failures.append(message)
                        log(f"{message}; last lines of {p.log_path}:\n{tail(p.log_path)}")
                        try:
                            p.start()
                        except Exception as error:
                            log(f"cannot restart {p.name}: {error}")
        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()

    def stop_all(self):
        self._stop.set()
        if self._thread:
            self._thread.join()
        signalled = []
        for p in self.processes.values():
            try:
                if p.send_sigterm():
                    signalled.append(p)
            except Exception as error:
                log(f"stopping {p.name}: {error}")
        deadline = time.time() + 60
        for p in signalled:
            try:
                p.await_exit(deadline - time.time())
            except Exception as error:
                log(f"stopping {p.name}: {error}")
        for p in self.processes.values():
            if p.popen is not None and p.popen.poll() is None:
                p.popen.kill()

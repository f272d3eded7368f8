"""Harness of the Python/Ruby binding tests: a real PostgreSQL (scripts/test's cluster), a fresh
migrated database per test, the real companion orchestration (`tasker-dev orchestrate`) and the
host process under test (a Python or Ruby program embedding the worker through the C ABI).

Environment (set by scripts/test):
  TASKER_TEST_DATABASE_URL  superuser URL of the cluster (a database per test is cloned from a
                            migrated template)
  TASKER_PGMQ_SQL           pgmq.sql for `tasker-worker migrate`
  TASKER_BIN_PATH           directory of tasker-worker, tasker-dev and libTaskerWorkerFFI.so
                            (default: `swift build --show-bin-path`)
  TASKER_WORKER_LIBRARY     the library the hosts load (default: TASKER_BIN_PATH's)
  TASKER_TEST_RABBITMQ_URL  the private RabbitMQ broker (scripts/lib/rabbitmq.sh); the RabbitMQ mode
  TASKER_TEST_RABBITMQ_CTL  of `Cluster` (fixture ``rabbitmq_cluster``) gives each test a vhost of its own
  TASKER_TEST_PYTHON        a Python with pika (tools/publish_task_requests.py)

With the queues in a database of their own (issue #30 item 3, fixture ``queue_db_cluster``) a test
gets two databases cloned from two templates that one `tasker-worker migrate` with PGMQ_DATABASE_URL
prepared (``queue_db_templates``), and every process it starts gets PGMQ_DATABASE_URL.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import quote, urlsplit, urlunsplit

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "scripts" / "lib" / "python"))
from upstream_worker import merged_config, upstream_url  # noqa: E402  (shared with the benchmarks)

TESTS = Path(__file__).resolve().parent
TEMPLATES = TESTS / "fixtures" / "templates"
HOSTS = TESTS / "hosts"
NAMESPACE = "python_tests"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "resource(name, exclusive=True): the test holds a resource shared across pytest-xdist's processes "
        "(scripts/test runs the suite on several): exclusively (no other test holding it runs meanwhile) or "
        "shared (with exclusive=False: any number at once, none beside an exclusive holder)")


@pytest.fixture(autouse=True)
def _resource_locks(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Holds each ``resource`` marker's lock for the test's duration: a file lock (``flock``) per
    resource name in the run's temporary root (shared by pytest-xdist's processes, removed with
    pytest's old runs), so tests on different processes wait for each other; names taken in sorted
    order (no deadlock between two tests holding two)."""
    marks = {mark.args[0]: mark.kwargs.get("exclusive", True) for mark in request.node.iter_markers("resource")}
    if not marks:
        yield
        return
    # Under xdist each process's base is <root>/popen-gwN; the root is the run's, shared by all.
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    held = []
    try:
        for name in sorted(marks):
            handle = open(root / f"tasker-resource-{name}.lock", "a")
            held.append(handle)
            fcntl.flock(handle, fcntl.LOCK_EX if marks[name] else fcntl.LOCK_SH)
        yield
    finally:
        for handle in reversed(held):
            handle.close()   # closing releases the lock


@dataclass(frozen=True)
class Tools:
    admin_url: str
    bin_path: Path
    library: Path
    pgmq_sql: str

    @property
    def worker_binary(self) -> Path:
        return self.bin_path / "tasker-worker"

    @property
    def dev_binary(self) -> Path:
        return self.bin_path / "tasker-dev"


def _database_url(admin_url: str, name: str) -> str:
    parts = urlsplit(admin_url)
    return urlunsplit(parts._replace(path="/" + name))


def psql(url: str, sql: str) -> str:
    """Runs ``sql`` through psql; returns its unaligned, tuples-only output."""
    done = subprocess.run(
        ["psql", "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql],
        capture_output=True, text=True, timeout=60,
    )
    if done.returncode != 0:
        raise AssertionError(f"psql failed ({done.returncode}): {done.stderr.strip()}\nSQL: {sql}")
    return done.stdout.strip()


@pytest.fixture(scope="session")
def tools() -> Tools:
    admin_url = os.environ.get("TASKER_TEST_DATABASE_URL")
    pgmq_sql = os.environ.get("TASKER_PGMQ_SQL")
    if not admin_url or not pgmq_sql:
        pytest.fail("TASKER_TEST_DATABASE_URL and TASKER_PGMQ_SQL are not set: run these tests through scripts/test")
    bin_path = os.environ.get("TASKER_BIN_PATH") or subprocess.run(
        ["swift", "build", "--show-bin-path"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    library = Path(os.environ.get("TASKER_WORKER_LIBRARY") or Path(bin_path) / "libTaskerWorkerFFI.so")
    tools = Tools(admin_url, Path(bin_path), library, pgmq_sql)
    for path in (tools.worker_binary, tools.dev_binary, tools.library):
        if not path.is_file():
            pytest.fail(f"{path} missing: build with `swift build --build-tests` (scripts/test does)")
    return tools


def migrate(tools: Tools, url: str, queue_url: str = "") -> subprocess.CompletedProcess[str]:
    """`tasker-worker migrate` of the database ``url``; with ``queue_url`` (PGMQ_DATABASE_URL) the
    queues' own database as well. Both databases must exist."""
    return subprocess.run(
        [str(tools.worker_binary), "migrate", "--database-url", url, "--pgmq-sql", tools.pgmq_sql,
         "--migrations-dir", str(REPO / "migrations")],
        env={**os.environ, "PGMQ_DATABASE_URL": queue_url}, capture_output=True, text=True, timeout=300, cwd=REPO,
    )


def create_databases(tools: Tools, *names: str, template: tuple[str, ...] = ()) -> list[str]:
    """Creates ``names`` (owner tasker; each a clone of the same position in ``template`` when given,
    else empty, dropped first); returns their URLs."""
    for i, name in enumerate(names):
        if template:
            psql(tools.admin_url, f"CREATE DATABASE {name} TEMPLATE {template[i]} OWNER tasker")
        else:
            psql(tools.admin_url, f"DROP DATABASE IF EXISTS {name}")
            psql(tools.admin_url, f"CREATE DATABASE {name} OWNER tasker")
    return [_database_url(tools.admin_url, name) for name in names]


def drop_databases(tools: Tools, *names: str) -> None:
    for name in names:
        psql(tools.admin_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def template_database(tools: Tools) -> Iterator[str]:
    """A database migrated once (tasker-worker migrate); each test clones it."""
    name = f"pytest_template_{os.getpid()}"
    (url,) = create_databases(tools, name)
    done = migrate(tools, url)
    if done.returncode != 0:
        pytest.fail(f"migration failed: {done.stderr[-2000:]}")
    yield name
    drop_databases(tools, name)


@pytest.fixture(scope="session")
def queue_db_templates(tools: Tools) -> Iterator[tuple[str, str]]:
    """(main, queues): two databases migrated once by `tasker-worker migrate` with PGMQ_DATABASE_URL
    (the task tables without PGMQ; PGMQ with its helpers in schema tasker); each test clones both."""
    names = (f"pytest_template_{os.getpid()}_main", f"pytest_template_{os.getpid()}_queues")
    main, queues = create_databases(tools, *names)
    done = migrate(tools, main, queues)
    if done.returncode != 0:
        pytest.fail(f"migration with a queue database failed: {done.stdout[-1000:]}{done.stderr[-2000:]}")
    yield names
    drop_databases(tools, *names)


@dataclass(frozen=True)
class Broker:
    """The private RabbitMQ broker of scripts/test: its URL (vhost ``/``) and rabbitmqctl against it."""
    url: str
    ctl: tuple[str, ...]

    def rabbitmqctl(self, *args: str) -> str:
        """Runs ``rabbitmqctl ARGS`` (each call starts an Erlang VM: about 1–4 s here)."""
        done = subprocess.run([*self.ctl, *args], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise AssertionError(f"rabbitmqctl {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    def vhost_url(self, vhost: str) -> str:
        """The broker's URL with ``vhost`` in place of ``/``."""
        return urlunsplit(urlsplit(self.url)._replace(path="/" + quote(vhost, safe="")))

    def create_vhost(self, vhost: str) -> None:
        self.rabbitmqctl("add_vhost", vhost)
        self.rabbitmqctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")

    def delete_vhost(self, vhost: str) -> None:
        self.rabbitmqctl("delete_vhost", vhost)

    def queues(self, vhost: str) -> dict[str, dict[str, int]]:
        """Every queue of ``vhost``: messages ready, unacknowledged, and consumers."""
        text = self.rabbitmqctl("list_queues", "-p", vhost, "--no-table-headers", "--silent",
                                "name", "messages_ready", "messages_unacknowledged", "consumers")
        queues = {}
        for line in text.splitlines():
            name, ready, unacked, consumers = line.split("\t")
            queues[name] = {"ready": int(ready), "unacked": int(unacked), "consumers": int(consumers)}
        return queues


@pytest.fixture(scope="session")
def broker() -> Broker:
    url = os.environ.get("TASKER_TEST_RABBITMQ_URL")
    ctl = os.environ.get("TASKER_TEST_RABBITMQ_CTL")
    if not url or not ctl:
        pytest.fail("TASKER_TEST_RABBITMQ_URL and TASKER_TEST_RABBITMQ_CTL are not set: run these tests through scripts/test")
    return Broker(url, tuple(ctl.split()))


_counter = itertools.count(1)


class Database:
    """One test's database."""

    def __init__(self, url: str) -> None:
        self.url = url

    def scalar(self, sql: str) -> str:
        return psql(self.url, sql)

    def json(self, sql: str) -> Any:
        """The JSON value ``sql`` (one row, one column of json/jsonb) returns; None for no row."""
        text = psql(self.url, sql)
        return json.loads(text) if text else None

    def task_state(self, task: str) -> str | None:
        return self.scalar(
            f"SELECT to_state FROM tasker.task_transitions WHERE task_uuid = '{task}' AND most_recent") or None

    def step_names(self, task: str) -> list[str]:
        text = self.scalar(
            "SELECT ns.name FROM tasker.workflow_steps ws JOIN tasker.named_steps ns USING (named_step_uuid)"
            f" WHERE ws.task_uuid = '{task}' ORDER BY ns.name")
        return text.splitlines() if text else []

    def result(self, task: str, step: str) -> dict[str, Any]:
        """The stored StepExecutionResult of ``step`` (by name) of ``task``."""
        value = self.json(
            "SELECT ws.results FROM tasker.workflow_steps ws JOIN tasker.named_steps ns USING (named_step_uuid)"
            f" WHERE ws.task_uuid = '{task}' AND ns.name = '{step}'")
        assert value is not None, f"step {step} of task {task} has no result"
        return value

    def step_states(self, task: str) -> dict[str, str]:
        """Current state of every step of ``task``, by name."""
        rows = self.json(
            "SELECT coalesce(json_object_agg(ns.name, t.to_state), '{}') FROM tasker.workflow_steps ws"
            " JOIN tasker.named_steps ns USING (named_step_uuid)"
            " JOIN tasker.workflow_step_transitions t ON t.workflow_step_uuid = ws.workflow_step_uuid AND t.most_recent"
            f" WHERE ws.task_uuid = '{task}'")
        return rows or {}

    def step_transitions(self, task: str, step: str) -> list[str]:
        text = self.scalar(
            "SELECT t.to_state FROM tasker.workflow_steps ws JOIN tasker.named_steps ns USING (named_step_uuid)"
            " JOIN tasker.workflow_step_transitions t ON t.workflow_step_uuid = ws.workflow_step_uuid"
            f" WHERE ws.task_uuid = '{task}' AND ns.name = '{step}' ORDER BY t.sort_key")
        return text.splitlines() if text else []


@pytest.fixture
def database(tools: Tools, template_database: str) -> Iterator[Database]:
    name = f"pytest_{os.getpid()}_{next(_counter)}"
    (url,) = create_databases(tools, name, template=(template_database,))
    yield Database(url)
    drop_databases(tools, name)


class Process:
    """A child process whose stdout lines are collected (``wait_for_line``) and whose stderr goes
    to a log file (shown when a test fails)."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path, cwd: Path = REPO) -> None:
        self.argv = argv
        self.log = log
        self._log_file = open(log, "w")
        self.process = subprocess.Popen(
            argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._log_file,
            text=True, start_new_session=True,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for_http(self, url: str, timeout: float = 90) -> None:
        """Until GET ``url`` (a server of this process) answers 200; fails if the process exits first."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            if self.process.poll() is not None:
                raise AssertionError(f"{self.argv[-1]} exited ({self.process.returncode}) before {url} answered\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{url} did not answer 200 within {timeout} s\n{self.log_tail()}")
            time.sleep(0.1)

    def wait_for_line(self, prefix: str, timeout: float = 90) -> str:
        """The first stdout line starting with ``prefix`` (fails if the process exits first)."""
        for line in self.lines:
            if line.startswith(prefix):
                return line
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no {prefix!r} line from {self.argv[-1]} within {timeout} s\n{self.log_tail()}")
            try:
                line = self._queue.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                self.process.wait(timeout=10)
                raise AssertionError(
                    f"{self.argv[-1]} exited ({self.process.returncode}) before printing {prefix!r}\n{self.log_tail()}")
            if line.startswith(prefix):
                return line

    def terminate(self, timeout: float = 60) -> int:
        """SIGTERM, then waits up to ``timeout`` s (SIGKILL after); returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(timeout=timeout)
            # Its last lines may still be in the pipe: `lines` is complete once the reader saw EOF.
            self._reader.join(timeout=10)
            return status
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
            raise AssertionError(f"{self.argv[-1]} did not exit within {timeout} s of SIGTERM\n{self.log_tail()}")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self._log_file.close()

    def log_text(self) -> str:
        self._log_file.flush()
        return self.log.read_text(errors="replace")

    def log_tail(self, lines: int = 40) -> str:
        return f"--- last lines of {self.log} ---\n" + "\n".join(self.log_text().splitlines()[-lines:])


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (for servers that must be told their port)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class UpstreamWorker:
    """A running upstream worker: its host process and the addresses of its REST and gRPC servers."""
    process: Process
    web: str
    grpc: str


class Cluster:
    """One test's world: its database, the orchestration, and the hosts it starts. With ``broker_url``
    (RabbitMQ mode) every process it starts, ours and upstream's worker alike, is configured the
    upstream way for that broker: ``TASKER_MESSAGING_BACKEND=rabbitmq`` and ``RABBITMQ_URL``. With
    ``queue_db`` (the queues in a database of their own) every process gets ``PGMQ_DATABASE_URL``;
    ``queue_db`` is where the queues are (the main database unless given)."""

    def __init__(self, tools: Tools, database: Database, directory: Path, broker_url: str | None = None,
                 queue_db: Database | None = None) -> None:
        self.tools = tools
        self.db = database
        self.directory = directory
        self.broker_url = broker_url
        self.queue_db = queue_db or database
        self.processes: list[Process] = []

    @property
    def separate_queues(self) -> bool:
        return self.queue_db is not self.db

    def environment(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        for name in ("TASKER_CONFIG_PATH", "TASKER_MESSAGING_BACKEND", "RABBITMQ_URL", "PGMQ_DATABASE_URL"):
            env.pop(name, None)
        if self.broker_url:
            env.update({"TASKER_MESSAGING_BACKEND": "rabbitmq", "RABBITMQ_URL": self.broker_url})
        if self.separate_queues:
            env["PGMQ_DATABASE_URL"] = self.queue_db.url
        env.update({
            "DATABASE_URL": self.db.url,
            "TASKER_ENV": "test",
            "TASKER_LOG_FORMAT": "text",
            "RUST_LOG": env.get("TASKER_TEST_LOG_LEVEL", "info"),
            "TASKER_TEMPLATE_PATH": str(TEMPLATES),
            "TASKER_WEB_BIND_ADDRESS": "127.0.0.1:0",
            "TASKER_WORKER_GRPC_BIND_ADDRESS": "127.0.0.1:0",
            "TASKER_WORKER_LIBRARY": str(self.tools.library),
            "PYTHONUNBUFFERED": "1",
        })
        env.update(extra or {})
        return env

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Process:
        process = Process(argv, self.environment(env), self.directory / f"{name}.log")
        self.processes.append(process)
        return process

    def start_orchestration(self) -> Process:
        return self.start("orchestration", [str(self.tools.dev_binary), "orchestrate"])

    def restart_orchestration(self, extra_toml: str = "") -> str:
        """Stops what runs and starts the orchestration again with its REST server on a free port (and
        ``extra_toml`` appended to its configuration, e.g. ``[orchestration.web.auth]``); answers its
        address once /health answers."""
        for process in self.processes:
            process.terminate()
        self.processes.clear()
        port = free_port()
        config = self.directory / "orchestration.toml"
        config.write_text(f'[common.database]\nurl = "{self.db.url}"\n'
                          f'[orchestration.web]\nbind_address = "127.0.0.1:{port}"\n{extra_toml}')
        orchestration = self.start("orchestration-web", [str(self.tools.dev_binary), "orchestrate"],
                                   {"TASKER_CONFIG_PATH": str(config)})
        orchestration.wait_for_http(f"http://127.0.0.1:{port}/health")
        return f"127.0.0.1:{port}"

    def start_python_host(self, *, config: dict[str, Any] | None = None, threads: int = 4, name: str = "host",
                          env: dict[str, str] | None = None) -> Process:
        """tests/hosts/python_host.py (our API with fixtures/handlers/py_handlers.py), with ``env`` over
        the test's environment; waits for READY."""
        host = self.start(name, [sys.executable, str(HOSTS / "python_host.py")], {
            "TASKER_HOST_CONFIG": json.dumps(config or {}), "TASKER_HOST_THREADS": str(threads), **(env or {})})
        host.wait_for_line("READY")
        return host

    def start_upstream_worker(self, *, name: str = "upstream", handler_packages: tuple[str, ...] = (),
                              templates: Path = TEMPLATES, settings: dict[str, Any] | None = None) -> UpstreamWorker:
        """Upstream's own worker (PyPI tasker-py 0.1.8, tests/hosts/upstream_host.py) on this test's
        database, serving ``templates`` with the handler classes of ``handler_packages``; its REST and
        gRPC on free ports; waits for READY. ``settings``: {"dotted.key": value} over the merged test
        configuration. With the queues in their own database, upstream's way: ``common.pgmq_database.url``
        (``${PGMQ_DATABASE_URL:-}`` in the merged configuration) and PGMQ_DATABASE_URL, with a password."""
        web, grpc = free_port(), free_port()
        queues = upstream_url(self.queue_db.url) if self.separate_queues else ""
        config = self.directory / f"{name}.toml"
        config.write_text(merged_config(REPO, {
            "common.database.url": upstream_url(self.db.url),
            "common.pgmq_database.url": queues,
            "worker.web.bind_address": f"127.0.0.1:{web}",
            "worker.grpc.bind_address": f"127.0.0.1:{grpc}",
            **(settings or {}),
        }))
        host = self.start(name, [sys.executable, str(HOSTS / "upstream_host.py")], {
            "TASKER_CONFIG_PATH": str(config),
            "DATABASE_URL": upstream_url(self.db.url),
            **({"PGMQ_DATABASE_URL": queues} if queues else {}),
            "TASKER_TEMPLATE_PATH": str(templates),
            "TASKER_WEB_BIND_ADDRESS": f"127.0.0.1:{web}",
            "TASKER_WORKER_GRPC_BIND_ADDRESS": f"127.0.0.1:{grpc}",
            "TASKER_HOST_HANDLER_PACKAGES": ",".join(handler_packages),
        })
        host.wait_for_line("READY", timeout=120)
        return UpstreamWorker(host, f"127.0.0.1:{web}", f"127.0.0.1:{grpc}")

    def submit(self, name: str, context: dict[str, Any]) -> str:
        """Creates and starts a task of ``python_tests/name`` 1.0.0 (`tasker-dev submit --direct`)."""
        done = subprocess.run(
            [str(self.tools.dev_binary), "submit", NAMESPACE, name, "1.0.0", "--context", json.dumps(context), "--direct"],
            env=self.environment(), cwd=REPO, capture_output=True, text=True, timeout=60,
        )
        assert done.returncode == 0, f"submit failed: {done.stderr}"
        task = done.stdout.strip().splitlines()[-1]
        uuid.UUID(task)
        return task

    def wait_for_task(self, task: str, states: tuple[str, ...] = ("complete", "error"), timeout: float = 90) -> str:
        deadline = time.monotonic() + timeout
        state = None
        while time.monotonic() < deadline:
            state = self.db.task_state(task)
            if state in states:
                return state
            for process in self.processes:
                if process.process.poll() is not None:
                    raise AssertionError(f"{process.argv[-1]} exited while task {task} was {state}\n{process.log_tail()}")
            time.sleep(0.1)
        raise AssertionError(f"task {task} still {state} after {timeout} s; steps: {self.db.step_states(task)}\n"
                             + "\n".join(p.log_tail() for p in self.processes))

    def logs(self) -> str:
        return "\n".join(p.log_tail() for p in self.processes)

    def close(self) -> None:
        for process in reversed(self.processes):
            if process.process.poll() is None:
                try:
                    process.terminate(timeout=30)
                except AssertionError:
                    pass
            process.kill()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    report = yield
    if report.when == "call":
        item.stash[_FAILED] = report.failed
    return report


_FAILED = pytest.StashKey[bool]()


def _run_cluster(request: pytest.FixtureRequest, world: Cluster) -> Iterator[Cluster]:
    world.start_orchestration()
    yield world
    if request.node.stash.get(_FAILED, False):
        sys.stderr.write(world.logs() + "\n")
    world.close()


@pytest.fixture
def cluster(request: pytest.FixtureRequest, tools: Tools, database: Database, tmp_path: Path) -> Iterator[Cluster]:
    """The test's database with the orchestration running (start hosts with ``start_*``)."""
    yield from _run_cluster(request, Cluster(tools, database, tmp_path))


@pytest.fixture
def queue_db_cluster(request: pytest.FixtureRequest, tools: Tools, queue_db_templates: tuple[str, str],
                     tmp_path: Path) -> Iterator[Cluster]:
    """``cluster`` with the queues in a database of their own (issue #30 item 3): a main database
    (the task tables, no PGMQ) and a queue database cloned from ``queue_db_templates``; every
    process started, upstream's worker included, gets PGMQ_DATABASE_URL."""
    name = f"pytest_{os.getpid()}_{next(_counter)}"
    names = (f"{name}_main", f"{name}_queues")
    main, queues = create_databases(tools, *names, template=queue_db_templates)
    try:
        yield from _run_cluster(request, Cluster(tools, Database(main), tmp_path, queue_db=Database(queues)))
    finally:
        drop_databases(tools, *names)


@dataclass(frozen=True)
class BrokerCluster:
    """A ``Cluster`` in RabbitMQ mode, the broker and the test's vhost on it."""
    cluster: Cluster
    broker: Broker
    vhost: str

    def queues(self) -> dict[str, dict[str, int]]:
        return self.broker.queues(self.vhost)


@pytest.fixture
def rabbitmq_cluster(request: pytest.FixtureRequest, tools: Tools, database: Database, broker: Broker,
                     tmp_path: Path) -> Iterator[BrokerCluster]:
    """``cluster`` on RabbitMQ: a vhost of its own on the test broker (deleted afterwards, with
    whatever its queues hold), the orchestration running on it."""
    vhost = f"pytest_{os.getpid()}_{next(_counter)}"
    broker.create_vhost(vhost)
    try:
        world = Cluster(tools, database, tmp_path, broker_url=broker.vhost_url(vhost))
        for running in _run_cluster(request, world):
            yield BrokerCluster(running, broker, vhost)
    finally:
        broker.delete_vhost(vhost)

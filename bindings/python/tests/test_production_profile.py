"""README's "Production", followed (issue #30 item 4): docker-compose.yml's ``production`` profile run
without a Docker engine, from the built binaries.

The profile is read from docker-compose.yml itself (PyYAML), and each of our processes is run with the
command, the entrypoint and the environment the profile and the Dockerfile give it. Only what a
container engine would do is done by hand:
- the worker image's file system is staged by ``scripts/container/build --binary`` (the Dockerfile's
  builder step, with the debug binary; as ContainerFilesTests does); the ``orchestration`` target's is
  the build context (the repository) with ``tasker-dev`` as its ENTRYPOINT;
- each bind mount is copied into that file system; the host directory ``./deploy/tls`` is filled by the
  profile's own ``deploy/production/make-dev-certs``; absolute container paths (in the environment and
  in mounted configuration files) are moved under the staged root;
- host names of the profile's services become the test's: each PostgreSQL service a database of its own
  on scripts/test's cluster (created empty: ``migrate`` installs everything), the OpenTelemetry
  Collector an OTLP receiver in this process (otlp_receiver.py, as test_traces.py);
- listeners bind free loopback ports instead of the published ones; ``migrate`` gets PGMQ's SQL script,
  the test cluster being plain Debian PostgreSQL without the ``pgmq`` extension the profile's image has.

Then, in README's order: the databases, ``migrate`` (both), ``tasker-worker config check`` with the
worker's environment (and its configuration equals the image's production configuration but for TLS),
the orchestration and the worker answering over HTTPS (and gRPC over TLS) with the profile's CA, the
image's health check, one task created through the task API that completes with its queue messages in
the queue database, and its spans at the collector."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit, urlunsplit

import grpc
import pytest
import yaml

from conftest import REPO, Process, Tools, free_port, psql
from otlp_receiver import OTLPReceiver, ReceivedSpan

PROFILE = "production"
EXPECTED_SERVICES = {"postgres-production", "postgres-queues", "migrate-production", "otel-collector",
                     "orchestration-production", "worker-production"}
#: The keys in which the profile's mounted overlays differ from the images' own production configuration.
TLS_DIFFERENCES = {
    "worker.web.tls_enabled", "worker.web.tls_cert_path", "worker.web.tls_key_path",
    "worker.grpc.tls_enabled", "worker.grpc.tls_cert_path", "worker.grpc.tls_key_path",
    "worker.orchestration_client.base_url",
}


# ---- docker-compose.yml and the Dockerfile, read as an engine reads them ----

def _interpolate(value: Any) -> Any:
    """Compose's ``${VAR:-default}`` / ``${VAR}`` in a value, with the defaults: the test does not
    read the shell's variables (a run must not depend on them)."""
    if not isinstance(value, str):
        return value

    def replace(match: re.Match[str]) -> str:
        assert match.group(2) is not None, f"${{{match.group(1)}}} has no default: the profile must run as written"
        return match.group(2)
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}", replace, value)


def _profile() -> dict[str, dict[str, Any]]:
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    return {name: service for name, service in compose["services"].items() if PROFILE in service.get("profiles", [])}


@dataclass
class Stage:
    name: str | None
    base: str
    workdir: str = "/"
    env: dict[str, str] = field(default_factory=dict)
    entrypoint: list[str] | None = None
    cmd: list[str] | None = None


def _dockerfile() -> dict[str, Stage]:
    """The Dockerfile's stages by name (the last one also as ``runtime``): WORKDIR, ENV, ENTRYPOINT
    and CMD, inherited from the stage it is built FROM."""
    lines, pending = [], ""
    for raw in (REPO / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        lines.append(pending + line)
        pending = ""
    stages: dict[str, Stage] = {}
    current: Stage | None = None
    for line in lines:
        keyword, _, arguments = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            words = arguments.split()
            name = words[2] if len(words) >= 3 and words[1].lower() == "as" else None
            parent = stages.get(words[0])
            current = Stage(name, words[0], parent.workdir if parent else "/", dict(parent.env) if parent else {},
                            parent.entrypoint if parent else None, parent.cmd if parent else None)
            if name:
                stages[name] = current
        elif current is None:
            continue
        elif keyword == "WORKDIR":
            current.workdir = arguments.strip()
        elif keyword == "ENV":
            for word in shlex.split(arguments):
                key, _, value = word.partition("=")
                current.env[key] = value
        elif keyword == "ENTRYPOINT":
            current.entrypoint, current.cmd = json.loads(arguments), None
        elif keyword == "CMD":
            current.cmd = json.loads(arguments)
    assert current is not None
    stages["runtime"] = current
    return stages


# ---- the test's stand-ins for the engine ----

@dataclass
class Container:
    """One service as it would run: its file system under ``root``, working directory, environment and argv."""
    name: str
    root: Path
    workdir: Path
    env: dict[str, str]
    argv: list[str]

    def run(self, arguments: list[str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        argv = self.argv if arguments is None else [self.argv[0], *arguments]
        return subprocess.run(argv, env=self.env, cwd=self.workdir, capture_output=True, text=True, timeout=timeout)

    def start(self, log_dir: Path) -> Process:
        return Process(self.argv, self.env, log_dir / f"{self.name}.log", cwd=self.workdir)


def _mount(root: Path, service: dict[str, Any], host_sources: dict[str, Path]) -> None:
    """The service's bind mounts, copied into ``root``; a mounted TOML file gets the container paths of
    the other mounts moved under ``root`` (the TLS files it names)."""
    mounts = []
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        assert source.startswith("./"), f"{volume}: the profile mounts only files of the repository"
        host = host_sources.get(source, REPO / source)
        assert host.exists(), f"{volume}: {host} does not exist"
        mounts.append((host, target))
    for host, target in mounts:
        destination = root / target.lstrip("/")
        if destination.is_symlink() or destination.is_file():
            destination.unlink()
        elif destination.is_dir():
            shutil.rmtree(destination)
        destination.parent.mkdir(parents=True, exist_ok=True)
        if host.is_dir():
            shutil.copytree(host, destination)
            continue
        text = host.read_text()
        if destination.suffix == ".toml":
            for _, other in mounts:
                text = text.replace(f'"{other}/', f'"{root}{other}/')
        destination.write_text(text)


@dataclass(frozen=True)
class Hosts:
    """Where the profile's service names point in the test: databases and the collector."""
    databases: dict[str, str]   # service name → the test's database URL (host, port, database)
    collector: str              # the OTLP receiver's base URL

    def url(self, value: str, services: dict[str, dict[str, Any]]) -> str:
        parts = urlsplit(value)
        if parts.hostname in self.databases:
            test = urlsplit(self.databases[parts.hostname])
            netloc = (f"{parts.username}:{parts.password}@" if parts.password else f"{parts.username}@") \
                + f"{test.hostname}:{test.port}"
            return urlunsplit(parts._replace(netloc=netloc, path=test.path))
        if parts.hostname == "otel-collector":
            return self.collector
        assert parts.hostname not in services, f"{value}: no stand-in for the service {parts.hostname}"
        return value


def _container(name: str, service: dict[str, Any], services: dict[str, dict[str, Any]], stage: Stage, root: Path,
               executables: dict[str, Path], hosts: Hosts, host_sources: dict[str, Path],
               extra: dict[str, str]) -> Container:
    _mount(root, service, host_sources)
    env: dict[str, str] = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root),
                           "TMPDIR": os.environ.get("TMPDIR", "/tmp")}
    for key, value in {**stage.env, **{k: str(_interpolate(v)) for k, v in service.get("environment", {}).items()}}.items():
        if "://" in value:
            value = hosts.url(value, services)
        elif value.startswith("/"):
            value = f"{root}{value}"
        elif re.fullmatch(r"0\.0\.0\.0:\d+", value):
            value = f"127.0.0.1:{free_port()}"   # the engine's port mapping, on free loopback ports
        env[key] = value
    env.update(extra)
    entrypoint = list(stage.entrypoint or [])
    entrypoint[0] = str(executables.get(entrypoint[0], f"{root}{entrypoint[0]}"))
    workdir = root / stage.workdir.lstrip("/")
    return Container(name, root, workdir, env, entrypoint + list(service.get("command") or stage.cmd or []))


# ---- clients with the profile's CA ----

def _https(url: str, context: ssl.SSLContext, body: dict[str, Any] | None = None,
           method: str | None = None) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _wait(description: str, condition: Callable[[], bool], processes: list[Process], timeout: float = 120) -> None:
    """Until ``condition()``; fails when one of ``processes`` exits first, or after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        for process in processes:
            if process.process.poll() is not None:
                raise AssertionError(f"{process.argv[-1]} exited ({process.process.returncode}) before {description}\n"
                                     f"{process.log_tail()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {description} within {timeout} s\n" + "\n".join(p.log_tail() for p in processes))
        time.sleep(0.2)


def _answers(url: str, context: ssl.SSLContext) -> bool:
    try:
        return _https(url, context)[0] == 200
    except OSError:
        return False


def _grpc_serving(address: str, ca: bytes) -> bool:
    """grpc.health.v1.Health/Check over TLS, trusting only the profile's CA (raw protobuf: an empty
    request; SERVING is field 1 = 1)."""
    with grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates=ca)) as channel:
        check = channel.unary_unary("/grpc.health.v1.Health/Check")
        try:
            return check(b"", timeout=5) == b"\x08\x01"
        except grpc.RpcError:
            return False


def _config(text: str) -> dict[str, str]:
    """``config check``'s TOML output as dotted keys → values (comments dropped)."""
    values, section = {}, ""
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        if line.startswith("["):
            section = line.strip("[] ")
            continue
        key, _, value = line.partition(" = ")
        values[f"{section}.{key}"] = value
    return values


# ---- the test ----

def test_the_production_profile_runs_as_the_readme_says(tools: Tools, tmp_path: Path) -> None:
    services = _profile()
    assert set(services) == EXPECTED_SERVICES, sorted(services)
    stages = _dockerfile()

    # The order README gives: databases (healthy) → migrate (done) → orchestration → workers.
    databases = [name for name, s in services.items() if "pgmq" in s.get("image", "")]
    assert sorted(databases) == ["postgres-production", "postgres-queues"]
    for name in databases:
        assert services[name].get("healthcheck"), name
    depends = {name: {d: c["condition"] for d, c in s.get("depends_on", {}).items()} for name, s in services.items()}
    assert depends["migrate-production"] == {d: "service_healthy" for d in databases}
    for name in ("orchestration-production", "worker-production"):
        assert depends[name]["migrate-production"] == "service_completed_successfully", name
        assert all(depends[name][d] == "service_healthy" for d in databases), name
    assert depends["worker-production"]["orchestration-production"] == "service_started"
    # Published on the loopback interface only, the listeners' ports: the worker's those of the `server`
    # profile's worker (which ContainerDefinitionTests ties to EXPOSE and the configuration).
    for name, service in services.items():
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:") and port.count(":") == 2, (name, port)
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]

    def container_ports(service: dict[str, Any]) -> set[str]:
        return {port.rsplit(":", 1)[1] for port in service.get("ports", [])}
    assert container_ports(services["worker-production"]) == container_ports(compose["worker"])
    orchestration_address = services["orchestration-production"]["environment"]["TASKER_ORCHESTRATION_BIND_ADDRESS"]
    assert container_ports(services["orchestration-production"]) == {orchestration_address.rsplit(":", 1)[1]}
    # The collector takes OTLP/HTTP where the processes send it.
    collector = yaml.safe_load((REPO / "deploy/production/otel-collector.yaml").read_text())
    otlp_port = urlsplit(services["worker-production"]["environment"]["OTEL_EXPORTER_OTLP_ENDPOINT"]).port
    assert collector["receivers"]["otlp"]["protocols"]["http"]["endpoint"].endswith(f":{otlp_port}")
    assert "otlp" in collector["service"]["pipelines"]["traces"]["receivers"]

    # ./deploy/tls, made as README says (deploy/production/make-dev-certs), in a directory of the test.
    certificates = tmp_path / "tls"
    made = subprocess.run([str(REPO / "deploy/production/make-dev-certs"), str(certificates)],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    ca = (certificates / "ca.pem").read_bytes()
    client = ssl.create_default_context(cafile=str(certificates / "ca.pem"))
    host_sources = {"./deploy/tls": certificates}

    # One empty database per PostgreSQL service (POSTGRES_DB names the database its URLs use).
    created: dict[str, str] = {}
    admin = urlsplit(tools.admin_url)
    for name in databases:
        database = f"production_{name.replace('-', '_')}_{os.getpid()}"
        psql(tools.admin_url, f"DROP DATABASE IF EXISTS {database}")
        psql(tools.admin_url, f"CREATE DATABASE {database} OWNER tasker")
        created[name] = urlunsplit(admin._replace(path="/" + database))
    receiver = OTLPReceiver()
    hosts = Hosts(created, receiver.endpoint)
    processes: list[Process] = []
    try:
        # The worker image, staged; the orchestration target: the build context with tasker-dev.
        image = tmp_path / "worker-image"
        staged = subprocess.run([str(REPO / "scripts/container/build"), "--binary", str(tools.worker_binary), str(image)],
                                capture_output=True, text=True, timeout=300)
        assert staged.returncode == 0, staged.stderr
        orchestration_root = tmp_path / "orchestration-image"
        build_context = orchestration_root / stages["orchestration"].workdir.lstrip("/")
        build_context.mkdir(parents=True)
        for entry in REPO.iterdir():
            if entry.name == "config":
                shutil.copytree(entry, build_context / "config", symlinks=True)
            elif entry.name not in (".git", ".build", ".tasker"):
                (build_context / entry.name).symlink_to(entry)
        executables = {"/usr/local/bin/tasker-dev": tools.dev_binary}

        def container(name: str, root: Path, stage: Stage, extra: dict[str, str] | None = None) -> Container:
            return _container(name, services[name], services, stage, root, executables, hosts, host_sources, extra or {})

        worker_ports = {"TASKER_WEB_BIND_ADDRESS": f"127.0.0.1:{free_port()}",
                        "TASKER_WORKER_GRPC_BIND_ADDRESS": f"127.0.0.1:{free_port()}"}
        migrate = container("migrate-production", image, stages["runtime"], {"TASKER_PGMQ_SQL": tools.pgmq_sql})
        worker = container("worker-production", image, stages["runtime"], worker_ports)
        orchestration = container("orchestration-production", orchestration_root, stages["orchestration"])
        tasks_db = migrate.env["DATABASE_URL"]
        queues_db = migrate.env.get("PGMQ_DATABASE_URL") or tasks_db
        assert urlsplit(tasks_db).path == urlsplit(created["postgres-production"]).path
        if "PGMQ_DATABASE_URL" in migrate.env:
            assert urlsplit(queues_db).path == urlsplit(created["postgres-queues"]).path

        # migrate: the schema in the task database, PGMQ in the queue database.
        migrated = migrate.run()
        assert migrated.returncode == 0, migrated.stderr[-3000:]
        assert psql(tasks_db, "SELECT count(*) FROM tasker.task_namespaces") == "0"
        assert psql(queues_db, "SELECT count(*) FROM pg_namespace WHERE nspname = 'pgmq'") == "1"
        again = migrate.run()
        assert again.returncode == 0, again.stderr[-3000:]

        # The worker's configuration loads: `config check` through the image's entrypoint.
        checked = worker.run(["config", "check"])
        assert checked.returncode == 0, checked.stderr
        loaded = _config(checked.stdout)
        for listener in ("worker.web", "worker.grpc"):
            assert loaded[f"{listener}.tls_enabled"] == "true", listener
            assert loaded[f"{listener}.tls_cert_path"] == json.dumps(f"{image}/etc/tasker/tls/worker.pem")
        if "PGMQ_DATABASE_URL" in worker.env:
            assert urlsplit(queues_db).path in loaded["common.pgmq_database.url"]
        # … and it is the image's production configuration but for the TLS keys.
        image_own = subprocess.run(worker.argv[:1] + ["config", "check"], env=worker.env, cwd=REPO,
                                   capture_output=True, text=True, timeout=120)
        assert image_own.returncode == 0, image_own.stderr
        own = _config(image_own.stdout)
        differences = {key for key in own.keys() | loaded.keys() if own.get(key) != loaded.get(key)}
        assert differences == TLS_DIFFERENCES, sorted(differences)

        # The orchestration's overlay: the repository's production overlay plus TLS.
        overlay = (REPO / "deploy/production/orchestration.toml").read_text()
        for line in (REPO / "config/tasker/environments/production/orchestration.toml").read_text().splitlines():
            assert line.startswith("#") or line in overlay, f"deploy/production/orchestration.toml lacks {line!r}"

        # The orchestration, then the worker (README's order), both on HTTPS with the profile's CA.
        orchestrator = orchestration.start(tmp_path)
        processes.append(orchestrator)
        api = f"https://{orchestration.env['TASKER_ORCHESTRATION_BIND_ADDRESS']}"
        _wait("HTTPS answer of the orchestration's /health", lambda: _answers(f"{api}/health", client), processes)
        running = worker.start(tmp_path)
        processes.append(running)
        rest = f"https://{worker_ports['TASKER_WEB_BIND_ADDRESS']}"
        _wait("HTTPS answer of the worker's /health/ready", lambda: _answers(f"{rest}/health/ready", client), processes)
        _wait("SERVING from the worker's gRPC health over TLS",
              lambda: _grpc_serving(worker_ports["TASKER_WORKER_GRPC_BIND_ADDRESS"], ca), processes)
        status, metrics = _https(f"{rest}/metrics", client)
        assert status == 200 and b"tasker_worker_info" in metrics
        # TLS only: a plaintext request gets no HTTP answer; a client without the CA refuses the server.
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://{worker_ports['TASKER_WEB_BIND_ADDRESS']}/health", timeout=10)
        with pytest.raises(urllib.error.URLError) as refused:
            _https(f"{api}/health", ssl.create_default_context())
        assert isinstance(refused.value.reason, ssl.SSLCertVerificationError), refused.value
        # The image's health check, as the profile runs it (its HTTPS fallback, no client certificate).
        probe = services["worker-production"]["healthcheck"]["test"]
        assert probe[0] == "CMD"
        checked_health = subprocess.run([f"{image}{probe[1]}", *probe[2:]], env=worker.env,
                                        capture_output=True, text=True, timeout=30)
        assert checked_health.returncode == 0, checked_health.stderr

        # One task through the task API, to completion.
        status, body = _https(f"{api}/v1/tasks", client, {
            "namespace": "diagnostics", "name": "smoke_test", "version": "1.0.0", "context": {"profile": PROFILE},
            "initiator": "test_production_profile", "source_system": "pytest", "reason": "README Production"})
        assert status == 201, body
        task = json.loads(body)["task_uuid"]
        state: dict[str, Any] = {}

        def finished() -> bool:
            state.update(json.loads(_https(f"{api}/v1/tasks/{task}", client)[1]))
            return state.get("status") in ("complete", "error", "cancelled")
        _wait(f"end of task {task}", finished, processes)
        assert state["status"] == "complete", state
        assert state["completed_steps"] == state["total_steps"] == 3, state
        # Its step messages went through the queue database (and the task's state is in the task database).
        archived = psql(queues_db, "SELECT count(DISTINCT message->>'step_uuid') FROM pgmq.a_worker_diagnostics_queue"
                                   f" WHERE message->>'task_uuid' = '{task}'")
        assert archived == "3", archived
        assert psql(tasks_db, f"SELECT count(*) FROM tasker.workflow_steps WHERE task_uuid = '{task}'") == "3"

        # Its spans reached the collector: the orchestration's and the worker's, one trace.
        names = {s["environment"]["OTEL_SERVICE_NAME"] for n, s in services.items() if n.endswith("-production")
                 and "OTEL_SERVICE_NAME" in s.get("environment", {})}
        assert names == {"tasker-orchestration", "tasker-worker"}

        def task_trace(spans: list[ReceivedSpan]) -> list[ReceivedSpan]:
            traces = {s.trace_id for s in spans if s.attributes.get("tasker.task_uuid") == task}
            assert len(traces) <= 1, f"task {task} in several traces: {traces}"
            return [s for s in spans if s.trace_id in traces]

        def traced(spans: list[ReceivedSpan]) -> bool:
            mine = task_trace(spans)
            return (sum(s.name == "tasker.step" and s.service == "tasker-worker" for s in mine) == 3
                    and any(s.name == "tasker.task.initialize" and s.service == "tasker-orchestration" for s in mine))
        mine = task_trace(receiver.wait_for(traced, timeout=120))
        steps = {s.span_id for s in mine if s.name == "tasker.step"}
        for phase in ("tasker.step.claim", "tasker.step.handler", "tasker.step.result"):
            assert {s.parent_span_id for s in mine if s.name == phase} == steps, phase

        # SIGTERM: both stop cleanly.
        assert running.terminate() == 0, running.log_tail()
        assert orchestrator.terminate() == 0, orchestrator.log_tail()
    finally:
        for process in reversed(processes):
            process.kill()
        receiver.close()
        shutil.rmtree(tmp_path / "worker-image", ignore_errors=True)   # a copy of the 200 MB debug binary
        for url in created.values():
            psql(tools.admin_url, f"DROP DATABASE IF EXISTS {urlsplit(url).path.lstrip('/')} WITH (FORCE)")

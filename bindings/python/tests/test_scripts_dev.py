"""scripts/dev as a new user runs it: with its output through a pipe (`scripts/dev 2>&1 | tee dev.log`),
Ctrl-C must still stop everything it started. The terminal's Ctrl-C sends SIGINT to the whole
foreground pipeline, so `tee` dies too and the script's next log line meets a closed pipe; before
the fix that SIGPIPE killed the script ahead of its cleanup, leaving the worker, the orchestration
and PostgreSQL running. And `scripts/dev --transport rabbitmq`: the whole system on a private broker,
the example submitter and `tasker-dev submit` through it, Ctrl-C stopping the broker too."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import REPO, psql

# Both tests run scripts/dev in this checkout (.tasker/pg, .tasker/rabbitmq, its ports): one at a time,
# whichever pytest process runs them (conftest's resource locks).
pytestmark = pytest.mark.resource("checkout_dev_environment")

POSTMASTER_PID = REPO / ".tasker" / "pg" / "data" / "postmaster.pid"
BROKER_AREA = REPO / ".tasker" / "rabbitmq"
BROKER_URL_FILE = REPO / ".tasker" / "rabbitmq.url"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _postmaster() -> int | None:
    try:
        return int(POSTMASTER_PID.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _skip_when_scripts_dev_runs() -> None:
    running = _postmaster()
    if running is not None and _alive(running):
        pytest.skip("a scripts/dev PostgreSQL is already running in .tasker/pg (this test would stop it)")
    if (BROKER_AREA / "env").exists():
        pytest.skip("a scripts/dev RabbitMQ is in .tasker/rabbitmq (this test would stop it)")


def _stop_leftovers(pipeline: subprocess.Popen, started: list[int]) -> None:
    """What a failed run left behind: the script's process group, then each process it started
    (the last, the postmaster, with SIGINT: its fast shutdown)."""
    if pipeline.poll() is None:
        os.killpg(pipeline.pid, signal.SIGKILL)
        pipeline.wait(timeout=10)
    for pid in started:
        if _alive(pid):
            os.kill(pid, signal.SIGINT if pid == started[-1] else signal.SIGKILL)


def _pgmq_messages_since(database: str, since: float) -> int:
    """Messages sent through any PGMQ queue of ``database`` (queued or archived) since the epoch
    second ``since``: the development database outlives runs, so earlier runs' messages do not count."""
    queues = [q for q in psql(database, "SELECT string_agg(queue_name, ' ') FROM pgmq.meta").split() if q]
    counts = [f"(SELECT count(*) FROM pgmq.{table}_{queue} WHERE enqueued_at >= to_timestamp({since}))"
              for queue in queues for table in ("q", "a")]
    return int(psql(database, f"SELECT {' + '.join(counts) or '0'}"))


def _start_piped(arguments: str, log: Path) -> tuple[subprocess.Popen, str]:
    """``scripts/dev ARGUMENTS 2>&1 | tee LOG`` as typed in a shell, in a session of its own (its
    process group is what a terminal's Ctrl-C reaches: bash, scripts/dev and tee); returns it and
    its output once it serves."""
    pipeline = subprocess.Popen(
        ["bash", "-c", f"'{REPO}/scripts/dev' {arguments} 2>&1 | tee '{log}' >/dev/null"],
        cwd=REPO, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 600
    text = ""
    while "Ctrl-C drains and stops everything" not in text:
        if pipeline.poll() is not None or time.monotonic() > deadline:
            if pipeline.poll() is None:
                os.killpg(pipeline.pid, signal.SIGINT)
                pipeline.wait(timeout=120)
            raise AssertionError(f"scripts/dev did not serve (within 600 s):\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.5)
        text = log.read_text(errors="replace")
    return pipeline, text


def test_ctrl_c_on_a_piped_scripts_dev_stops_the_worker_the_orchestration_and_postgres(tmp_path: Path) -> None:
    _skip_when_scripts_dev_runs()
    log = tmp_path / "dev.log"
    pipeline, text = _start_piped("--no-submit", log)
    started: list[int] = []
    try:
        worker = int(re.search(r"worker \(pid (\d+)\)", text).group(1))
        orchestration = int(re.search(r"orchestration \(pid (\d+)\)", text).group(1))
        postmaster = _postmaster()
        assert postmaster is not None and _alive(postmaster)
        started = [worker, orchestration, postmaster]
        console = re.search(r"task console +(http://\S+)", text).group(1)
        with urllib.request.urlopen(console, timeout=10) as response:   # the banner's console URL serves the page
            assert response.status == 200 and b"<title>Tasker task console</title>" in response.read()
        _banner_commands_work_pasted_elsewhere(text, tmp_path)
        _first_handler_package_runs_on_the_built_worker(text, tmp_path)

        os.killpg(pipeline.pid, signal.SIGINT)   # Ctrl-C

        deadline = time.monotonic() + 120
        while any(_alive(pid) for pid in (worker, orchestration, postmaster)):
            assert time.monotonic() < deadline, (
                f"still running 120 s after Ctrl-C: worker {_alive(worker)}, orchestration {_alive(orchestration)}, "
                f"postgres {_alive(postmaster)}\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)
        pipeline.wait(timeout=60)
    finally:
        _stop_leftovers(pipeline, started)


def _paste(command: str, directory: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """``command`` pasted into a new shell in ``directory`` (nothing of this test's environment but
    PATH and HOME)."""
    env = {name: os.environ[name] for name in ("PATH", "HOME") if name in os.environ}
    return subprocess.run(["bash", "-c", command], cwd=directory, env=env, capture_output=True, text=True, timeout=timeout)


def _banner_commands_work_pasted_elsewhere(text: str, tmp_path: Path) -> None:
    """Issue #31 item 2: every command of the banner works pasted into a new shell in another
    directory: the submit line twice (a new context each time), the task list, curl, the grpcio line
    (only printed with a Python that has grpcio), and no grpcurl line without grpcurl."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    submit = re.search(r"submit by hand (.*)", text).group(1)
    for attempt in (1, 2):
        done = _paste(submit, elsewhere)
        assert done.returncode == 0 and "complete" in done.stdout, f"paste {attempt}: {submit}\n{done.stdout}{done.stderr}"
    listed = _paste(re.search(r"task status +(.*)", text).group(1), elsewhere, timeout=60)
    assert listed.returncode == 0 and "linear_workflow" in listed.stdout, f"{listed.stdout}{listed.stderr}"
    for line in re.findall(r"try: +(curl .*)", text):
        assert _paste(line, elsewhere, timeout=30).returncode == 0, line
    grpcio = re.search(r"or \(grpcio\): (.*?)   # ", text)
    if grpcio:
        checked = _paste(grpcio.group(1), elsewhere, timeout=60)
        assert checked.returncode == 0 and "\\x08\\x01" in checked.stdout, f"{grpcio.group(1)}\n{checked.stdout}{checked.stderr}"
    else:
        assert "no Python here has grpcio" in text, text[-3000:]
    if subprocess.run(["bash", "-c", "command -v grpcurl"], capture_output=True).returncode != 0:
        assert "grpcurl -plaintext" not in text and "grpcurl is not installed" in text, text[-3000:]


def _first_handler_package_runs_on_the_built_worker(text: str, tmp_path: Path) -> None:
    """Issue #31 item 1, as README and the banner say: a copy of Examples/first-handler anywhere, its
    own `swift build` (the handler API and host only: no worker compiled), then the banner's line runs
    it on the libTaskerWorkerFFI.so scripts/dev built; a payments task completes with both results, a
    typed input that does not fit fails for good naming its key path, SIGTERM stops it cleanly."""
    package = tmp_path / "first-handler"
    shutil.copytree(REPO / "Examples" / "first-handler", package, ignore=shutil.ignore_patterns(".build"))
    manifest = package / "Package.swift"
    manifest.write_text(manifest.read_text().replace('path: "../.."', f'path: "{REPO}"'))
    started = time.monotonic()
    built = subprocess.run(["swift", "build"], cwd=package, capture_output=True, text=True, timeout=1200,
                           env={**os.environ, "SWIFT_DETERMINISTIC_HASHING": "1"})
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    print(f"first-handler package: cold swift build {time.monotonic() - started:.0f} s")
    assert "Compiling TaskerWorker " not in built.stdout and "Compiling Hummingbird" not in built.stdout
    run_line = re.search(r"\] +(DATABASE_URL=.*swift run PaymentsWorker)", text).group(1)
    database = re.search(r"\] database +(\S+)", text).group(1)
    env = {name: os.environ[name] for name in ("PATH", "HOME") if name in os.environ}
    log = tmp_path / "payments-worker.log"
    with open(log, "w") as output:
        host = subprocess.Popen(["bash", "-c", f"exec env {run_line}"], cwd=package, env=env, stdout=output,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while psql(database, "SELECT count(*) FROM tasker.named_tasks nt JOIN tasker.task_namespaces ns USING (task_namespace_uuid)"
                             " WHERE ns.name = 'payments' AND nt.name = 'checkout'") == "0":
            assert host.poll() is None, f"the handler package exited ({host.returncode})\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"payments/checkout not registered in 180 s\n{log.read_text()[-3000:]}"
            time.sleep(0.5)
        submit = re.search(r"submit by hand (.*?)\S+/tasker-dev submit", text).group(1)
        tasker_dev = re.search(r"(\S+/tasker-dev) submit", text).group(1)
        amount = 1000 + int(time.time()) % 100000
        good = _paste(f"{submit}{tasker_dev} submit payments checkout 1.0.0 --context '{{\"amount\": {amount}}}' --wait", tmp_path)
        assert good.returncode == 0 and "complete" in good.stdout, f"{good.stdout}{good.stderr}\n{log.read_text()[-3000:]}"
        assert f"charged {amount} EUR" in good.stdout, good.stdout
        bad = _paste(f"{submit}{tasker_dev} submit payments checkout 1.0.0 --context '{{\"amount\": \"abc{amount}\"}}' --wait", tmp_path)
        assert "error" in bad.stdout and "context.amount" in bad.stdout, f"{bad.stdout}{bad.stderr}"
        task = bad.stdout.split()[0]
        attempts = psql(database, f"SELECT ws.attempts FROM tasker.workflow_steps ws JOIN tasker.named_steps ns USING (named_step_uuid)"
                                  f" WHERE ws.task_uuid = '{task}' AND ns.name = 'charge_card'")
        assert attempts == "1", f"a typed input that does not fit was retried ({attempts} attempts)"
        os.killpg(host.pid, signal.SIGTERM)
        assert host.wait(timeout=120) == 0, log.read_text()[-3000:]
    finally:
        if host.poll() is None:
            os.killpg(host.pid, signal.SIGKILL)
            host.wait(timeout=10)


def _broker_pid() -> int | None:
    """beam.smp of scripts/dev's broker (rabbitmq-server writes its pid file once it runs)."""
    try:
        return int((BROKER_AREA / "pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _scripts_dev_tasks_complete(database_url: str) -> int:
    """Tasks that scripts/dev's example submitter created and that completed."""
    return int(psql(database_url,
                    "SELECT count(*) FROM tasker.tasks t JOIN tasker.task_transitions tt"
                    " ON tt.task_uuid = t.task_uuid AND tt.most_recent"
                    " WHERE t.initiator = 'scripts/dev' AND tt.to_state = 'complete'"))


def _check_management_ui(address: str) -> None:
    """The banner's management URL answers the management API with the credentials of the URL file."""
    broker = urlsplit(BROKER_URL_FILE.read_text().strip())
    request = urllib.request.Request(address + "api/overview", headers={
        "Authorization": "Basic " + base64.b64encode(f"{broker.username}:{broker.password}".encode()).decode()})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200 and "management_version" in json.loads(response.read())


def test_scripts_dev_on_rabbitmq_runs_tasks_through_the_broker_and_ctrl_c_stops_the_broker_too(tmp_path: Path) -> None:
    """`scripts/dev --transport rabbitmq`: the banner names the transport and the broker (password
    hidden), its management UI (which answers) and how to list its queues; the example submitter's tasks and the banner's `submit by
    hand` command complete with nothing through PGMQ; Ctrl-C stops the worker, the orchestration,
    PostgreSQL and the broker, and removes the file holding its URL."""
    _skip_when_scripts_dev_runs()
    log = tmp_path / "dev.log"
    # The development database outlives runs (an earlier PGMQ run's messages stay in its archives).
    started_at = time.time()
    pipeline, text = _start_piped("--transport rabbitmq --rate 4", log)
    started: list[int] = []
    try:
        worker = int(re.search(r"worker \(pid (\d+)\)", text).group(1))
        orchestration = int(re.search(r"orchestration \(pid (\d+)\)", text).group(1))
        postmaster, broker = _postmaster(), _broker_pid()
        assert postmaster is not None and _alive(postmaster)
        assert broker is not None and _alive(broker), text[-3000:]
        started = [worker, orchestration, broker, postmaster]
        database = re.search(r"\] database +(\S+)", text).group(1)
        transport = re.search(r"\] transport +(.*)", text).group(1)
        assert re.match(r"RabbitMQ amqp://guest:\*\*\*@127\.0\.0\.1:\d+/%2F ", transport), transport
        assert "guest:guest" not in text, "the banner shows the broker's password"
        assert re.search(r"queues: +\S+rabbitmqctl-for \S+ list_queues", text), text[-3000:]
        _check_management_ui(re.search(r"management: +(http://\S+)", text).group(1))

        # The banner's command as printed, from another directory (a new number each paste).
        submit = re.search(r"submit by hand (.*)", text).group(1)
        by_hand = subprocess.run(["bash", "-c", submit], cwd=tmp_path, capture_output=True, text=True, timeout=180)
        assert by_hand.returncode == 0 and "complete" in by_hand.stdout, f"{submit}\n{by_hand.stdout}{by_hand.stderr}"
        deadline = time.monotonic() + 60
        while _scripts_dev_tasks_complete(database) == 0:
            assert time.monotonic() < deadline, f"no submitted example task completed in 60 s\n{log.read_text()[-3000:]}"
            time.sleep(1)
        sent = _pgmq_messages_since(database, started_at)
        assert sent == 0, f"{sent} messages went through PGMQ during this run"

        os.killpg(pipeline.pid, signal.SIGINT)   # Ctrl-C

        deadline = time.monotonic() + 120
        while any(_alive(pid) for pid in started):
            assert time.monotonic() < deadline, (
                f"still running 120 s after Ctrl-C: {[pid for pid in started if _alive(pid)]} of worker, orchestration,"
                f" broker, postgres {started}\n{log.read_text(errors='replace')[-3000:]}")
            # The worker and the orchestration drain through the broker: it stops after them.
            assert _alive(broker) or not (_alive(worker) or _alive(orchestration)), "the broker stopped before the drain"
            time.sleep(0.1)
        pipeline.wait(timeout=60)
        assert not BROKER_AREA.exists() and not BROKER_URL_FILE.exists()
    finally:
        _stop_leftovers(pipeline, started)
        if (BROKER_AREA / "env").exists():   # the broker's epmd too
            subprocess.run(["bash", "-c", 'source scripts/lib/common.sh && source scripts/lib/rabbitmq.sh'
                            ' && stop_broker .tasker/rabbitmq'], cwd=REPO, timeout=120)

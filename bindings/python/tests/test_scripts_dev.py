"""scripts/dev as a new user runs it: with its output through a pipe (`scripts/dev 2>&1 | tee dev.log`),
Ctrl-C must still stop everything it started. The terminal's Ctrl-C sends SIGINT to the whole
foreground pipeline, so `tee` dies too and the script's next log line meets a closed pipe; before
the fix that SIGPIPE killed the script ahead of its cleanup, leaving the worker, the orchestration
and PostgreSQL running."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO

POSTMASTER_PID = REPO / ".tasker" / "pg" / "data" / "postmaster.pid"


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


def test_ctrl_c_on_a_piped_scripts_dev_stops_the_worker_the_orchestration_and_postgres(tmp_path: Path) -> None:
    running = _postmaster()
    if running is not None and _alive(running):
        pytest.skip("a scripts/dev PostgreSQL is already running in .tasker/pg (this test would stop it)")
    log = tmp_path / "dev.log"
    # The pipeline as typed in a shell, in a session of its own: its process group is what a
    # terminal's Ctrl-C reaches (bash, scripts/dev and tee).
    pipeline = subprocess.Popen(
        ["bash", "-c", f"'{REPO}/scripts/dev' --no-submit 2>&1 | tee '{log}' >/dev/null"],
        cwd=REPO, stdin=subprocess.DEVNULL, start_new_session=True)
    started: list[int] = []
    try:
        deadline = time.monotonic() + 600
        text = ""
        while "Ctrl-C drains and stops everything" not in text:
            assert pipeline.poll() is None, f"scripts/dev ended before it served:\n{text[-3000:]}"
            assert time.monotonic() < deadline, f"scripts/dev did not start within 600 s:\n{text[-3000:]}"
            time.sleep(0.5)
            text = log.read_text(errors="replace")
        worker = int(re.search(r"worker \(pid (\d+)\)", text).group(1))
        orchestration = int(re.search(r"orchestration \(pid (\d+)\)", text).group(1))
        postmaster = _postmaster()
        assert postmaster is not None and _alive(postmaster)
        started = [worker, orchestration, postmaster]
        submit = re.search(r"submit by hand (.*)", text).group(1)
        console = re.search(r"task console +(http://\S+)", text).group(1)
        with urllib.request.urlopen(console, timeout=10) as response:   # the banner's console URL serves the page
            assert response.status == 200 and b"<title>Tasker task console</title>" in response.read()

        os.killpg(pipeline.pid, signal.SIGINT)   # Ctrl-C

        deadline = time.monotonic() + 120
        while any(_alive(pid) for pid in (worker, orchestration, postmaster)):
            assert time.monotonic() < deadline, (
                f"still running 120 s after Ctrl-C: worker {_alive(worker)}, orchestration {_alive(orchestration)}, "
                f"postgres {_alive(postmaster)}\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)
        pipeline.wait(timeout=60)
        assert submit.startswith("DATABASE_URL='postgresql://"), submit   # works when pasted into a new shell
    finally:
        if pipeline.poll() is None:
            os.killpg(pipeline.pid, signal.SIGKILL)
            pipeline.wait(timeout=10)
        for pid in started:   # what a failed run left behind (SIGINT: the postmaster's fast shutdown)
            if _alive(pid):
                os.kill(pid, signal.SIGINT if pid == started[-1] else signal.SIGKILL)

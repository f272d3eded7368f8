"""The portable wheel (issue #28 item 5): ``build_wheel.sh`` packages this run's library with the
toolchain's libraries it needs, the wheel installs into a fresh venv, and a Python host from that
venv completes a task with the Swift toolchain's directory hidden (a private mount namespace with an
empty tmpfs over it): no library of the toolchain is mapped into the host process.

CI builds once: the wheel packages the test build's library (``--library``), through the same
bundling, RUNPATH and ldd checks as the release wheel (``build_wheel.sh`` without it compiles the
release library first)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from conftest import HOSTS, REPO, Cluster, Process, Tools

#: The root of the Swift toolchain (/opt/swift for /opt/swift/usr/bin/swift).
TOOLCHAIN = Path(os.path.realpath(shutil.which("swift") or "/opt/swift/usr/bin/swift")).parents[2]


@pytest.fixture(scope="module")
def wheel_venv(tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv with the wheel built from this run's library installed (nothing else)."""
    area = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(["bash", str(REPO / "bindings/python/build_wheel.sh"), "--library", str(tools.library),
                            str(area / "dist")], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    wheels = list((area / "dist").glob("tasker_worker_swift-*.whl"))
    assert len(wheels) == 1, wheels
    venv = area / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    installed = subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q", "--no-deps", str(wheels[0])],
                               capture_output=True, text=True, timeout=300,
                               env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    assert installed.returncode == 0, installed.stderr[-3000:]
    yield venv


def test_the_wheel_runs_a_task_with_the_toolchain_out_of_sight(cluster: Cluster, wheel_venv: Path, tmp_path: Path) -> None:
    assert (TOOLCHAIN / "usr/lib/swift/linux/libswiftCore.so").is_file(), f"{TOOLCHAIN} is not the toolchain"
    hidden = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
              'mount -t tmpfs -o size=1m tasker-no-toolchain "$0" && exec "$@"', str(TOOLCHAIN),
              str(wheel_venv / "bin/python"), str(HOSTS / "python_host.py")]
    # No TASKER_WORKER_LIBRARY: the package finds the library it bundles (the host runs outside the
    # checkout, so no .build of it is in reach either).
    host = Process(hidden, cluster.environment({"TASKER_WORKER_LIBRARY": "", "PYTHONPATH": ""}),
                   cluster.directory / "wheel-host.log", cwd=tmp_path)
    cluster.processes.append(host)
    host.wait_for_line("READY")
    task = cluster.submit("py_chain", {"number": 3})
    assert cluster.wait_for_task(task) == "complete", host.log_tail()
    assert cluster.db.result(task, "chain_verify")["result"]["verified"] is True

    mapped = {line.split()[-1] for line in Path(f"/proc/{host.process.pid}/maps").read_text().splitlines()
              if len(line.split()) >= 6 and line.split()[-1].startswith("/")}
    site = str(wheel_venv)
    ours = [path for path in mapped if path.endswith("/libTaskerWorkerFFI.so")]
    assert ours and all(path.startswith(site) for path in ours), ours
    assert not [path for path in mapped if path.startswith(str(TOOLCHAIN) + "/")], sorted(mapped)
    assert any(path.startswith(site) and "libswiftCore.so" in path for path in mapped), sorted(mapped)
    assert host.terminate() == 0, host.log_tail()

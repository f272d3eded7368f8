"""The TypeScript SDK (bindings/typescript): builds its Node-API addon and TypeScript output
(bindings/typescript/build.sh: gcc + Debian's tsc), then runs its `node --test` files, each against
a fresh database with our orchestration and its REST API (the `cluster` fixture). A node test file
that fails fails its test here, with node's output.

Needs: node (>= 20), gcc, the Node headers (/usr/include/node) and tsc (Debian: nodejs, libnode-dev,
node-typescript)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, Cluster, merged_config

PACKAGE = REPO / "bindings" / "typescript"
TESTS = PACKAGE / "test"
TEMPLATES = TESTS / "fixtures" / "templates"
# Node test files that need no database, orchestration or running worker.
UNIT_FILES = ("unit.test.mjs", "worker-unit.test.mjs")
INTEGRATION_FILES = tuple(sorted(p.name for p in TESTS.glob("*.test.mjs") if p.name not in UNIT_FILES))


@pytest.fixture(scope="session")
def built_sdk() -> Path:
    """Builds the addon and dist/ once per session (build.sh)."""
    for tool in ("node", "gcc", os.environ.get("TSC", "tsc")):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} not found: the TypeScript SDK needs nodejs, gcc and node-typescript")
    done = subprocess.run([str(PACKAGE / "build.sh")], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.fail(f"bindings/typescript/build.sh failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return PACKAGE


def _run_node(test_file: str, env: dict[str, str], timeout: float = 900) -> None:
    """Runs one node test file; fails with its output unless every test passed."""
    done = subprocess.run(
        ["node", "--test", "--test-reporter=spec", str(TESTS / test_file)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout,
    )
    output = f"{done.stdout}\n{done.stderr}"
    assert done.returncode == 0, f"node --test {test_file} failed ({done.returncode}):\n{output[-20000:]}"
    assert re.search(r"^ℹ fail 0$", done.stdout, re.M), output[-20000:]
    print(done.stdout)  # the spec report (shown with -s or -rP)


def _worker_config(cluster: Cluster, name: str, settings: dict[str, object]) -> Path:
    """The merged test configuration with ``settings`` applied, for a host's ``config_path``."""
    path = cluster.directory / f"{name}.toml"
    path.write_text(merged_config(REPO, {"common.database.url": cluster.db.url, **settings}))
    return path


@pytest.mark.parametrize("test_file", UNIT_FILES)
def test_unit(built_sdk: Path, tools, test_file: str) -> None:  # noqa: ANN001 - the conftest fixture
    env = dict(os.environ, TASKER_WORKER_LIBRARY=str(tools.library))
    _run_node(test_file, env)


@pytest.mark.parametrize("test_file", INTEGRATION_FILES)
def test_node_suite(built_sdk: Path, cluster: Cluster, test_file: str) -> None:
    orchestration = cluster.restart_orchestration()
    env = cluster.environment({
        "TASKER_TEMPLATE_PATH": str(TEMPLATES),
        "TASKER_TEST_ORCHESTRATION_URL": f"http://{orchestration}",
        # ffi_dispatch completion timeout of 1.5 s (test/timeout.test.mjs).
        "TASKER_TS_TIMEOUT_CONFIG": str(_worker_config(cluster, "worker-completion-timeout", {
            "worker.mpsc_channels.ffi_dispatch.completion_timeout_ms": 1500})),
        # The orchestration client pointed at this orchestration (test/client.test.mjs).
        "TASKER_TS_CLIENT_CONFIG": str(_worker_config(cluster, "worker-client", {
            "worker.orchestration_client.base_url": f"http://{orchestration}",
            "worker.orchestration_client.timeout_ms": 10000,
            "worker.orchestration_client.max_retries": 1})),
    })
    _run_node(test_file, env)

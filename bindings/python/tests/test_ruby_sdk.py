"""The Ruby SDK (bindings/ruby, gem tasker_worker_swift, module TaskerCore): its minitest suites,
run by Debian's ruby as children of these tests. The unit suite needs no database; the
integration suites get this test's database and our orchestration's REST API through the
environment (TASKER_TEST_ORCHESTRATION_URL, DATABASE_URL, TASKER_WORKER_LIBRARY, ...) and start
their embedded workers themselves (bindings/ruby/test/integration)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, Cluster

RUBY = REPO / "bindings" / "ruby"
TEMPLATES = RUBY / "test" / "fixtures" / "templates"


def minitest(files: list[str], env: dict[str, str], log: Path, timeout: float = 900) -> str:
    """Runs the minitest files (relative to bindings/ruby) in one Ruby process; fails with its output
    unless every test ran and passed (no failure, error or skip)."""
    loader = "ARGV.dup.each { |f| require File.expand_path(f) }; ARGV.clear"
    done = subprocess.run(["ruby", "-w", "-Ilib", "-Itest", "-e", loader, *files], cwd=RUBY, env=env,
                          capture_output=True, text=True, timeout=timeout)
    output = done.stdout + done.stderr
    log.write_text(output)
    summary = re.search(r"(\d+) runs, (\d+) assertions, (\d+) failures, (\d+) errors, (\d+) skips", output)
    assert done.returncode == 0 and summary, f"minitest failed ({done.returncode}):\n{output[-12000:]}"
    runs, _, failures, errors, skips = (int(n) for n in summary.groups())
    assert runs > 0 and failures == errors == skips == 0, f"minitest: {summary.group(0)}\n{output[-12000:]}"
    return output


def ruby_files(kind: str) -> list[str]:
    return sorted(str(path.relative_to(RUBY)) for path in (RUBY / "test" / kind).glob("*_test.rb"))


def test_ruby_sdk_unit_suite(tmp_path: Path) -> None:
    """Registry resolution, result shapes, context accessors, the Api capability, the DSL: no database."""
    env = dict(os.environ)
    for name in ("TASKER_TEST_ORCHESTRATION_URL", "DATABASE_URL"):
        env.pop(name, None)
    minitest(ruby_files("unit"), env, tmp_path / "minitest-unit.log")


@pytest.mark.parametrize("suite", ["workflows", "client", "shutdown"])
def test_ruby_sdk_integration_suite(cluster: Cluster, suite: str) -> None:
    """workflows: chain, errors, timeout, decision, batch, checkpoint, Swift+Ruby, method dispatch,
    resolver hints, domain events, SIGTERM drain. client: TaskerCore::Client against the API. shutdown:
    a handler that never returns, SIGTERM twice, SIGTERM during bootstrap."""
    address = cluster.restart_orchestration()
    env = cluster.environment({
        "TASKER_TEST_ORCHESTRATION_URL": f"http://{address}",
        "TASKER_TEMPLATE_PATH": str(TEMPLATES),
    })
    minitest([f"test/integration/{suite}_test.rb"], env, cluster.directory / f"minitest-{suite}.log")

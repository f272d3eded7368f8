"""Each language's handler example in the README (``## Handlers in other languages``), followed as a
new user would (issue #28 item 7): its files written into an empty directory, its handler program
started there with the database URL scripts/dev would print, and the README's submit line run; the
task completes with the results the README says."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import readme
from conftest import REPO, Cluster, Process


def start_example(cluster: Cluster, name: str, argv: list[str], workdir: Path) -> Process:
    """Starts the example's handler program in ``workdir`` and waits until its worker registered
    the example's template (the programs print nothing; the database says when they serve)."""
    env = cluster.environment()
    env.pop("TASKER_TEMPLATE_PATH")   # the example names its own template directory
    host = Process(argv, env, cluster.directory / f"{name}.log", cwd=workdir)
    cluster.processes.append(host)
    deadline = time.monotonic() + 120
    while cluster.db.scalar("SELECT count(*) FROM tasker.named_tasks WHERE name = 'order_total'") == "0":
        assert host.process.poll() is None, f"{name} exited: {host.log_tail()}"
        assert time.monotonic() < deadline, f"{name} registered no template within 120 s: {host.log_tail()}"
        time.sleep(0.1)
    return host


def submit_as_the_readme_says(cluster: Cluster, namespace: str) -> str:
    """`tasker-dev submit <namespace> order_total 1.0.0 --context … --wait`, as the sections print it
    (from the repository's root, where the README's commands run)."""
    done = subprocess.run(
        [str(cluster.tools.dev_binary), "submit", namespace, "order_total", "1.0.0",
         "--context", '{"items": [{"price": 3}, {"price": 4}]}', "--wait"],
        env=cluster.environment(), cwd=REPO, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.replace(" ", "")


def test_the_python_example_completes_its_task(cluster: Cluster, tmp_path: Path) -> None:
    shown = readme.write("### Python", tmp_path)
    assert {"my-tasks/order_total.yaml", "handlers.py"} <= set(shown), shown
    host = start_example(cluster, "readme-python", [sys.executable, "handlers.py"], tmp_path)
    out = submit_as_the_readme_says(cluster, "shop")
    assert '{"total":7}' in out and '{"text":"7EUR"}' in out, out
    assert host.terminate() == 0, host.log_tail()


def test_the_ruby_example_completes_its_task(cluster: Cluster, tmp_path: Path) -> None:
    shown = readme.write("### Ruby", tmp_path)
    assert {"my-tasks/order_total.yaml", "handlers.rb"} <= set(shown), shown
    host = start_example(cluster, "readme-ruby", ["ruby", "-I", str(REPO / "bindings/ruby/lib"), "handlers.rb"], tmp_path)
    out = submit_as_the_readme_says(cluster, "shop_ruby")
    assert '{"total":7}' in out and '{"text":"7EUR"}' in out, out
    assert host.terminate() == 0, host.log_tail()


def test_the_typescript_example_compiles_and_completes_its_task(cluster: Cluster, tmp_path: Path) -> None:
    shown = readme.write("### TypeScript", tmp_path)
    assert {"my-tasks/order_total.yaml", "handlers.ts"} <= set(shown), shown
    built = subprocess.run(["bash", str(REPO / "bindings/typescript/build.sh")], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    # As the README's set-up line links it (from the repository's root there; absolute here).
    package = tmp_path / "node_modules" / "@tasker-swift"
    package.mkdir(parents=True)
    (package / "worker").symlink_to(REPO / "bindings" / "typescript")
    compiled = subprocess.run(["tsc", "--strict", "--target", "es2021", "--module", "node16", "handlers.ts"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    host = start_example(cluster, "readme-typescript", ["node", "handlers.js"], tmp_path)
    out = submit_as_the_readme_says(cluster, "shop_ts")
    assert '{"total":7}' in out and '{"text":"7EUR"}' in out, out
    assert host.terminate() == 0, host.log_tail()

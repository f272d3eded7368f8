"""The task console (issue #17, `/console` on the orchestration's web server) in Debian's headless
Chromium, driven over the DevTools protocol (browser.Browser): the overview lists a completed and a
failed task with their states and the DLQ (or its emptiness); a task's page draws its DAG from the step
dependencies and shows each step's state, attempts, timings, result or error; a `<script>` in a handler's
result is shown as text and never runs; a running task's page follows it without a reload; with
`[orchestration.web.auth]` on, the page loads but its data needs the key typed into it.

With TASKER_CONSOLE_SCREENSHOT=PATH the first test keeps a PNG of a task's page there (docs/console.png
is one: `TASKER_CONSOLE_SCREENSHOT=$PWD/docs/console.png TASKER_TEST_BINDINGS=only
PYTEST_ADDOPTS="-k console_shows" scripts/test`)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

from browser import Browser
from conftest import Cluster

#: A handler result that would run if the console put values into the page as markup.
HOSTILE = "<script>window.__pwned = true; document.title = 'pwned'</script><img src=x onerror=\"window.__pwned = true\">"

API_KEY = "console-test-key-0123456789"


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    """A headless Chromium for the test; its JavaScript exceptions are checked by the tests."""
    chromium = Browser(tmp_path / "chromium-profile")
    yield chromium
    chromium.close()


def get_json(url: str, headers: dict[str, str] | None = None) -> Any:
    """The JSON answer of a GET."""
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as response:
        return json.load(response)


def status_of(url: str, headers: dict[str, str] | None = None) -> int:
    """The HTTP status of a GET."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def step_rows(browser: Browser) -> dict[str, dict[str, str]]:
    """The steps table of the open task: step name → {state, attempts, created, claimed, completed, outcome}."""
    return browser.evaluate("""Object.fromEntries([...document.querySelectorAll('#steps tbody tr[data-step]')].map(r => {
        const c = [...r.cells].map(x => x.textContent);
        return [r.dataset.step, {state: c[1], attempts: c[2], created: c[3], claimed: c[4], completed: c[5], outcome: c[6]}];
    }))""")


def open_task(browser: Browser, task: str, steps: int) -> None:
    """Shows ``task`` in the console (same page, new fragment) and waits until its DAG has ``steps`` nodes."""
    browser.evaluate(f"location.hash = 'task={task}'")
    browser.wait_for(f"document.querySelector('#task-facts dd')?.textContent === '{task}' "
                     f"&& document.querySelectorAll('#dag g.node').length === {steps}", f"task {task} with {steps} steps")


def console_time(stamp: str) -> str:
    """A timestamp as the console writes it (console.js `time`)."""
    return stamp.replace("T", " ").removesuffix("Z")


def test_console_shows_tasks_dag_results_errors_and_the_dlq(cluster: Cluster, browser: Browser) -> None:
    """Overview, DAG, step details, error and DLQ as the database has them; hostile results stay text."""
    base = f"http://{cluster.restart_orchestration()}"
    cluster.start_python_host()
    mixed = cluster.submit("py_mixed", {"order": 7, "note": HOSTILE})
    failed = cluster.submit("py_error", {})
    assert cluster.wait_for_task(mixed) == "complete" and cluster.wait_for_task(failed) == "error"

    browser.open(f"{base}/console")
    for task in (mixed, failed):
        browser.wait_for(f"!!document.querySelector('#tasks tr[data-task=\"{task}\"]')", f"task {task} in the list")
    rows = browser.evaluate("[...document.querySelectorAll('#tasks tbody tr')].map(r => r.dataset.task)")
    assert rows == [failed, mixed], "newest first"
    states = browser.evaluate("[...document.querySelectorAll('#tasks tbody tr')].map(r => r.cells[3].textContent)")
    assert states == ["error", "complete"]
    counts = browser.evaluate("[...document.querySelectorAll('#counts button')].map(b => b.textContent)")
    assert counts == ["all 2", "complete 1", "error 1"], counts
    dlq_rows = int(cluster.db.scalar("SELECT count(*) FROM tasker.tasks_dlq"))
    if dlq_rows == 0:
        assert browser.evaluate("!document.getElementById('dlq-empty').hidden"), "an empty DLQ is not said to be empty"
    else:
        shown = browser.evaluate("[...document.querySelectorAll('#dlq-entries tbody tr')].length")
        assert shown == min(dlq_rows, 50)

    open_task(browser, mixed, 3)
    names = browser.evaluate("[...document.querySelectorAll('#dag g.node')].map(g => g.dataset.step)")
    assert sorted(names) == sorted(cluster.db.step_names(mixed))
    columns = browser.evaluate("""Object.fromEntries([...document.querySelectorAll('#dag g.node')].map(g =>
        [g.dataset.step, Number(g.querySelector('rect').getAttribute('x'))]))""")
    assert columns["mixed_echo"] < columns["mixed_double"] < columns["mixed_sleep"], f"not layered by dependency: {columns}"
    assert browser.evaluate("document.querySelectorAll('#dag path.edge').length") == 2
    assert browser.evaluate("[...document.querySelectorAll('#dag g.node')].every(g => g.classList.contains('state-complete'))")
    steps = step_rows(browser)
    dag = get_json(f"{base}/console/api/tasks/{mixed}/dag")
    for step in dag["steps"]:
        row = steps[step["name"]]
        assert row["state"] == "complete" and row["attempts"] == f"{step['attempts']}/{step['max_attempts']}"
        assert step["claimed_at"] and step["completed_at"], step
        assert row["claimed"] == console_time(step["claimed_at"]) and row["completed"].startswith(console_time(step["completed_at"]))
    assert {s["name"]: s["parents"] for s in dag["steps"]}["mixed_double"] == [
        next(s["step_uuid"] for s in dag["steps"] if s["name"] == "mixed_echo")]
    double = json.loads(steps["mixed_double"]["outcome"])
    assert double["value"] == 42 and double["echoed_context"]["note"] == HOSTILE
    assert json.loads(browser.evaluate("document.getElementById('task-context').textContent"))["note"] == HOSTILE
    assert browser.evaluate("document.querySelectorAll('main script, main img').length") == 0
    assert browser.evaluate("window.__pwned === undefined && document.title === 'Tasker task console'")
    if screenshot := os.environ.get("TASKER_CONSOLE_SCREENSHOT"):
        browser.screenshot(Path(screenshot))

    open_task(browser, failed, 1)
    error = step_rows(browser)["error_explode"]
    assert error["state"] == "error" and "the ledger has no entry for order 42" in error["outcome"], error
    # The exception a foreign handler's SDK kept (metadata.custom) is shown with its trace (issue #28 item 6).
    assert "exception KeyError" in error["outcome"], error
    trace = browser.evaluate("document.querySelector('#steps tr[data-step=\"error_explode\"] .step-trace').textContent")
    assert "Traceback (most recent call last)" in trace and "raise KeyError" in trace, trace
    assert browser.evaluate("document.querySelector('#dag g.node').classList.contains('state-error')")
    assert browser.exceptions == []


def test_console_follows_a_running_task_without_a_reload(cluster: Cluster, browser: Browser) -> None:
    """A task shown while nobody runs it is shown complete once a worker has run it, on the same page."""
    base = f"http://{cluster.restart_orchestration()}"
    host = cluster.start_python_host()   # registers the templates, then leaves
    host.terminate()
    cluster.processes.remove(host)
    task = cluster.submit("py_chain", {"number": 3})

    browser.open(f"{base}/console#task={task}")
    browser.wait_for("document.querySelectorAll('#dag g.node').length === 3", "the chain's DAG")
    assert browser.evaluate("document.querySelector('#task-title .state').textContent") != "complete"
    assert browser.evaluate("document.querySelector('#tasks tbody tr').cells[3].textContent") != "complete"
    cluster.start_python_host(name="host-again")
    assert cluster.wait_for_task(task) == "complete"
    browser.wait_for("document.querySelector('#task-title .state').textContent === 'complete' && "
                     "[...document.querySelectorAll('#dag g.node')].every(g => g.classList.contains('state-complete'))",
                     "the task complete", timeout=15)
    browser.wait_for("document.querySelector('#tasks tbody tr').cells[3].textContent === 'complete'",
                     "the list updated", timeout=15)
    assert browser.exceptions == []


def test_console_page_is_public_but_its_data_needs_credentials(cluster: Cluster, browser: Browser) -> None:
    """With an API key required: the page and its files load, its data routes answer 401 without the key;
    the page asks for the key and, once typed in, shows the data."""
    base = "http://" + cluster.restart_orchestration(
        '[orchestration.web.auth]\nenabled = true\napi_keys_enabled = true\n'
        f'[[orchestration.web.auth.api_keys]]\nkey = "{API_KEY}"\n'
        'permissions = ["tasks:list", "tasks:read", "steps:read", "dlq:read"]\n')
    with urllib.request.urlopen(f"{base}/console", timeout=10) as response:
        assert response.headers["content-type"].startswith("text/html")
        assert "script-src 'self'" in response.headers["content-security-policy"]
    assert status_of(f"{base}/console/console.js") == 200
    assert get_json(f"{base}/console/api/auth") == {"enabled": True, "api_key_header": "X-API-Key"}
    assert status_of(f"{base}/console/api/summary") == 401
    assert status_of(f"{base}/console/api/summary", {"X-API-Key": API_KEY}) == 200
    assert status_of(f"{base}/console/no-such-file") == 404

    browser.open(f"{base}/console")
    browser.wait_for("!document.getElementById('auth').hidden", "the credentials form")
    assert browser.evaluate("document.getElementById('status').textContent") == "credentials needed"
    assert browser.evaluate("document.querySelectorAll('#counts button').length") == 0
    browser.evaluate(f"document.getElementById('auth-value').value = '{API_KEY}'; "
                     "document.getElementById('auth-form').requestSubmit(); true")
    browser.wait_for("document.getElementById('auth').hidden && document.body.dataset.loaded === 'true'", "the data")
    assert browser.evaluate("[...document.querySelectorAll('#counts button')].map(b => b.textContent)") == ["all 0"]
    assert browser.exceptions == []

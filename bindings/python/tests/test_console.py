"""The task console (issue #17, `/console` on the orchestration's web server) in Debian's headless
Chromium, driven over the DevTools protocol (browser.Browser): the overview lists a completed and a
failed task with their states and the DLQ (or its emptiness); a task's page draws its DAG from the step
dependencies and shows each step's state, attempts, timings (with their zone), result or error; a
`<script>` in a handler's result is shown as text and never runs; a running task's page follows it
without a reload; with `[orchestration.web.auth]` on, the page loads but its data needs the key typed
into it. Issue #31: a failed Python step's exception, message and traceback are shown on its task's
page, and its Retry button (upstream's PATCH of the step, `reset_for_retry`) runs it again until the
task completes; Resolve manually and Complete manually (a JSON result checked before it is sent); the
DLQ's entries, statistics, investigation queue and staleness, an entry resolved through its button;
the live workers with their namespaces and steps in flight; the throughput and latency chart.

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
    """A timestamp as the console writes it (console.js `time`): the API's UTC time with its zone named."""
    return stamp.replace("T", " ").removesuffix("Z") + " UTC"


def step_state_in_console(browser: Browser, step: str) -> str:
    """The state the open task's steps table shows for ``step``."""
    return browser.evaluate(f"document.querySelector('#steps tr[data-step=\"{step}\"]')?.cells[1].textContent ?? ''")


def act_on_step(browser: Browser, step: str, action: str, fields: dict[str, str]) -> None:
    """Presses ``action``'s button (data-action) on ``step``'s row, fills the form's ``fields`` (by element
    id) and sends it."""
    browser.wait_for(f"!!document.querySelector('#steps tr[data-step=\"{step}\"] button[data-action=\"{action}\"]')",
                     f"the {action} button of {step}")
    browser.evaluate(f"document.querySelector('#steps tr[data-step=\"{step}\"] button[data-action=\"{action}\"]').click(); true")
    browser.wait_for(f"!document.getElementById('step-action').hidden && "
                     f"document.getElementById('step-action').dataset.action === '{action}'", f"the {action} form")
    fill_and_send(browser, "step-action", fields)


def fill_and_send(browser: Browser, form: str, fields: dict[str, str]) -> None:
    """Sets the form's fields (element id → value) and submits the form ``form``."""
    assignments = "".join(f"document.getElementById({json.dumps(k)}).value = {json.dumps(v)}; " for k, v in fields.items())
    browser.evaluate(f"{assignments}document.getElementById('{form}').requestSubmit(); true")


def action_answer(browser: Browser, answer: str) -> dict[str, str]:
    """The outcome ("ok" or "error") and text of an action's answer line, once the API answered."""
    return browser.wait_for(
        f"['ok', 'error'].includes(document.getElementById('{answer}').dataset.outcome) && "
        f"{{outcome: document.getElementById('{answer}').dataset.outcome, text: document.getElementById('{answer}').textContent}}",
        "the API's answer")


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
        browser.wait_for("!document.getElementById('dlq-empty').hidden", "an empty DLQ said to be empty")
    else:
        browser.wait_for(f"document.querySelectorAll('#dlq-entries tbody tr').length === {min(dlq_rows, 50)}", "the DLQ entries")

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
    the page asks for the key and, once typed in, shows the data; the workers panel, which needs a
    permission the key lacks (system:analytics_read), says so in its place."""
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
    # A panel whose permission the key lacks says so in place; the rest of the console works.
    refusal = browser.wait_for("document.getElementById('workers-error').textContent", "the workers panel's refusal")
    assert refusal.startswith("Not permitted") and "system:analytics_read" in refusal, refusal
    assert browser.evaluate("document.getElementById('auth').hidden")
    assert browser.exceptions == []


def test_console_shows_a_python_traceback_and_retries_the_step_until_the_task_completes(
        cluster: Cluster, browser: Browser, tmp_path: Path) -> None:
    """A Python step that raised: its exception type, message and traceback are visible on the task's page
    (not folded away); its Retry button sends upstream's reset_for_retry, the answer is shown, the step
    runs again (the handler succeeds on its second run) and the page follows the task to complete."""
    base = f"http://{cluster.restart_orchestration()}"
    cluster.start_python_host()
    marker = tmp_path / "flaky-marker"
    task = cluster.submit("py_flaky", {"marker": str(marker)})
    assert cluster.wait_for_task(task) == "error" and marker.exists()

    browser.open(f"{base}/console#task={task}")
    failure = browser.wait_for("""(() => {
        const a = document.querySelector('#failures article[data-step="flaky_step"]');
        return a && a.offsetParent !== null && a.querySelector('.failure-trace').offsetParent !== null && {
            type: a.querySelector('.failure-type').textContent, message: a.querySelector('.failure-message').textContent,
            trace: a.querySelector('.failure-trace').textContent}; })()""", "the step's failure, visible")
    assert failure["type"] == "RuntimeError", failure
    assert "the first run fails on purpose" in failure["message"], failure
    assert "Traceback (most recent call last)" in failure["trace"] and "raise RuntimeError" in failure["trace"], failure
    # The task page is the first thing of the page, above the list that re-sorts.
    assert browser.evaluate("document.querySelector('main > section:not([hidden])').id") == "task"
    assert browser.evaluate("document.getElementById('task').getBoundingClientRect().top < "
                            "document.getElementById('overview').getBoundingClientRect().top")

    act_on_step(browser, "flaky_step", "reset_for_retry", {"step-action-operator": "console-test",
                                                          "step-action-reason": "the ledger is back"})
    answer = action_answer(browser, "step-action-answer")
    assert answer["outcome"] == "ok", answer
    assert cluster.wait_for_task(task, states=("complete",)) == "complete"
    assert cluster.db.result(task, "flaky_step")["success"] is True
    assert cluster.db.step_transitions(task, "flaky_step").count("in_progress") == 2, "the step did not run again"
    browser.wait_for("document.querySelector('#task-title .state').textContent === 'complete' && "
                     "document.getElementById('failures').hidden", "the task complete, its failure gone", timeout=15)
    assert step_state_in_console(browser, "flaky_step") == "complete"
    assert browser.exceptions == []


def test_console_resolves_and_completes_failed_steps_manually(cluster: Cluster, browser: Browser) -> None:
    """Resolve manually moves a failed step to resolved_manually; Complete manually refuses a result that
    is not JSON before sending anything, then stores the JSON result given: both through upstream's PATCH
    of the step, each answer shown and the page refreshed."""
    base = f"http://{cluster.restart_orchestration()}"
    cluster.start_python_host()
    resolved = cluster.submit("py_error", {"case": "resolve"})
    completed = cluster.submit("py_error", {"case": "complete"})
    assert cluster.wait_for_task(resolved) == "error" and cluster.wait_for_task(completed) == "error"

    browser.open(f"{base}/console")
    open_task(browser, resolved, 1)
    act_on_step(browser, "error_explode", "resolve_manually", {"step-action-operator": "console-test",
                                                               "step-action-reason": "the order was refunded by hand"})
    answer = action_answer(browser, "step-action-answer")
    assert answer["outcome"] == "ok" and "resolved_manually" in answer["text"], answer
    assert cluster.db.step_states(resolved) == {"error_explode": "resolved_manually"}
    browser.wait_for("document.querySelector('#steps tr[data-step=\"error_explode\"]').cells[1].textContent === 'resolved_manually'",
                     "the step shown resolved")

    open_task(browser, completed, 1)
    browser.wait_for("!!document.querySelector('#steps tr[data-step=\"error_explode\"] button[data-action=\"complete_manually\"]')",
                     "the Complete manually button")
    browser.evaluate("document.querySelector('#steps tr[data-step=\"error_explode\"] button[data-action=\"complete_manually\"]').click(); true")
    browser.wait_for("!document.getElementById('step-action-completion').hidden", "the result editor")
    fill_and_send(browser, "step-action", {"step-action-operator": "console-test", "step-action-reason": "entered by hand",
                                           "step-action-result": "{\"value\": 42,"})
    refusal = browser.wait_for("document.getElementById('step-action-error').textContent", "the editor's refusal")
    assert "not JSON" in refusal, refusal
    assert cluster.db.step_states(completed) == {"error_explode": "error"}, "a refused result was sent"
    fill_and_send(browser, "step-action", {"step-action-result": "{\"value\": 42, \"source\": \"console\"}",
                                           "step-action-metadata": "{\"ticket\": \"OPS-31\"}"})
    answer = action_answer(browser, "step-action-answer")
    assert answer["outcome"] == "ok", answer
    assert cluster.db.step_states(completed) == {"error_explode": "complete"}
    stored = cluster.db.result(completed, "error_explode")
    assert stored["success"] is True and stored["result"] == {"value": 42, "source": "console"}, stored
    browser.wait_for("document.querySelector('#steps tr[data-step=\"error_explode\"]').cells[1].textContent === 'complete'",
                     "the step shown complete")
    assert browser.exceptions == []


def test_console_dlq_view_resolves_an_entry_through_its_button(cluster: Cluster, browser: Browser) -> None:
    """The DLQ view shows an entry, its statistics by reason, the investigation queue and the staleness
    list (upstream's routes); the entry's Resolve button sends upstream's PATCH of the entry with the
    resolution, notes and operator typed, which the database then holds and the view shows."""
    base = f"http://{cluster.restart_orchestration()}"
    cluster.start_python_host()
    task = cluster.submit("py_error", {"case": "dlq"})
    assert cluster.wait_for_task(task) == "error"
    snapshot = json.dumps({"namespace": "python_tests", "task_name": "py_error", "current_state": "error"})
    entry = cluster.db.scalar(
        "INSERT INTO tasker.tasks_dlq (task_uuid, original_state, dlq_reason, task_snapshot) "
        f"VALUES ('{task}', 'error', 'max_retries_exceeded', '{snapshot}'::jsonb) RETURNING dlq_entry_uuid")

    browser.open(f"{base}/console")
    row = f"#dlq-entries tr[data-entry=\"{entry}\"]"
    browser.wait_for(f"document.querySelector('{row}')?.querySelector('.resolution').textContent.startsWith('Pending')",
                     "the DLQ entry, pending")
    browser.wait_for("document.querySelector('#dlq-stats tr[data-reason=\"MaxRetriesExceeded\"]')?.cells[2].textContent === '1'",
                     "the statistics by reason")
    browser.wait_for(f"!!document.querySelector('#dlq-queue tr[data-entry=\"{entry}\"]')", "the entry in the investigation queue")
    browser.wait_for("document.querySelectorAll('#dlq-staleness tbody tr').length >= 1", "the staleness list")
    assert browser.evaluate("['dlq-error', 'dlq-stats-error', 'dlq-queue-error', 'dlq-staleness-error']"
                            ".map(id => document.getElementById(id).textContent).join('')") == ""

    browser.evaluate(f"document.querySelector('{row} button[data-action=\"resolve\"]').click(); true")
    browser.wait_for("!document.getElementById('dlq-action').hidden && "
                     "document.getElementById('dlq-action-status').value === 'manually_resolved'", "the resolution form")
    fill_and_send(browser, "dlq-action", {"dlq-action-notes": "refunded the order by hand", "dlq-action-by": "console-test"})
    answer = action_answer(browser, "dlq-action-answer")
    assert answer["outcome"] == "ok", answer
    stored = cluster.db.scalar("SELECT resolution_status || '|' || resolution_notes || '|' || resolved_by "
                               f"FROM tasker.tasks_dlq WHERE dlq_entry_uuid = '{entry}'")
    assert stored == "manually_resolved|refunded the order by hand|console-test", stored
    browser.wait_for(f"document.querySelector('{row}')?.querySelector('.resolution').textContent.startsWith('ManuallyResolved') && "
                     f"document.querySelector('{row} .notes').textContent === 'refunded the order by hand'", "the entry resolved")
    browser.wait_for("document.querySelector('#dlq-stats tr[data-reason=\"MaxRetriesExceeded\"]')?.cells[3].textContent === '1'",
                     "the statistics updated")
    assert browser.exceptions == []


def test_console_shows_the_live_workers_and_the_throughput_chart(cluster: Cluster, browser: Browser) -> None:
    """The workers view lists the one live worker (its lease), the namespace it works for and the step it
    holds; the chart draws the steps completed in the last minutes with their latency, as the console's
    API counts them from the transitions."""
    base = f"http://{cluster.restart_orchestration()}"
    host = cluster.start_python_host(env={"TASKER_HOST_STOP_GRACE": "1"})
    done = cluster.submit("py_chain", {"number": 4})
    assert cluster.wait_for_task(done) == "complete"
    held = cluster.submit("py_stuck", {})
    host.wait_for_line("STARTED stuck_forever")
    worker = cluster.db.scalar("SELECT worker_uuid FROM tasker.worker_leases WHERE expires_at > clock_timestamp()")

    browser.open(f"{base}/console")
    row = f"#workers tr[data-worker=\"{worker}\"]"
    browser.wait_for(f"document.querySelector('{row} .namespaces')?.textContent === 'python_tests' && "
                     f"document.querySelector('{row} .in-flight-count').textContent === '1'",
                     "the live worker with its namespace and its step in flight")
    assert browser.evaluate(f"document.querySelector('{row} li[data-step=\"stuck_forever\"] a').getAttribute('href')") == f"#task={held}"
    assert browser.evaluate("document.querySelectorAll('#workers tbody tr[data-worker]').length") == 1
    live = get_json(f"{base}/console/api/workers")["workers"]
    assert [(w["worker_uuid"], w["namespaces"], w["steps_in_flight"]) for w in live] == [(worker, ["python_tests"], 1)], live

    bars = browser.wait_for("""(() => {
        const bars = [...document.querySelectorAll('#throughput g.bucket')].map(g => ({
            start: g.dataset.start, completed: Number(g.dataset.completed), failed: Number(g.dataset.failed), p50: g.dataset.p50}));
        return bars.some(b => b.completed > 0) && bars; })()""", "the chart with its bars")
    assert len(bars) == 15, bars
    assert sum(b["completed"] for b in bars) == 3 and sum(b["failed"] for b in bars) == 0, bars
    assert all(b["p50"] != "" for b in bars if b["completed"] > 0), "a minute with results has no latency"
    assert browser.evaluate("document.querySelectorAll('#throughput polyline.p50, #throughput circle.p50').length") >= 1
    figures = get_json(f"{base}/console/api/throughput")
    assert sum(b["completed"] for b in figures["buckets"]) == 3 and figures["capped"] is False, figures
    assert browser.exceptions == []

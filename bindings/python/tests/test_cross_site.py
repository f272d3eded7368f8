"""Cross-site request forgery on the task API (issue #26, item 3), in Debian's headless Chromium: a page
served from another origin (a tiny http.server on another port of 127.0.0.1) tries to create a task the
ways a hostile page can without the API's consent: ``fetch`` with ``mode: "no-cors"`` and a text/plain
body, a ``<form>`` posting text/plain (the classic JSON-in-a-form trick) and a form-encoded one, and a
``cors`` JSON ``fetch``. No task is created (checked in the database). The same JSON ``fetch`` from the
orchestration's own origin (its console page) does create one, so the refusals are the guard's, not a
broken page; and a non-browser client (urllib: no Origin, no Sec-Fetch-*) keeps working."""

from __future__ import annotations

import http.server
import json
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

from browser import Browser
from conftest import NAMESPACE, Cluster, free_port

REQUEST = {"namespace": NAMESPACE, "name": "py_error", "version": "1.0.0", "context": {"from": "page"},
           "initiator": "csrf-test", "source_system": "browser", "reason": "cross-site attempt"}


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    chromium = Browser(tmp_path / "chromium-profile")
    yield chromium
    chromium.close()


@pytest.fixture
def other_origin(tmp_path: Path) -> Iterator[str]:
    """``http://127.0.0.1:<port>``: a static page on another port, so another origin than the API's."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "attack.html").write_text("<!doctype html><title>elsewhere</title><iframe name=sink></iframe>")
    handler = lambda *args, **kwargs: http.server.SimpleHTTPRequestHandler(*args, directory=str(site), **kwargs)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def task_count(cluster: Cluster) -> int:
    return int(cluster.db.scalar("SELECT count(*) FROM tasker.tasks"))


def test_a_page_on_another_origin_cannot_create_tasks(cluster: Cluster, browser: Browser, other_origin: str) -> None:
    base = f"http://{cluster.restart_orchestration()}"
    cluster.start_python_host()  # registers the python_tests templates
    body = json.dumps(REQUEST)
    browser.open(f"{other_origin}/attack.html")

    # fetch no-cors, text/plain: the browser sends it (a "simple" request) and hides the answer.
    outcome = browser.evaluate(f"""fetch({json.dumps(base + '/v1/tasks')}, {{method: 'POST', mode: 'no-cors',
        body: {json.dumps(body)}}}).then(r => 'sent: ' + r.type, e => 'failed: ' + e)""")
    assert outcome == "sent: opaque", outcome
    # A <form> with enctype text/plain whose one field spells the JSON (name + '=' + value), and a
    # form-encoded one, each into the iframe; the iframe's load means the answer arrived.
    for enctype, name, value in (("text/plain", body[:-1] + ', "x": "', '"}'),
                                 ("application/x-www-form-urlencoded", "task", body)):
        outcome = browser.evaluate(f"""new Promise(resolve => {{
            const sink = document.querySelector('iframe[name=sink]');
            sink.onload = () => resolve('answered');
            const form = document.createElement('form');
            form.method = 'POST'; form.action = {json.dumps(base + '/v1/tasks')};
            form.enctype = {json.dumps(enctype)}; form.target = 'sink';
            const field = document.createElement('input');
            field.name = {json.dumps(name)}; field.value = {json.dumps(value)};
            form.appendChild(field); document.body.appendChild(form); form.submit();
            setTimeout(() => resolve('no answer'), 20000);
        }})""")
        assert outcome == "answered", f"{enctype}: {outcome}"
    # A cors JSON fetch: its preflight is not granted, and the request itself would be refused (403).
    outcome = browser.evaluate(f"""fetch({json.dumps(base + '/v1/tasks')}, {{method: 'POST', mode: 'cors',
        headers: {{'Content-Type': 'application/json'}}, body: {json.dumps(body)}}})
        .then(r => 'status ' + r.status, e => 'failed: ' + e)""")
    assert outcome.startswith("failed") or outcome == "status 403", outcome
    assert task_count(cluster) == 0, cluster.db.scalar("SELECT json_agg(initiator) FROM tasker.tasks")

    # What a cross-site request gets, seen from outside the browser (the browser hides it): 403 naming
    # the origin, and 415 for a body that is not JSON.
    request = urllib.request.Request(f"{base}/v1/tasks", data=body.encode(), method="POST",
                                     headers={"Content-Type": "application/json", "Origin": other_origin})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 403
    assert other_origin in json.load(refused.value)["error"]["message"]
    request = urllib.request.Request(f"{base}/v1/tasks", data=body.encode(), method="POST",
                                     headers={"Content-Type": "text/plain"})
    with pytest.raises(urllib.error.HTTPError) as unsupported:
        urllib.request.urlopen(request, timeout=10)
    assert unsupported.value.code == 415
    assert json.load(unsupported.value)["error"]["code"] == "UNSUPPORTED_MEDIA_TYPE"
    assert task_count(cluster) == 0

    # The API's own origin (its console page) may: the guard refuses other origins, not browsers.
    browser.open(f"{base}/console")
    outcome = browser.evaluate(f"""fetch('/v1/tasks', {{method: 'POST', headers: {{'Content-Type': 'application/json'}},
        body: {json.dumps(body)}}}).then(r => 'status ' + r.status, e => 'failed: ' + e)""")
    assert outcome == "status 201", outcome
    assert task_count(cluster) == 1
    # And a non-browser client (no Origin, no Sec-Fetch-*) as ever.
    other = dict(REQUEST, context={"from": "urllib"})
    request = urllib.request.Request(f"{base}/v1/tasks", data=json.dumps(other).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 201
    assert task_count(cluster) == 2

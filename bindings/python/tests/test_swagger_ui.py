"""Swagger UI at /api-docs/ui/ loads in a real browser: our `tasker-worker` serves it from the files
embedded in its binary, Debian's Chromium (headless, no name resolution but 127.0.0.1, so nothing can
come from a CDN) runs it, and the rendered page shows our OpenAPI document: its title and every path.
The worker embedded in Python (libTaskerWorkerFFI.so) serves the same files from the library."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path

from browser import rendered_dom
from conftest import REPO, Cluster, free_port

#: The vendored files the binaries embed.
VENDORED = REPO / "Sources" / "CSwaggerUI" / "files"

#: Virtual milliseconds Chromium lets the page run (timers are fast-forwarded, so this costs little).
VIRTUAL_TIME_BUDGET_MS = 30_000


def _start_worker(cluster: Cluster) -> str:
    """Our `tasker-worker run` on this test's database; returns its REST base URL once /health answers."""
    address = f"127.0.0.1:{free_port()}"
    worker = cluster.start("tasker-worker", [str(cluster.tools.worker_binary), "run"],
                           {"TASKER_WEB_BIND_ADDRESS": address})
    base = f"http://{address}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert worker.process.poll() is None, f"tasker-worker exited\n{worker.log_tail()}"
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=5) as response:
                if response.status == 200:
                    return base
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"tasker-worker did not answer /health within 60 s\n{worker.log_tail()}")


def test_swagger_ui_renders_our_openapi_document_in_chromium(cluster: Cluster, tmp_path: Path) -> None:
    base = _start_worker(cluster)
    with urllib.request.urlopen(f"{base}/api-docs/openapi.json", timeout=10) as response:
        document = json.load(response)
    dom = rendered_dom(f"{base}/api-docs/ui/", tmp_path / "chromium-profile", VIRTUAL_TIME_BUDGET_MS)

    assert '<div id="swagger-ui">' in dom and 'class="swagger-ui"' in dom, f"Swagger UI did not render:\n{dom[:2000]}"
    assert "Failed to load API definition" not in dom, dom[:4000]
    title = document["info"]["title"]
    assert title == "Tasker Worker API"
    assert f'<h2 class="title">{title}' in dom, f"the rendered page has no title {title!r}"
    paths = sorted(document["paths"])
    assert "/health/ready" in paths and "/v1/templates/{namespace}/{name}/{version}" in paths
    missing = [path for path in paths if f'data-path="{path}"' not in dom]
    assert not missing, f"operations not rendered: {missing}"


def _get(url: str) -> tuple[int, str, bytes]:
    """Status, content type and body of a GET."""
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.headers.get("content-type", ""), response.read()


def test_the_worker_embedded_in_python_serves_the_ui_from_its_library(cluster: Cluster) -> None:
    host = cluster.start_python_host()
    ready = json.loads(host.wait_for_line("READY").removeprefix("READY "))
    base = f"http://{ready['web_address']}"
    assert _get(f"{base}/api-docs/ui/") == (200, "text/html", (VENDORED / "index.html").read_bytes())
    for name, content_type in (("swagger-ui-bundle.js", "text/javascript"), ("swagger-ui.css", "text/css"),
                               ("swagger-initializer.js", "text/javascript")):
        assert _get(f"{base}/api-docs/ui/{name}") == (200, content_type, (VENDORED / name).read_bytes()), name

"""The live contract test (issue #15): the same REST and gRPC requests to our `tasker-worker run`
and to upstream's own worker (PyPI tasker-py 0.1.8) on one database with the same templates, the
answers compared fact by fact (status, meaningful headers, JSON key paths and types, formats of
volatile values; gRPC codes and message shapes). Every difference must be on README's list of
deliberate differences, and every listed difference must still occur."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import grpc
import pytest

from conftest import REPO, Cluster, Process, free_port
from upstream_worker import merged_config
from contract import grpc_probe
from contract.differences import Deliberate, Difference, compare, deliberate_differences
from contract.rest import Probe, answer_facts, send
from contract.shape import Facts

NAMESPACE, NAME, VERSION = "python_tests", "compat_workflow", "1.0.0"
TEMPLATE = f"/v1/templates/{NAMESPACE}/{NAME}/{VERSION}"
#: Upstream's router (crates/tasker-worker/src/web/routes.rs), which serves routes its OpenAPI
#: document omits (Swagger UI among them; its rendering in a browser: test_swagger_ui.py).
UPSTREAM_ROUTES = (
    ("GET", "/health"), ("GET", "/health/ready"), ("GET", "/health/live"), ("GET", "/health/detailed"),
    ("GET", "/metrics"), ("GET", "/metrics/worker"), ("GET", "/metrics/events"),
    ("GET", "/v1/templates"), ("GET", TEMPLATE), ("POST", f"{TEMPLATE}/validate"),
    ("GET", "/config"), ("GET", "/api-docs/openapi.json"),
    ("GET", "/api-docs/ui"), ("GET", "/api-docs/ui/"), ("GET", "/api-docs/ui/index.html"),
    ("GET", "/api-docs/ui/swagger-initializer.js"), ("GET", "/api-docs/ui/swagger-ui.css"),
    ("GET", "/api-docs/ui/favicon-32x32.png"), ("GET", "/api-docs/ui/swagger-ui.css.map"),
)
#: Routes of older upstream routers (template cache management): both must agree they are absent.
FORMER_ROUTES = (
    ("DELETE", "/v1/templates/cache"), ("GET", "/v1/templates/cache/stats"),
    ("POST", "/v1/templates/cache/maintain"), ("POST", f"{TEMPLATE}/refresh"),
    ("GET", "/templates"), ("GET", f"/templates/{NAMESPACE}/{NAME}/{VERSION}"),
)
ORIGIN = (("Origin", "https://operator.example"),)


def start_our_worker(cluster: Cluster, settings: dict[str, Any] | None = None) -> tuple[Process, str, str]:
    """`tasker-worker run` on the test's database and templates; REST and gRPC on free ports; waits
    until /health/ready answers. ``settings``: {"dotted.key": value} over the merged test
    configuration (then loaded from one file, as upstream's)."""
    web, rpc = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    extra = {"TASKER_WEB_BIND_ADDRESS": web, "TASKER_WORKER_GRPC_BIND_ADDRESS": rpc}
    if settings:
        config = cluster.directory / "ours.toml"
        config.write_text(merged_config(REPO, settings))
        extra["TASKER_CONFIG_PATH"] = str(config)
    process = cluster.start("ours", [str(cluster.tools.worker_binary), "run"], extra)
    process.wait_for_http(f"http://{web}/health/ready")
    return process, web, rpc


def documented_routes(address: str) -> set[tuple[str, str]]:
    """(METHOD, path) of every operation in the worker's OpenAPI document, path parameters filled."""
    with urllib.request.urlopen(f"http://{address}/api-docs/openapi.json", timeout=10) as response:
        document = json.load(response)
    routes = set()
    for path, operations in document["paths"].items():
        filled = path.replace("{namespace}", NAMESPACE).replace("{name}", NAME).replace("{version}", VERSION)
        routes |= {(method.upper(), filled) for method in operations if method != "parameters"}
    return routes


def rest_probes(routes: set[tuple[str, str]]) -> list[Probe]:
    """Each route as served, with wrong methods, a CORS origin, a preflight and credentials (auth is
    off by default: both must ignore them); unknown routes, bad path parameters, bad query strings."""
    probes: list[Probe] = []
    for method, path in sorted(routes):
        probes.append(Probe(method, path))
        probes.append(Probe(method, path, ORIGIN, variant="origin"))
        probes.append(Probe("OPTIONS", path, ORIGIN + (("Access-Control-Request-Method", method),
                                                      ("Access-Control-Request-Headers", "authorization")),
                            variant="preflight"))
        probes.append(Probe(method, path, (("Authorization", "Bearer not-a-token"),), variant="bearer"))
        probes.append(Probe(method, path, (("X-API-Key", "not-a-key"),), variant="api key"))
        for wrong in ("GET", "POST", "PUT", "DELETE", "PATCH"):
            if (wrong, path) not in routes:
                probes.append(Probe(wrong, path))
        probes.append(Probe("HEAD", path))
    for method, path in FORMER_ROUTES:
        probes.append(Probe(method, path))
    probes += [Probe("GET", target) for target in (
        "/", "/nope", "/health/nope", "/health/", "/v1", "/v1/templates/", f"/v1/templates/{NAMESPACE}",
        f"/v1/templates/{NAMESPACE}/{NAME}", f"{TEMPLATE}/extra/more", f"/v1/templates/{NAMESPACE}/{NAME}/9.9.9",
        f"/v1/templates/no_such_namespace/{NAME}/{VERSION}", f"/v1/templates/{NAMESPACE}/no_such_task/{VERSION}",
        f"/v1/templates/{NAMESPACE}/{NAME}/not%20a%20version", "/v1/templates/%00/%ff/%2F",
        f"/v1/templates/{NAMESPACE}/compat%5Fworkflow/{VERSION}",
        "/v1/templates?include_cache_stats=true", "/v1/templates?include_cache_stats=false",
        "/v1/templates?include_cache_stats=maybe", "/v1/templates?include_cache_stats=",
        "/v1/templates?namespace=no_such_namespace", "/v1/templates?namespace=a&namespace=b",
        "/v1/templates?%zz=1", "/health?verbose=true", "/metrics?format=json", "/config?section=worker",
        "/health/detailed?x=%", "/api-docs/openapi.json?v=1",
        "/api-docs/ui/nope.js", "/api-docs/ui//index.html", "/api-docs/ui/../openapi.json", "/api-docs/ui/index%2ehtml",
    )]
    probes += [Probe("POST", f"/v1/templates/{NAMESPACE}/{NAME}/9.9.9/validate"),
               Probe("POST", f"{TEMPLATE}/validate", (("Content-Type", "application/json"),), body=b"{not json")]
    return probes


def grpc_calls(services: list[str]) -> list[grpc_probe.Call]:
    """Every method of the tasker.v1 worker services with an empty request, templates found and not
    found; grpc.health Check and Watch for every name and an unknown one; reflection v1alpha."""
    calls = [grpc_probe.Call(s, m) for s, m in (
        ("tasker.v1.WorkerHealthService", "CheckHealth"), ("tasker.v1.WorkerHealthService", "CheckLiveness"),
        ("tasker.v1.WorkerHealthService", "CheckReadiness"), ("tasker.v1.WorkerHealthService", "CheckDetailedHealth"),
        ("tasker.v1.WorkerConfigService", "GetConfig"), ("tasker.v1.WorkerTemplateService", "ListTemplates"),
        ("tasker.v1.WorkerTemplateService", "GetTemplate"))]
    calls += [
        grpc_probe.Call("tasker.v1.WorkerTemplateService", "ListTemplates", (("include_cache_stats", True),), "stats"),
        grpc_probe.Call("tasker.v1.WorkerTemplateService", "ListTemplates", (("namespace", "nope"),), "namespace"),
        grpc_probe.Call("tasker.v1.WorkerTemplateService", "GetTemplate",
                        (("namespace", NAMESPACE), ("name", NAME), ("version", VERSION)), "found"),
        grpc_probe.Call("tasker.v1.WorkerTemplateService", "GetTemplate",
                        (("namespace", NAMESPACE), ("name", NAME), ("version", "9.9.9")), "unknown"),
    ]
    for name in ["", "unknown.Service", *services]:
        for method in ("Check", "Watch"):
            calls.append(grpc_probe.Call("grpc.health.v1.Health", method, (("service", name),), name or "all"))
    return calls


def rest_observations(address: str, probes: list[Probe], dump: Path | None = None) -> dict[str, Facts]:
    """Facts of every probe's answer from ``address``; with ``dump``, the raw answers are also
    written there (one JSON line per request) for a person to read."""
    observations: dict[str, Facts] = {}
    lines: list[str] = []
    for probe in probes:
        answer = send(address, probe)
        observations[probe.name] = answer_facts(answer, probe.target)
        lines.append(json.dumps({"request": probe.name, "status": answer.status, "headers": answer.headers,
                                 "body": answer.body.decode("utf-8", "replace")[:4000]}))
    if dump is not None:
        dump.write_text("\n".join(lines) + "\n")
    return observations


def grpc_observations(address: str, pools: list[grpc_probe.Reflected], calls: list[grpc_probe.Call],
                      services: list[str]) -> dict[str, Facts]:
    """Facts of every call and reflection request on the server at ``address``; requests are built
    from the same descriptors for both servers (upstream's first)."""
    with grpc.insecure_channel(address) as channel:
        facts = {call.name: grpc_probe.invoke(channel, [p.pool for p in pools], call) for call in calls}
        for path in (grpc_probe.REFLECTION_V1, grpc_probe.REFLECTION_V1ALPHA):
            facts.update(grpc_probe.reflection_facts(channel, path, services))
    return facts


@pytest.fixture
def both(cluster: Cluster) -> Iterator[tuple[str, str, str, str]]:
    """Our worker and upstream's on one database with the same templates: (our REST, our gRPC,
    upstream REST, upstream gRPC)."""
    upstream = cluster.start_upstream_worker()
    _, web, rpc = start_our_worker(cluster)
    yield web, rpc, upstream.web, upstream.grpc


def test_the_readme_lists_every_difference_from_the_upstream_worker_and_no_other(
        both: tuple[str, str, str, str]) -> None:
    """Each REST route of either router or OpenAPI document, wrong methods, unknown routes, bad
    parameters and queries, CORS; every gRPC method, grpc.health, reflection: what differs is
    exactly what README's table lists."""
    our_web, our_rpc, their_web, their_rpc = both
    routes = documented_routes(our_web) | documented_routes(their_web) | set(UPSTREAM_ROUTES)
    probes = rest_probes(routes)
    with grpc.insecure_channel(our_rpc) as a, grpc.insecure_channel(their_rpc) as b:
        ours_reflected, theirs_reflected = grpc_probe.load(a), grpc_probe.load(b)
    services = sorted(set(ours_reflected.services) | set(theirs_reflected.services))
    calls = grpc_calls([s for s in services if s.startswith("tasker.")])
    pools = [theirs_reflected, ours_reflected]
    dump = Path(os.environ["TASKER_CONTRACT_DUMP"]) if os.environ.get("TASKER_CONTRACT_DUMP") else None
    ours = (rest_observations(our_web, probes, dump and dump / "ours.jsonl")
            | grpc_observations(our_rpc, pools, calls, services))
    theirs = (rest_observations(their_web, probes, dump and dump / "upstream.jsonl")
              | grpc_observations(their_rpc, pools, calls, services))
    _assert_only_listed(ours, theirs, auth_on=False)


def _report(unexplained: list[Difference], stale: list[Deliberate]) -> str:
    """The failure message: each difference README does not list, each listed one not found."""
    lines = [f"{len(unexplained)} difference(s) not in README's list:"] + [f"  {d}" for d in unexplained]
    lines += [f"{len(stale)} listed difference(s) that no longer occur:"] + [f"  {row}" for row in stale]
    return "\n".join(lines)


#: Auth on, with API keys: a reader (templates only), an admin (every worker permission).
READER, ADMIN = "reader-key-0123456789abcdef", "admin-key-0123456789abcdef"
AUTH_SETTINGS: dict[str, Any] = {
    "worker.web.auth.enabled": True,
    "worker.web.auth.api_keys_enabled": True,
    "worker.web.auth.api_keys": [
        {"key": READER, "permissions": ["worker:templates_read"]},
        {"key": ADMIN, "permissions": ["worker:config_read", "worker:templates_read", "templates:validate"]},
    ],
}
CREDENTIALS: dict[str, tuple[tuple[str, str], ...]] = {
    "none": (), "bad key": (("x-api-key", "not-a-key"),), "reader": (("x-api-key", READER),),
    "admin": (("x-api-key", ADMIN),), "bad bearer": (("authorization", "Bearer not-a-token"),),
    "bad bearer and admin key": (("authorization", "Bearer not-a-token"), ("x-api-key", ADMIN)),
}


def test_with_auth_on_both_answer_every_credential_alike(cluster: Cluster) -> None:
    """Auth on (`worker.web.auth`, API keys) on both: protected and public REST routes and the
    tasker.v1 gRPC methods with no, bad, insufficient and sufficient credentials compare as
    README's table says (status, auth failure headers and bodies, gRPC codes)."""
    upstream = cluster.start_upstream_worker(settings=AUTH_SETTINGS)
    _, our_web, our_rpc = start_our_worker(cluster, AUTH_SETTINGS)
    routes = [("GET", "/health"), ("GET", "/v1/templates"), ("GET", TEMPLATE), ("POST", f"{TEMPLATE}/validate"),
              ("GET", "/config"), ("GET", "/metrics/worker")]
    probes = [Probe(method, path, headers, variant=f"auth on, {name}")
              for method, path in routes for name, headers in CREDENTIALS.items()]
    calls = [grpc_probe.Call(service, method, variant=f"auth on, {name}", metadata=metadata)
             for service, method in (("tasker.v1.WorkerConfigService", "GetConfig"),
                                     ("tasker.v1.WorkerTemplateService", "ListTemplates"),
                                     ("tasker.v1.WorkerHealthService", "CheckHealth"))
             for name, metadata in CREDENTIALS.items()]
    with grpc.insecure_channel(upstream.grpc) as channel:
        pools = [grpc_probe.load(channel)]
    ours: dict[str, Facts] = rest_observations(our_web, probes)
    theirs: dict[str, Facts] = rest_observations(upstream.web, probes)
    with grpc.insecure_channel(our_rpc) as a, grpc.insecure_channel(upstream.grpc) as b:
        ours |= {call.name: grpc_probe.invoke(a, [p.pool for p in pools], call) for call in calls}
        theirs |= {call.name: grpc_probe.invoke(b, [p.pool for p in pools], call) for call in calls}
    statuses = {name: ours[f"GET /config [auth on, {name}]"]["status"] for name in ("none", "reader", "admin")}
    assert statuses == {"none": "401", "reader": "403", "admin": "200"}, f"auth did not take effect: {statuses}"
    _assert_only_listed(ours, theirs, auth_on=True)


def _assert_only_listed(ours: dict[str, Facts], theirs: dict[str, Facts], *, auth_on: bool) -> None:
    """Every difference is covered by a row of README's table; every row of this test's part of
    the table (rows naming `auth on` belong to the auth test) still covers one."""
    listed = deliberate_differences(REPO / "README.md")
    found = compare(ours, theirs)
    unexplained = [d for d in found if not any(row.covers(d) for row in listed)]
    stale = [row for row in listed if ("auth on" in row.request) == auth_on and not any(row.covers(d) for d in found)]
    assert not unexplained and not stale, _report(unexplained, stale)

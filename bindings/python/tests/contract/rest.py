"""The REST requests sent to both workers and the facts kept from each answer: status, the headers
that carry meaning (content type, `allow`, `vary`, CORS, retry and request id), the JSON shape, and
for Prometheus text the metric families with their label names and label value formats."""

from __future__ import annotations

import http.client
import json
import re
from dataclasses import dataclass, field

from contract.shape import Facts, json_facts, string_fact

#: Headers compared by value (lowercase names).
VALUE_HEADERS = (
    "content-type", "allow", "vary", "access-control-allow-origin", "access-control-allow-methods",
    "access-control-allow-headers", "access-control-expose-headers", "access-control-allow-credentials",
    "access-control-max-age", "retry-after", "www-authenticate", "x-auth-failure-reason",
    "x-auth-failure-severity", "cache-control",
)
#: Headers compared by format only.
FORMAT_HEADERS = ("x-request-id",)


@dataclass(frozen=True)
class Probe:
    """One request: its name in the comparison (``GET /health`` or ``GET /health [origin]``)."""
    method: str
    target: str
    headers: tuple[tuple[str, str], ...] = ()
    variant: str = ""
    body: bytes | None = None

    @property
    def name(self) -> str:
        base = f"{self.method} {self.target}"
        return f"{base} [{self.variant}]" if self.variant else base


@dataclass
class Answer:
    """What came back: status, lowercase headers, body."""
    status: int
    headers: dict[str, str]
    body: bytes = field(repr=False)


def send(address: str, probe: Probe, timeout: float = 15) -> Answer:
    """Sends ``probe`` to ``host:port`` on a fresh connection."""
    host, port = address.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        connection.request(probe.method, probe.target, body=probe.body, headers=dict(probe.headers))
        response = connection.getresponse()
        body = response.read()
        headers: dict[str, str] = {}
        for name, value in response.getheaders():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        return Answer(response.status, headers, body)
    finally:
        connection.close()


def _list_header(value: str) -> str:
    """A comma-separated header value in a canonical order (``GET,HEAD`` = ``HEAD, GET``)."""
    return ",".join(sorted(part.strip().lower() for part in value.split(",") if part.strip()))


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+\S+")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def prometheus_facts(text: str) -> Facts:
    """Per metric family: its label names; per label: the formats of its values."""
    facts: Facts = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if not match:
            continue
        name = match.group(1)
        labels = _LABEL.findall(match.group(3) or "")
        key = f"metric {name}"
        names = ",".join(sorted(label for label, _ in labels))
        facts[key] = "|".join(sorted(set(facts.get(key, names).split("|")) | {names}))
        for label, value in labels:
            label_key = f"metric {name}{{{label}}}"
            fact = string_fact(value)
            known = facts.get(label_key)
            facts[label_key] = fact if known is None else "|".join(sorted(set(known.split("|")) | {fact}))
    return facts


def openapi_facts(document: dict[str, object]) -> Facts:
    """An OpenAPI document as the operations it documents (its schemas are each worker's own words
    for the bodies the requests themselves compare)."""
    facts: Facts = {"openapi": str(document.get("openapi"))}
    paths = document.get("paths")
    for path, operations in (paths.items() if isinstance(paths, dict) else []):
        for method in operations if isinstance(operations, dict) else []:
            facts[f"documents {method.upper()} {path}"] = "yes"
    return facts


def answer_facts(answer: Answer, target: str = "") -> Facts:
    """The comparable facts of one answer. A 400's body and content type are one fact each (each
    implementation words a rejected request its own way); an OpenAPI document is its operations."""
    facts: Facts = {"status": str(answer.status)}
    for name in VALUE_HEADERS:
        if name in answer.headers:
            value = answer.headers[name]
            listed = name in ("allow", "vary") or name.startswith("access-control-allow-")
            facts[f"header {name}"] = _list_header(value) if listed else value.lower().replace(" ", "")
    for name in FORMAT_HEADERS:
        if name in answer.headers:
            facts[f"header {name}"] = string_fact(answer.headers[name])
    content_type = answer.headers.get("content-type", "")
    if answer.status == 400:
        facts["400 content-type"] = facts.pop("header content-type", "none")
        facts["400 body"] = "json" if "json" in content_type else "text" if answer.body else "empty"
    elif not answer.body:
        facts["body"] = "empty"
    elif "json" in content_type:
        try:
            document = json.loads(answer.body)
        except ValueError:
            facts["body"] = "invalid json"
        else:
            openapi = answer.status == 200 and target.startswith("/api-docs/openapi.json") and isinstance(document, dict)
            facts.update(openapi_facts(document) if openapi else json_facts(document))
    elif answer.body.lstrip().startswith(b"# HELP") or answer.body.lstrip().startswith(b"# TYPE"):
        facts.update(prometheus_facts(answer.body.decode("utf-8", "replace")))
    else:
        facts["body"] = "text"
    return facts

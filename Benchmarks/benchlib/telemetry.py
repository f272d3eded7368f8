"""Telemetry (issue #30; on request: --phases telemetry): the span exporter's cost on the drain.
The drain phase's drain (Hybrid, c = 16, `drain_n[16]` no-op steps, steps enqueued as orchestration
does) with a fresh worker each round, alternately with export off and on (TELEMETRY_ENABLED=true,
every span sampled, OTLP/HTTP protobuf to a collector in this process that reads each request, counts
its spans and answers 200), ROUNDS rounds each. Figures per mode (medians of the rounds): steps/s, the
worker's and the server's CPU per step; the spans the collector received per step; and the ratios
on ÷ off of steps/s and worker CPU per step, measured in this one run."""
import collections
import statistics
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import worker
from .common import log
from .drain import drain_with

ROUNDS = {"quick": 2, "full": 3}
C = 16


def _varint(data, i):
    shift = value = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _fields(data):
    """(field number, wire type, value) of one protobuf message (length-delimited values as bytes)."""
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 2:
            length, i = _varint(data, i)
            value, i = data[i:i + length], i + length
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield field, wire, value


def span_names(body):
    """The names (field 5) of the spans in an ExportTraceServiceRequest: resource_spans (1) →
    scope_spans (2) → spans (2)."""
    names = []
    for field, _, resource_spans in _fields(body):
        if field != 1:
            continue
        for f2, _, scope_spans in _fields(resource_spans):
            if f2 != 2:
                continue
            for f3, _, span in _fields(scope_spans):
                if f3 == 2:
                    names += [value.decode() for f4, _, value in _fields(span) if f4 == 5]
    return names


class Collector:
    """An OTLP/HTTP endpoint that counts what it is sent."""

    def __init__(self):
        self.spans = self.requests = self.bytes = 0
        self.names = collections.Counter()
        self.lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                names = span_names(body)
                with collector.lock:
                    collector.spans += len(names)
                    collector.names.update(names)
                    collector.requests += 1
                    collector.bytes += len(body)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def snapshot(self):
        with self.lock:
            return self.spans, self.requests, self.bytes

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def telemetry(b):
    collector = Collector()
    n = b.cfg["drain_n"][C]
    env_on = {"TELEMETRY_ENABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, "OTEL_TRACES_SAMPLER": "always_on"}
    runs = {"off": [], "on": []}
    try:
        for round_ in range(ROUNDS[b.results["mode"]]):
            for mode in ("off", "on"):
                before = collector.snapshot()
                env = env_on if mode == "on" else {"TELEMETRY_ENABLED": "false"}
                r = drain_with(b, n, lambda: worker.start_worker(b, "Hybrid", C, env=env, name_suffix=f"-otel-{mode}-{round_}"))
                after = collector.snapshot()   # the worker has stopped: its last batch was sent at shutdown
                r["spans_per_step"] = round((after[0] - before[0]) / max(1, r["completed"]), 2)
                r["export_requests"] = after[1] - before[1]
                r["export_bytes_per_step"] = round((after[2] - before[2]) / max(1, r["completed"]), 1)
                runs[mode].append(r)
                log(f"telemetry {mode} round {round_ + 1}: {r['steps_per_s']:.0f} steps/s, worker "
                    f"{r.get('worker_cpu_ms_per_step', 0):.3f} ms/step, {r['spans_per_step']} spans/step")
    finally:
        collector.close()

    def median(mode, key):
        values = [r[key] for r in runs[mode] if r.get(key) is not None]
        return statistics.median(values) if values else None

    summary = {mode: {key: median(mode, key) for key in ("steps_per_s", "worker_cpu_ms_per_step", "server_cpu_ms_per_step",
                                                         "spans_per_step", "export_bytes_per_step")} for mode in runs}
    on, off = summary["on"], summary["off"]
    summary["ratios"] = {
        "steps_per_s_on_over_off": round(on["steps_per_s"] / off["steps_per_s"], 3),
        "worker_cpu_per_step_on_over_off": round(on["worker_cpu_ms_per_step"] / off["worker_cpu_ms_per_step"], 3),
    }
    b.results["telemetry"] = {"c": C, "steps": n, "rounds": ROUNDS[b.results["mode"]], "runs": runs, "summary": summary,
                              "span_names": dict(collector.names.most_common(20))}


def lines(R):
    t = R.get("telemetry")
    if not t:
        return []
    s = t["summary"]
    out = ["", f"Telemetry (issue #30): drain of {t['steps']} no-op steps, c = {t['c']}, export off / on (every span, "
               f"OTLP/HTTP protobuf to a local collector), medians of {t['rounds']} rounds each",
           f"{'export':7} {'steps/s':>8} {'worker ms/st':>12} {'srv ms/st':>9} {'spans/st':>8} {'bytes/st':>8}"]
    for mode in ("off", "on"):
        m = s[mode]
        out.append(f"{mode:7} {m['steps_per_s']:>8.0f} {m['worker_cpu_ms_per_step']:>12.3f} {m['server_cpu_ms_per_step']:>9.3f}"
                   f" {m['spans_per_step'] or 0:>8.2f} {m['export_bytes_per_step'] or 0:>8.0f}")
    out.append(f"  on ÷ off: steps/s {s['ratios']['steps_per_s_on_over_off']}, worker CPU per step "
               f"{s['ratios']['worker_cpu_per_step_on_over_off']}; spans received by name: "
               + ", ".join(f"{name} {count}" for name, count in t.get("span_names", {}).items()))
    return out

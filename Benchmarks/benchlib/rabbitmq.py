"""RabbitMQ against PGMQ (issue #18), in one run: our worker (`tasker-worker run`, Swift no-op
`tasker.noop`, durable commits) once with `[common.queues] backend = "rabbitmq"` and once on PGMQ
(Hybrid), alternated: a drain of N steps at c = 16, and the handler start latency at the latency
phase's rates with the same Poisson arrival times (`latency.arrivals`). Per side: steps/s, start
p50/p99, PostgreSQL's CPU per step (every server process but the bench's own connections) and the
broker's CPU per step (the beam.smp process's utime + stime from /proc/<pid>/stat; on the PGMQ side
the broker idles, so its figure is what an idle broker costs).

Steps reach the broker as orchestration sends them: seeded `pending`, `pending→enqueued` committed,
then the StepMessage — the same JSON body as the PGMQ drain's (built by the same SQL expression) —
published to worker_bench_queue (default exchange, delivery_mode 2, application/json; the queue
declared upstream's way first, Tests/Interop/rabbitmq_declare.py). The drain publishes each chunk of
500 in one AMQP transaction (tx.commit returns once the broker has them, as the PGMQ drain's one
durable statement per chunk); the latency sender publishes each message without waiting for the
broker, as the PGMQ latency sender commits with synchronous_commit=off. Results are counted on the
broker's orchestration_step_results (RabbitMQ) or in PGMQ."""
import os
import statistics
import sys
import time

import psycopg

from . import worker
from .common import LATENCY_C, QUEUE, RESULTS_QUEUE, log, summary
from .drain import PGMQTransport, drain_with
from .latency import arrivals, send_at
from .server_cpu import TICKS, ServerCPU, process_ticks

C = 16
# The StepMessage of seeded step n, exactly as Bench.send_steps builds it for PGMQ.
BODIES = """SELECT n, jsonb_build_object('task_uuid', md5('t'||n)::uuid, 'step_uuid', md5('s'||n)::uuid,
                   'correlation_id', md5('c'||n)::uuid)::text
              FROM generate_series(%(a)s::bigint, %(b)s::bigint) n ORDER BY n"""
SIDES = ("pgmq", "rabbitmq")
DRAIN_KEYS = ("steps_per_s", "server_cpu_ms_per_step", "broker_cpu_ms_per_step", "worker_cpu_ms_per_step",
              "enqueue_cpu_ms_per_step")


def worker_overlay(url):
    """The TOML that moves the worker to the broker (appended to the bench overlay)."""
    return f'[common.queues]\nbackend = "rabbitmq"\n[common.queues.rabbitmq]\nurl = "{url}"\n'


class Broker:
    """The bench's connection to the broker of scripts/bench (pika; heartbeats off: the connection
    idles through the PGMQ runs), and the broker's beam.smp pid for its CPU."""

    def __init__(self, b):
        import pika
        sys.path.insert(0, os.path.join(b.a.repo, "Tests", "Interop"))
        from rabbitmq_declare import declare   # the upstream declaration (one implementation)
        self.pika = pika
        with open(b.a.rabbitmq_pid_file) as f:
            self.pid = int(f.read().split()[0])
        params = pika.URLParameters(b.a.rabbitmq_url)
        params.heartbeat = 0
        self.conn = pika.BlockingConnection(params)
        self.channel = self.conn.channel()
        for queue in (QUEUE, RESULTS_QUEUE):
            declare(self.channel, queue)
        self.tx = self.conn.channel()
        self.tx.tx_select()
        self.props = pika.BasicProperties(delivery_mode=2, content_type="application/json")

    def ticks(self):
        return process_ticks(self.pid)

    def publish(self, body, channel=None):
        (channel or self.channel).basic_publish(exchange="", routing_key=QUEUE, body=body.encode(), properties=self.props)

    def results(self):
        return self.channel.queue_declare(RESULTS_QUEUE, passive=True).method.message_count

    def purge(self):
        for queue in (QUEUE, RESULTS_QUEUE):
            self.channel.queue_purge(queue)

    def close(self):
        self.conn.close()


def broker_per_step(broker_before, broker_after, steps):
    return {"broker_cpu_ms_per_step": round((broker_after - broker_before) * 1000.0 / TICKS / max(1, steps), 3)}


class BrokerTransport(PGMQTransport):
    """A drain through the broker: each chunk published in one AMQP transaction, results counted on
    the broker's orchestration_step_results."""

    def __init__(self, b, broker):
        super().__init__(b)
        self.broker = broker

    def purge_results(self):
        self.broker.purge()

    def send_steps(self, lo, hi):
        for _, body in self.b.q(BODIES, {"a": lo, "b": hi}):
            self.broker.publish(body, self.broker.tx)
        self.broker.tx.tx_commit()

    def wait_results(self, n, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.broker.results() >= n:
                return True
            time.sleep(0.1)
        log(f"timeout: {self.broker.results()} of {n} results on the broker")
        return False

    def snapshot(self):
        return self.broker.ticks()

    def per_step(self, before, after, steps):
        return broker_per_step(before, after, steps)


class PGMQWithBrokerCPU(PGMQTransport):
    """The PGMQ drain, with the (idle) broker's CPU over the same window."""

    def __init__(self, b, broker):
        super().__init__(b)
        self.broker = broker

    def snapshot(self):
        return self.broker.ticks()

    def per_step(self, before, after, steps):
        return broker_per_step(before, after, steps)


def settle_results(b):
    """Moves every bench step still waiting for orchestration (no orchestration runs in the bench) to
    `complete`, as orchestration would. Otherwise each start of a worker on RabbitMQ re-publishes
    the results of earlier runs' steps (its start-up recovery of results it cannot know were
    published; docs/rabbitmq.md), and they would be counted as this run's results on the broker."""
    b.q("""UPDATE tasker.workflow_step_transitions t SET to_state = 'complete'
             FROM tasker.workflow_steps ws JOIN tasker.tasks tk ON tk.task_uuid = ws.task_uuid
            WHERE t.workflow_step_uuid = ws.workflow_step_uuid AND t.most_recent AND tk.named_task_uuid = %s
              AND t.to_state IN ('enqueued_for_orchestration', 'enqueued_as_error_for_orchestration')""", (b.named_task,))


def start(b, side):
    extra = worker_overlay(b.a.rabbitmq_url) if side == "rabbitmq" else ""

    def run():
        settle_results(b)
        return worker.start_worker(b, "Hybrid", C, extra=extra)
    return run


def drains(b, broker):
    """`rabbitmq_rounds` alternated drains per side (pgmq, rabbitmq; then rabbitmq, pgmq; …): the runs
    and the medians."""
    n = b.cfg["drain_n"][C]
    transports = {"pgmq": PGMQWithBrokerCPU(b, broker), "rabbitmq": BrokerTransport(b, broker)}
    runs = {side: [] for side in SIDES}
    for i in range(b.cfg["rabbitmq_rounds"]):
        for side in (SIDES if i % 2 == 0 else SIDES[::-1]):
            r = drain_with(b, n, start(b, side), transport=transports[side])
            runs[side].append({k: r.get(k) for k in DRAIN_KEYS + ("completed", "ok", "enqueue_s", "in_flight_mean")})
            log(f"rabbitmq phase drain {side:8} (round {i + 1}): {r['steps_per_s']:8.1f} steps/s ({r['completed']}/{n}), "
                f"server CPU {r['server_cpu_ms_per_step']:.3f} ms/step, broker CPU {r['broker_cpu_ms_per_step']:.3f} ms/step")
    out = {"c": C, "steps": n, "runs": runs}
    for side in SIDES:
        for key in DRAIN_KEYS:
            values = [x[key] for x in runs[side] if x.get(key) is not None]
            out[f"{side}_median_{key}"] = statistics.median(values) if values else None
    return out


def latency_side(b, broker, side):
    """Handler start latency at each rate (same arrival times as the latency phase), with the
    server's and the broker's CPU per step over each rate's window."""
    sender = psycopg.connect(b.a.db_url, autocommit=True, options="-c TimeZone=UTC -c synchronous_commit=off")
    sender_pid = sender.info.backend_pid
    w = start(b, side)()
    out = {}
    try:
        for rate in b.cfg["rates"]:
            count = int(rate * b.cfg["rate_seconds"])
            a, z = b.seed(count)
            b.mark_enqueued(a, z)   # committed before any send, as orchestration does
            if side == "rabbitmq":
                transport = BrokerTransport(b, broker)
                bodies = [body for _, body in b.q(BODIES, {"a": a, "b": z})]
                send = lambda i: broker.publish(bodies[i])   # noqa: E731
            else:
                transport = PGMQTransport(b)
                send = lambda i: b.send_steps(a + i, a + i, conn=sender)   # noqa: E731
            transport.purge_results()
            cpu = ServerCPU(b)
            before = (cpu.snapshot(), broker.ticks(), process_ticks(sender_pid))
            sent, achieved = send_at(arrivals(rate, count), send)
            ok = transport.wait_results(count, timeout=30 + count / 50)
            after = (cpu.snapshot(), broker.ticks(), process_ticks(sender_pid))
            commits = {a + i: t for i, t in sent.items()}
            rows = b.q("""SELECT n, extract(epoch FROM (ws.results->'metadata'->>'started_at')::timestamptz)
                            FROM generate_series(%s::bigint, %s::bigint) n
                            JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = md5('s'||n)::uuid""", (a, z))
            start_ms = [(float(s) - commits[n]) * 1000 for n, s in rows if s is not None]
            server = ServerCPU.per_step(before[0], after[0], count)
            sender_ms = (after[2] - before[2]) * 1000.0 / TICKS / max(1, count)
            out[str(rate)] = {
                "achieved_rate": round(achieved, 1), "sent": count, "started": len(start_ms), "ok": ok,
                "to_handler_start_ms": summary(start_ms),
                # The PGMQ sender's backend is the bench's connection too: not the worker's cost.
                "server_cpu_ms_per_step": round(server["server_cpu_ms_per_step"] - sender_ms, 3),
                "send_cpu_ms_per_step": round(sender_ms, 3), **broker_per_step(before[1], after[1], count)}
            s = out[str(rate)]["to_handler_start_ms"]
            if s["p50"] is None:
                raise SystemExit(f"bench: no handler started in the rabbitmq phase's latency ({side}, {rate}/s); see {b.work}")
            log(f"rabbitmq phase latency {side:8} {rate:5}/s: start p50 {s['p50']:.2f} p99 {s['p99']:.2f} ms "
                f"({len(start_ms)}/{count}, sent at {achieved:.0f}/s)")
    finally:
        worker.stop(w)
        sender.close()
    return out


def rabbitmq(b):
    if not (b.a.rabbitmq_url and b.a.rabbitmq_pid_file):
        raise SystemExit("the rabbitmq phase needs --rabbitmq-url and --rabbitmq-pid-file (scripts/bench starts a broker)")
    b.set_sync(True)
    broker = Broker(b)
    try:
        R = {"drain": drains(b, broker), "latency": {}}
        for side in (SIDES if b.cfg["rabbitmq_rounds"] % 2 == 0 else SIDES[::-1]):
            R["latency"][side] = latency_side(b, broker, side)
        d = R["drain"]
        R["rabbitmq_over_pgmq"] = {key: round(d[f"rabbitmq_median_{key}"] / d[f"pgmq_median_{key}"], 3)
                                   for key in ("steps_per_s", "server_cpu_ms_per_step")
                                   if d[f"rabbitmq_median_{key}"] and d[f"pgmq_median_{key}"]}
        broker.purge()
    finally:
        broker.close()
    b.results["rabbitmq"] = R


def lines(R):
    """The phase's block of the printed table."""
    r = R.get("rabbitmq")
    if not r:
        return []
    d = r["drain"]
    out = ["", f"RabbitMQ vs PGMQ (our worker, Swift no-op, durable; drain c={d['c']}, {d['steps']} steps, median of "
               f"{len(d['runs']['pgmq'])} alternated; latency c={LATENCY_C}, Poisson arrivals)",
           f"{'':24} {'steps/s':>8} {'srv ms/st':>10} {'broker ms/st':>13} {'wkr ms/st':>10}"]
    for side in SIDES:
        out.append(f"{'drain ' + side:24} {d[f'{side}_median_steps_per_s']:8.0f} {d[f'{side}_median_server_cpu_ms_per_step']:10.3f}"
                   f" {d[f'{side}_median_broker_cpu_ms_per_step']:13.3f} {d[f'{side}_median_worker_cpu_ms_per_step']:10.3f}")
    out.append(f"{'':24} {'rate':>8} {'start p50':>10} {'p99':>8} {'srv ms/st':>10} {'broker ms/st':>13}")
    for side in SIDES:
        for rate, v in r["latency"].get(side, {}).items():
            s = v["to_handler_start_ms"]
            out.append(f"{'latency ' + side:24} {rate:>8} {s['p50']:10.2f} {s['p99']:8.2f} {v['server_cpu_ms_per_step']:10.3f}"
                       f" {v['broker_cpu_ms_per_step']:13.3f}")
    out.append("  srv = PostgreSQL's CPU per step (not the bench's connections: marking enqueued, PGMQ sends); broker = "
               "beam.smp's CPU per step (publishes included; idle on the PGMQ side)")
    return out

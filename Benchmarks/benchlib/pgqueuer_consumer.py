"""PgQueuer's consumer for the latency phase, run as its own process (as our worker is), so that the
bench's sender and the consumer share no interpreter:

    python pgqueuer_consumer.py DB_URL BATCH_SIZE POLL_MS OUT.json

Installs PgQueuer's tables if missing and clears its queue; runs a QueueManager (psycopg driver,
continuous mode, batch_size = BATCH_SIZE, max_concurrent_tasks = 2 × BATCH_SIZE, dequeue_timeout =
POLL_MS: its fallback poll, like our worker's) whose `noop` entrypoint records time.time() at the
handler's start per job payload; prints READY once a probe job it enqueued itself has been handled
(listener up, first dequeue done). On SIGTERM it stops and writes {payload: start time} to OUT.json.
Runs as a script (no benchlib imports)."""
import asyncio
import json
import signal
import sys
import time
from datetime import timedelta

import psycopg
from pgqueuer import PsycopgDriver, Queries, QueueManager


async def main(url, batch, poll_ms, out):
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    q = Queries(PsycopgDriver(conn))
    if not await q.has_table("pgqueuer"):
        await q.install()
    await q.clear_queue(None)
    qm = QueueManager(q)
    starts = {}

    @qm.entrypoint("noop")
    async def noop(job):
        t = time.time()
        key = job.payload.decode()
        if key == "probe":
            print("READY", flush=True)
        else:
            starts[key] = t

    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, qm.shutdown.set)
    run = asyncio.create_task(qm.run(batch_size=batch, max_concurrent_tasks=2 * batch,
                                     dequeue_timeout=timedelta(milliseconds=poll_ms)))
    await asyncio.sleep(0.5)
    probe = await psycopg.AsyncConnection.connect(url, autocommit=True)
    await Queries(PsycopgDriver(probe)).enqueue("noop", b"probe", 0)
    await probe.close()
    await run
    with open(out, "w") as f:
        json.dump(starts, f)
    await conn.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))

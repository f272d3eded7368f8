"""Publishes task requests to ``orchestration_task_requests`` on RabbitMQ as upstream's publishers do
(default exchange, routing key = the queue, ``delivery_mode`` 2, ``application/json``, publisher
confirms), with pika: an AMQP client independent of ours. Run with TASKER_TEST_PYTHON (scripts/test's
.tasker/venv has pika; the bindings' venv does not).

Usage: publish_task_requests.py AMQP_URL < one JSON document per line

Waits (up to 60 s) until the queue exists and has a consumer (the orchestration declared it and
consumes), then publishes every line; a message the broker cannot route or nacks fails the run.
Prints ``published N``.
"""

import sys
import time

import pika
import pika.exceptions

QUEUE = "orchestration_task_requests"


def wait_for_consumer(connection: pika.BlockingConnection, timeout: float = 60) -> None:
    """Until a passive declare of QUEUE answers with at least one consumer (each refusal closes the
    channel, so each try has its own)."""
    deadline = time.monotonic() + timeout
    while True:
        channel = connection.channel()
        try:
            if channel.queue_declare(queue=QUEUE, passive=True).method.consumer_count > 0:
                channel.close()
                return
            channel.close()
        except pika.exceptions.ChannelClosedByBroker:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"{QUEUE} has no consumer after {timeout} s")
        time.sleep(0.2)


def main(url: str) -> int:
    bodies = [line.strip() for line in sys.stdin if line.strip()]
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        wait_for_consumer(connection)
        channel = connection.channel()
        channel.confirm_delivery()
        properties = pika.BasicProperties(delivery_mode=2, content_type="application/json")
        for body in bodies:
            # mandatory: an unroutable message raises instead of vanishing; confirms: a nack raises.
            channel.basic_publish(exchange="", routing_key=QUEUE, body=body.encode(), properties=properties,
                                  mandatory=True)
    finally:
        if connection.is_open:
            connection.close()
    print(f"published {len(bodies)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

"""Declares a Tasker queue the way upstream Tasker does, with pika (an AMQP client independent of ours).

Usage: rabbitmq_declare.py AMQP_URL QUEUE

For a queue Q not ending in _dlq: exchange Q_dlx (direct, durable), queue Q_dlq (durable, no
arguments) bound to it with routing key Q, queue Q (durable) with x-dead-letter-exchange = Q_dlx and
x-dead-letter-routing-key = Q (pika sends Python strings as long strings, as upstream's lapin does).
A _dlq queue: durable, no arguments. Prints "declared" on success; a broker refusal (e.g. 406
PRECONDITION_FAILED) is printed and the exit status is 1.
"""

import sys

import pika
import pika.exceptions


def declare(channel: "pika.adapters.blocking_connection.BlockingChannel", queue: str) -> None:
    """Declares `queue` and, unless it is a dead-letter queue, its DLX exchange and DLQ."""
    if queue.endswith("_dlq"):
        channel.queue_declare(queue=queue, durable=True)
        return
    exchange = f"{queue}_dlx"
    channel.exchange_declare(exchange=exchange, exchange_type="direct", durable=True)
    channel.queue_declare(queue=f"{queue}_dlq", durable=True)
    channel.queue_bind(queue=f"{queue}_dlq", exchange=exchange, routing_key=queue)
    channel.queue_declare(
        queue=queue,
        durable=True,
        arguments={"x-dead-letter-exchange": exchange, "x-dead-letter-routing-key": queue},
    )


def main(url: str, queue: str) -> int:
    """Connects, declares, and reports the outcome on stdout."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        declare(connection.channel(), queue)
    except pika.exceptions.ChannelClosedByBroker as error:
        print(f"refused: {error.reply_code} {error.reply_text}")
        return 1
    finally:
        if connection.is_open:
            connection.close()
    print("declared")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))

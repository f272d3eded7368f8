import NIOCore
import TaskerAMQP
import TaskerTestSupport
import Testing

/// The client against the real broker: declarations, confirmed publishes, consumers, acks and nacks,
/// `basic.get`, prefetch, and the broker's channel closes as typed errors.
@Suite("AMQP client against RabbitMQ", BrokerEnvironment.available)
struct AMQPChannelTests {
    static func body(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    /// A connection, a confirm-mode channel and a fresh durable queue (deleted afterwards).
    static func withQueue(_ body: (AMQPConnection, AMQPChannel, String) async throws -> Void) async throws {
        let connection = try await BrokerEnvironment.connect()
        let channel = try await connection.openChannel()
        let queue = BrokerEnvironment.uniqueName("amqp-test")
        try await channel.declareQueue(queue, durable: true)
        try await channel.enablePublisherConfirms()
        do {
            try await body(connection, channel, queue)
        } catch {
            await connection.close()
            throw error
        }
        let cleanup = try? await connection.openChannel()
        _ = try? await cleanup?.deleteQueue(queue)
        await connection.close()
    }

    @Test func aConfirmedPublishIsConsumedWithItsPropertiesAndAcked() async throws {
        try await Self.withQueue { connection, channel, queue in
            for index in 0..<3 {
                try await channel.publish(Self.body("{\"n\":\(index)}"), routingKey: queue, properties: .persistentJSON)
            }
            #expect(try await channel.inspectQueue(queue).messageCount == 3)
            let consumer = try await channel.consume(queue: queue)
            var seen: [String] = []
            for try await delivery in consumer {
                #expect(delivery.properties.deliveryMode == 2 && delivery.properties.contentType == "application/json")
                #expect(!delivery.redelivered && delivery.routingKey == queue && delivery.consumerTag == consumer.consumerTag)
                seen.append(String(buffer: delivery.body))
                try await channel.ack(deliveryTag: delivery.deliveryTag)
                if seen.count == 3 { break }
            }
            #expect(seen == ["{\"n\":0}", "{\"n\":1}", "{\"n\":2}"])
            try await channel.cancel(consumerTag: consumer.consumerTag)
            // Acked: nothing comes back when the channel closes.
            try await channel.close()
            let other = try await connection.openChannel()
            #expect(try await other.inspectQueue(queue).messageCount == 0)
        }
    }

    @Test func aNackWithRequeueComesBackRedelivered() async throws {
        try await Self.withQueue { _, channel, queue in
            try await channel.publish(Self.body("again"), routingKey: queue)
            let consumer = try await channel.consume(queue: queue)
            var iterator = consumer.makeAsyncIterator()
            let first = try #require(try await iterator.next())
            #expect(!first.redelivered)
            try await channel.nack(deliveryTag: first.deliveryTag, requeue: true)
            let second = try #require(try await iterator.next())
            #expect(second.redelivered && String(buffer: second.body) == "again")
            try await channel.ack(deliveryTag: second.deliveryTag)
        }
    }

    @Test func unackedDeliveriesReturnToTheQueueWhenTheirChannelCloses() async throws {
        try await Self.withQueue { connection, channel, queue in
            try await channel.publish(Self.body("held"), routingKey: queue)
            let holder = try await connection.openChannel()
            let held = try #require(try await holder.get(queue: queue))
            #expect(!held.delivery.redelivered && held.messageCount == 0)
            #expect(try await channel.get(queue: queue) == nil)
            try await holder.close()
            let back = try #require(try await channel.get(queue: queue))
            #expect(back.delivery.redelivered && String(buffer: back.delivery.body) == "held")
            try await channel.ack(deliveryTag: back.delivery.deliveryTag)
        }
    }

    @Test func basicGetReturnsMessagesWithTheRemainingCountThenNil() async throws {
        try await Self.withQueue { _, channel, queue in
            #expect(try await channel.get(queue: queue) == nil)
            try await channel.publish(
                Self.body("a"), routingKey: queue, properties: AMQPProperties(headers: ["k": .longString("v")], messageID: "m-a"))
            try await channel.publish(Self.body("b"), routingKey: queue)
            let first = try #require(try await channel.get(queue: queue))
            #expect(first.messageCount == 1 && String(buffer: first.delivery.body) == "a")
            #expect(first.delivery.properties.messageID == "m-a" && first.delivery.properties.headers == ["k": .longString("v")])
            let second = try #require(try await channel.get(queue: queue))
            #expect(second.messageCount == 0 && second.delivery.deliveryTag > first.delivery.deliveryTag)
            try await channel.ack(deliveryTag: second.delivery.deliveryTag, multiple: true)
            #expect(try await channel.inspectQueue(queue).messageCount == 0)
        }
    }

    @Test func aPassiveDeclareReportsDepthAndAMissingQueueIs404() async throws {
        try await Self.withQueue { connection, channel, queue in
            for _ in 0..<4 { try await channel.publish(Self.body("x"), routingKey: queue) }
            let info = try await channel.inspectQueue(queue)
            #expect(info.messageCount == 4 && info.consumerCount == 0 && info.name == queue)
            let probe = try await connection.openChannel()
            await #expect {
                try await probe.inspectQueue("\(queue)-missing")
            } throws: { error in
                guard case .channelClosedByBroker(let id, let reason) = error as? AMQPError else { return false }
                return id == probe.id && reason.replyCode == AMQPCloseReason.notFound
            }
        }
    }

    @Test func theBrokerSendsNoMoreThanThePrefetchOfUnackedDeliveries() async throws {
        try await Self.withQueue { connection, channel, queue in
            for index in 0..<10 { try await channel.publish(Self.body("\(index)"), routingKey: queue) }
            let consuming = try await connection.openChannel()
            try await consuming.setPrefetch(count: 3)
            let consumer = try await consuming.consume(queue: queue)
            var iterator = consumer.makeAsyncIterator()
            var held: [AMQPDelivery] = []
            for _ in 0..<3 { held.append(try #require(try await iterator.next())) }
            // The broker keeps the other 7 ready while 3 are unacked.
            #expect(try await eventually { try await channel.inspectQueue(queue).messageCount == 7 })
            #expect(try await channel.inspectQueue(queue).messageCount == 7)
            try await consuming.ack(deliveryTag: held[0].deliveryTag)
            held.append(try #require(try await iterator.next()))
            #expect(try await eventually { try await channel.inspectQueue(queue).messageCount == 6 })
            #expect(held.map { String(buffer: $0.body) } == ["0", "1", "2", "3"])
        }
    }

    @Test func aBodyLargerThanFrameMaxSpansSeveralFrames() async throws {
        try await Self.withQueue { connection, channel, queue in
            #expect(await connection.negotiatedFrameMax == 131_072)
            let bytes = (0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            try await channel.publish(ByteBuffer(bytes: bytes), routingKey: queue)
            let got = try #require(try await channel.get(queue: queue))
            #expect(got.delivery.body == ByteBuffer(bytes: bytes))
            try await channel.ack(deliveryTag: got.delivery.deliveryTag)
        }
    }

    @Test func aRedeclarationWithOtherArgumentsIsPreconditionFailedAndTheConnectionStaysUsable() async throws {
        try await Self.withQueue { connection, channel, queue in
            let other = try await connection.openChannel()
            await #expect {
                try await other.declareQueue(queue, durable: true, arguments: ["x-dead-letter-exchange": .longString("elsewhere")])
            } throws: { error in
                guard case .channelClosedByBroker(_, let reason) = error as? AMQPError else { return false }
                return reason.replyCode == AMQPCloseReason.preconditionFailed && reason.classID == 50 && reason.methodID == 10
            }
            // The closed channel refuses further work; the connection and other channels go on.
            await #expect(throws: AMQPError.self) { try await other.inspectQueue(queue) }
            #expect(await connection.isOpen)
            try await channel.publish(Self.body("still"), routingKey: queue)
            let fresh = try await connection.openChannel()
            #expect(try await fresh.inspectQueue(queue).messageCount == 1)
        }
    }

    @Test func publishesThatTheBrokerCannotTakeFailTyped() async throws {
        try await Self.withQueue { connection, channel, queue in
            // Mandatory and unroutable: returned (312 NO_ROUTE), then confirmed; the publish throws.
            await #expect {
                try await channel.publish(Self.body("nowhere"), routingKey: "\(queue)-no-such-queue", mandatory: true)
            } throws: { error in
                guard case .publishReturned(_, _, let reason) = error as? AMQPError else { return false }
                return reason.replyCode == AMQPCloseReason.noRoute
            }
            try await channel.publish(Self.body("fine"), routingKey: queue, mandatory: true)
            // To a missing exchange: the broker closes the channel (404); the waiting publish gets it.
            let doomed = try await connection.openChannel()
            try await doomed.enablePublisherConfirms()
            await #expect {
                try await doomed.publish(Self.body("x"), exchange: "\(queue)-no-such-exchange", routingKey: queue)
            } throws: { error in
                (error as? AMQPError)?.replyCode == AMQPCloseReason.notFound
            }
        }
    }

    @Test func consumersEndOnCancelAndThrowWhenTheBrokerCancelsThem() async throws {
        try await Self.withQueue { connection, channel, queue in
            let consumer = try await channel.consume(queue: queue)
            try await channel.cancel(consumerTag: consumer.consumerTag)
            var ended = consumer.makeAsyncIterator()
            #expect(try await ended.next() == nil)

            let doomedQueue = BrokerEnvironment.uniqueName("amqp-test-cancel")
            let consuming = try await connection.openChannel()
            try await consuming.declareQueue(doomedQueue)
            let doomed = try await consuming.consume(queue: doomedQueue)
            try await channel.deleteQueue(doomedQueue)
            await #expect {
                for try await _ in doomed {}
            } throws: { error in
                (error as? AMQPError) == .consumerCancelledByBroker(consumerTag: doomed.consumerTag)
            }
        }
    }

    @Test func concurrentConfirmedPublishesOnOneChannelAreEachConfirmed() async throws {
        try await Self.withQueue { _, channel, queue in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<50 {
                    group.addTask { try await channel.publish(Self.body("\(index)"), routingKey: queue) }
                }
                try await group.waitForAll()
            }
            #expect(try await channel.inspectQueue(queue).messageCount == 50)
        }
    }

    @Test func aConsumerFallingBehindItsBufferLimitClosesItsChannelAndTheMessagesGoBack() async throws {
        try await Self.withQueue { connection, channel, queue in
            for index in 0..<6 { try await channel.publish(Self.body("\(index)"), routingKey: queue) }
            // No prefetch (the broker pushes all 6) and a client buffer of 2 that nobody reads.
            let consuming = try await connection.openChannel()
            let consumer = try await consuming.consume(queue: queue, bufferLimit: 2)
            #expect(
                try await eventually {
                    guard await !consuming.isOpen else { return false }
                    return try await channel.inspectQueue(queue).messageCount == 6
                })
            await #expect {
                for try await _ in consumer {}
            } throws: { error in
                (error as? AMQPError) == .deliveryBufferOverflow(consumerTag: consumer.consumerTag, limit: 2)
            }
        }
    }
}

import NIOCore

/// The AMQP 0-9-1 methods this client sends or receives (classes connection, channel, exchange, queue,
/// basic, confirm); arguments in the specification's order, reserved fields left out.
package enum AMQPMethod: Sendable, Hashable {
    // connection (10)
    case connectionStart(versionMajor: UInt8, versionMinor: UInt8, serverProperties: AMQPFieldTable, mechanisms: String, locales: String)
    case connectionStartOk(clientProperties: AMQPFieldTable, mechanism: String, response: String, locale: String)
    case connectionSecure(challenge: String)
    case connectionTune(channelMax: UInt16, frameMax: UInt32, heartbeat: UInt16)
    case connectionTuneOk(channelMax: UInt16, frameMax: UInt32, heartbeat: UInt16)
    case connectionOpen(virtualHost: String)
    case connectionOpenOk
    case connectionClose(AMQPCloseReason)
    case connectionCloseOk
    case connectionBlocked(reason: String)
    case connectionUnblocked
    // channel (20)
    case channelOpen
    case channelOpenOk
    case channelFlow(active: Bool)
    case channelFlowOk(active: Bool)
    case channelClose(AMQPCloseReason)
    case channelCloseOk
    // exchange (40)
    case exchangeDeclare(ExchangeDeclare)
    case exchangeDeclareOk
    // queue (50)
    case queueDeclare(QueueDeclare)
    case queueDeclareOk(queue: String, messageCount: UInt32, consumerCount: UInt32)
    case queueBind(queue: String, exchange: String, routingKey: String, arguments: AMQPFieldTable)
    case queueBindOk
    case queueDelete(queue: String, ifUnused: Bool, ifEmpty: Bool)
    case queueDeleteOk(messageCount: UInt32)
    // basic (60)
    case basicQos(prefetchSize: UInt32, prefetchCount: UInt16, global: Bool)
    case basicQosOk
    case basicConsume(queue: String, consumerTag: String, noAck: Bool, exclusive: Bool, arguments: AMQPFieldTable)
    case basicConsumeOk(consumerTag: String)
    case basicCancel(consumerTag: String, noWait: Bool)
    case basicCancelOk(consumerTag: String)
    case basicPublish(exchange: String, routingKey: String, mandatory: Bool)
    case basicReturn(replyCode: UInt16, replyText: String, exchange: String, routingKey: String)
    case basicDeliver(consumerTag: String, deliveryTag: UInt64, redelivered: Bool, exchange: String, routingKey: String)
    case basicGet(queue: String, noAck: Bool)
    case basicGetOk(deliveryTag: UInt64, redelivered: Bool, exchange: String, routingKey: String, messageCount: UInt32)
    case basicGetEmpty
    case basicAck(deliveryTag: UInt64, multiple: Bool)
    case basicReject(deliveryTag: UInt64, requeue: Bool)
    case basicNack(deliveryTag: UInt64, multiple: Bool, requeue: Bool)
    // confirm (85)
    case confirmSelect
    case confirmSelectOk

    package struct ExchangeDeclare: Sendable, Hashable {
        package var exchange: String
        package var type: String
        package var passive = false
        package var durable = false
        package var autoDelete = false
        package var `internal` = false
        package var arguments: AMQPFieldTable = [:]
    }

    package struct QueueDeclare: Sendable, Hashable {
        package var queue: String
        package var passive = false
        package var durable = false
        package var exclusive = false
        package var autoDelete = false
        package var arguments: AMQPFieldTable = [:]
    }

    /// Class and method id on the wire.
    package var id: (classID: UInt16, methodID: UInt16) {
        switch self {
        case .connectionStart: (10, 10)
        case .connectionStartOk: (10, 11)
        case .connectionSecure: (10, 20)
        case .connectionTune: (10, 30)
        case .connectionTuneOk: (10, 31)
        case .connectionOpen: (10, 40)
        case .connectionOpenOk: (10, 41)
        case .connectionClose: (10, 50)
        case .connectionCloseOk: (10, 51)
        case .connectionBlocked: (10, 60)
        case .connectionUnblocked: (10, 61)
        case .channelOpen: (20, 10)
        case .channelOpenOk: (20, 11)
        case .channelFlow: (20, 20)
        case .channelFlowOk: (20, 21)
        case .channelClose: (20, 40)
        case .channelCloseOk: (20, 41)
        case .exchangeDeclare: (40, 10)
        case .exchangeDeclareOk: (40, 11)
        case .queueDeclare: (50, 10)
        case .queueDeclareOk: (50, 11)
        case .queueBind: (50, 20)
        case .queueBindOk: (50, 21)
        case .queueDelete: (50, 40)
        case .queueDeleteOk: (50, 41)
        case .basicQos: (60, 10)
        case .basicQosOk: (60, 11)
        case .basicConsume: (60, 20)
        case .basicConsumeOk: (60, 21)
        case .basicCancel: (60, 30)
        case .basicCancelOk: (60, 31)
        case .basicPublish: (60, 40)
        case .basicReturn: (60, 50)
        case .basicDeliver: (60, 60)
        case .basicGet: (60, 70)
        case .basicGetOk: (60, 71)
        case .basicGetEmpty: (60, 72)
        case .basicAck: (60, 80)
        case .basicReject: (60, 90)
        case .basicNack: (60, 120)
        case .confirmSelect: (85, 10)
        case .confirmSelectOk: (85, 11)
        }
    }

    /// Methods followed by a content header and body frames.
    var carriesContent: Bool {
        switch self {
        case .basicPublish, .basicReturn, .basicDeliver, .basicGetOk: true
        default: false
        }
    }

    /// The name in the specification's style (`queue.declare-ok`), for errors and logs.
    package var name: String { Self.name(classID: id.classID, methodID: id.methodID) }

    package static func name(classID: UInt16, methodID: UInt16) -> String {
        let classes: [UInt16: String] = [10: "connection", 20: "channel", 40: "exchange", 50: "queue", 60: "basic", 85: "confirm"]
        let methods: [UInt16: [UInt16: String]] = [
            10: [
                10: "start", 11: "start-ok", 20: "secure", 21: "secure-ok", 30: "tune", 31: "tune-ok", 40: "open", 41: "open-ok",
                50: "close", 51: "close-ok", 60: "blocked", 61: "unblocked",
            ],
            20: [10: "open", 11: "open-ok", 20: "flow", 21: "flow-ok", 40: "close", 41: "close-ok"],
            40: [10: "declare", 11: "declare-ok", 20: "delete", 21: "delete-ok"],
            50: [10: "declare", 11: "declare-ok", 20: "bind", 21: "bind-ok", 30: "purge", 31: "purge-ok", 40: "delete", 41: "delete-ok"],
            60: [
                10: "qos", 11: "qos-ok", 20: "consume", 21: "consume-ok", 30: "cancel", 31: "cancel-ok", 40: "publish", 50: "return",
                60: "deliver", 70: "get", 71: "get-ok", 72: "get-empty", 80: "ack", 90: "reject", 100: "recover-async",
                110: "recover", 111: "recover-ok", 120: "nack",
            ],
            85: [10: "select", 11: "select-ok"],
        ]
        return "\(classes[classID] ?? "\(classID)").\(methods[classID]?[methodID] ?? "\(methodID)")"
    }
}

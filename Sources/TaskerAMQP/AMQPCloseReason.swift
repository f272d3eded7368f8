/// Why a peer closed a channel or the connection (`channel.close` / `connection.close`).
public struct AMQPCloseReason: Sendable, Hashable, CustomStringConvertible {
    /// The AMQP reply code (e.g. 406 PRECONDITION_FAILED, 404 NOT_FOUND, 320 CONNECTION_FORCED).
    public var replyCode: UInt16
    public var replyText: String
    /// The method that caused the close, when the peer names one (0 otherwise).
    public var classID: UInt16
    public var methodID: UInt16

    public init(replyCode: UInt16, replyText: String, classID: UInt16 = 0, methodID: UInt16 = 0) {
        self.replyCode = replyCode
        self.replyText = replyText
        self.classID = classID
        self.methodID = methodID
    }

    public static let replySuccess: UInt16 = 200
    public static let contentTooLarge: UInt16 = 311
    public static let noRoute: UInt16 = 312
    public static let noConsumers: UInt16 = 313
    public static let connectionForced: UInt16 = 320
    public static let invalidPath: UInt16 = 402
    public static let accessRefused: UInt16 = 403
    public static let notFound: UInt16 = 404
    public static let resourceLocked: UInt16 = 405
    public static let preconditionFailed: UInt16 = 406
    public static let frameError: UInt16 = 501
    public static let syntaxError: UInt16 = 502
    public static let commandInvalid: UInt16 = 503
    public static let channelError: UInt16 = 504
    public static let unexpectedFrame: UInt16 = 505
    public static let resourceError: UInt16 = 506
    public static let notAllowed: UInt16 = 530
    public static let notImplemented: UInt16 = 540
    public static let internalError: UInt16 = 541

    /// The name of the reply code in the specification (`PRECONDITION_FAILED`), or the number.
    public var codeName: String {
        let names: [UInt16: String] = [
            200: "REPLY_SUCCESS", 311: "CONTENT_TOO_LARGE", 312: "NO_ROUTE", 313: "NO_CONSUMERS",
            320: "CONNECTION_FORCED", 402: "INVALID_PATH", 403: "ACCESS_REFUSED", 404: "NOT_FOUND",
            405: "RESOURCE_LOCKED", 406: "PRECONDITION_FAILED", 501: "FRAME_ERROR", 502: "SYNTAX_ERROR",
            503: "COMMAND_INVALID", 504: "CHANNEL_ERROR", 505: "UNEXPECTED_FRAME", 506: "RESOURCE_ERROR",
            530: "NOT_ALLOWED", 540: "NOT_IMPLEMENTED", 541: "INTERNAL_ERROR",
        ]
        return names[replyCode] ?? "\(replyCode)"
    }

    public var description: String {
        let cause = classID == 0 ? "" : " (in reply to \(AMQPMethod.name(classID: classID, methodID: methodID)))"
        return "\(replyCode) \(codeName): \(replyText)\(cause)"
    }
}

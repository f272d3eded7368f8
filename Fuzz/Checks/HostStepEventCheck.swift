#if DEBUG
import Foundation
import Logging
import TaskerModel

@testable import TaskerHandlerHost

/// A step event as a Swift handler package's host reads it (`TaskerHandlerHost`'s `StepEvent`: the FFI
/// dispatch channel's document, whose task context, inputs, checkpoint and dependency results are stored
/// data read back). Contract: any bytes are read without a trap; an event read names the ids of its
/// document, its attempts are the document's integers and its timeout is positive.
public enum HostStepEventCheck {
    static let logger = Logger(label: "fuzz") { _ in SwiftLogNoOpLogHandler() }

    public static func check(_ bytes: [UInt8]) {
        guard let document = try? UntrustedJSON.decode(JSONValue.self, from: Data(bytes), what: "the step event") else { return }
        let address = StepEvent.address(of: document)
        guard let event = try? StepEvent(document, timeout: .seconds(30), logger: logger) else { return }
        FuzzContract.require(address != nil, "an event without ids was read")
        FuzzContract.require(event.eventID == address?.eventID, "the event id changed")
        FuzzContract.require(event.context.stepUUID == address?.stepUUID, "the step uuid changed")
        FuzzContract.require(event.context.timeout > .zero, "a timeout of \(event.context.timeout)")
    }
}
#endif

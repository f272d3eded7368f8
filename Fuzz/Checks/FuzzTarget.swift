// The checks reach internal API of the modules they test (`@testable import`), which only a debug
// build allows (`-enable-testing`); the test suite and scripts/fuzz build debug. A release build of
// the whole package (`swift build -c release`) compiles this module empty.
#if DEBUG
/// One decoder of untrusted input and its contract: a libFuzzer target (`Fuzz/Targets/<name>`,
/// `scripts/fuzz`) and a replay of its seed corpus (`Fuzz/Corpus/<name>`) in the test suite.
public struct FuzzTarget: Sendable, CustomStringConvertible {
    /// The folder name under `Fuzz/Targets` and `Fuzz/Corpus`.
    public let name: String
    /// Checks one input; a broken contract goes to ``FuzzContract/require(_:_:file:line:)``.
    public let check: @Sendable ([UInt8]) -> Void

    public var description: String { name }

    /// A target named `name` whose inputs go to `check`.
    public init(name: String, check: @escaping @Sendable ([UInt8]) -> Void) {
        self.name = name
        self.check = check
    }

    /// Every target, in the order of `scripts/fuzz --list`.
    public static let all: [FuzzTarget] = [
        FuzzTarget(name: "AMQPFrames", check: AMQPFramesCheck.check),
        FuzzTarget(name: "DeliveryBody", check: DeliveryBodyCheck.check),
        FuzzTarget(name: "ForeignResult", check: ForeignResultCheck.check),
        FuzzTarget(name: "HostStepEvent", check: HostStepEventCheck.check),
        FuzzTarget(name: "OperatorAction", check: OperatorActionCheck.check),
        FuzzTarget(name: "OrchestrationAnswer", check: OrchestrationAnswerCheck.check),
        FuzzTarget(name: "QueueMessage", check: QueueMessageCheck.check),
        FuzzTarget(name: "QueueNotification", check: QueueNotificationCheck.check),
        FuzzTarget(name: "StepResult", check: StepResultCheck.check),
        FuzzTarget(name: "TaskRequest", check: TaskRequestCheck.check),
        FuzzTarget(name: "TemplateYAML", check: TemplateYAMLCheck.check),
        FuzzTarget(name: "TraceParent", check: TraceParentCheck.check),
        FuzzTarget(name: "WorkerConfig", check: WorkerConfigCheck.check),
    ]

    /// The target named `name`; stops the program when there is none (a target's `main` names its own).
    public static func named(_ name: String) -> FuzzTarget {
        guard let target = all.first(where: { $0.name == name }) else { fatalError("no fuzz target \(name)") }
        return target
    }
}
#endif

import Foundation
import TaskerStepModel

/// Something wrong with one template file. Reads like
/// `config/tasks/x.yaml: step "fetch": depends on unknown step "nope"`.
public struct TemplateProblem: Sendable, Equatable, CustomStringConvertible, Error {
    /// The file, as shown (relative to the working directory when below it).
    public var file: String
    /// `namespace/name/version` when the file decoded that far.
    public var template: String?
    /// The step concerned, if any.
    public var step: String?
    public var message: String

    public init(file: String, template: String? = nil, step: String? = nil, message: String) {
        self.file = file
        self.template = template
        self.step = step
        self.message = message
    }

    public var description: String {
        var text = "\(file): "
        if let step { text += "step \"\(step)\": " }
        return text + message
    }
}

/// Structural checks run on every template before it is registered.
///
/// Upstream (`TaskTemplate::validate` and `register_task_template`) checks non-empty
/// name/namespace/version, that dependencies exist, and that decision steps have a parent. The
/// other rules here reject templates that the schema or the runtime would break on anyway: queue
/// names (namespace ≤ 29 characters, identifier syntax), column sizes, duplicate step names, cycles,
/// empty handler callables, zero timeouts, batch configs pointing at no `batch_worker` step.
/// `retry.max_attempts` 0 is accepted, as upstream (its fixtures use it).
public enum TaskTemplateValidator {
    /// Longest namespace: `worker_<ns>_queue` must stay within PGMQ's 47-character queue names.
    public static let maxNamespaceLength = 29
    /// `named_tasks.name` is `varchar(64)`.
    public static let maxTaskNameLength = 64
    /// `named_tasks.version` is `varchar(16)`.
    public static let maxVersionLength = 16
    /// `named_steps.name` is `varchar(128)`.
    public static let maxStepNameLength = 128
    /// Upstream's limit on `handler.callable`.
    public static let maxCallableLength = 500
    /// Namespaces a template may not use: `orchestration` shares the orchestration queues'
    /// notification channel (`pgmq_message_ready.orchestration`), so a worker serving it would
    /// listen to, and could act on, orchestration's messages.
    public static let reservedNamespaces: Set<String> = ["orchestration"]

    /// A step-scoped (or template-scoped when `step` is nil) finding.
    public struct Finding: Sendable, Equatable {
        public var step: String?
        public var message: String
    }

    /// Whether `namespace` is a valid namespace name (`^[A-Za-z_][A-Za-z0-9_]*$`, ≤ 29 characters).
    public static func isValidNamespace(_ namespace: String) -> Bool {
        guard let first = namespace.unicodeScalars.first, namespace.count <= maxNamespaceLength else { return false }
        func isLetter(_ s: Unicode.Scalar) -> Bool { ("a"..."z").contains(s) || ("A"..."Z").contains(s) }
        guard isLetter(first) || first == "_" else { return false }
        return namespace.unicodeScalars.allSatisfy { isLetter($0) || ("0"..."9").contains($0) || $0 == "_" }
    }

    /// All findings for `template`; empty when it may be registered.
    public static func validate(_ template: TaskTemplate) -> [Finding] {
        var findings: [Finding] = []
        func report(_ step: String?, _ message: String) { findings.append(Finding(step: step, message: message)) }

        if template.name.isEmpty { report(nil, "the template name is empty") }
        if template.name.count > maxTaskNameLength {
            report(nil, "the template name is longer than \(maxTaskNameLength) characters")
        }
        if template.version.isEmpty { report(nil, "the version is empty") }
        if template.version.count > maxVersionLength {
            report(nil, "the version \"\(template.version)\" is longer than \(maxVersionLength) characters")
        }
        if template.namespaceName.isEmpty {
            report(nil, "namespace_name is empty")
        } else if !isValidNamespace(template.namespaceName) {
            report(
                nil,
                "namespace \"\(template.namespaceName)\" must match ^[A-Za-z_][A-Za-z0-9_]*$ and have at most "
                    + "\(maxNamespaceLength) characters (queue worker_<namespace>_queue)")
        } else if reservedNamespaces.contains(template.namespaceName.lowercased()) {
            report(
                nil,
                "namespace \"\(template.namespaceName)\" is reserved: it shares the orchestration's "
                    + "notification channel (pgmq_message_ready.orchestration); choose another namespace_name")
        }

        if let lifecycle = template.lifecycle { findings += validateLifecycle(lifecycle) }

        var seen: Set<String> = []
        let names = Set(template.steps.map(\.name))
        for step in template.steps {
            let label: String? = step.name.isEmpty ? nil : step.name
            if step.name.isEmpty { report(nil, "a step has an empty name") }
            if step.name.count > maxStepNameLength {
                report(label, "the step name is longer than \(maxStepNameLength) characters")
            }
            if !step.name.isEmpty && !seen.insert(step.name).inserted {
                report(label, "duplicate step name")
            }
            for dependency in step.dependencies where !names.contains(dependency) {
                report(label, "depends on unknown step \"\(dependency)\"")
            }
            if step.handler.callable.trimmingCharacters(in: .whitespaces).isEmpty {
                report(label, "handler.callable is empty")
            } else if step.handler.callable.count > maxCallableLength {
                report(label, "handler.callable is longer than \(maxCallableLength) characters")
            }
            if step.type == .decision && step.dependencies.isEmpty {
                report(label, "a decision step must have at least one dependency")
            }
            if let timeout = step.timeoutSeconds, timeout <= 0 {
                report(label, "timeout_seconds must be greater than 0")
            }
            if let batch = step.batchConfig {
                findings += validateBatch(batch, step: label, in: template)
            }
            for event in step.publishesEvents {
                if event.name.trimmingCharacters(in: .whitespaces).isEmpty {
                    report(label, "a publishes_events entry has an empty name")
                }
                switch event.schema {
                case nil, .null?, .bool?: break
                case .object?:
                    for problem in JSONSchema.problems(in: event.schema ?? .null) {
                        report(label, "event \"\(event.name)\": schema \(problem)")
                    }
                default: report(label, "event \"\(event.name)\": schema must be a JSON Schema object, a boolean or null")
                }
                if let publisher = event.publisher, publisher.isEmpty {
                    report(label, "event \"\(event.name)\": publisher is empty")
                }
            }
        }
        if let cycle = firstCycle(in: template) {
            report(cycle.first, "dependency cycle: " + cycle.map { "\"\($0)\"" }.joined(separator: " -> "))
        }
        return findings
    }

    /// Upstream's `LifecycleConfig` bounds. The staleness SQL casts these values to `integer`: one out
    /// of range would fail every staleness sweep, so such a template is refused.
    static func validateLifecycle(_ lifecycle: LifecycleConfiguration) -> [Finding] {
        var findings: [Finding] = []
        let bounded: [(String, Int?, ClosedRange<Int>)] = [
            ("max_duration_minutes", lifecycle.maxDurationMinutes, 1...43200),
            ("max_waiting_for_dependencies_minutes", lifecycle.maxWaitingForDependenciesMinutes, 1...10080),
            ("max_waiting_for_retry_minutes", lifecycle.maxWaitingForRetryMinutes, 1...10080),
            ("max_steps_in_process_minutes", lifecycle.maxStepsInProcessMinutes, 1...10080),
        ]
        for (key, value, range) in bounded {
            if let value, !range.contains(value) {
                findings.append(
                    Finding(
                        step: nil,
                        message: "lifecycle.\(key) is \(value); it must be between \(range.lowerBound) and \(range.upperBound)"))
            }
        }
        if lifecycle.stalenessAction.isEmpty || lifecycle.stalenessAction.count > 50 {
            findings.append(Finding(step: nil, message: "lifecycle.staleness_action must have 1 to 50 characters"))
        }
        return findings
    }

    private static func validateBatch(_ batch: BatchConfiguration, step: String?, in template: TaskTemplate) -> [Finding] {
        var findings: [Finding] = []
        if batch.batchSize < 1 { findings.append(Finding(step: step, message: "batch_config.batch_size must be at least 1")) }
        if batch.parallelism < 1 { findings.append(Finding(step: step, message: "batch_config.parallelism must be at least 1")) }
        if batch.cursorField.isEmpty { findings.append(Finding(step: step, message: "batch_config.cursor_field is empty")) }
        switch template.step(named: batch.workerTemplate)?.type {
        case .batchWorker?:
            break
        case nil:
            findings.append(
                Finding(
                    step: step,
                    message:
                        "batch_config.worker_template names unknown step \"\(batch.workerTemplate)\""))
        case let other?:
            findings.append(
                Finding(
                    step: step,
                    message:
                        "batch_config.worker_template \"\(batch.workerTemplate)\" is a \(other.rawValue) step, not batch_worker"))
        }
        return findings
    }

    /// The first dependency cycle found (step names, the first repeated at the end), or nil.
    static func firstCycle(in template: TaskTemplate) -> [String]? {
        var dependencies: [String: [String]] = [:]
        for step in template.steps where dependencies[step.name] == nil {
            dependencies[step.name] = step.dependencies
        }
        var state: [String: Int] = [:]  // 1 = on the current path, 2 = done
        var path: [String] = []

        func visit(_ name: String) -> [String]? {
            if state[name] == 2 { return nil }
            if state[name] == 1 {
                guard let start = path.firstIndex(of: name) else { return [name, name] }
                return Array(path[start...]) + [name]
            }
            state[name] = 1
            path.append(name)
            for dependency in dependencies[name] ?? [] where dependencies[dependency] != nil {
                if let cycle = visit(dependency) { return cycle }
            }
            path.removeLast()
            state[name] = 2
            return nil
        }
        for step in template.steps {
            if let cycle = visit(step.name) { return cycle }
        }
        return nil
    }
}

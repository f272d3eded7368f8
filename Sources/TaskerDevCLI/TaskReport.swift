import Foundation
import TaskerModel
import TaskerPostgres
import TaskerStore

/// Renders the task API's JSON documents (`TaskResponse`, `StepResponse`) for people: one block per
/// task, one line per step with its state, attempts, and its result or error (shortened).
enum TaskReport {
    /// The document as a `JSONValue` (the API's own bytes; never fails on them).
    static func parse(_ document: Data) -> JSONValue {
        (try? UntrustedJSON.decode(JSONValue.self, from: document, what: "the stored document")) ?? .null
    }

    /// The task block: identity, status, timings, context, then its steps.
    static func task(_ task: JSONValue, steps: JSONValue) -> String {
        var lines: [String] = []
        lines.append(
            "task \(text(task["task_uuid"]))  \(text(task["namespace"]))/\(text(task["name"])) \(text(task["version"]))")
        let percentage = task["completion_percentage"]?.doubleValue.map { String(format: "%.0f%%", $0) } ?? "?"
        lines.append(
            "  status     \(text(task["status"]))  (\(text(task["execution_status"])), \(percentage) of "
                + "\(text(task["total_steps"])) steps complete, health \(text(task["health_status"])))")
        lines.append("  created    \(text(task["created_at"]))")
        if let completed = task["completed_at"], !completed.isNull { lines.append("  completed  \(text(completed))") }
        lines.append("  context    \(compact(task["context"], limit: 200))")
        lines.append("  initiator  \(text(task["initiator"])) (\(text(task["source_system"]))): \(text(task["reason"]))")
        if case .array(let rows) = steps {
            lines.append("  steps (\(rows.count)):")
            let width = rows.map { text($0["name"]).count }.max() ?? 0
            for step in rows {
                lines.append("    " + self.step(step, nameWidth: width))
                lines += failureDetail(step).map { "        " + $0 }
            }
        }
        return lines.joined(separator: "\n")
    }

    /// `name  state  attempts a/m  result …` (or `error …`).
    static func step(_ step: JSONValue, nameWidth: Int) -> String {
        let name = text(step["name"]).padding(toLength: max(nameWidth, 1), withPad: " ", startingAt: 0)
        let state = text(step["current_state"]).padding(toLength: 12, withPad: " ", startingAt: 0)
        var line = "\(name)  \(state)  attempts \(text(step["attempts"]))/\(text(step["max_attempts"]))"
        if let results = step["results"], !results.isNull {
            if let failure = FailureDetail(result: results) {
                let kind = failure.errorType.map { "\($0): " } ?? ""
                line += "  error " + compact(.string(kind + (failure.message ?? "-")), limit: 160)
            } else if results["success"]?.boolValue == false {
                line += "  error " + compact(results["error"] ?? results["metadata"]?["error_message"], limit: 160)
            } else {
                line += "  result " + compact(results["result"] ?? results, limit: 160)
            }
        }
        return line
    }

    /// The most lines of a stored trace shown under a failed step (its end: where the error was raised
    /// in a Python traceback; Ruby's and JavaScript's start there, so both ends are kept).
    static let traceLines = 24
    /// The most characters of one trace line shown (the rest is cut, marked `…`).
    static let traceLineCharacters = 300

    /// Lines under a failed step: the exception's type and its trace, when the handler's SDK kept them
    /// (``FailureDetail``); none otherwise.
    static func failureDetail(_ step: JSONValue) -> [String] {
        guard let results = step["results"], let failure = FailureDetail(result: results),
            failure.exceptionType != nil || failure.trace != nil
        else { return [] }
        var lines = ["exception " + text(failure.exceptionType.map(JSONValue.string))]
        if let trace = failure.trace {
            var traced = trace.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            if traced.count > traceLines {
                let omitted = traced.count - traceLines
                traced = Array(traced.prefix(traceLines / 2)) + ["… \(omitted) lines …"] + Array(traced.suffix(traceLines / 2))
            }
            // Each line bounded too: a handler's trace is its own text, of any length.
            lines += traced.map { "  " + compact(.string($0), limit: traceLineCharacters) }
        }
        return lines
    }

    /// One line per task of a `TaskListResponse`, then the page.
    static func list(_ response: JSONValue) -> String {
        var lines: [String] = []
        if case .array(let tasks) = response["tasks"] ?? .null {
            for task in tasks {
                let state = text(task["status"]).padding(toLength: 24, withPad: " ", startingAt: 0)
                lines.append(
                    "\(text(task["task_uuid"]))  \(state)  \(text(task["namespace"]))/\(text(task["name"])) "
                        + "\(text(task["version"]))  \(text(task["created_at"]))")
            }
        }
        let page = response["pagination"]
        // No match: said so, rather than "page 1 of 0" (issue #31, item 7).
        guard page?["total_count"]?.intValue != 0 else {
            lines.append("no tasks match")
            return lines.joined(separator: "\n")
        }
        lines.append(
            "page \(text(page?["page"])) of \(text(page?["total_pages"])) (\(text(page?["total_count"])) tasks)")
        return lines.joined(separator: "\n")
    }

    /// A scalar as text (`-` for absent or null; other JSON compactly). Control characters are escaped
    /// (`StringEscaping`): contexts, results and errors come from API clients and handlers, and an
    /// escape sequence must not reach the terminal.
    static func text(_ value: JSONValue?) -> String {
        switch value {
        case nil, .null?: return "-"
        case .string(let string)?: return StringEscaping.escapingControls(string)
        case .int(let number)?: return String(number)
        case .double(let number)?: return number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .bool(let flag)?: return String(flag)
        case let other?: return compact(other, limit: 200)
        }
    }

    /// Compact JSON, cut at `limit` characters with `…`, control characters escaped (as `text`).
    static func compact(_ value: JSONValue?, limit: Int) -> String {
        guard let value else { return "-" }
        let raw: String
        if case .string(let string) = value { raw = string } else { raw = (try? value.jsonString()) ?? "?" }
        let escaped = StringEscaping.escapingControls(raw)
        return escaped.count > limit ? String(escaped.prefix(limit)) + "…" : escaped
    }
}

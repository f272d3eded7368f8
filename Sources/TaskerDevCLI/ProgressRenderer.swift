import ArgumentParser
import Dispatch
import Foundation
import Synchronization
import TaskerModel
import TaskerOrchestration
import TaskerPostgres
import TaskerWorker

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum ProgressRenderer {
    static let taskStates = [
        "pending", "initializing", "enqueuing_steps", "steps_in_process", "evaluating_results",
        "waiting_for_dependencies", "waiting_for_retry", "blocked_by_failures", "complete", "error",
        "cancelled", "resolved_manually",
    ]
    static let stepStates = [
        "pending", "enqueued", "in_progress", "enqueued_for_orchestration", "enqueued_as_error_for_orchestration",
        "waiting_for_retry", "complete", "error", "cancelled", "resolved_manually",
    ]
    static let shortNames = [
        "enqueued_for_orchestration": "result_queued", "enqueued_as_error_for_orchestration": "error_queued",
        "waiting_for_dependencies": "waiting_deps", "blocked_by_failures": "blocked",
    ]

    static func duration(_ seconds: Double?) -> String {
        guard let seconds else { return "-" }
        if seconds < 1 { return String(format: "%.0f ms", seconds * 1000) }
        if seconds < 100 { return String(format: "%.2f s", seconds) }
        return String(format: "%.0f s", seconds)
    }

    static func clock(_ seconds: Double) -> String {
        let s = Int(seconds)
        return String(format: "%02d:%02d:%02d", s / 3600, (s / 60) % 60, s % 60)
    }

    /// `state n` pairs in lifecycle order, non-zero only.
    static func states(_ counts: [String: Int], order: [String]) -> String {
        let known = order.compactMap { state in counts[state].flatMap { $0 > 0 ? "\(shortNames[state] ?? state) \($0)" : nil } }
        let other = counts.keys.filter { !order.contains($0) }.sorted().map { "\($0) \(counts[$0]!)" }
        let all = known + other
        return all.isEmpty ? "none yet" : all.joined(separator: "  ")
    }

    static func percentiles(_ p: LatencyPercentiles) -> String {
        guard p.count > 0 else { return "no samples yet" }
        return "p50 \(duration(p.p50))  p95 \(duration(p.p95))  p99 \(duration(p.p99))  max \(duration(p.max))  (n=\(p.count))"
    }

    static func lines(_ s: ProgressSnapshot, submitter: ExampleSubmitter.Statistics?, final: Bool = false) -> [String] {
        var lines: [String] = []
        var title = "tasker dev  \(clock(s.elapsedSeconds))"
        if let submitter {
            title += "  submitted \(submitter.submitted) at \(formatRate(submitter.rate))/s"
            if submitter.failed > 0 { title += " (\(submitter.failed) failed)" }
        }
        title += final ? "  [stopped: final snapshot]" : "  (Ctrl-C drains and stops)"
        lines.append(title)
        lines.append("tasks   \(pad(s.tasksTotal))  \(states(s.tasksByState, order: taskStates))")
        lines.append("steps   \(pad(s.stepsTotal))  \(states(s.stepsByState, order: stepStates))")
        lines.append(
            String(
                format: "rate    %.1f steps/s  %.1f tasks/s completed (last %.0f s)   %d steps completed",
                s.stepsPerSecond, s.tasksPerSecond, min(s.rateWindowSeconds, max(1, s.elapsedSeconds)),
                s.stepsCompleted))
        lines.append("task    submit→complete   \(percentiles(s.taskLatency))")
        lines.append("step    enqueue→result    \(percentiles(s.stepLatency))")
        lines.append("step    enqueue→claim     \(percentiles(s.stepQueueWait))")
        let flows = s.workflows.map { w in
            "\(w.name.replacingOccurrences(of: "_workflow", with: "")) \(w.complete)/\(w.total)"
                + (w.error > 0 ? " (\(w.error) error)" : "")
        }
        lines.append("done    " + (flows.isEmpty ? "no tasks yet" : flows.joined(separator: "  ")))
        return lines
    }

    static func plainLine(_ s: ProgressSnapshot, submitter: ExampleSubmitter.Statistics?, final: Bool = false) -> String {
        var parts = ["[progress\(final ? ", final" : "")] \(clock(s.elapsedSeconds))"]
        if let submitter { parts.append("submitted \(submitter.submitted)") }
        parts.append("tasks \(s.tasksTotal): \(states(s.tasksByState, order: taskStates))")
        parts.append("steps \(s.stepsTotal): \(states(s.stepsByState, order: stepStates))")
        parts.append(String(format: "%.1f steps/s", s.stepsPerSecond))
        parts.append("task p50/p95/p99 \(duration(s.taskLatency.p50))/\(duration(s.taskLatency.p95))/\(duration(s.taskLatency.p99))")
        parts.append("step p50/p95/p99 \(duration(s.stepLatency.p50))/\(duration(s.stepLatency.p95))/\(duration(s.stepLatency.p99))")
        return parts.joined(separator: " | ")
    }

    private static func pad(_ n: Int) -> String {
        let text = String(n)
        return text.count >= 6 ? text : String(repeating: " ", count: 6 - text.count) + text
    }

    private static func formatRate(_ rate: Double) -> String {
        rate == rate.rounded() ? String(Int(rate)) : String(format: "%.1f", rate)
    }
}

/// Redraws a block of lines in place (ANSI: cursor up, clear to end of screen), one write per frame.
final class ProgressScreen: Sendable {
    private let enabled: Bool
    /// Lines of the last frame (held while a frame is written, so frames never interleave).
    private let drawn = Mutex(0)

    init(enabled: Bool) { self.enabled = enabled }

    func draw(_ lines: [String]) {
        guard enabled else { return }
        let width = Self.terminalWidth()
        drawn.withLock { drawn in
            var frame = drawn > 0 ? "\r\u{1B}[\(drawn)A" : "\r"
            frame += "\u{1B}[J"
            for line in lines {
                frame += (line.count >= width ? String(line.prefix(max(1, width - 1))) : line) + "\n"
            }
            drawn = lines.count
            FileHandle.standardOutput.write(Data(frame.utf8))
        }
    }

    /// One plain line on stdout, unbuffered.
    static func emit(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

    func hideCursor() { if enabled { FileHandle.standardOutput.write(Data("\u{1B}[?25l".utf8)) } }
    func showCursor() { if enabled { FileHandle.standardOutput.write(Data("\u{1B}[?25h".utf8)) } }

    static func terminalWidth() -> Int {
        var size = winsize()
        #if canImport(Glibc)
        let request = UInt(TIOCGWINSZ)
        #else
        let request = TIOCGWINSZ
        #endif
        if ioctl(STDOUT_FILENO, request, &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 120
    }
}

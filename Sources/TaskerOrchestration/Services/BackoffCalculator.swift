import Foundation
import TaskerModel

/// Retry delays from a failed result's `orchestration_metadata` (upstream `BackoffCalculator`):
/// a `Retry-After` header (seconds or an HTTP date, capped at `maxRetryAfterSeconds`); else a
/// backoff hint's delay (`ServerRequested`, `ServiceUnavailable`, `Custom`); else exponential
/// `base · 2^attempts`, capped at `maxSeconds`, with ±`jitter` (15 %).
public struct BackoffCalculator: Sendable {
    var baseSeconds: Double
    var maxSeconds: Double
    public var jitter: Double
    var maxRetryAfterSeconds: Int

    public init(baseSeconds: Double = 1, maxSeconds: Double = 60, jitter: Double = 0.15, maxRetryAfterSeconds: Int = 3600) {
        self.baseSeconds = baseSeconds
        self.maxSeconds = maxSeconds
        self.jitter = jitter
        self.maxRetryAfterSeconds = maxRetryAfterSeconds
    }

    /// The delay to write for this result, or nil when it carries no `orchestration_metadata`
    /// (then no backoff is written and the retry is immediate).
    public func delaySeconds(for result: StepExecutionResult, attempts: Int, now: Date = Date()) -> Int? {
        guard let metadata = result.orchestrationMetadata else { return nil }
        if let header = metadata.headers.first(where: { $0.key.lowercased() == "retry-after" })?.value,
            let seconds = Self.retryAfterSeconds(header, now: now)
        {
            return min(max(0, seconds), maxRetryAfterSeconds)
        }
        if let hint = metadata.backoffHint, hint.backoffType != .rateLimit {
            return Int(hint.delaySeconds)
        }
        let exponent = min(max(0, attempts), 30)
        let raw = min(baseSeconds * pow(2, Double(exponent)), maxSeconds)
        let factor = 1 + Double.random(in: -jitter...jitter)
        return max(1, Int((raw * factor).rounded()))
    }

    /// `Retry-After` as delta-seconds or an IMF-fixdate (`Wed, 21 Oct 2015 07:28:00 GMT`).
    static func retryAfterSeconds(_ value: String, now: Date) -> Int? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed) { return seconds }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return max(0, Int(date.timeIntervalSince(now).rounded(.up)))
    }
}

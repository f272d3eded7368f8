import Foundation

/// A result's `Retry-After` (upstream `BackoffCalculator::extract_retry_after_header`): the header
/// found case-insensitively in `orchestration_metadata.headers`, its value read as whole seconds, else
/// as an RFC 2822 date in the future.
enum RetryAfter {
    /// The header's delay in seconds, or nil when there is no such header or its value is neither a
    /// `u32` nor a date after `now` (then the exponential backoff applies).
    ///
    /// Upstream takes the first key whose lowercase is `retry-after` in a `HashMap`'s (random) order;
    /// with several spellings of it in one result, this takes the smallest key, so the choice is stable.
    static func seconds(in headers: [String: String], now: Date) -> UInt32? {
        guard let key = headers.keys.sorted().first(where: { $0.lowercased() == "retry-after" }), let value = headers[key]
        else { return nil }
        return seconds(value, now: now)
    }

    /// One `Retry-After` value: Rust's `str::parse::<u32>()`, else chrono's RFC 2822 date, whose whole
    /// seconds after `now` count only when positive (a past date, or one less than a second ahead, is no
    /// delay at all: nil). Like upstream's `num_seconds() as u32`, a count past `u32::MAX` wraps.
    static func seconds(_ value: String, now: Date) -> UInt32? {
        if let seconds = unsignedInteger(value) { return seconds }
        guard let date = RFC2822Date(value) else { return nil }
        let ahead = date.wholeSecondsSince(now)
        return ahead > 0 ? UInt32(truncatingIfNeeded: ahead) : nil
    }

    /// Rust's `u32::from_str`: an optional `+`, then one or more ASCII digits, at most `u32::MAX`. No
    /// white space, no `-` (not even `-0`), nothing else.
    static func unsignedInteger(_ text: String) -> UInt32? {
        var digits = text.utf8[...]
        if digits.first == UInt8(ascii: "+") { digits = digits.dropFirst() }
        guard !digits.isEmpty else { return nil }
        var value: UInt32 = 0
        for byte in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            let (product, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (sum, carried) = product.addingReportingOverflow(UInt32(byte - UInt8(ascii: "0")))
            guard !overflowed && !carried else { return nil }
            value = sum
        }
        return value
    }
}

import Foundation
import Testing

@testable import TaskerOrchestration

/// A result's `Retry-After` as upstream's `extract_retry_after_header` reads it: the header in any
/// case, its value a `u32` (Rust's `str::parse`), else an RFC 2822 date at least a second ahead. Each
/// test names the upstream test (`backoff_calculator.rs`) it mirrors.
@Suite struct RetryAfterTests {
    let now = BackoffFixtures.now

    func seconds(_ headers: [String: String]) -> UInt32? {
        RetryAfter.seconds(in: headers, now: now)
    }

    /// Mirrors `test_extract_retry_after_case_insensitive` and `test_extract_retry_after_seconds`.
    @Test func theHeaderIsFoundInAnyCase() {
        #expect(seconds(["retry-after": "30"]) == 30)
        #expect(seconds(["Retry-After": "60"]) == 60)
        #expect(seconds(["RETRY-AFTER": "90"]) == 90)
        #expect(seconds(["retry-after": "120"]) == 120)
    }

    /// Mirrors `test_extract_retry_after_missing_header` and `test_extract_retry_after_empty_headers`.
    @Test func noSuchHeaderIsNoDelay() {
        #expect(seconds(["X-Custom": "value"]) == nil)
        #expect(seconds([:]) == nil)
        #expect(seconds(["Retry-After-Ms": "5", "retry_after": "5"]) == nil)
    }

    /// Mirrors `test_extract_retry_after_invalid_value`, `test_extract_retry_after_negative_value`
    /// and `test_extract_retry_after_empty_value`.
    @Test func aValueThatIsNeitherANumberNorADateIsNoDelay() {
        #expect(seconds(["retry-after": "not-a-number"]) == nil)
        #expect(seconds(["retry-after": "-30"]) == nil)
        #expect(seconds(["retry-after": ""]) == nil)
    }

    /// Mirrors `test_extract_retry_after_zero_seconds` and `test_extract_retry_after_large_value`
    /// (the cap applies later, in the calculation).
    @Test func zeroAndLargeCountsAreRead() {
        #expect(seconds(["retry-after": "0"]) == 0)
        #expect(seconds(["retry-after": "86400"]) == 86400)
    }

    /// Rust's `u32::from_str`: one optional `+`, digits only, at most `u32::MAX`; no white space,
    /// no `-0`, no fraction, no non-ASCII digits.
    @Test func countsAreReadAsRustReadsAU32() {
        #expect(RetryAfter.unsignedInteger("+30") == 30)
        #expect(RetryAfter.unsignedInteger("007") == 7)
        #expect(RetryAfter.unsignedInteger("4294967295") == .max)
        for text in ["4294967296", "+", "++5", "-0", " 30", "30 ", "30.5", "1e3", "３０", "0x1F", "30s"] {
            #expect(RetryAfter.unsignedInteger(text) == nil, "\(text)")
        }
    }

    /// Mirrors `test_extract_retry_after_rfc2822_date` (a date two minutes ahead, in chrono's
    /// `to_rfc2822` form) and `test_extract_retry_after_rfc2822_past_date`.
    @Test func aDateAheadIsItsWholeSecondsAndADateBehindIsNoDelay() {
        #expect(seconds(["Retry-After": "Wed, 21 Oct 2015 07:28:00 +0000"]) == 120)
        #expect(seconds(["Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"]) == 120)
        #expect(seconds(["Retry-After": "Wed, 21 Oct 2015 07:25:00 +0000"]) == nil)
        // chrono's `num_seconds` truncates: half a second later it is 119; the same second is none.
        let later = now.addingTimeInterval(0.5)
        #expect(RetryAfter.seconds(in: ["Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"], now: later) == 119)
        #expect(RetryAfter.seconds(in: ["Retry-After": "Wed, 21 Oct 2015 07:26:00 GMT"], now: now) == nil)
        #expect(RetryAfter.seconds(in: ["Retry-After": "Wed, 21 Oct 2015 07:26:01 GMT"], now: later) == nil)
        #expect(RetryAfter.seconds(in: ["Retry-After": "Wed, 21 Oct 2015 07:26:01 GMT"], now: now) == 1)
        // A zone moves the instant: 08:28 at +0100 is 07:28 UTC.
        #expect(seconds(["Retry-After": "Wed, 21 Oct 2015 08:28:00 +0100"]) == 120)
    }

    /// `num_seconds() as u32` wraps past `u32::MAX` (a date 2³² + 5 s ahead is 5 s).
    @Test func aCountPastU32WrapsAsUpstreamsCast() {
        let date = RFC2822Date(utcSeconds: 1_445_412_360 + 4_294_967_296 + 5)
        #expect(date.wholeSecondsSince(now) == 4_294_967_301)
        #expect(UInt32(truncatingIfNeeded: date.wholeSecondsSince(now)) == 5)
        // Through the text: 2151-11-27 13:54:21 UTC is 2³² + 5 s after `now`.
        #expect(seconds(["Retry-After": "27 Nov 2151 13:54:21 GMT"]) == 5)
    }

    /// With several spellings of the header (upstream picks one in its map's random order), the
    /// smallest key is used, so the choice is stable.
    @Test func severalSpellingsPickTheSmallestKey() {
        #expect(seconds(["retry-after": "9", "Retry-After": "5", "RETRY-AFTER": "7"]) == 7)
        #expect(seconds(["retry-after": "9", "Retry-After": "5"]) == 5)
    }
}

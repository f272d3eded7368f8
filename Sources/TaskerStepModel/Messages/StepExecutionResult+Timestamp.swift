import Foundation
import TaskerText

/// UTC timestamps in the shape chrono's serde writes a `DateTime<Utc>`
/// (`2026-03-21T21:16:08.123456Z`) and a lenient RFC 3339 reader for what chrono accepts.
///
/// chrono prints the fraction with 0, 3, 6 or 9 digits, whichever is the shortest exact
/// one; `Date` carries about microsecond precision, so this writes 0, 3 or 6 digits.
package enum ResultTimestamp {
    /// The date rounded to whole microseconds (what survives a write and a read).
    static func rounded(_ date: Date) -> Date {
        Date(timeIntervalSince1970: Double(microseconds(date)) / 1_000_000)
    }

    static func microseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }

    /// `YYYY-MM-DDTHH:MM:SS[.fff|.ffffff]Z`.
    package static func string(_ date: Date) -> String {
        let micros = microseconds(date)
        var seconds = micros / 1_000_000
        var fraction = micros % 1_000_000
        if fraction < 0 {
            fraction += 1_000_000
            seconds -= 1
        }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        let civil = CivilDate.civilFromDays(Int(days))
        let (year, month, day) = (Int64(civil.0), Int64(civil.1), Int64(civil.2))
        let hour = secondOfDay / 3600
        let minute = (secondOfDay % 3600) / 60
        let second = secondOfDay % 60
        var text =
            pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T"
            + pad(hour, 2) + ":" + pad(minute, 2) + ":" + pad(second, 2)
        if fraction != 0 {
            if fraction % 1000 == 0 {
                text += "." + pad(fraction / 1000, 3)
            } else {
                text += "." + pad(fraction, 6)
            }
        }
        return text + "Z"
    }

    /// Parses RFC 3339 (`T`, `t` or a space between date and time; `Z`, `z` or `±HH:MM`).
    package static func parse(_ text: String) -> Date? {
        let chars = Array(text.utf8)
        var index = 0
        func number(_ count: Int) -> Int64? {
            guard index + count <= chars.count else { return nil }
            var value: Int64 = 0
            for offset in 0..<count {
                let char = chars[index + offset]
                guard char >= 48, char <= 57 else { return nil }
                value = value * 10 + Int64(char - 48)
            }
            index += count
            return value
        }
        func expect(_ allowed: [UInt8]) -> Bool {
            guard index < chars.count, allowed.contains(chars[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect([45]), let month = number(2), expect([45]),
            let day = number(2), expect([84, 116, 32]),
            let hour = number(2), expect([58]), let minute = number(2), expect([58]),
            let second = number(2)
        else { return nil }
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var nanos: Int64 = 0
        if index < chars.count, chars[index] == 46 {
            index += 1
            var digits = 0
            while index < chars.count, chars[index] >= 48, chars[index] <= 57 {
                if digits < 9 { nanos = nanos * 10 + Int64(chars[index] - 48) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 9) { nanos *= 10 }
        }
        var offsetSeconds: Int64 = 0
        guard index < chars.count else { return nil }
        if chars[index] == 90 || chars[index] == 122 {
            index += 1
        } else if chars[index] == 43 || chars[index] == 45 {
            let sign: Int64 = chars[index] == 45 ? -1 : 1
            index += 1
            guard let offsetHours = number(2), expect([58]), let offsetMinutes = number(2) else { return nil }
            offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
        } else {
            return nil
        }
        guard index == chars.count else { return nil }
        let days = Int64(CivilDate.daysFromCivil(year: Int(year), month: Int(month), day: Int(day)))
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + Double(nanos) / 1_000_000_000)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}

extension KeyedDecodingContainer {
    /// Decodes an RFC 3339 string as a `Date`; throws on a malformed one (as serde does).
    func decodeTimestamp(forKey key: Key) throws -> Date? {
        guard let text = try decodeIfPresent(String.self, forKey: key) else { return nil }
        guard let date = ResultTimestamp.parse(text) else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: self, debugDescription: "not an RFC 3339 timestamp: \(text)")
        }
        return date
    }
}

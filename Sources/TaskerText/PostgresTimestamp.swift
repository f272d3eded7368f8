import Foundation

/// Parses and formats PostgreSQL's ISO text form of `timestamp` and `timestamptz`.
///
/// Every connection runs with `DateStyle=ISO` and `TimeZone=UTC`, so `timestamptz` arrives as
/// `2026-11-23 18:58:35.123456+00` and a naive `timestamp` as `2026-11-23 18:58:35.123456`, which is
/// read as UTC (Tasker writes naive timestamps with `NOW()` in a UTC session).
package enum PostgresTimestamp {
    /// Parses either form; returns nil when the text is not a timestamp.
    package static func parse(_ text: String) -> Date? {
        if text == "infinity" { return .distantFuture }
        if text == "-infinity" { return .distantPast }
        var bytes = Array(text.utf8)[...]
        guard let year = number(&bytes, digits: 4), expect(&bytes, "-"),
            let month = number(&bytes, digits: 2), expect(&bytes, "-"),
            let day = number(&bytes, digits: 2), expect(&bytes, " ") || expect(&bytes, "T"),
            let hour = number(&bytes, digits: 2), expect(&bytes, ":"),
            let minute = number(&bytes, digits: 2), expect(&bytes, ":"),
            let second = number(&bytes, digits: 2)
        else { return nil }
        var fraction = 0.0
        if expect(&bytes, ".") {
            var scale = 0.1
            while let byte = bytes.first, byte >= 48, byte <= 57 {
                fraction += Double(byte - 48) * scale
                scale /= 10
                bytes.removeFirst()
            }
        }
        var offsetSeconds = 0
        if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            bytes.removeFirst()
            guard let hours = number(&bytes, digits: 2) else { return nil }
            var offset = hours * 3600
            if expect(&bytes, ":"), let minutes = number(&bytes, digits: 2) {
                offset += minutes * 60
                if expect(&bytes, ":"), let seconds = number(&bytes, digits: 2) { offset += seconds }
            }
            offsetSeconds = sign == UInt8(ascii: "+") ? offset : -offset
        } else if expect(&bytes, "Z") {
            offsetSeconds = 0
        }
        guard bytes.isEmpty else { return nil }
        let days = CivilDate.daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// Formats as `YYYY-MM-DD HH:MM:SS.ffffff+00` (UTC, microseconds).
    package static func format(_ date: Date) -> String {
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        var seconds = Int((micros / 1_000_000).rounded(.down))
        let fraction = Int(micros - Double(seconds) * 1_000_000)
        var days = seconds / 86_400
        seconds -= days * 86_400
        if seconds < 0 {
            seconds += 86_400
            days -= 1
        }
        let (year, month, day) = CivilDate.civilFromDays(days)
        func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2)) \(pad(seconds / 3600, 2)):"
            + "\(pad(seconds % 3600 / 60, 2)):\(pad(seconds % 60, 2)).\(pad(fraction, 6))+00"
    }

    private static func number(_ bytes: inout ArraySlice<UInt8>, digits: Int) -> Int? {
        guard bytes.count >= digits else { return nil }
        var value = 0
        for _ in 0..<digits {
            let byte = bytes.removeFirst()
            guard byte >= 48, byte <= 57 else { return nil }
            value = value * 10 + Int(byte - 48)
        }
        return value
    }

    private static func expect(_ bytes: inout ArraySlice<UInt8>, _ character: Unicode.Scalar) -> Bool {
        guard bytes.first == UInt8(ascii: character) else { return false }
        bytes.removeFirst()
        return true
    }
}

/// Proleptic Gregorian calendar arithmetic (H. Hinnant's algorithms), day 0 = 1970-01-01; shared by
/// every timestamp parser and formatter in the worker.
package enum CivilDate {
    /// Days since 1970-01-01.
    package static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    package static func civilFromDays(_ days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

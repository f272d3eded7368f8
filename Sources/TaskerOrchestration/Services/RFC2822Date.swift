import Foundation

/// A date-time in RFC 2822 syntax (`Retry-After: Wed, 21 Oct 2015 07:28:00 GMT`), read exactly as
/// chrono 0.4.44's `DateTime::parse_from_rfc2822` reads it: upstream's `Retry-After` parser
/// (`backoff_calculator.rs` `extract_retry_after_header`), whose rules are chrono's
/// `parse_rfc2822` (`src/format/parse.rs`), its scanners (`src/format/scan.rs`) and `Parsed`'s checks.
///
/// Accepted: leading white space; an optional day name (`Mon`…`Sun`, any case) followed at once by
/// `,`; a day of 1–2 digits; a month name (`Jan`…`Dec`, any case); a year of 2 or more digits (2 digits:
/// below 50 is 20xx, else 19xx; 3 digits: + 1900); `hh:mm` with optional `:ss` (60 = a leap second);
/// a zone `±hhmm` (minutes 00–59, less than 24 h in all), `GMT`/`UT`/`Z`, `EST`/`EDT`/`CST`/`CDT`/
/// `MST`/`MDT`/`PST`/`PDT`, or one military letter other than `J` (read as +0000); then any number of
/// `(comments)`. White space is any Unicode `White_Space`; fields are separated by at least one where
/// RFC 2822 needs one. Refused: anything after the last comment (trailing space included), a wrong
/// day name for the date, a date that does not exist, a year past 262142 (chrono's last).
struct RFC2822Date: Sendable, Equatable {
    /// The instant as seconds since 1970 (UTC); a leap second (`:60`) is counted as `:59` here.
    var utcSeconds: Int64
    /// Written with second 60.
    var isLeapSecond: Bool

    /// chrono's last year (`NaiveDate::MAX`): `(i32::MAX >> 13) - 1`.
    static let maximumYear: Int64 = 262_142

    /// The date `text` denotes, or nil when chrono refuses it.
    init?(_ text: String) {
        var scanner = RFC2822Scanner(Array(text.unicodeScalars))
        guard let fields = scanner.dateTime(), scanner.isAtEnd, let date = fields.resolved() else { return nil }
        self = date
    }

    init(utcSeconds: Int64, isLeapSecond: Bool = false) {
        self.utcSeconds = utcSeconds
        self.isLeapSecond = isLeapSecond
    }

    /// chrono's `self.signed_duration_since(now).num_seconds()`: whole seconds from `now` to this date,
    /// truncated toward zero. A leap second counts as `:60` when its UTC time of day is not before
    /// `now`'s, else as `:59` (chrono's `NaiveTime::signed_duration_since`).
    func wholeSecondsSince(_ now: Date) -> Int64 {
        let interval = now.timeIntervalSince1970
        let nowSecond = interval.rounded(.down)
        let fraction = interval - nowSecond
        let nowWhole = Int64(nowSecond)
        var seconds = utcSeconds - nowWhole
        if isLeapSecond && Self.secondOfDay(utcSeconds) >= Self.secondOfDay(nowWhole) { seconds += 1 }
        // The difference is `seconds - fraction`; chrono keeps it as whole seconds `seconds - 1` and a
        // positive fraction, and `num_seconds` adds the 1 back only for a negative count.
        guard fraction > 0 else { return seconds }
        return seconds - 1 < 0 ? seconds : seconds - 1
    }

    static func secondOfDay(_ seconds: Int64) -> Int64 {
        ((seconds % 86_400) + 86_400) % 86_400
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    static func daysSinceEpoch(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

/// What `parse_rfc2822` reads, before chrono's `Parsed::to_datetime` checks it.
struct RFC2822Fields: Sendable, Equatable {
    /// 0 = Monday … 6 = Sunday.
    var weekday: Int?
    var day: Int64
    var month: Int64
    var year: Int64
    var hour: Int64
    var minute: Int64
    var second: Int64
    var offsetSeconds: Int64

    /// `Parsed::to_datetime`: the date must exist (and match its day name), the offset be less than a
    /// day, and the UTC instant fall within chrono's range.
    func resolved() -> RFC2822Date? {
        guard (0...RFC2822Date.maximumYear).contains(year) else { return nil }
        guard day <= RFC2822Date.daysInMonth(year: year, month: month) else { return nil }
        let days = RFC2822Date.daysSinceEpoch(year: year, month: month, day: day)
        if let weekday, weekday != Int((((days + 3) % 7) + 7) % 7) { return nil }
        guard -86_400 < offsetSeconds && offsetSeconds < 86_400 else { return nil }
        let local = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59)
        let utc = local - offsetSeconds
        let end = RFC2822Date.daysSinceEpoch(year: RFC2822Date.maximumYear + 1, month: 1, day: 1) * 86_400
        guard utc < end else { return nil }
        return RFC2822Date(utcSeconds: utc, isLeapSecond: second == 60)
    }
}

/// chrono's RFC 2822 scanning over Unicode scalars (its byte-level checks accept and refuse the same
/// texts: every token it matches is ASCII).
struct RFC2822Scanner {
    private let scalars: [Unicode.Scalar]
    private var index = 0

    init(_ scalars: [Unicode.Scalar]) { self.scalars = scalars }

    var isAtEnd: Bool { index == scalars.count }

    /// `parse_rfc2822`; nil where chrono returns an error.
    mutating func dateTime() -> RFC2822Fields? {
        trimStart()
        var weekday: Int?
        if let name = shortName(Self.weekdays) {
            index += 3
            guard consume(",") else { return nil }
            weekday = name
        }
        trimStart()
        guard let day = number(min: 1, max: 2), (1...31).contains(day), space() else { return nil }
        guard let month0 = shortName(Self.months) else { return nil }
        index += 3
        guard space() else { return nil }
        let yearStart = index
        guard var year = number(min: 2, max: Int.max) else { return nil }
        switch (index - yearStart, year) {
        case (2, 0...49): year += 2000
        case (2, 50...99), (3, _): year += 1900
        default: break
        }
        guard year <= Int64(Int32.max), space() else { return nil }
        guard let hour = number(min: 2, max: 2), (0...23).contains(hour) else { return nil }
        trimStart()
        guard consume(":") else { return nil }
        trimStart()
        guard let minute = number(min: 2, max: 2), (0...59).contains(minute) else { return nil }
        var second: Int64 = 0
        var probe = self
        probe.trimStart()
        if probe.consume(":") {
            self = probe  // the seconds follow the colon at once (no white space)
            guard let value = number(min: 2, max: 2), (0...60).contains(value) else { return nil }
            second = value
        }
        guard space(), let offset = zone() else { return nil }
        while comment() {}
        return RFC2822Fields(
            weekday: weekday, day: day, month: Int64(month0 + 1), year: year, hour: hour, minute: minute,
            second: second, offsetSeconds: offset)
    }

    static let weekdays = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// `scan::short_weekday` / `short_month0`: the first three scalars, ASCII in any case, as an
    /// index into `names` (not consumed).
    private func shortName(_ names: [String]) -> Int? {
        guard scalars.count - index >= 3 else { return nil }
        var name = ""
        for scalar in scalars[index..<index + 3] {
            guard scalar.isASCII, scalar.properties.isAlphabetic else { return nil }
            name.unicodeScalars.append(Unicode.Scalar(UInt8(scalar.value) | 0x20))
        }
        return names.firstIndex(of: name)
    }

    /// `str::trim_start`.
    private mutating func trimStart() {
        while index < scalars.count && scalars[index].properties.isWhitespace { index += 1 }
    }

    /// `scan::space`: one or more white space characters.
    private mutating func space() -> Bool {
        let start = index
        trimStart()
        return index > start
    }

    /// `scan::char`.
    private mutating func consume(_ character: Unicode.Scalar) -> Bool {
        guard index < scalars.count && scalars[index] == character else { return false }
        index += 1
        return true
    }

    /// `scan::number`: `min` to `max` ASCII digits (more are left for the next field), within `i64`.
    private mutating func number(min: Int, max: Int) -> Int64? {
        var value: Int64 = 0
        var count = 0
        while count < max, index < scalars.count, let digit = Self.digit(scalars[index]) {
            let (product, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (sum, carried) = product.addingReportingOverflow(digit)
            guard !overflowed && !carried else { return nil }
            value = sum
            count += 1
            index += 1
        }
        return count >= min ? value : nil
    }

    private static func digit(_ scalar: Unicode.Scalar) -> Int64? {
        ("0"..."9").contains(scalar) ? Int64(scalar.value - 48) : nil
    }

    /// `scan::timezone_offset_2822`: a name (letters) or `±hhmm`, as seconds east of UTC.
    private mutating func zone() -> Int64? {
        var end = index
        while end < scalars.count && scalars[end].isASCII && scalars[end].properties.isAlphabetic { end += 1 }
        if end > index {
            var name = ""
            name.unicodeScalars.append(contentsOf: scalars[index..<end])
            name = name.lowercased()
            index = end
            switch name {
            case "gmt", "ut", "z": return 0
            case "edt": return -4 * 3600
            case "est", "cdt": return -5 * 3600
            case "cst", "mdt": return -6 * 3600
            case "mst", "pdt": return -7 * 3600
            case "pst": return -8 * 3600
            default:
                // One military letter but J: "consume but treat it as -0000".
                return name.count == 1 && name != "j" ? 0 : nil
            }
        }
        let negative: Bool
        if consume("+") {
            negative = false
        } else if consume("-") {
            negative = true
        } else {
            return nil  // includes U+2212 MINUS SIGN, which RFC 2822 does not allow
        }
        guard scalars.count - index >= 2, let h1 = Self.digit(scalars[index]), let h2 = Self.digit(scalars[index + 1])
        else { return nil }
        index += 2
        guard scalars.count - index >= 2, let m1 = Self.digit(scalars[index]), m1 <= 5,
            let m2 = Self.digit(scalars[index + 1])
        else { return nil }
        index += 2
        let seconds = (h1 * 10 + h2) * 3600 + (m1 * 10 + m2) * 60
        return negative ? -seconds : seconds
    }

    /// `scan::comment_2822`: white space then a parenthesised comment (nested parentheses, `\`
    /// escapes); consumed only when complete.
    private mutating func comment() -> Bool {
        var probe = self
        probe.trimStart()
        guard probe.consume("(") else { return false }
        var depth = 1
        while probe.index < probe.scalars.count {
            let scalar = probe.scalars[probe.index]
            probe.index += 1
            switch scalar {
            case "\\":
                guard probe.index < probe.scalars.count else { return false }
                probe.index += 1
            case "(":
                depth += 1
            case ")":
                depth -= 1
                if depth == 0 {
                    self = probe
                    return true
                }
            default:
                break
            }
        }
        return false
    }
}

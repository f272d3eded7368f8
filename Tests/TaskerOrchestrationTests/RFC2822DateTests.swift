import Foundation
import Testing

@testable import TaskerOrchestration

/// The RFC 2822 dates a `Retry-After` may carry, read as chrono 0.4.44 (upstream's dependency) reads
/// them: the cases of chrono's own `test_rfc2822` (`src/format/parse.rs`), then the edges its
/// `Parsed` checks decide (years, leap days and seconds, day names, range).
@Suite struct RFC2822DateTests {
    /// chrono's `test_rfc2822`: input → UTC seconds since 1970, or nil for its errors.
    static let chronoCases: [(String, Int64?)] = [
        ("Tue, 20 Jan 2015 17:35:20 -0800", 1_421_804_120),  // normal case
        ("Fri,  2 Jan 2015 17:35:20 -0800", 1_420_248_920),  // folding whitespace
        ("Fri, 02 Jan 2015 17:35:20 -0800", 1_420_248_920),  // leading zero
        ("Tue, 20 Jan 2015 17:35:20 -0800 (UTC)", 1_421_804_120),  // trailing comment
        (#"Tue, 20 Jan 2015 17:35:20 -0800 ( (UTC ) (\( (a)\(( \t ) ) \\( \) ))"#, 1_421_804_120),
        (#"Tue, 20 Jan 2015 17:35:20 -0800 (UTC\)"#, nil),  // not enough closing parentheses
        ("Tue, 20 Jan 2015 17:35:20 -0800 (UTC)\t \r\n(Anothercomment)", 1_421_804_120),
        ("Tue, 20 Jan 2015 17:35:20 -0800 (UTC) ", nil),  // trailing whitespace after comment
        ("20 Jan 2015 17:35:20 -0800", 1_421_804_120),  // no day of week
        ("20 JAN 2015 17:35:20 -0800", 1_421_804_120),  // upper case month
        ("Tue, 20 Jan 2015 17:35 -0800", 1_421_804_100),  // no second
        ("11 Sep 2001 09:45:00 +0000", 1_000_201_500),
        ("11 Sep 2001 09:45:00 EST", 1_000_219_500),
        ("11 Sep 2001 09:45:00 GMT", 1_000_201_500),
        ("30 Feb 2015 17:35:20 -0800", nil),  // bad day of month
        ("Tue, 20 Jan 2015", nil),  // omitted fields
        ("Tue, 20 Avr 2015 17:35:20 -0800", nil),  // bad month name
        ("Tue, 20 Jan 2015 25:35:20 -0800", nil),  // bad hour
        ("Tue, 20 Jan 2015 7:35:20 -0800", nil),  // bad # of digits in hour
        ("Tue, 20 Jan 2015 17:65:20 -0800", nil),  // bad minute
        ("Tue, 20 Jan 2015 17:35:90 -0800", nil),  // bad second
        ("Tue, 20 Jan 2015 17:35:20 -0890", nil),  // bad offset
        ("6 Jun 1944 04:00:00Z", nil),  // zulu not allowed
        ("Tue, 20 Jan 2015 17:35:20 GMT", 1_421_775_320),
        ("Tue, 20 Jan 2015 17:35:20 UT", 1_421_775_320),
        ("Tue, 20 Jan 2015 17:35:20 ut", 1_421_775_320),
        ("Tue, 20 Jan 2015 17:35:20 EDT", 1_421_789_720),
        ("Tue, 20 Jan 2015 17:35:20 EST", 1_421_793_320),
        ("Tue, 20 Jan 2015 17:35:20 CDT", 1_421_793_320),
        ("Tue, 20 Jan 2015 17:35:20 CST", 1_421_796_920),
        ("Tue, 20 Jan 2015 17:35:20 MDT", 1_421_796_920),
        ("Tue, 20 Jan 2015 17:35:20 MST", 1_421_800_520),
        ("Tue, 20 Jan 2015 17:35:20 PDT", 1_421_800_520),
        ("Tue, 20 Jan 2015 17:35:20 PST", 1_421_804_120),
        ("Tue, 20 Jan 2015 17:35:20 pst", 1_421_804_120),
        ("Tue, 20 Jan 2015 17:35:20 Z", 1_421_775_320),  // military letters read as +0000
        ("Tue, 20 Jan 2015 17:35:20 A", 1_421_775_320),
        ("Tue, 20 Jan 2015 17:35:20 a", 1_421_775_320),
        ("Tue, 20 Jan 2015 17:35:20 K", 1_421_775_320),
        ("Tue, 20 Jan 2015 17:35:20 k", 1_421_775_320),
        ("Tue, 20 Jan 2015 17:35:20 J", nil),  // "J" is not a zone
        ("Tue, 20 Jan 2015 17:35:20Z", nil),
        ("Tue, 20 Jan 2015 17:35:20 Zulu", nil),
        ("Tue, 20 Jan 2015 17:35:20 ZULU", nil),
        ("Tue, 20 Jan 2015 17:35:20 \u{2212}0800", nil),  // MINUS SIGN
        ("Tue, 20 Jan 2015 17:35:20 0800", nil),  // missing offset sign
        ("Tue, 20 Jan 2015 17:35:20 HAS", nil),  // bad named timezone
        ("Tue, 20 Jan 2015\u{1F608}17:35:20 -0800", nil),  // bad character
    ]

    @Test func chronosOwnCases() {
        for (text, expected) in Self.chronoCases {
            #expect(RFC2822Date(text)?.utcSeconds == expected, "\(text)")
        }
    }

    /// Two-digit years below 50 are 20xx, others 19xx; three digits add 1900; four or more are as written.
    @Test func yearsOfTwoAndThreeDigits() {
        #expect(RFC2822Date("20 Jan 15 17:35:20 +0000")?.utcSeconds == 1_421_775_320)
        #expect(RFC2822Date("Sat, 20 Jan 79 17:35:20 +0000")?.utcSeconds == 285_701_720)
        #expect(RFC2822Date("Sun, 20 Jan 47 17:35:20 +0000")?.utcSeconds == 2_431_618_520)
        #expect(RFC2822Date("20 Jan 115 17:35:20 +0000")?.utcSeconds == 1_421_775_320)
        #expect(RFC2822Date("20 Jan 009 17:35:20 +0000")?.utcSeconds == -1_923_287_080)
        #expect(RFC2822Date("20 Jan 0654 17:35:20 +0000")?.utcSeconds == -41_527_232_680)
        #expect(RFC2822Date("20 Jan 5 17:35:20 +0000") == nil)  // one digit
    }

    /// The date must exist and match its day name.
    @Test func theDateIsChecked() {
        #expect(RFC2822Date("Mon, 29 Feb 2016 00:00:00 +0000")?.utcSeconds == 1_456_704_000)
        #expect(RFC2822Date("29 Feb 2000 00:00:00 +0000")?.utcSeconds == 951_782_400)
        #expect(RFC2822Date("29 Feb 2015 00:00:00 +0000") == nil)
        #expect(RFC2822Date("29 Feb 1900 00:00:00 +0000") == nil)
        #expect(RFC2822Date("31 Apr 2015 00:00:00 +0000") == nil)
        #expect(RFC2822Date("00 Jan 2015 00:00:00 +0000") == nil)
        #expect(RFC2822Date("Mon, 20 Jan 2015 17:35:20 -0800") == nil)  // the 20th was a Tuesday
        #expect(RFC2822Date("tUE, 20 Jan 2015 17:35:20 -0800")?.utcSeconds == 1_421_804_120)
        #expect(RFC2822Date("Tue , 20 Jan 2015 17:35:20 -0800") == nil)  // the comma must follow the name
        #expect(RFC2822Date("Tuesday, 20 Jan 2015 17:35:20 -0800") == nil)
    }

    /// Offsets of 24 hours or more do not exist (`FixedOffset::east_opt`); minutes stop at 59.
    @Test func offsetsAreBounded() {
        #expect(RFC2822Date("Tue, 20 Jan 2015 17:35:20 -1551")?.utcSeconds == 1_421_832_380)
        #expect(RFC2822Date("Tue, 20 Jan 2015 17:35:20 +2359")?.utcSeconds == 1_421_688_980)
        #expect(RFC2822Date("Tue, 20 Jan 2015 17:35:20 +2400") == nil)
        #expect(RFC2822Date("Tue, 20 Jan 2015 17:35:20 +0060") == nil)
        #expect(RFC2822Date("Tue, 20 Jan 2015 17:35:20 +080") == nil)
    }

    /// Years up to chrono's last, 262142, and only while the UTC instant stays within it.
    @Test func theYearRangeIsChronos() {
        #expect(RFC2822Date("Mon, 31 Dec 262142 23:59:59 +0000")?.utcSeconds == 8_210_266_876_799)
        #expect(RFC2822Date("31 Dec 262142 23:59:59 -0100") == nil)
        #expect(RFC2822Date("1 Jan 262143 00:00:00 +0000") == nil)
        #expect(RFC2822Date("1 Jan 99999999999999999999 00:00:00 +0000") == nil)
    }

    /// Second 60 is a leap second: stored as :59, counted as :60 when its time of day is not before
    /// `now`'s, else as :59 (chrono's `NaiveTime::signed_duration_since`).
    @Test func aLeapSecondCountsAsChronoCountsIt() throws {
        let leap = try #require(RFC2822Date("Wed, 31 Dec 2008 23:59:60 +0000"))
        #expect(leap.utcSeconds == 1_230_767_999 && leap.isLeapSecond)
        let minuteBefore = Date(timeIntervalSince1970: 1_230_767_940)
        #expect(leap.wholeSecondsSince(minuteBefore) == 60)
        let shifted = try #require(RFC2822Date("Thu, 01 Jan 2009 00:59:60 +0100"))
        #expect(shifted == leap)
        // Just after midnight, compared with a `now` late the evening before: counted as :59.
        let early = try #require(RFC2822Date("Thu, 01 Jan 2009 00:00:60 +0000"))
        #expect(early.utcSeconds == 1_230_768_059)
        #expect(early.wholeSecondsSince(minuteBefore) == 119)
        #expect(RFC2822Date("Wed, 31 Dec 2008 23:59:61 +0000") == nil)
    }

    /// Seconds follow their colon at once; white space may surround the other colon.
    @Test func whiteSpaceWhereChronoAllowsIt() {
        #expect(RFC2822Date("  Tue,20 Jan 2015 17 : 35 -0800")?.utcSeconds == 1_421_804_100)
        #expect(RFC2822Date("Tue, 20 Jan 2015 17:35 :20 -0800")?.utcSeconds == 1_421_804_120)
        #expect(RFC2822Date("Tue, 20 Jan 2015 17:35: 20 -0800") == nil)
        #expect(RFC2822Date("Tue, 20\u{A0}Jan\u{2003}2015 17:35:20 -0800")?.utcSeconds == 1_421_804_120)
        #expect(RFC2822Date("Tue, 20 Jan 2015 17:35:20 -0800 ") == nil)
        #expect(RFC2822Date("Tue, 20 Jan2015 17:35:20 -0800") == nil)
    }
}

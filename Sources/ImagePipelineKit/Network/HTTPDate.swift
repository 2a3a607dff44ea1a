import Foundation

/// HTTP-dates (RFC 9110 §5.6.7): formatting as IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) and parsing
/// the three forms a peer may send, as `Last-Modified`, `If-Range`, `Date` and `Expires` carry them.
///
/// Done by hand with `gmtime_r`/`timegm` because `DateFormatter` is neither `Sendable` nor cheap, and every
/// response carries a date. Thread-safe.
public enum HTTPDate {
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `date` in IMF-fixdate, to the second (fractions are dropped, as `Last-Modified` has no finer grain).
    public static func format(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let year = Int(parts.tm_year) + 1900
        let yearText = year < 1000 ? String(repeating: "0", count: 4 - String(year).count) + String(year) : String(year)
        return "\(weekdays[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(yearText) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }

    /// Parses IMF-fixdate, the obsolete RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
    /// (`Sun Nov  6 08:49:37 1994`); `nil` for anything else.
    public static func parse(_ text: String) -> Date? {
        parseFixdate(text) ?? parseFields(text)
    }

    /// Any of the three forms, split into fields.
    static func parseFields(_ text: String) -> Date? {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        var day: Int?, monthName: String?, year: Int?, clock: String?
        switch fields.count {
        case 6 where fields[5] == "GMT":  // IMF-fixdate: "Sun," "06" "Nov" "1994" "08:49:37" "GMT"
            (day, monthName, year, clock) = (Int(fields[1]), fields[2], Int(fields[3]), fields[4])
        case 4 where fields[3] == "GMT":  // RFC 850: "Sunday," "06-Nov-94" "08:49:37" "GMT"
            let pieces = fields[1].split(separator: "-").map(String.init)
            // Two digits, as the form has them: a longer number would overflow the century added below (a trap).
            guard pieces.count == 3, let shortYear = Int(pieces[2]), (0...99).contains(shortYear) else { return nil }
            // RFC 9110: a two-digit year more than 50 years in the future is in the past century.
            (day, monthName, year, clock) = (Int(pieces[0]), pieces[1], shortYear < 70 ? 2000 + shortYear : 1900 + shortYear, fields[2])
        case 5:  // asctime: "Sun" "Nov" "6" "08:49:37" "1994"
            (day, monthName, year, clock) = (Int(fields[2]), fields[1], Int(fields[4]), fields[3])
        default:
            return nil
        }
        guard let day, let monthName, let year, let clock, let month = months.firstIndex(of: monthName) else { return nil }
        let time = clock.split(separator: ":").compactMap { Int($0) }
        guard time.count == 3 else { return nil }
        return date(year: year, month: month, day: day, hour: time[0], minute: time[1], second: time[2])
    }

    /// IMF-fixdate read in place, the form nearly every response's `Date` has (`Sun, 06 Nov 1994 08:49:37 GMT`,
    /// 29 bytes whose separators have fixed places), without splitting it into strings. `nil` for any other
    /// text, which `parseFields` reads; both end in the same range checks and conversion.
    static func parseFixdate(_ text: String) -> Date? {
        // The string's own UTF-8, not a copy: this runs for every response that has a date.
        var text = text
        return text.withUTF8 { parseFixdate(bytes: $0) }
    }

    private static func parseFixdate(bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        guard bytes.count == 29, bytes[3] == UInt8(ascii: ","),
              [4, 7, 11, 16, 25].allSatisfy({ bytes[$0] == UInt8(ascii: " ") }),
              bytes[19] == UInt8(ascii: ":"), bytes[22] == UInt8(ascii: ":"), bytes[26...].elementsEqual("GMT".utf8),
              bytes[..<3].allSatisfy({ $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") })
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            bytes[range].reduce(Int?(0)) { value, byte in
                (0x30...0x39).contains(byte) ? value.map { $0 * 10 + Int(byte - 0x30) } : nil
            }
        }
        guard let day = number(5..<7), let year = number(12..<16), let hour = number(17..<19),
              let minute = number(20..<22), let second = number(23..<25),
              let month = months.firstIndex(where: { $0.utf8.elementsEqual(bytes[8..<11]) })
        else { return nil }
        return date(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    /// The instant of a date and time in GMT (`month` from 0), when each part is in its range. Four digits of
    /// year at most, as every form has them: a server's longer year would not fit `tm_year` (a trap).
    private static func date(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Date? {
        guard (0...9999).contains(year), (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute),
              (0...60).contains(second)
        else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }
}

import Foundation
import Testing
@testable import ImagePipelineKit

@Suite("HTTP header values: field names, numbers and dates as servers send them")
struct HTTPHeaderValueTests {
    @Test("Header fields match in any ASCII case, and a number is read with blanks around it and nothing else")
    func headerNamesAndNumbers() {
        let headers: DownloadHeaders = ["content-LENGTH": " 1234\t", "Age": "+5", "X-List": "1, 2", "X-Huge": "99999999999999999999",
                                        "X-Empty": "  ", "X-Zero": "0", "X-@": "at"]
        #expect(headers.integerValue(for: "Content-Length") == 1234)
        #expect(headers.integerValue(for: "x-zero") == 0)
        for name in ["Age", "X-List", "X-Huge", "X-Empty", "X-Missing"] {
            #expect(headers.integerValue(for: name) == nil, "\(name)")
        }
        // Only letters fold: "@" and "`" differ by the same bit as "A" and "a".
        #expect(headers["x-@"] == "at" && headers["x-`"] == nil && headers["X-@ "] == nil)
    }

    @Test("An IMF-fixdate read in place gives the date the field-by-field reading gives, and other forms are left to it")
    func fixdateReadInPlace() {
        var generator = SystemRandomNumberGenerator()
        var texts = (0..<2000).map { _ in HTTPDate.format(Date(timeIntervalSince1970: .random(in: -62_000_000_000...253_000_000_000, using: &generator))) }
        // Leap days, a leap second, days past a month's end (counted into the next month), the first and last years.
        texts += ["Tue, 29 Feb 2000 12:00:00 GMT", "Mon, 28 Feb 2100 23:59:59 GMT", "Thu, 31 Dec 1998 23:59:60 GMT",
                  "Xyz, 31 Apr 2024 00:00:00 GMT", "Sat, 31 Feb 2023 08:00:00 GMT", "Mon, 01 Jan 0001 00:00:00 GMT",
                  "Fri, 31 Dec 9999 23:59:59 GMT", "Thu, 01 Jan 1970 00:00:00 GMT", "Wed, 31 Dec 1969 23:59:59 GMT"]
        for text in texts {
            #expect(HTTPDate.parseFixdate(text) != nil, "\(text)")
            #expect(HTTPDate.parseFixdate(text) == HTTPDate.parseFields(text), "\(text)")
        }
        for other in ["Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "Sun,\t06 Nov 1994 08:49:37 GMT",
                      "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
                      "Sun, 06 Nox 1994 08:49:37 GMT", "Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:3x GMT"] {
            #expect(HTTPDate.parseFixdate(other) == nil, "\(other)")
        }
        #expect(HTTPDate.parse("Sun,\t06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
    }
}

/// The directives of a `Cache-Control` response header that a private image cache acts on (RFC 9111 §5.2.2).
///
/// Parsing is forgiving, as caches in the field are: directive names are matched without regard to case,
/// values may be tokens or quoted strings, empty list members and unknown directives are skipped, and several
/// header lines count as one list. A `max-age` that is not a number makes the response stale at once (RFC 9111
/// §4.2.1); the first `max-age` wins over later ones; a value beyond 2³¹ seconds is cut to 2³¹ (§1.2.2).
public struct CacheControl: Sendable, Equatable {
    /// `max-age`: seconds the response stays fresh after it was generated.
    public var maxAge: Int?
    /// `no-store`: the response must not be written to a cache that outlives the request.
    public var noStore = false
    /// `no-cache` (with or without field names): a stored response must be revalidated before every reuse.
    public var noCache = false
    /// `immutable` (RFC 8246): the response will not change while it is fresh, so it is never revalidated then.
    public var immutable = false
    /// `must-revalidate`: once stale, the response must not be reused without revalidation.
    public var mustRevalidate = false

    /// The largest `max-age` honoured, 2³¹ seconds (RFC 9111 §1.2.2).
    public static let maxDeltaSeconds = 2_147_483_648

    /// No directive.
    public init() {}

    /// The directives of every `Cache-Control` field value in `values`, in order; see the type's rules.
    public init(parsing values: [String]) {
        for member in values.flatMap(Self.listMembers) {
            let (name, value) = Self.directive(member)
            switch name {
            case "max-age":
                guard maxAge == nil else { continue }
                maxAge = value.flatMap(Self.deltaSeconds) ?? 0
            case "no-store": noStore = true
            case "no-cache": noCache = true
            case "immutable": immutable = true
            case "must-revalidate": mustRevalidate = true
            default: continue
            }
        }
    }

    /// The directives of `text`, one `Cache-Control` field value.
    public init(parsing text: String) {
        self.init(parsing: [text])
    }

    /// The comma-separated members of one field value, commas inside quoted strings kept.
    private static func listMembers(_ text: String) -> [Substring] {
        var members: [Substring] = []
        var start = text.startIndex
        var index = text.startIndex
        var inQuotes = false
        var escaped = false
        while index < text.endIndex {
            let character = text[index]
            if escaped {
                escaped = false
            } else if inQuotes && character == "\\" {
                escaped = true
            } else if character == "\"" {
                inQuotes.toggle()
            } else if character == ",", !inQuotes {
                members.append(text[start..<index])
                start = text.index(after: index)
            }
            index = text.index(after: index)
        }
        members.append(text[start...])
        return members
    }

    /// The lowercased name and the unquoted value (`nil` when there is no `=`) of one list member.
    private static func directive(_ member: Substring) -> (name: String, value: String?) {
        let trimmed = member.trimmingWhitespace()
        guard let equals = trimmed.firstIndex(of: "=") else { return (trimmed.lowercased(), nil) }
        let name = trimmed[..<equals].trimmingWhitespace().lowercased()
        var value = trimmed[trimmed.index(after: equals)...].trimmingWhitespace()
        if value.count >= 2, value.first == "\"", value.last == "\"" {
            var unquoted = ""
            var escaped = false
            for character in value.dropFirst().dropLast() {
                if escaped || character != "\\" {
                    unquoted.append(character)
                    escaped = false
                } else {
                    escaped = true
                }
            }
            value = Substring(unquoted)
        }
        return (name, String(value))
    }

    /// `delta-seconds`: one or more digits, cut to ``maxDeltaSeconds``; `nil` for anything else.
    private static func deltaSeconds(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        // Leading zeros do not make a number larger; more digits than fit do.
        let significant = text.drop { $0 == "0" }
        guard significant.count <= 10, let seconds = Int(significant.isEmpty ? "0" : String(significant)) else {
            return maxDeltaSeconds
        }
        return min(seconds, maxDeltaSeconds)
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    fileprivate func trimmingWhitespace() -> Substring {
        var result = self
        while let first = result.first, first == " " || first == "\t" { result = result.dropFirst() }
        while let last = result.last, last == " " || last == "\t" { result = result.dropLast() }
        return result
    }
}

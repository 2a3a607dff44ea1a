/// Text from outside (identifiers, URLs, server messages) made safe to print for a person to read.
extension String {
    /// The text with every control character written as an escape: `\n`, `\r`, `\t`, otherwise `\u{XX}`, and
    /// the backslash doubled so an escape cannot be forged. A CR or LF inside an identifier can then neither
    /// start a fake row in a table nor, with ESC, move the terminal's cursor. JSON output escapes on its own.
    var terminalSafe: String {
        var out = ""
        out.reserveCapacity(utf8.count)
        for scalar in unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{00}"..."\u{1F}", "\u{7F}"..."\u{9F}", "\u{2028}", "\u{2029}":
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

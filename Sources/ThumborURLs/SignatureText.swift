import Foundation

/// The text of a thumbor signature: URL-safe base64 (`-` and `_` for `+` and `/`), with or without its `=`
/// padding, which a URL may carry percent-encoded. Reading it is the part of a signature check that handles
/// untrusted text; the comparison itself is the HMAC's (in `URLSigner`).
public enum SignatureText {
    /// The bytes `text` encodes, or `nil` when it is not URL-safe base64.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let unescaped = PercentEncoding.decode(text) ?? String(text)
        guard unescaped.utf8.count <= 256 else { return nil }
        var base64 = unescaped.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map(Array.init)
    }

    /// `bytes` as thumbor writes a signature: URL-safe base64 with padding.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
    }
}

import Crypto
import Foundation
import ThumborURLs

/// thumbor's URL signatures: the URL-safe base64 of HMAC-SHA1, keyed by a security key, of the path after
/// `/{signature}/`.
///
/// Several keys may be active at once, for rotation: the first signs, every one verifies. Verification
/// compares in constant time.
public struct URLSigner: Sendable {
    private let keys: [SymmetricKey]

    /// A signer for `keys` (at least one; the first signs).
    public init(keys: [String]) {
        precondition(!keys.isEmpty, "a signer needs at least one key")
        self.keys = keys.map { SymmetricKey(data: Data($0.utf8)) }
    }

    /// The signature of `signedPart` under the first key, as thumbor writes it (with `=` padding).
    public func signature(for signedPart: some StringProtocol) -> String {
        SignatureText.encode(HMAC<Insecure.SHA1>.authenticationCode(for: Data(signedPart.utf8), using: keys[0]))
    }

    /// The signed path for `signedPart`: `/{signature}/{signedPart}`.
    public func signedPath(for signedPart: String) -> String {
        "/\(signature(for: signedPart))/\(signedPart)"
    }

    /// Whether `signature` (URL-safe base64, padded or not; percent-encoded `=` allowed) is `signedPart`'s
    /// under any active key.
    public func isValid(signature: String, for signedPart: some StringProtocol) -> Bool {
        guard let code = SignatureText.decode(signature), code.count == Insecure.SHA1.byteCount else { return false }
        let message = Data(signedPart.utf8)
        var valid = false
        for key in keys {
            // Every key is checked, so the time taken does not say which one matched.
            valid = HMAC<Insecure.SHA1>.isValidAuthenticationCode(code, authenticating: message, using: key) || valid
        }
        return valid
    }
}

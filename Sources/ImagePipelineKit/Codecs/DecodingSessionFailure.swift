/// A decoding session that remembers the first error it met: after it, every call reports that error again
/// rather than decoding from a state the C library left undefined.
protocol RemembersDecodingFailure: AnyObject {
    /// The error that ended the session, if one did.
    var failure: ImageCodecError? { get set }
}

extension RemembersDecodingFailure {
    /// Runs `body`; an error it throws becomes the session's failure (one that is not an ``ImageCodecError``
    /// as ``ImageCodecError/corrupt(_:)``) and is thrown as such.
    func guarded<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            try fail(error as? ImageCodecError ?? .corrupt("\(error)"))
        }
    }

    /// Ends the session with `error`.
    func fail(_ error: ImageCodecError) throws -> Never {
        failure = error
        throw error
    }
}

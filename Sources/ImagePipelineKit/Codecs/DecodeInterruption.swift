/// Stops a decode whose result nobody wants any more: a fetch cancelled while it decodes (its cell scrolled
/// off) gives its CPU to the fetches still on screen instead of finishing an image it will throw away.
///
/// The fetch binds one for the duration of its decode; decoders call ``checkpoint()`` between units of work
/// (after reading the data and before scaling it, before each frame of an animation is read or scaled), which
/// throws ``ImageCodecError/interrupted`` once ``shouldStop`` says so. Outside such a binding a checkpoint does
/// nothing, so a codec of your own can call it freely.
public struct DecodeInterruption: Sendable {
    /// The interruption bound to the decode running on this thread (or task), if any.
    @TaskLocal public static var current: DecodeInterruption?

    /// Asked at each checkpoint; `true` stops the decode.
    public let shouldStop: @Sendable () -> Bool

    public init(shouldStop: @escaping @Sendable () -> Bool) {
        self.shouldStop = shouldStop
    }

    /// Throws ``ImageCodecError/interrupted`` when the decode running here should stop.
    public static func checkpoint() throws(ImageCodecError) {
        if let current, current.shouldStop() { throw .interrupted }
    }
}

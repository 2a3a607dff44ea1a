/// One frame of an animated image and how long it stays on screen.
public struct ImageFrame: Sendable {
    public var bitmap: Bitmap
    /// Display duration in seconds (GIF delays are centiseconds; 0 means "as fast as the viewer allows").
    public var duration: Double

    public init(bitmap: Bitmap, duration: Double) {
        self.bitmap = bitmap
        self.duration = duration
    }
}

/// A decoded image: one bitmap, or the frames of an animation with their durations and loop count
/// (TIP's `TIPImageContainer`).
///
/// Containers are values holding shared ``Bitmap`` references: copying one never copies pixels.
public struct ImageContainer: Sendable {
    /// Every frame; a still image has exactly one, with duration 0.
    public let frames: [ImageFrame]
    /// How often an animation repeats: 0 means forever (GIF's NETSCAPE2.0 convention).
    public let loopCount: Int

    /// A still image.
    public init(bitmap: Bitmap) {
        self.frames = [ImageFrame(bitmap: bitmap, duration: 0)]
        self.loopCount = 0
    }

    /// An animation. `frames` must not be empty.
    public init(frames: [ImageFrame], loopCount: Int) {
        precondition(!frames.isEmpty, "an image container needs at least one frame")
        self.frames = frames
        self.loopCount = loopCount
    }

    /// The image to show when not animating: the first frame.
    public var bitmap: Bitmap { frames[0].bitmap }

    /// Pixel dimensions (of the first frame; every frame of a decoded animation has the canvas size).
    public var dimensions: PixelSize { bitmap.size }

    /// Whether there is more than one frame.
    public var isAnimated: Bool { frames.count > 1 }

    public var frameCount: Int { frames.count }

    /// Per-frame durations in seconds.
    public var frameDurations: [Double] { frames.map(\.duration) }

    /// Total animation time of one loop, in seconds.
    public var totalDuration: Double { frames.reduce(0) { $0 + $1.duration } }

    /// Bytes of pixel memory held: the sum over frames of `bytesPerRow × height`.
    public var sizeInMemory: Int { frames.reduce(0) { $0 + $1.bitmap.sizeInMemory } }
}

extension ImageContainer {
    /// A decoder's frames at what `target` asks of the full-size image, stood upright: a still image for one
    /// frame, an animation for more. The frames of an animation (more than one frame, or an image whose
    /// properties say it animates) are never enlarged (``TargetSizing/scaledSize(ofAnimation:)``).
    static func rendering(_ frames: [ImageFrame], loopCount: Int, orientation: ImageOrientation, fullSize: PixelSize,
                          target: TargetSizing, isAnimated: Bool) throws -> ImageContainer {
        let isAnimation = isAnimated || frames.count > 1
        let rendered = try frames.map { frame in
            ImageFrame(bitmap: try frame.bitmap.rendered(orientation: orientation, fullSize: fullSize, target: target,
                                                          isAnimationFrame: isAnimation),
                       duration: frame.duration)
        }
        return rendered.count > 1 ? ImageContainer(frames: rendered, loopCount: loopCount) : ImageContainer(bitmap: rendered[0].bitmap)
    }

    /// Every frame scaled as `target` asks (an animation is never enlarged); `self` when nothing changes size.
    /// - Throws: ``ImageCodecError/limitExceeded(_:)`` when the target is unusable.
    public func scaled(for target: TargetSizing) throws -> ImageContainer {
        let size = target.scaledSize(of: dimensions, isAnimated: isAnimated)
        guard size != dimensions else { return self }
        DelegateQueueDiagnostics.noteHeavyWork()
        let scaled = try frames.map { frame in
            try DecodeInterruption.checkpoint()
            return ImageFrame(bitmap: try frame.bitmap.scaled(to: size), duration: frame.duration)
        }
        return ImageContainer(frames: scaled, loopCount: loopCount)
    }
}

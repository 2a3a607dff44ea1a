import CGIF
import CImageCodecs
import Foundation

/// One GIF being decoded as its bytes arrive, record by record through giflib.
///
/// ``GIFRecordScanner`` says how far complete records reach; giflib reads exactly that far, so it never
/// meets a short read (which it cannot recover from). Frames are composited on the logical screen as they
/// complete, one ``Bitmap`` per frame. Limits are checked against the declared screen and frame sizes before
/// anything is allocated. Not thread-safe: one queue at a time.
final class GIFDecodingSession: ImageDecodingSession, RemembersDecodingFailure {
    /// Chrome and Firefox show frames with a delay of 0 or 1 centisecond for 0.1 s; so do we.
    static let minimumFrameDuration = 0.02
    static let clampedFrameDuration = 0.1

    private let configuration: DecoderConfiguration
    /// Everything received; giflib reads it through `readPosition`.
    fileprivate var buffer = Data()
    fileprivate var readPosition = 0
    private var gif: UnsafeMutablePointer<GifFileType>?
    private var compositor: GIFCompositor?
    /// Frames already copied out of the compositor.
    private var frames: [ImageFrame] = []
    /// Duration of the frame still on the compositor's screen (copied out when the next frame starts, taken
    /// without a copy when the file ends).
    private var frameOnScreen: Double?
    private var frameCount: Int { frames.count + (frameOnScreen == nil ? 0 : 1) }
    /// Graphics control of the next image, from the extension before it.
    private var pendingControl = GraphicsControlBlock(DisposalMode: 0, UserInputFlag: false, DelayTime: 0, TransparentColor: -1)
    private var loopCount: Int?
    private var complete = false
    var failure: ImageCodecError?
    private(set) var properties: ImageProperties?

    init(configuration: DecoderConfiguration) {
        self.configuration = configuration
    }

    deinit {
        if let gif {
            var error: Int32 = 0
            DGifCloseFile(gif, &error)
        }
    }

    func append(_ data: Data) throws -> DecoderProgress {
        if let failure { throw failure }
        if complete { return .didCompleteLoading }
        buffer.append(data)
        return try advance()
    }

    func finish() throws -> DecoderProgress {
        if let failure { throw failure }
        if complete { return .didCompleteLoading }
        // Cut off: the frames that arrived whole are the image (as browsers show a truncated GIF).
        guard frameCount > 0 else { try fail(.truncated) }
        finishLoading()
        return .didCompleteLoading
    }

    func render(_ mode: RenderMode, target: TargetSizing) throws -> ImageContainer? {
        if let failure { throw failure }
        guard let properties, frameCount > 0 else { return nil }
        if !complete {
            // While loading, a view shows the first frame; the animation comes with the complete image.
            guard mode != .completeImage, let first = try frames.first?.bitmap ?? compositor?.snapshot() else { return nil }
            return ImageContainer(bitmap: try first.rendered(orientation: .up, fullSize: properties.dimensions, target: target,
                                                             isAnimationFrame: properties.isAnimated))
        }
        return try ImageContainer.rendering(frames, loopCount: loopCount ?? 1, orientation: .up,
                                            fullSize: properties.dimensions, target: target,
                                            isAnimated: properties.isAnimated)
    }

    // MARK: - Reading records

    private func advance() throws -> DecoderProgress {
        var progress = DecoderProgress.didProgress
        if gif == nil {
            guard try open() else { return progress }
            progress = .didLoadHeaders
        }
        while !complete {
            let scan = buffer.withUnsafeBytes { GIFRecordScanner.scan($0, at: readPosition) }
            switch scan {
            case .needMoreData:
                try checkIncompleteFrameDescriptor()
                return progress
            case .unknown:
                try fail(.corrupt("unexpected byte 0x\(String(buffer[buffer.startIndex + readPosition], radix: 16)) between GIF records"))
            case .record(.trailer, _):
                finishLoading()
                return .didCompleteLoading
            case .record(.extension_, _):
                try readExtension()
            case .record(.image, _):
                try readImage()
                progress = max(progress, .didLoadFrame)
                if !configuration.decodesAnimation {
                    finishLoading()
                    return .didCompleteLoading
                }
            }
        }
        return progress
    }

    /// Opens giflib once the header and global colour table are in; checks the screen size first.
    private func open() throws -> Bool {
        guard let headerLength = buffer.withUnsafeBytes({ GIFRecordScanner.headerLength($0) }) else { return false }
        let bytes = [UInt8](buffer.prefix(headerLength))
        guard bytes.starts(with: Array("GIF87a".utf8)) || bytes.starts(with: Array("GIF89a".utf8)) else {
            try fail(.corrupt("not a GIF87a or GIF89a header"))
        }
        let screen = PixelSize(width: Int(bytes[6]) | Int(bytes[7]) << 8, height: Int(bytes[8]) | Int(bytes[9]) << 8)
        try guarded { try configuration.limits.check(sourceSize: screen) }
        var error: Int32 = 0
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard let gif = DGifOpen(context, gifRead, &error) else {
            try fail(.corrupt(Self.message(for: error)))
        }
        self.gif = gif
        compositor = try guarded { try GIFCompositor(width: screen.width, height: screen.height) }
        properties = ImageProperties(type: .gif, dimensions: screen, frameCount: 0)
        return true
    }

    private func readExtension() throws {
        guard let gif else { return }
        var code: Int32 = 0
        var block: UnsafeMutablePointer<GifByteType>?
        var type = UNDEFINED_RECORD_TYPE
        try check(DGifGetRecordType(gif, &type))
        try check(DGifGetExtension(gif, &code, &block))
        var isLoopExtension = false
        var first = true
        while let current = block {
            let length = Int(current[0])
            let payload = UnsafeBufferPointer(start: current + 1, count: length)
            if code == GRAPHICS_EXT_FUNC_CODE, first {
                var control = GraphicsControlBlock()
                if DGifExtensionToGCB(length, current + 1, &control) == GIF_OK { pendingControl = control }
            } else if code == APPLICATION_EXT_FUNC_CODE, first {
                let identifier = String(decoding: payload, as: UTF8.self)
                isLoopExtension = identifier == "NETSCAPE2.0" || identifier == "ANIMEXTS1.0"
            } else if isLoopExtension, length >= 3, payload[0] == 1, loopCount == nil {
                // The first loop count wins, as in browsers (a file may repeat the extension).
                loopCount = Int(payload[1]) | Int(payload[2]) << 8
            }
            first = false
            try check(DGifGetExtensionNext(gif, &block))
        }
    }

    /// Refuses a frame whose declared size is over the limits as soon as its descriptor is in, without
    /// waiting for (or decoding) its data: a bomb needs only a few bytes of header.
    private func checkIncompleteFrameDescriptor() throws {
        let start = buffer.startIndex + readPosition
        guard buffer.count - readPosition >= 10, buffer[start] == 0x2C else { return }
        let size = PixelSize(width: Int(buffer[start + 5]) | Int(buffer[start + 6]) << 8,
                             height: Int(buffer[start + 7]) | Int(buffer[start + 8]) << 8)
        if !size.isEmpty { try guarded { try configuration.limits.check(sourceSize: size) } }
    }

    private func readImage() throws {
        guard let gif, let compositor, var properties else { return }
        try DecodeInterruption.checkpoint()
        var type = UNDEFINED_RECORD_TYPE
        try check(DGifGetRecordType(gif, &type))
        try check(DGifGetImageDesc(gif))
        let descriptor = gif.pointee.Image
        let frameSize = PixelSize(width: Int(descriptor.Width), height: Int(descriptor.Height))
        // A frame may stick out of the screen (clipped when drawn), but its rows are still decoded: bound them.
        try guarded { try configuration.limits.check(sourceSize: frameSize) }
        try guarded { try configuration.limits.check(frameCount: frameCount + 1, of: properties.dimensions) }
        // The previous frame leaves the screen as a copy before this one changes it.
        if let duration = frameOnScreen {
            frames.append(ImageFrame(bitmap: try compositor.snapshot(), duration: duration))
            frameOnScreen = nil
        }

        let colorMap = descriptor.ColorMap ?? gif.pointee.SColorMap
        let frame = GIFCompositor.Frame(
            left: Int(descriptor.Left), top: Int(descriptor.Top), width: frameSize.width, height: frameSize.height,
            palette: Self.palette(colorMap),
            transparentIndex: pendingControl.TransparentColor >= 0 ? Int(pendingControl.TransparentColor) : nil,
            disposal: GIFCompositor.Disposal(rawValue: Int(pendingControl.DisposalMode)) ?? .unspecified,
            interlaced: descriptor.Interlace)
        let delay = Double(pendingControl.DelayTime) / 100
        pendingControl = GraphicsControlBlock(DisposalMode: 0, UserInputFlag: false, DelayTime: 0, TransparentColor: -1)

        compositor.beginFrame(frame)
        var line = [GifPixelType](repeating: 0, count: max(1, frameSize.width))
        let rows = frame.interlaced ? GIFCompositor.interlacedRowOrder(height: frameSize.height) : Array(0..<frameSize.height)
        for y in rows {
            try check(line.withUnsafeMutableBufferPointer { DGifGetLine(gif, $0.baseAddress, Int32(frameSize.width)) })
            line.withUnsafeBufferPointer { compositor.draw(row: y, of: frame, indices: $0) }
        }
        frameOnScreen = delay < Self.minimumFrameDuration ? Self.clampedFrameDuration : delay
        properties.frameCount = frameCount
        properties.isAnimated = frameCount > 1
        properties.hasAlpha = properties.hasAlpha || frame.transparentIndex != nil
        if frameCount == 1 { properties.isProgressive = frame.interlaced }
        properties.loopCount = loopCount ?? 1
        self.properties = properties
    }

    private func finishLoading() {
        complete = true
        if let duration = frameOnScreen, let compositor {
            frames.append(ImageFrame(bitmap: compositor.freeze(), duration: duration))
            frameOnScreen = nil
            self.compositor = nil
        }
        properties?.loopCount = loopCount ?? 1
        properties?.frameCount = frames.count
        properties?.isAnimated = frames.count > 1
        if frames.isEmpty { failure = .truncated }
    }

    // MARK: - Helpers

    /// Opaque RGBA words for a colour map; a frame without any map gets a gray ramp (as browsers do).
    private static func palette(_ map: UnsafeMutablePointer<ColorMapObject>?) -> [UInt32] {
        guard let map, let colors = map.pointee.Colors, map.pointee.ColorCount > 0 else {
            return (0..<256).map { UInt32($0) * 0x0001_0101 | 0xFF00_0000 }
        }
        return (0..<Int(map.pointee.ColorCount)).map { index in
            let color = colors[index]
            return UInt32(color.Red) | UInt32(color.Green) << 8 | UInt32(color.Blue) << 16 | 0xFF00_0000
        }
    }

    private func check(_ status: Int32) throws {
        guard status != GIF_OK else { return }
        try fail(.corrupt(Self.message(for: gif?.pointee.Error ?? 0)))
    }

    private static func message(for code: Int32) -> String {
        GifErrorString(code).map { String(cString: $0) } ?? "giflib error \(code)"
    }
}

/// giflib's read callback: copies from the session's buffer. Only ever asked for bytes the scanner has
/// seen complete, so it never comes up short on valid data.
private func gifRead(_ gif: UnsafeMutablePointer<GifFileType>?, _ destination: UnsafeMutablePointer<GifByteType>?, _ count: Int32) -> Int32 {
    guard let gif, let destination, let context = gif.pointee.UserData, count > 0 else { return 0 }
    let session = Unmanaged<GIFDecodingSession>.fromOpaque(context).takeUnretainedValue()
    let available = min(Int(count), session.buffer.count - session.readPosition)
    guard available > 0 else { return 0 }
    session.buffer.withUnsafeBytes { bytes in
        destination.update(from: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + session.readPosition, count: available)
    }
    session.readPosition += available
    return Int32(available)
}

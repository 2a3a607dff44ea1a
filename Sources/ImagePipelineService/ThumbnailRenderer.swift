import Foundation
import ImagePipelineKit

/// Renders a thumbnail: the source through an ``ImagePipeline`` (shared downloads, its caches, a decode at the
/// smallest JPEG DCT scale that still covers the target), then the cut, flips and padding of
/// ``ThumbnailGeometry``, then the encoder.
///
/// EXIF orientation is applied while decoding. An animated source (GIF, WebP) is always rendered from its
/// first frame; the output is a still image.
struct ThumbnailRenderer: Sendable {
    let pipeline: ImagePipeline
    let limits: ServiceLimits
    let defaultQuality: Int
    let defaultAVIFQuality: Int

    /// How the output format is chosen.
    enum FormatChoice: Hashable, Sendable {
        /// `format()` named it.
        case explicit(OutputFormat)
        /// By the client's `Accept` and the source (``OutputFormat/negotiated(accept:sourceType:hasTransparency:)``).
        case negotiated(accept: String?)

        /// Whether `Accept` chose the format: the answer then varies by it.
        var isNegotiated: Bool {
            if case .negotiated = self { return true }
            return false
        }

        /// What the result cache's key needs to tell apart: the answer depends only on this and the request.
        var cacheKeyPart: String {
            switch self {
            case .explicit(let format): return format.rawValue
            case .negotiated(let accept):
                return Self.negotiatedKeyPart(OutputFormat.preferredNewer(accepting: OutputFormat.acceptedMediaTypes(accept)))
            }
        }

        /// The key part of an answer whose format `Accept` chose: `preferred`, or the source's own (`nil`).
        static func negotiatedKeyPart(_ preferred: OutputFormat?) -> String {
            preferred.map { "accept-\($0.rawValue)" } ?? "accept-source"
        }
    }

    /// A rendered thumbnail.
    struct Rendered: Sendable {
        var data: Data
        var format: OutputFormat
        var dimensions: PixelSize
        /// Where the pipeline found the source.
        var sourceTier: ImageLoadSource
        /// Seconds in the pipeline (download or cache read, decode, scale) and in the edits and encoder.
        var fetchSeconds: Double
        var encodeSeconds: Double
    }

    func render(_ request: ThumbnailRequest, source url: URL, format choice: FormatChoice) async throws(ServiceError) -> Rendered {
        if case .explicit(let format) = choice, !format.isEncodable { throw .unsupportedOutputFormat(format.rawValue) }
        let started = ContinuousClock.now
        var fetched = try await fetch(url, sizing: ThumbnailGeometry.fetchSizing(for: request))
        var source = fetched.image.bitmap
        if let crop = request.sourceCrop {
            source = try await edit { try Self.cut(source, to: crop) }
        }
        var geometry = ThumbnailGeometry(request: request, source: request.sourceCrop == nil ? fetched.originalDimensions : source.size)
        // The pipeline scales up when the target is larger than the source; without upscaling, start again from
        // the source's own pixels instead of scaling the enlarged ones back down.
        if request.filters.preventsUpscaling, request.sourceCrop == nil,
           source.width > fetched.originalDimensions.width || source.height > fetched.originalDimensions.height {
            fetched = try await fetch(url, sizing: .original)
            source = fetched.image.bitmap
            geometry = ThumbnailGeometry(request: request, source: source.size)
        }
        guard geometry.output.width * geometry.output.height <= limits.maxOutputPixels else {
            throw .badRequest("the output would be \(geometry.output.width)x\(geometry.output.height) pixels, over the limit")
        }
        let fetchedAt = ContinuousClock.now
        let sourceType = sniffedSourceType(fetched.identifier)
        let (data, format) = try await edit { () throws -> (Data, OutputFormat) in
            let bitmap = try finish(source, request: request, geometry: geometry)
            let format: OutputFormat = switch choice {
            case .explicit(let format): format
            case .negotiated(let accept):
                OutputFormat.negotiated(accept: accept, sourceType: sourceType, hasTransparency: bitmap.hasTransparency)
            }
            return (try encode(bitmap, as: format, filters: request.filters), format)
        }
        let finishedAt = ContinuousClock.now
        return Rendered(data: data, format: format, dimensions: geometry.output, sourceTier: fetched.source,
                        fetchSeconds: (fetchedAt - started) / .seconds(1), encodeSeconds: (finishedAt - fetchedAt) / .seconds(1))
    }

    private func fetch(_ url: URL, sizing: TargetSizing) async throws(ServiceError) -> FetchResult {
        let limits = DecodingLimits(maxPixels: limits.maxSourcePixels, maxBytes: max(256 << 20, limits.maxSourcePixels * 4))
        let request = GenericFetchRequest(
            url: url, targetSizing: sizing,
            decoderConfiguration: DecoderConfiguration(limits: limits, decodesAnimation: false))
        do {
            return try await pipeline.image(for: request)
        } catch {
            throw ServiceError(fetchError: error)
        }
    }

    /// The scaled source cut, flipped and padded as `geometry` and `request` say.
    private func finish(_ source: Bitmap, request: ThumbnailRequest, geometry: ThumbnailGeometry) throws -> Bitmap {
        var bitmap = source.size == geometry.scaled ? source : try source.scaled(to: geometry.scaled)
        if let box = geometry.cropBox {
            let origin = request.isSmart ? DetailCrop.origin(in: bitmap, box: box) : Self.alignedOrigin(of: box, in: bitmap.size, request)
            bitmap = try bitmap.cropped(x: origin.x, y: origin.y, size: box)
        }
        bitmap = try bitmap.flipped(horizontally: request.flipsHorizontally, vertically: request.flipsVertically)
        if let box = geometry.paddedBox, let fill = request.filters.fill {
            bitmap = try bitmap.padded(to: box, color: fill)
        }
        return bitmap
    }

    private static func alignedOrigin(of box: PixelSize, in size: PixelSize, _ request: ThumbnailRequest) -> (x: Int, y: Int) {
        let freeX = size.width - box.width, freeY = size.height - box.height
        let x = switch request.horizontalAlignment { case .left: 0; case .center: freeX / 2; case .right: freeX }
        let y = switch request.verticalAlignment { case .top: 0; case .middle: freeY / 2; case .bottom: freeY }
        return (x, y)
    }

    /// The source crop, clamped to the image (thumbor clamps too).
    private static func cut(_ bitmap: Bitmap, to crop: ThumbnailRequest.SourceCrop) throws -> Bitmap {
        let left = min(crop.left, bitmap.width - 1), top = min(crop.top, bitmap.height - 1)
        let right = min(max(crop.right, left + 1), bitmap.width), bottom = min(max(crop.bottom, top + 1), bitmap.height)
        return try bitmap.cropped(x: left, y: top, size: PixelSize(width: right - left, height: bottom - top))
    }

    /// Encodes at the request's quality; with `max_bytes`, again at lower qualities (steps of 10, down to 10)
    /// until the output fits, keeping the smallest when none does.
    private func encode(_ bitmap: Bitmap, as format: OutputFormat, filters: ThumbnailFilters) throws -> Data {
        guard let encoder = format.encoder else { throw ServiceError.unsupportedOutputFormat(format.rawValue) }
        let image = ImageContainer(bitmap: format == .jpeg ? try bitmap.flattened(over: filters.fill ?? RGBA(r: 255, g: 255, b: 255, a: 255)) : bitmap)
        var quality = filters.quality ?? (format == .avif ? defaultAVIFQuality : defaultQuality)
        var data = try encoder.encode(image, options: [], quality: Double(min(quality, 99)) / 100)
        guard let maxBytes = filters.maxBytes, format != .png else { return data }
        while data.count > maxBytes && quality > 10 {
            quality = max(10, quality - 10)
            data = try encoder.encode(image, options: [], quality: Double(quality) / 100)
        }
        return data
    }

    /// The source's format, from the first bytes the pipeline's memory or disk cache keeps for it.
    private func sniffedSourceType(_ identifier: String) -> ImageType? {
        guard let data = pipeline.memoryCache.entry(for: identifier)?.complete?.data
                ?? pipeline.diskCache?.peek(identifier: identifier)?.data
        else { return nil }
        return ImageType.detect(magicNumbersOf: data)
    }

    /// Runs a pixel edit or an encode in one of the pipeline's processing slots (the decodes take them too),
    /// turning a codec failure into a 422 and an allocation refusal into a 413.
    private func edit<T>(_ body: () throws -> T) async throws(ServiceError) -> T {
        do {
            guard let slots = pipeline.configuration.processingSlots else { return try body() }
            return try await slots.withSlot(body)
        } catch let error as ServiceError {
            throw error
        } catch let error as ImageCodecError {
            if case .limitExceeded = error { throw .tooLarge("\(error)") }
            throw .undecodableSource("\(error)")
        } catch {
            throw .undecodableSource("\(error)")
        }
    }
}

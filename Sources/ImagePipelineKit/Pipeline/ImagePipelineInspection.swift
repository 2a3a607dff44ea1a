import Foundation

/// What a pipeline's caches hold (TIP's `TIPImagePipelineInspectionResult`).
public struct ImagePipelineInspection: Sendable {
    /// One cached image or partial download.
    public struct Entry: Sendable, Equatable {
        public var identifier: String
        public var url: URL?
        public var dimensions: PixelSize
        public var bytesUsed: Int
        /// 1 for complete entries; received / expected bytes (at most 0.999) for partial ones.
        public var progress: Double
    }

    public var pipelineIdentifier: String
    public var completeRenderedEntries: [Entry]
    public var completeMemoryEntries: [Entry]
    public var partialMemoryEntries: [Entry]
    public var completeDiskEntries: [Entry]
    public var partialDiskEntries: [Entry]

    /// Rendered and memory bytes.
    public var inMemoryBytesUsed: Int {
        (completeRenderedEntries + completeMemoryEntries + partialMemoryEntries).reduce(0) { $0 + $1.bytesUsed }
    }

    /// Disk bytes (image files; the index is not counted).
    public var onDiskBytesUsed: Int { (completeDiskEntries + partialDiskEntries).reduce(0) { $0 + $1.bytesUsed } }
}

extension ImagePipeline {
    /// What the rendered, memory and disk caches hold now. Reads the disk index (no image bytes): call it
    /// off the delegate queue.
    public func inspect() -> ImagePipelineInspection {
        let contents = caches.contents()
        let rendered = contents.rendered.flatMap { identifier, renditions in
            renditions.map { rendition in
                ImagePipelineInspection.Entry(identifier: identifier, url: nil, dimensions: rendition.image.dimensions,
                                              bytesUsed: rendition.image.sizeInMemory, progress: 1)
            }
        }
        let memory = contents.memory
        let complete = memory.compactMap { identifier, entry in
            entry.complete.map {
                ImagePipelineInspection.Entry(identifier: identifier, url: $0.url, dimensions: $0.dimensions,
                                              bytesUsed: $0.data.count, progress: 1)
            }
        }
        let partial = memory.compactMap { identifier, entry in
            entry.partial.map {
                ImagePipelineInspection.Entry(
                    identifier: identifier, url: $0.url, dimensions: $0.dimensions ?? PixelSize(width: 0, height: 0),
                    bytesUsed: $0.data.count, progress: min(Double($0.data.count) / Double(max($0.expectedByteCount, 1)), 0.999))
            }
        }
        let disk = contents.disk.map { info in
            (info.isPartial, ImagePipelineInspection.Entry(identifier: info.identifier, url: info.url, dimensions: info.dimensions,
                                                           bytesUsed: info.bytes, progress: info.progress))
        }
        return ImagePipelineInspection(
            pipelineIdentifier: identifier, completeRenderedEntries: rendered, completeMemoryEntries: complete,
            partialMemoryEntries: partial, completeDiskEntries: disk.filter { !$0.0 }.map(\.1),
            partialDiskEntries: disk.filter { $0.0 }.map(\.1))
    }
}

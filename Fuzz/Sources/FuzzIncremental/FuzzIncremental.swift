import Foundation
import FuzzSupport
import ImagePipelineKit

// Incremental sessions, as a download feeds them: the image arrives in chunks split anywhere (inside a
// marker, a chunk header, an LZW block), with renders of whatever has arrived in between. A session keeps
// state across appends that a one-shot decode never exercises, so this target is where split-boundary bugs
// would show.
//
// Input: 4 header bytes, then the image.
// - byte 0 picks the decoder when the image's signature matches none (so mutated headers still reach one);
// - bytes 1-3 seed the generator that cuts the chunks and picks each render's mode and size.
// scripts/fuzz.sh seeds this target with corpus files behind a few such headers.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzIncremental(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    let input = fuzzData(bytes, count)
    guard input.count > 4 else { return 0 }
    let image = Data(input.dropFirst(4))
    let decoder = FuzzDecoding.decoders.first { $0.detect(image, isComplete: true) == .match }
        ?? FuzzDecoding.decoders[Int(input[0]) % FuzzDecoding.decoders.count]
    var random = ChunkRandom(seed: UInt32(input[1]) << 16 | UInt32(input[2]) << 8 | UInt32(input[3]))
    let session = decoder.makeSession(configuration: FuzzDecoding.configuration, expectedByteCount: image.count)
    do {
        var offset = image.startIndex
        var appends = 0
        while offset < image.endIndex {
            let end = min(image.endIndex, offset + random.chunkSize())
            // A copy whose indices start at 0, as a network chunk's do.
            let progress = try session.append(Data(image[offset..<end]))
            offset = end
            appends += 1
            // Render when a frame or scan is new, and now and then mid-frame; not after every chunk, which
            // would spend the fuzzer's time scaling the same pixels over and over.
            if progress >= .didLoadFrame || (progress == .didLoadHeaders || appends % 32 == 0) && random.next() % 4 == 0 {
                try render(session, random.next() % 2 == 0 ? .anyProgress : .fullFrameProgress, &random)
            }
        }
        _ = try session.finish()
        try render(session, .completeImage, &random)
        try render(session, .anyProgress, &random)
    } catch {
        FuzzDecoding.expectTyped(error)
    }
    return 0
}

/// Renders `mode` at the original size or a thumbnail and checks the size the contract promises.
private func render(_ session: any ImageDecodingSession, _ mode: RenderMode, _ random: inout ChunkRandom) throws {
    let target = random.next() % 2 == 0 ? TargetSizing.original : FuzzDecoding.thumbnail
    if let container = try session.render(mode, target: target) {
        FuzzDecoding.checkRender(container, of: session.properties, at: target)
    }
}

/// A small deterministic generator (xorshift32): the same input always cuts the same chunks, so a crash
/// replays exactly.
private struct ChunkRandom {
    private var state: UInt32

    init(seed: UInt32) { state = seed == 0 ? 0x9E37_79B9 : seed }

    mutating func next() -> UInt32 {
        state ^= state << 13
        state ^= state >> 17
        state ^= state << 5
        return state
    }

    /// Mostly tiny chunks (every boundary inside a header), sometimes up to 8 KiB (a network read).
    mutating func chunkSize() -> Int {
        let value = next()
        return value % 3 == 0 ? Int((value >> 8) % 8192) + 1 : Int((value >> 8) % 16) + 1
    }
}

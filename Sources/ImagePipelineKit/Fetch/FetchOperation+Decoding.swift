import Foundation

// How a fetch decodes, for whichever step asks (a preview, a delivery): under a claim on the decode memory
// budget, in a processing slot when the configuration has them, timed as a stage, stopped at the codec's
// checkpoints when nobody wants the image any more; and, when the budget has no room, how the fetch waits for
// some without holding its queue's thread. Every method runs on the operation's queue.
extension FetchOperation {
    /// Runs `body`, a stage of this fetch, timed as the configuration's stage CPU times say and inside a child
    /// span of the fetch's trace (`image-pipeline.decode`, `image-pipeline.memory-store`, …).
    func measuring<T>(_ stage: PipelineStage, _ body: () throws -> T) rethrows -> T {
        try pipeline.configuration.measuring(stage) {
            guard let trace = metricsRecorder.trace else { return try body() }
            return try trace.child(stage.spanName, body)
        }
    }

    /// Decodes `data` at the target, timed for the decode-duration metric; stopped at the codec's checkpoints
    /// when `interruption` says so (``ImageCodecError/interrupted``). With `finishingIncremental` (`data` is
    /// what this fetch downloaded), the session that showed the image while it loaded, if there is one, goes on
    /// to the final image instead of a new decode (see `_queue_finishIncremental`). It waits for one of the
    /// configuration's ``GlobalConfiguration/processingSlots`` when it has them. Throws
    /// ``DecodeMemoryBudget/NoRoom`` when the decode memory budget has no room for it now (see
    /// `_queue_waitForDecodeMemory`).
    func _queue_decode(_ data: Data, interruption: DecodeInterruption? = nil,
                       finishingIncremental: Bool = false) throws -> DecodedImage {
        let claim = pipeline.configuration.decodeMemoryBudget.claim(stopsForRoom: true)
        decodeClaims.append(claim)
        do {
            let decoded = try _queue_decode(data, under: claim, interruption: interruption,
                                            finishingIncremental: finishingIncremental)
            decodeMemoryWaitDeadline = nil
            return decoded
        } catch {
            guard let bytes = claim.stoppedForRoom else { throw error }
            decodeClaims.removeAll { $0 === claim }
            throw DecodeMemoryBudget.NoRoom(bytes: bytes)
        }
    }

    /// Runs `next` on this queue once the decode memory budget may have room for `bytes` (`true`), or when this
    /// fetch has waited for it ``DecodeMemoryBudget/maximumWait`` since its first decode stopped for room
    /// (`false`). The queue's thread is free meanwhile: on a shared pool, a thread that waited for room would
    /// be one fewer for the fetches that give it back.
    func _queue_waitForDecodeMemory(_ bytes: Int, then next: @escaping @Sendable (Bool) -> Void) {
        let deadline = decodeMemoryWaitDeadline ?? .now() + DecodeMemoryBudget.maximumWait
        decodeMemoryWaitDeadline = deadline
        pipeline.configuration.decodeMemoryBudget.whenRoom(for: bytes, until: deadline) { [self] hasRoom in
            queue.async { next(hasRoom) }
        }
    }

    private func _queue_decode(_ data: Data, under claim: DecodeMemoryBudget.Claim, interruption: DecodeInterruption?,
                               finishingIncremental: Bool) throws -> DecodedImage {
        try pipeline.configuration.withProcessingSlot {
            let started = ContinuousClock.now
            let decoded = try DecodeInterruption.$current.withValue(interruption) {
                try DecodeMemoryBudget.Claim.$current.withValue(claim) {
                    try measuring(.decode) {
                        try DecodeTimeSlice.run(pipeline.configuration.decodeTimeSlice) {
                            if finishingIncremental, let finished = try _queue_finishIncremental(data) {
                                return finished
                            }
                            return try CodecCatalogue.shared.decode(data, target: plan.target,
                                                                    configuration: plan.decoderConfiguration)
                        }
                    }
                }
            }
            pipeline.configuration.recordDecode(of: decoded.properties.type, duration: ContinuousClock.now - started)
            return decoded
        }
    }

    /// The final image of `data`, the bytes this fetch downloaded, from the session that showed them while they
    /// loaded, when there is one: its progressive scans were shown, it is a still image of a format that
    /// animates, or it showed an animation's first frame and was parked. It has read every scan already (a
    /// progressive JPEG's session has even made its last, full-quality pass), or the frames up to where it was
    /// parked: it is given the bytes it has not seen, at the checkpoints a one-shot decode has, and renders the
    /// image, where a new decode would read everything again. `nil` when there is no such session or it cannot
    /// finish; the caller then decodes afresh. Throws only ``ImageCodecError/interrupted``.
    func _queue_finishIncremental(_ data: Data) throws -> DecodedImage? {
        guard case .decoding(let session, let type, _) = incremental.phase, incremental.fedByteCount <= data.count else {
            return nil
        }
        // Nothing is shown from it any more; its memory claim goes with it.
        incremental.phase = .done
        do {
            if incremental.fedByteCount < data.count {
                // Never finished short of its bytes: a session completes a cut-off file with what it has.
                guard let decoder = CodecCatalogue.shared.codec(for: type)?.decoder else { return nil }
                try session.appendInterruptibly(data, from: data.startIndex + incremental.fedByteCount,
                                                sliceBytes: decoder.interruptibleSliceBytes)
            }
            guard try session.finish() == .didCompleteLoading,
                  let container = try session.render(.completeImage, target: plan.target),
                  let properties = session.properties
            else { return nil }
            return DecodedImage(container: container, properties: properties)
        } catch ImageCodecError.interrupted {
            throw ImageCodecError.interrupted
        } catch {
            return nil
        }
    }
}

import Foundation

/// What a fetch shows of an image while it downloads: a decoding session fed the same bytes, progressive
/// scans as the policy and the delegate allow, the first frame of an animation. Touched on the fetch's queue.
struct IncrementalImageState {
    enum Phase {
        /// Too few bytes yet to tell the format.
        case detecting
        /// The session's pixels are claimed from the decode memory budget without waiting (a session that
        /// finds no room stops showing anything; the final decode waits its turn), and given back when the
        /// session goes.
        case decoding(any ImageDecodingSession, ImageType, DecodeMemoryBudget.Claim)
        /// Nothing (more) to show: not a progressive or animated image, nobody wants it, or the bytes did not
        /// decode (the final decode reports that).
        case done
    }

    var phase = Phase.detecting
    /// Bytes of the image the session has been given, from the start of the file.
    var fedByteCount = 0
    /// Bytes held back until the format is known.
    var pending = Data()
    /// Set once the headers were read and the delegate asked.
    var decided = false
    var policy: (any ProgressiveLoadingPolicy)?
    var wantsFirstFrame = false
    /// Set once an animation's first frame is shown: the session keeps what it decoded but is given no more
    /// bytes; the final image continues from it if this fetch decodes it (see `_queue_finishIncremental`).
    var isParked = false

    /// Whether the session takes more bytes now: it is decoding and not parked.
    var takesBytes: Bool {
        guard case .decoding = phase else { return false }
        return !isParked
    }
    var scanCount = 0
    var renderCount = 0

    /// Bytes looked at before giving up on telling the format.
    static let detectionLimit = 64
    /// The most bytes given to a session in one append before its headers are in (see `_queue_append`).
    static let headerSliceLength = 4096
}

extension FetchOperation {
    /// Feeds the bytes `[totalByteCount - chunk.count, totalByteCount)` of the image to the incremental session,
    /// and shows what the policy allows. Bytes before the chunk that the session has not seen (a resumed
    /// download) come from the partial being resumed.
    func _queue_showIncrementally(_ chunk: Data, totalByteCount: Int, progress: Double) {
        if case .done = incremental.phase { return }
        if incremental.isParked { return }
        guard delegate != nil else { return incremental.phase = .done }
        let chunkStart = totalByteCount - chunk.count
        let have = incremental.fedByteCount + incremental.pending.count
        // The chunk itself (a slice, not a copy) in the usual case; joined to the partial's missing bytes only
        // when a resumed download's first chunk comes after bytes the session has not seen.
        var bytes = chunk.dropFirst(max(0, have - chunkStart))
        if have < chunkStart {
            guard let partial = resumablePartial, partial.data.count >= chunkStart else { return incremental.phase = .done }
            bytes = partial.data.subdata(in: have..<chunkStart) + bytes
        }
        guard !bytes.isEmpty else { return }

        switch incremental.phase {
        case .done:
            return
        case .detecting:
            // Until the format is known, the bytes so far are held; usually the first chunk tells it, and is
            // then passed on without being copied.
            if !incremental.pending.isEmpty {
                incremental.pending.append(bytes)
                bytes = incremental.pending
            }
            guard let type = CodecCatalogue.shared.detectType(of: bytes, isComplete: false) else {
                if bytes.count > IncrementalImageState.detectionLimit { return incremental.phase = .done }
                incremental.pending = Data(bytes)
                return
            }
            guard let codec = CodecCatalogue.shared.codec(for: type),
                  codec.decoder.supportsProgressiveDecoding || codec.supportsAnimation else {
                return incremental.phase = .done
            }
            // Scans decode at the size they are shown, as the final decode does: JPEG's DCT scaling then skips
            // most of each output pass of a thumbnail, and the session's last pass is the final image.
            var configuration = plan.decoderConfiguration
            configuration.preferredSizing = plan.target
            let session = codec.decoder.makeSession(configuration: configuration, expectedByteCount: nil)
            incremental.phase = .decoding(session, type, pipeline.configuration.decodeMemoryBudget.claim(stopsForRoom: false))
            incremental.pending = Data()
            _queue_append(bytes, to: session, type: type, progress: progress)
        case .decoding(let session, let type, _):
            _queue_append(bytes, to: session, type: type, progress: progress)
        }
    }

    private func _queue_append(_ bytes: Data, to session: any ImageDecodingSession, type: ImageType, progress: Double) {
        if !incremental.decided, bytes.count > IncrementalImageState.headerSliceLength {
            // Until the headers are read and the decision made, the bytes go in small slices: a session decodes
            // as far as the bytes it has go, and the first chunk of a baseline image that nobody shows
            // progressively (most images) would otherwise be decoded at full size for nothing. That doubled the
            // CPU of each network fetch.
            var start = bytes.startIndex
            while start < bytes.endIndex, !incremental.decided {
                guard incremental.takesBytes else { return }
                let end = min(start + IncrementalImageState.headerSliceLength, bytes.endIndex)
                _queue_append(bytes[start..<end], to: session, type: type, progress: progress)
                start = end
            }
            // A slice can hold an animation's first two frames: its session is parked by then.
            guard start < bytes.endIndex, incremental.takesBytes else { return }
            return _queue_append(bytes[start...], to: session, type: type, progress: progress)
        }
        let step: DecoderProgress
        do {
            guard case .decoding(_, _, let claim) = incremental.phase else { return }
            step = try DecodeMemoryBudget.Claim.$current.withValue(claim) { try session.append(bytes) }
            incremental.fedByteCount += bytes.count
        } catch {
            return incremental.phase = .done
        }
        guard let properties = session.properties else { return }
        if !incremental.decided {
            incremental.decided = true
            _queue_decideIncremental(properties: properties, type: type)
            if incremental.policy == nil, !incremental.wantsFirstFrame { return incremental.phase = .done }
        }
        if incremental.wantsFirstFrame {
            return _queue_showFirstFrameIfLoaded(session, properties: properties, progress: progress,
                                                 isComplete: step == .didCompleteLoading)
        }
        // A session that has read the whole file shows no scan: the final image, from this session, follows.
        guard let policy = incremental.policy, step != .didCompleteLoading else { return }
        if step >= .didLoadFrame { incremental.scanCount += 1 }
        let behavior = policy.behavior(
            frameProgress: step >= .didLoadFrame ? .fullFrame : .partialFrame, frameCount: incremental.scanCount,
            progress: progress, type: type, dimensions: properties.dimensions, renderCount: incremental.renderCount)
        let mode: RenderMode
        switch behavior {
        case .none: return
        case .updateWithAnyProgress: mode = .anyProgress
        case .updateWithFullFrameProgress: mode = .fullFrameProgress
        }
        guard let image = try? session.render(mode, target: plan.target) else { return }
        incremental.renderCount += 1
        let (shown, transformed) = _queue_transform(image, progress: progress)
        let scan = _queue_incrementalResult(shown, properties: properties, transformed: transformed)
        shared.withLock {
            $0.progressiveResult = scan
            $0.progressiveFrameCount += 1
        }
        metricsRecorder.hitProgressFrame()
        _queue_tellDelegate { $0.fetchOperation(self, didUpdateProgressiveImage: scan, progress: progress) }
    }

    /// Once per fetch, with the headers in: progressive images that are not animated get their scans shown
    /// when a policy exists for the type and the delegate agrees (asked here, on this queue, as TIP does);
    /// other images of a format that animates get their first frame shown if they turn out to animate.
    ///
    /// What the session knows by then depends on how much the first read brought: a GIF's interlacing (its
    /// `isProgressive`) shows with its first frame, which a fast link delivers whole in the first read. So an
    /// interlaced GIF is only shown scan by scan when a policy asks for GIF scans; otherwise it is a candidate
    /// animation like any other, however its bytes arrived.
    private func _queue_decideIncremental(properties: ImageProperties, type: ImageType) {
        if properties.isProgressive, !properties.isAnimated, let policy = plan.progressiveLoadingPolicies[type],
           let delegate,
           delegate.fetchOperation(self, shouldLoadProgressivelyWithIdentifier: plan.identifier, url: plan.url,
                                   imageType: type, originalDimensions: properties.dimensions) {
            incremental.policy = policy
            return
        }
        // Whether a GIF or WebP animates shows only with its second frame: keep decoding until then.
        incremental.wantsFirstFrame = CodecCatalogue.shared.codec(for: type)?.supportsAnimation == true
    }

    /// Shows an animation's first frame once its second frame is in. The session is then parked: the rest of
    /// the frames are the final decode's work, which, when this fetch makes it, goes on from the frames the
    /// session has (fetches that joined the download and wait for that decode do not decode them). An
    /// animation that is all in by then (it came in one piece, as on a fast link) shows no first frame: its
    /// final image is one render away, and a complete session renders every frame anyway.
    private func _queue_showFirstFrameIfLoaded(_ session: any ImageDecodingSession, properties: ImageProperties,
                                               progress: Double, isComplete: Bool) {
        guard properties.isAnimated, properties.frameCount >= 2 else { return }
        incremental.isParked = true
        guard !isComplete else { return }
        guard let rendered = try? session.render(.fullFrameProgress, target: plan.target),
              let first = rendered.frames.first else { return }
        let frame = _queue_incrementalResult(ImageContainer(bitmap: first.bitmap), properties: properties)
        shared.withLock { $0.progressiveResult = frame }
        metricsRecorder.hitProgressFrame()
        _queue_tellDelegate { $0.fetchOperation(self, didLoadFirstAnimatedImageFrame: frame, progress: progress) }
    }

    private func _queue_incrementalResult(_ image: ImageContainer, properties: ImageProperties,
                                          transformed: Bool = false) -> FetchResult {
        FetchResult(image: image, source: resumablePartial != nil ? .networkResumed : .network, url: plan.url,
                    originalDimensions: properties.dimensions, isPlaceholder: plan.isPlaceholder,
                    identifier: plan.identifier, imageWasTransformed: transformed)
    }
}

import Synchronization
import PipelineLocking

/// The live pipelines of this process, by identifier (TIP's registry of identifier → weak pipeline).
///
/// An identifier is claimed before its pipeline finishes initialising and stays claimed until the pipeline
/// is released, so two live pipelines never share a directory. Lookups hand out strong references only to
/// pipelines still alive.
final class PipelineRegistry: Sendable {
    static let shared = PipelineRegistry()

    private struct Slot {
        /// `nil` between the claim and the end of the pipeline's initialiser, and while it is being released.
        weak var pipeline: ImagePipeline?
    }

    private let slots = Locked<[String: Slot]>([:])

    /// Reserves `identifier`; false when a live (or initialising) pipeline holds it.
    func claim(_ identifier: String) -> Bool {
        slots.withLock { slots in
            guard slots[identifier] == nil else { return false }
            slots[identifier] = Slot()
            return true
        }
    }

    /// Fills the claimed slot once the pipeline exists.
    func register(_ pipeline: ImagePipeline) {
        slots.withLock { $0[pipeline.identifier]?.pipeline = pipeline }
    }

    /// Frees `identifier` (from the pipeline's deinit, or when its initialiser fails after claiming).
    func release(_ identifier: String) {
        _ = slots.withLock { $0.removeValue(forKey: identifier) }
    }

    /// The live pipelines, in identifier order.
    var livePipelines: [ImagePipeline] {
        slots.withLock { slots in
            slots.keys.sorted().compactMap { slots[$0]?.pipeline }
        }
    }

    /// The live pipeline named `identifier`, if any.
    func pipeline(named identifier: String) -> ImagePipeline? {
        slots.withLock { $0[identifier]?.pipeline }
    }
}

import ImagePipelineKit

/// Collects the problems a configuration reports.
public final class ProblemLog: ProblemObserver, Sendable {
    private let problems = Recorded<ImagePipelineProblem>()

    public init() {}
    public func problemWasEncountered(_ problem: ImagePipelineProblem) { problems.append(problem) }
    public var all: [ImagePipelineProblem] { problems.all }
}

/// Hears one fetch (TIP's `TIPImageFetchDelegate`, a4). Every method has an empty default.
///
/// Called on ``GlobalConfiguration/delegateQueue`` (the main queue unless changed), in TIP's order:
/// `didStart`, then `willAttemptToLoadFrom` before each source tried, progress, and exactly one of
/// `didLoadFinalImage` / `didFailToLoadFinalImage` — always before the operation reports finished. A fetch
/// holds its delegate weakly: releasing the delegate cancels the fetch.
public protocol FetchDelegate: AnyObject, Sendable {
    func fetchOperationDidStart(_ operation: FetchOperation)
    /// Before trying `source` (memory, disk, additional caches, network or network-resumed).
    func fetchOperation(_ operation: FetchOperation, willAttemptToLoadFrom source: ImageLoadSource)
    /// Download progress, 0 ... 0.999 (never 1: the final callback says that).
    func fetchOperation(_ operation: FetchOperation, didUpdateProgress progress: Double)
    func fetchOperation(_ operation: FetchOperation, didLoadFinalImage result: FetchResult)
    func fetchOperation(_ operation: FetchOperation, didFailToLoadFinalImageWith error: FetchError)
}

extension FetchDelegate {
    public func fetchOperationDidStart(_ operation: FetchOperation) {}
    public func fetchOperation(_ operation: FetchOperation, willAttemptToLoadFrom source: ImageLoadSource) {}
    public func fetchOperation(_ operation: FetchOperation, didUpdateProgress progress: Double) {}
    public func fetchOperation(_ operation: FetchOperation, didLoadFinalImage result: FetchResult) {}
    public func fetchOperation(_ operation: FetchOperation, didFailToLoadFinalImageWith error: FetchError) {}
}

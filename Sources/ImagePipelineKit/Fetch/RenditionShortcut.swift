import Foundation

/// How a fetch skips decoding bytes that another fetch has just decoded (it joined that fetch's download, or
/// read the same bytes from memory): `find` looks for their rendition in the rendered cache, `deliver`
/// succeeds with it. Both run on the fetch's queue.
///
/// A download stays joinable until its image is stored, and its decode's image is held for late fetches until
/// it is in the rendered cache; a fetch that looked in the rendered cache just before that and asked for the
/// decode just after would otherwise decode the bytes a second time.
struct RenditionShortcut: Sendable {
    let find: @Sendable () -> FetchResult?
    let deliver: @Sendable (FetchResult) -> Void

    /// The outcome of a decode not made because `find` found the rendition: the fetches that waited for it look
    /// again themselves.
    struct Taken: Error {}
}

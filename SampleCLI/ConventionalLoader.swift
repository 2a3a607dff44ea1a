import Dispatch
import Foundation
import ImagePipelineKit
import PipelineLocking

/// How an app without a pipeline loads a cell's image, for `scroll --compare`: a download when the cell
/// appears, cancelled when it leaves, then a full-size decode and a scale on the main queue, as
/// `UIImage(data:)` in a completion handler does. No caches, no previews, no progressive scans.
final class ConventionalLoader: ImageDownloadDelegate {
    private let cell: ScrollCell
    private let mainQueue: DispatchQueue
    private let received = Locked(Data())
    private let task = Locked<(any ImageDownloadTask)?>(nil)

    init(cell: ScrollCell, url: URL, downloader: any ImageDownloader, mainQueue: DispatchQueue) {
        self.cell = cell
        self.mainQueue = mainQueue
        let started = downloader.startDownload(DownloadRequest(url: url), delegate: self)
        task.withLock { $0 = started }
    }

    func cancel() {
        task.withLock { $0 }?.cancel()
    }

    func download(_ task: any ImageDownloadTask, didReceive response: DownloadResponse) {}

    func download(_ task: any ImageDownloadTask, didReceive chunk: Data) {
        received.withLock { $0.append(chunk) }
    }

    func download(_ task: any ImageDownloadTask, didCompleteWith error: DownloadError?) {
        guard error == nil else { return }
        let data = received.withLock { $0 }
        mainQueue.async { [cell] in
            let began = threadCPUTime()
            defer { cell.stats.conventionalWork += threadCPUTime() - began }
            // The naive part, on purpose: decoding and scaling on the main queue.
            let target = TargetSizing(dimensions: cell.displaySize, contentMode: .fill)
            guard let full = try? CodecCatalogue.shared.decode(data).container,
                  let scaled = try? full.scaled(for: target) else { return }
            cell.displayedImage = scaled
            cell.conventionalImageShown()
        }
    }
}

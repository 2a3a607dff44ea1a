/// Waits, polling every 5 ms, until `condition` holds or `timeout` passes; returns the condition's last value.
/// For effects that happen in the background (a sweep, a cancel reaching the server), never as a timer.
public func eventually(timeout: Duration = .seconds(10), _ condition: () -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
    return condition()
}

import Foundation

/// Whether `actual` holds exactly `expected`, with a one-line account of where they part.
///
/// For `#expect`: comparing two `Data` values inside the macro makes Swift Testing, on failure, compute an edit
/// script between them, which for two different 100 KB images runs for minutes and takes gigabytes. This says
/// what a person needs instead: the lengths and the first offset that differs.
public func sameBytes(_ actual: Data?, _ expected: Data) -> (Bool, String) {
    guard let actual else { return (false, "nothing stored, expected \(expected.count) bytes") }
    if actual == expected { return (true, "") }
    let common = zip(actual, expected).prefix { $0 == $1 }.count
    return (false, "\(actual.count) bytes, expected \(expected.count); they differ from offset \(common)")
}

/// ``sameBytes(_:_:)`` without the account, for `#expect` where the values say enough.
public func isSameBytes(_ actual: Data?, _ expected: Data) -> Bool {
    sameBytes(actual, expected).0
}

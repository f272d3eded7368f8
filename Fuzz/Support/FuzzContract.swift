import Foundation

/// A decoder's contract, checked on each input: a broken one aborts, which libFuzzer reports as a
/// crash and saves the input.
public enum FuzzContract {
    /// Aborts with `message` (and the place) unless `condition` holds.
    public static func require(
        _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
        file: StaticString = #fileID, line: UInt = #line
    ) {
        guard !condition() else { return }
        FileHandle.standardError.write(Data("contract broken (\(file):\(line)): \(message())\n".utf8))
        abort()
    }
}

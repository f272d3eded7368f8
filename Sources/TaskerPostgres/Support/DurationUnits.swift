/// The one conversion of a `Duration` into plain numbers (milliseconds for logs, timeouts and
/// statistics; nanoseconds for clocks and timers; seconds for arithmetic). Whole units truncate
/// toward zero, as `Duration.components` does.
extension Duration {
    /// Whole milliseconds.
    package var inMilliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }

    /// Whole nanoseconds.
    package var inNanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }

    /// Seconds, with the fraction.
    package var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

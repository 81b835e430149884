/// Counts per second over a sliding window of the most recent seconds, by key: a ring of one slot per second.
///
/// Adding to a second reuses the slot that held the same second one window earlier, so memory stays bounded by the
/// window and the number of keys seen in it. Counts for a second older than the window are ignored. The ring is
/// allocated by the first count: a hub that never delivers (one of many on a node) keeps none.
///
/// ```swift
/// var window = RateWindow<String>(seconds: 3600)
/// window.add(3, to: "Success", at: 1_700_000_000)
/// window.series(endingAt: 1_700_000_000, seconds: 60)["Success"]?.last  // 3
/// ```
public struct RateWindow<Key: Hashable & Sendable>: Sendable {
    /// How many seconds the window keeps.
    public let capacity: Int
    /// The second each slot holds, or `nil` for a slot never used; empty until the first count.
    private var slotSeconds: [Int64?] = []
    /// Each slot's counts; empty until the first count.
    private var slotCounts: [[Key: Int]] = []
    /// The latest second added to.
    public private(set) var latest: Int64?

    /// Creates an empty window of `seconds` seconds (at least 1).
    public init(seconds: Int) {
        capacity = max(1, seconds)
    }

    private func slot(of second: Int64) -> Int {
        Int(((second % Int64(capacity)) + Int64(capacity)) % Int64(capacity))
    }

    /// Adds `count` to `key` in `second` (seconds since 1970). Ignored when the second is older than the window
    /// that ends at the latest second added.
    public mutating func add(_ count: Int, to key: Key, at second: Int64) {
        guard count != 0 else { return }
        if let latest, second <= latest - Int64(capacity) { return }
        if slotSeconds.isEmpty {
            slotSeconds = Array(repeating: nil, count: capacity)
            slotCounts = Array(repeating: [:], count: capacity)
        }
        let index = slot(of: second)
        if slotSeconds[index] != second {
            slotSeconds[index] = second
            slotCounts[index] = [:]
        }
        slotCounts[index][key, default: 0] += count
        latest = max(latest ?? second, second)
    }

    /// The counts of one second, or empty when the window does not hold it.
    public func counts(at second: Int64) -> [Key: Int] {
        guard !slotSeconds.isEmpty else { return [:] }
        let index = slot(of: second)
        return slotSeconds[index] == second ? slotCounts[index] : [:]
    }

    /// Per key, the counts of the `seconds` seconds ending with `end` (inclusive), oldest first, summed in buckets
    /// of `step` seconds: `seconds / step` values (rounded up) whose last bucket ends at `end`. Keys without any
    /// count in that span are left out.
    public func series(endingAt end: Int64, seconds: Int, step: Int = 1) -> [Key: [Int]] {
        let seconds = min(max(1, seconds), capacity)
        let step = min(max(1, step), seconds)
        let buckets = (seconds + step - 1) / step
        let first = end - Int64(buckets * step) + 1
        var result: [Key: [Int]] = [:]
        guard !slotSeconds.isEmpty else { return result }
        for offset in 0..<(buckets * step) {
            let second = first + Int64(offset)
            let index = slot(of: second)
            guard slotSeconds[index] == second else { continue }
            for (key, count) in slotCounts[index] {
                result[key, default: Array(repeating: 0, count: buckets)][offset / step] += count
            }
        }
        return result
    }

    /// Per key, the total of the `seconds` seconds ending with `end` (inclusive).
    public func totals(endingAt end: Int64, seconds: Int) -> [Key: Int] {
        series(endingAt: end, seconds: seconds, step: seconds).mapValues { $0.reduce(0, +) }
    }
}

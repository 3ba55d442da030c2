/// The newest `capacity` elements of a sequence, oldest dropped first: the one ring of the
/// package's journals (the call journal here, ChaosNetwork's request journal). Not
/// synchronized: its owner keeps it behind a `Locked`.
///
/// It also numbers what it is given (``recorded``, from 1), and keeps a running count of
/// the bytes its elements hold when they say (``byteCount``), so that a journal can show
/// its memory is bounded.
package struct BoundedRing<Element> {
    /// The elements, in the order of their slots (not oldest first once it wrapped).
    private var slots: [Element] = []
    /// Where the next element goes once the ring is full (the oldest is there).
    private var next = 0
    /// How many it keeps; 0 keeps none.
    package private(set) var capacity: Int
    /// Every element appended since the start (the numbers come from it).
    package private(set) var recorded = 0
    /// What the kept elements hold, as `size` measured them when appended.
    package private(set) var byteCount = 0
    private let size: @Sendable (Element) -> Int

    /// A ring keeping the newest `capacity` elements; `size` tells the bytes one holds.
    package init(capacity: Int, size: @escaping @Sendable (Element) -> Int = { _ in 0 }) {
        self.capacity = max(0, capacity)
        self.size = size
    }

    /// How many it keeps now.
    package var count: Int { slots.count }

    /// The elements, oldest first.
    package var elements: [Element] {
        guard slots.count == capacity, next > 0 else { return slots }
        return Array(slots[next...] + slots[..<next])
    }

    /// Numbers the next element, makes it with that number (from 1), and keeps it,
    /// dropping the oldest when full; returns the number. Makes nothing when the capacity
    /// is 0 and returns nil.
    @discardableResult
    package mutating func append(_ make: (Int) -> Element) -> Int? {
        guard capacity > 0 else { return nil }
        recorded += 1
        let element = make(recorded)
        byteCount += size(element)
        if slots.count < capacity {
            slots.append(element)
        } else {
            byteCount -= size(slots[next])
            slots[next] = element
            next = next + 1 == capacity ? 0 : next + 1
        }
        return recorded
    }

    /// Keeps the newest `capacity` elements from now on; lowering it drops the oldest at once.
    package mutating func resize(to capacity: Int) {
        let capacity = max(0, capacity)
        let kept = Array(elements.suffix(capacity))
        slots = kept
        next = 0
        self.capacity = capacity
        byteCount = kept.reduce(0) { $0 + size($1) }
    }

    /// Forgets every element kept; the numbering goes on.
    package mutating func removeAll() {
        slots = []
        next = 0
        byteCount = 0
    }
}

extension BoundedRing: Sendable where Element: Sendable {}

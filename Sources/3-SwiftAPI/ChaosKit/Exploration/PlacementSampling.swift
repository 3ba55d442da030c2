/// One fault placed at one call: candidate `candidate` (an index into an exploration's
/// candidates) acting at its `call`-th targeted call, of `of` in the baseline. Shared by
/// `Chaos.explore` and `chaos explore`.
package struct PlacedFault: Hashable, Sendable, Comparable {
    package let candidate: Int
    package let call: Int
    package let of: Int

    package init(candidate: Int, call: Int, of: Int) {
        self.candidate = candidate
        self.call = call
        self.of = of
    }

    package static func < (lhs: PlacedFault, rhs: PlacedFault) -> Bool {
        (lhs.candidate, lhs.call) < (rhs.candidate, rhs.call)
    }
}

/// A run's placement: one fault (depth 1) or two (depth 2).
package struct Placement: Hashable, Sendable {
    package let faults: [PlacedFault]

    package init(faults: [PlacedFault]) { self.faults = faults }

    /// The call lists by candidate.
    package var callsByCandidate: [Int: [Int]] {
        var result: [Int: [Int]] = [:]
        for fault in faults { result[fault.candidate, default: []].append(fault.call) }
        return result
    }
}

/// Which placements an exploration tries: every single one when the budget allows, else
/// a spread of them; pairs after the singles at depth 2.
package enum ExplorePlacements {
    /// Every (candidate, call) of the baseline's counts, candidate by candidate.
    package static func singles(counts: [Int]) -> [PlacedFault] {
        counts.enumerated().flatMap { candidate, count in
            (0..<count).map { PlacedFault(candidate: candidate, call: $0 + 1, of: count) }
        }
    }

    /// At most `budget` of `all` (which lists each candidate's calls in order), spread over
    /// the space: each candidate's first and last call while the budget lasts, then seeded
    /// samples in between, never just the first N. In the order of `all`.
    package static func spread(_ all: [PlacedFault], budget: Int, seed: UInt64) -> [PlacedFault] {
        guard all.count > budget else { return all }
        guard budget > 0 else { return [] }
        var chosen = Set<Int>()
        var ends: [Int] = []
        for (index, fault) in all.enumerated() where fault.call == 1 || fault.call == fault.of {
            ends.append(index)
        }
        // Firsts before lasts, so that a small budget still touches every candidate.
        let firsts = ends.filter { all[$0].call == 1 }
        let lasts = ends.filter { all[$0].call != 1 }
        for index in firsts + lasts where chosen.count < budget { chosen.insert(index) }
        var source = SeededRandom(seed: seed)
        var rest = all.indices.filter { !chosen.contains($0) }
        while chosen.count < budget, !rest.isEmpty {
            let pick = Int(source.next() % UInt64(rest.count))
            chosen.insert(rest[pick])
            rest.swapAt(pick, rest.count - 1)
            rest.removeLast()
        }
        return chosen.sorted().map { all[$0] }
    }

    /// Pairs of distinct singles from `singles`, at most `budget` of them: all when they
    /// fit, else the first and last pair and seeded samples in between (drawn, not listed:
    /// thousands of singles make millions of pairs).
    package static func pairs(_ singles: [PlacedFault], budget: Int, seed: UInt64) -> [Placement] {
        let n = singles.count
        guard n >= 2, budget > 0 else { return [] }
        let total = n * (n - 1) / 2
        if total <= budget {
            var result: [Placement] = []
            for i in 0..<n {
                for j in (i + 1)..<n { result.append(Placement(faults: [singles[i], singles[j]])) }
            }
            return result
        }
        var chosen = Set<[Int]>([[0, 1], [n - 2, n - 1]].prefix(budget))
        var source = SeededRandom(seed: seed ^ 0x5041_4952)
        while chosen.count < budget {
            let i = Int(source.next() % UInt64(n))
            let j = Int(source.next() % UInt64(n))
            if i != j { chosen.insert([min(i, j), max(i, j)]) }
        }
        return chosen.sorted { ($0[0], $0[1]) < ($1[0], $1[1]) }.map {
            Placement(faults: [singles[$0[0]], singles[$0[1]]])
        }
    }
}

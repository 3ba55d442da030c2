import ChaosHooks
import ChaosKit

// chaos-leakcheck [CYCLES]: creates a provider-driven C hook on a function-pointer slot,
// applies an entry (the slot is patched), calls through it, reverts, drops everything,
// CYCLES times (default 100,000); then does the same a few times for a GOT symbol hook.
// Run under `valgrind --leak-check=full` (see .ci/leakcheck): nothing may be lost.

typealias AddFunction = @convention(c) (Int32, Int32) -> Int32
let realAdd: AddFunction = { $0 &+ $1 }

let cycles = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 100_000
let slot = UnsafeMutablePointer<AddFunction?>.allocate(capacity: 1)
slot.initialize(to: realAdd)
defer { slot.deallocate() }
let signature = try CSignature(returns: .int32, arguments: [.int32, .int32])

for index in 0..<cycles {
    let hook = try CFunctionHook(name: "leakcheck.add", slot: slot, signature: signature)
    let chaos = Chaos(seed: UInt64(index))
    try chaos.profile(hook.entry(.block { env in .int32(Int32(env.callOriginal().integerValue ?? 0) + 1) })).apply()
    guard slot.pointee!(1, 2) == 4 else { fatalError("the hook did not answer at cycle \(index)") }
    chaos.revertAll()
    guard slot.pointee!(1, 2) == 3 else { fatalError("the slot was not restored at cycle \(index)") }
}

for _ in 0..<20 {
    let hook = try CFunctionHook(
        name: "leakcheck.getenv", symbol: "getenv", signature: CSignature(returns: .cString, arguments: [.cString]))
    let chaos = Chaos(seed: 1)
    try chaos.profile(hook.entry(.nil)).apply()
    chaos.revertAll()
}
print("chaos-leakcheck: \(cycles) create/bind/revert cycles done")

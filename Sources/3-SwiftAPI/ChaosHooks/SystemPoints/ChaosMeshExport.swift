@_spi(Hooks) public import ChaosKit
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A profile's system entries as Chaos Mesh manifests, for the same faults on a cluster's
/// pods: `system.clock` offsets as TimeChaos, `system.files` errnos and latencies as
/// IOChaos, `system.connect` latencies as NetworkChaos.
///
/// Chaos Mesh applies a fault to every matching call for as long as the experiment runs,
/// so what only ChaosKit can say — a sequence, a count (`times`, `at`), a seeded draw, a
/// frozen or sped-up clock, a refused connection — is refused entry by entry, with the
/// reason, never approximated.
public struct ChaosMeshExport: Sendable {
    /// Where the manifests point and what they are called.
    public struct Options: Sendable {
        /// The pods' labels (`app=api`): the manifests' `selector.labelSelectors`.
        public var labels: [(name: String, value: String)]
        /// The namespace of the manifests and of the pods they select (nil: the current one).
        public var namespace: String?
        /// IOChaos's `volumePath`: the mount point of the volume whose files it acts on.
        /// Without it every `system.files` entry is refused.
        public var volumePath: String?
        /// The manifests' names start with this.
        public var namePrefix: String

        /// Options for pods labelled `labels`.
        public init(
            labels: [(name: String, value: String)], namespace: String? = nil, volumePath: String? = nil,
            namePrefix: String = "chaoskit"
        ) {
            self.labels = labels
            self.namespace = namespace
            self.volumePath = volumePath
            self.namePrefix = namePrefix
        }

        /// Reads `app=api,tier=web`; the error says what to fix.
        public static func labels(_ text: String) throws(ChaosError) -> [(name: String, value: String)] {
            var labels: [(name: String, value: String)] = []
            for part in text.split(separator: ",", omittingEmptySubsequences: false) {
                let pair = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard pair.count == 2, !pair[0].isEmpty, !pair[1].contains("=") else {
                    throw ChaosError(
                        .invalidProvider, subject: "--selector",
                        "'\(InputExcerpt.of(String(part)))' is no label; write name=value pairs separated by commas, e.g. app=api,tier=web"
                    )
                }
                labels.append((String(pair[0]), String(pair[1])))
            }
            return labels
        }
    }

    /// One manifest, made from one entry.
    public struct Manifest: Sendable {
        /// The entry's number in the profile (from 1).
        public let entry: Int
        /// TimeChaos, IOChaos or NetworkChaos.
        public let kind: String
        /// The manifest.
        public let document: ProfileValue
    }

    /// An entry Chaos Mesh cannot express, and why.
    public struct Refusal: Sendable, CustomStringConvertible {
        /// The entry's number in the profile (from 1).
        public let entry: Int
        /// The entry's point.
        public let point: String
        /// Why it has no manifest.
        public let reason: String

        /// `entry #2 (system.files): …`.
        public var description: String { "entry #\(entry) (\(point)): \(reason)" }
    }

    /// The manifests, in the profile's order.
    public let manifests: [Manifest]
    /// The entries refused, in the profile's order.
    public let refusals: [Refusal]

    /// The manifests of `profile`'s enabled entries, and the entries refused.
    public init(_ profile: ChaosProfile, options: Options) {
        SystemPoints.register()
        var manifests: [Manifest] = []
        var refusals: [Refusal] = []
        for (index, entry) in profile.entries.enumerated() where entry.enabled {
            do throws(ExportRefusal) {
                let (kind, spec) = try Self.spec(entry, profileSeeded: profile.seed != nil, options: options)
                manifests.append(
                    Manifest(entry: index + 1, kind: kind, document: Self.document(kind, spec, index + 1, options)))
            } catch {
                refusals.append(Refusal(entry: index + 1, point: entry.pointName, reason: error.reason))
            }
        }
        self.manifests = manifests
        self.refusals = refusals
    }

    /// The manifests as one YAML stream (`---` between documents), for `kubectl apply -f`.
    public var yaml: String {
        manifests.map { "---\n# entry #\($0.entry)\n" + YAMLText.document($0.document) }.joined()
    }

    // MARK: - Entries

    private struct ExportRefusal: Error {
        let reason: String
    }

    private typealias Tree = SystemPlanCompiler.Tree

    /// The kind and `spec` of `entry`'s manifest.
    private static func spec(_ entry: ChaosProfile.Entry, profileSeeded: Bool, options: Options) throws(ExportRefusal)
        -> (String, [String: ProfileValue])
    {
        guard let point = SystemPointKind(pointName: entry.pointName) else {
            throw ExportRefusal(
                reason:
                    "not a system point: Chaos Mesh acts on a pod's clocks, files and network, not on a Swift program's points"
            )
        }
        let tree: Tree
        do throws(ChaosError) {
            tree = try SystemPoints.point(for: point).provider(for: entry.provider).node
        } catch {
            throw ExportRefusal(reason: error.message)
        }
        // An item's target parameters make a selector whose other calls pass on; a
        // probability may sit outside it or inside.
        var fault = tree
        var probability: Double?
        if case .modified(.probability(let p), let child) = fault {
            probability = p
            fault = child
        }
        var target: SystemTarget.Selection?
        if case .composite(let branches, let otherwise) = fault, branches.count == 1, Self.passes(otherwise) {
            guard let selected = branches[0].condition.tag as? SystemTarget else {
                throw ExportRefusal(reason: "its condition is Swift code, which Chaos Mesh cannot run")
            }
            target = selected.selection
            fault = branches[0].provider
        }
        if probability == nil, case .modified(.probability(let p), let child) = fault {
            probability = p
            fault = child
        }
        var percent: Int?
        if let p = probability {
            guard point == .files || point == .stat else {
                throw ExportRefusal(reason: "a probability: only IOChaos has a percentage of calls")
            }
            guard !profileSeeded else {
                throw ExportRefusal(
                    reason: "a seeded probability: Chaos Mesh draws without a seed, so a run could not be replayed")
            }
            let scaled = p * 100
            guard scaled == scaled.rounded(), scaled >= 1 else {
                throw ExportRefusal(reason: "probability \(p): IOChaos takes a whole percentage of calls (0.01 steps)")
            }
            percent = Int(scaled)
        }
        switch point {
        case .clock: return ("TimeChaos", try timeSpec(fault, target))
        case .files, .stat:
            return ("IOChaos", try ioSpec(fault, target, percent: percent, options: options, stat: point == .stat))
        case .connect: return ("NetworkChaos", try networkSpec(fault, target))
        case .dns:
            throw ExportRefusal(
                reason:
                    "DNSChaos fails whole name patterns with an error of its own choosing; it cannot give the EAI code or the count this entry names"
            )
        default:
            throw ExportRefusal(
                reason:
                    "Chaos Mesh has no kind for \(point.pointName); the export covers system.clock offsets, system.files errnos and latencies, system.stat attributes, and system.connect latencies"
            )
        }
    }

    private static func passes(_ tree: Tree) -> Bool {
        switch tree {
        case .leaf(.pass), .leaf(.constant(.pass)): true
        default: false
        }
    }

    /// Why `tree` has no Chaos Mesh form: the modifier or leaf at its top.
    private static func unsupported(_ tree: Tree, _ kind: String) -> ExportRefusal {
        switch tree {
        case .sequential:
            ExportRefusal(reason: "a sequence: Chaos Mesh applies one fault for the whole experiment")
        case .modified(.times, _), .modified(.at, _):
            ExportRefusal(
                reason: "a count of calls (times, at): Chaos Mesh applies a fault to every call while it runs")
        case .modified(.lease, _):
            ExportRefusal(reason: "a lease: give the manifest a duration instead")
        case .modified(.probability, _):
            ExportRefusal(reason: "a probability here: \(kind) has no percentage of calls")
        case .composite:
            ExportRefusal(reason: "conditions beyond one target: \(kind) selects one path or address")
        default:
            ExportRefusal(reason: "\(tree.summary): \(kind) cannot say it")
        }
    }

    private static func timeSpec(_ fault: Tree, _ target: SystemTarget.Selection?) throws(ExportRefusal)
        -> [String: ProfileValue]
    {
        guard case .leaf(.constant(let outcome)) = fault else { throw unsupported(fault, "TimeChaos") }
        guard case .offset(let nanoseconds, let scope) = outcome else {
            throw ExportRefusal(
                reason: "\(outcome): TimeChaos only shifts clocks by an offset (no frozen, sped-up or virtual clock)")
        }
        var clocks = target?.clocks ?? [.realtime]
        if scope.monotonic { clocks.insert(.monotonic) }
        let ids: [String] = ClockSource.allCases.filter(clocks.contains).flatMap { source -> [String] in
            switch source {
            case .realtime: ["CLOCK_REALTIME"]
            case .realtimeCoarse: ["CLOCK_REALTIME_COARSE"]
            case .tai: ["CLOCK_TAI"]
            case .realtimeAlarm: ["CLOCK_REALTIME_ALARM"]
            case .monotonic: ["CLOCK_MONOTONIC", "CLOCK_MONOTONIC_COARSE", "CLOCK_BOOTTIME"]
            }
        }
        return [
            "timeOffset": .string(GoDuration.signed(nanoseconds)),
            "clockIds": .array(ids.map(ProfileValue.string)),
        ]
    }

    /// IOChaos's names of the FUSE operations each of ours is made of.
    private static func methods(_ operation: FileOperationKind) -> [String] {
        switch operation {
        case .open: ["open", "create"]
        case .read: ["read"]
        case .write: ["write"]
        case .sync: ["fsync", "flush"]
        case .truncate: ["setattr"]
        case .rename: ["rename"]
        case .unlink: ["unlink", "rmdir"]
        case .mkdir: ["mkdir"]
        case .close: ["release"]
        case .create: ["create", "link", "symlink"]
        }
    }

    /// IOChaos for a files entry, or for a stat entry (`stat`: Chaos Mesh's `getattr`).
    private static func ioSpec(
        _ fault: Tree, _ target: SystemTarget.Selection?, percent: Int?, options: Options, stat: Bool
    ) throws(ExportRefusal) -> [String: ProfileValue] {
        guard let volume = options.volumePath else {
            throw ExportRefusal(reason: "IOChaos needs the mount point of the volume it acts on: give --volume-path")
        }
        if target?.descriptor != nil || target?.descriptorKinds != nil {
            throw ExportRefusal(reason: "IOChaos selects files by path; it cannot name descriptors (descriptor, kinds)")
        }
        var spec: [String: ProfileValue] = ["volumePath": .string(volume)]
        switch fault {
        case .leaf(.constant(.fail(let code))):
            spec["action"] = .string("fault")
            spec["errno"] = .number(Double(code))
        case .modified(.delay(let wait), let child) where Self.isReal(child):
            spec["action"] = .string("latency")
            spec["delay"] = .string(GoDuration.single(wait.wholeNanosecondsForPlan))
        case .leaf(.constant(.corrupt(let bytes, let offset, let with))):
            // IOChaos's mistake changes 1 to maxOccurrences segments of up to maxLength bytes,
            // at places of its own: the same only for one byte, at a drawn place, zeroed or random.
            guard with != .flip else {
                throw ExportRefusal(reason: "corrupt with flip: IOChaos's mistake fills zero or random bytes only")
            }
            guard offset == nil else {
                throw ExportRefusal(reason: "corrupt at an offset: IOChaos's mistake picks its own places")
            }
            guard bytes == 1 else {
                throw ExportRefusal(
                    reason:
                        "corrupt of \(bytes) bytes a call: IOChaos's mistake changes 1 to N segments, not exactly N bytes"
                )
            }
            spec["action"] = .string("mistake")
            spec["mistake"] = .object([
                "filling": .string(with.rawValue), "maxOccurrences": .number(1), "maxLength": .number(1),
            ])
        case .leaf(.constant(.attributes(let attributes))):
            spec["action"] = .string("attrOverride")
            var attr: [String: ProfileValue] = [:]
            if let size = attributes.size { attr["size"] = .number(Double(size)) }
            if let modified = attributes.modifiedNanosecondsSince1970 {
                let (seconds, rest) = modified.quotientAndRemainder(dividingBy: 1_000_000_000)
                let negative = rest < 0
                attr["mtime"] = .object([
                    "sec": .number(Double(negative ? seconds - 1 : seconds)),
                    "nsec": .number(Double(negative ? rest + 1_000_000_000 : rest)),
                ])
            }
            if let permissions = attributes.permissions { attr["perm"] = .number(Double(permissions)) }
            if let links = attributes.links { attr["nlink"] = .number(Double(links)) }
            spec["attr"] = .object(attr)
        case .leaf(.constant(let outcome)):
            throw ExportRefusal(
                reason:
                    "\(outcome): IOChaos fails calls with an errno, delays them, corrupts their bytes or overrides attributes, nothing else"
            )
        default:
            throw unsupported(fault, "IOChaos")
        }
        if let path = target?.path {
            guard path.hasPrefix(volume == "/" ? "/" : volume + "/") || path == volume else {
                throw ExportRefusal(reason: "its path \(path) is not under the volume \(volume) (--volume-path)")
            }
            // IOChaos takes a glob; a plain path is taken as a directory, whose files at any
            // depth Chaos Mesh's own examples select with `/**/*`. A single file is written
            // as a glob in the profile (`/data/db.sqlite*`), which passes through unchanged.
            spec["path"] = .string(path.contains("*") || path.contains("?") ? path : path + "/**/*")
        }
        if stat, spec["action"] != .string("attrOverride") {
            spec["methods"] = .array([.string("getattr")])
        } else if let operations = target?.operations, operations.count < FileOperationKind.allCases.count {
            let names = FileOperationKind.allCases.filter(operations.contains).flatMap(methods)
            spec["methods"] = .array(names.map(ProfileValue.string))
        }
        if let percent { spec["percent"] = .number(Double(percent)) }
        return spec
    }

    private static func isReal(_ tree: Tree) -> Bool {
        switch tree {
        case .leaf(.original), .leaf(.constant(.real)): true
        default: false
        }
    }

    private static func networkSpec(_ fault: Tree, _ target: SystemTarget.Selection?) throws(ExportRefusal)
        -> [String: ProfileValue]
    {
        guard case .modified(.delay(let wait), let child) = fault, Self.isReal(child) else {
            if case .leaf(.constant(.fail(let code))) = fault {
                throw ExportRefusal(
                    reason:
                        "connect failing with \(SystemErrno.name(code)): NetworkChaos drops, delays, duplicates or corrupts packets, so a connection times out rather than fail with an errno"
                )
            }
            throw unsupported(fault, "NetworkChaos")
        }
        if target?.port != nil {
            throw ExportRefusal(reason: "a port: NetworkChaos selects peers by address, not by port")
        }
        var spec: [String: ProfileValue] = [
            "action": .string("delay"),
            "direction": .string("to"),
            "delay": .object(["latency": .string(GoDuration.single(wait.wholeNanosecondsForPlan))]),
        ]
        if let host = target?.host { spec["externalTargets"] = .array([.string(host)]) }
        return spec
    }

    // MARK: - Documents

    private static func document(_ kind: String, _ spec: [String: ProfileValue], _ entry: Int, _ options: Options)
        -> ProfileValue
    {
        var metadata: [String: ProfileValue] = ["name": .string("\(options.namePrefix)-\(entry)-\(kind.lowercased())")]
        var selector: [String: ProfileValue] = [
            "labelSelectors": .object(Dictionary(options.labels.map { ($0.name, .string($0.value)) }) { $1 })
        ]
        if let namespace = options.namespace {
            metadata["namespace"] = .string(namespace)
            selector["namespaces"] = .array([.string(namespace)])
        }
        var full = spec
        full["mode"] = .string("all")
        full["selector"] = .object(selector)
        return .object([
            "apiVersion": .string("chaos-mesh.org/v1alpha1"),
            "kind": .string(kind),
            "metadata": .object(metadata),
            "spec": .object(full),
        ])
    }
}

/// Go's duration text (`time.ParseDuration`), which Chaos Mesh reads: no days or years.
enum GoDuration {
    private static let units: [(String, Int64)] = [
        ("h", 3_600_000_000_000), ("m", 60_000_000_000), ("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000),
        ("ns", 1),
    ]

    /// One number and the largest unit that holds it exactly (`240h`, `1500ms`): the form
    /// Chaos Mesh's latency patterns accept.
    static func single(_ nanoseconds: Int64) -> String {
        let magnitude = nanoseconds.magnitude
        guard magnitude != 0 else { return "0s" }
        let (unit, size) = units.first { magnitude % UInt64($0.1) == 0 }!
        return "\(magnitude / UInt64(size))\(unit)"
    }

    /// ``single(_:)`` with a sign (`-240h`).
    static func signed(_ nanoseconds: Int64) -> String {
        (nanoseconds < 0 ? "-" : "") + single(nanoseconds)
    }
}

/// YAML for a JSON-shaped value, block style; strings are double-quoted (JSON escapes are
/// YAML's too), so no text can change a document's shape.
enum YAMLText {
    /// Keys a Kubernetes reader expects first, in this order; the rest follow by name.
    private static let leading = ["apiVersion", "kind", "metadata", "name", "namespace", "spec", "action", "mode"]

    static func document(_ value: ProfileValue) -> String {
        var text = ""
        write(value, indent: 0, into: &text)
        return text
    }

    private static func orderedKeys(_ object: [String: ProfileValue]) -> [String] {
        leading.filter { object[$0] != nil } + object.keys.filter { !leading.contains($0) }.sorted()
    }

    private static func write(_ value: ProfileValue, indent: Int, into text: inout String) {
        let pad = String(repeating: "  ", count: indent)
        switch value {
        case .object(let object):
            for key in orderedKeys(object) {
                let member = object[key]!
                if isBlock(member) {
                    text += "\(pad)\(keyText(key)):\n"
                    write(member, indent: indent + 1, into: &text)
                } else {
                    text += "\(pad)\(keyText(key)): \(scalar(member))\n"
                }
            }
        case .array(let items):
            for item in items {
                if isBlock(item) {
                    text += "\(pad)-\n"
                    write(item, indent: indent + 1, into: &text)
                } else {
                    text += "\(pad)- \(scalar(item))\n"
                }
            }
        default:
            text += pad + scalar(value) + "\n"
        }
    }

    /// A key as written: bare when it is a plain name (`apiVersion`, `app.kubernetes.io/name`),
    /// quoted otherwise.
    private static func keyText(_ key: String) -> String {
        let plain =
            key.first.map { $0.isASCII && $0.isLetter } == true
            && key.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.plainKey.contains($0)) }
        return plain ? key : quoted(key)
    }

    private static func isBlock(_ value: ProfileValue) -> Bool {
        switch value {
        case .object(let object): !object.isEmpty
        case .array(let items): !items.isEmpty
        default: false
        }
    }

    private static func scalar(_ value: ProfileValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let flag): flag ? "true" : "false"
        case .number(let number): ProfileValue.numberText(number)
        case .string(let string): quoted(string)
        case .object: "{}"
        case .array: "[]"
        }
    }

    /// Not ProfileValue.quoted: a JSON string literal is a YAML double-quoted scalar except
    /// for DEL, which JSON leaves raw and YAML does not allow unescaped.
    private static func quoted(_ string: String) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += "\\x" + String(scalar.value, radix: 16).leftPadded(to: 2)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

extension CharacterSet {
    /// Letters, digits and `_ . / -`: what a YAML key may be without quotes here.
    fileprivate static let plainKey = CharacterSet(
        charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-")
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}

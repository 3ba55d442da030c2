// What a URLProtocol needs from swift-corelibs-foundation (Linux) but is not given through
// its public API: the body of an upload task, and a way to hand a download task its file.
// Apple's Foundation does both itself; none of this is compiled there.
#if canImport(FoundationNetworking)
import Dispatch
import Foundation
import FoundationNetworking

/// The body an upload task was made with. swift-corelibs-foundation keeps it in the task
/// (`knownBody`: data, a file or a stream) and gives a URLProtocol a request without it;
/// it is read here through reflection, which only reads and finds nothing (nil) if the
/// task is shaped differently.
enum UploadBody {
    static func of(_ task: URLSessionTask) -> Data? {
        var mirror: Mirror? = Mirror(reflecting: task)
        while let current = mirror {
            if let stored = current.children.first(where: { $0.label == "knownBody" }) {
                return body(from: stored.value)
            }
            mirror = current.superclassMirror
        }
        return nil
    }

    private static func body(from value: Any) -> Data? {
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first?.value else { return nil }
            return body(from: wrapped)
        }
        guard mirror.displayStyle == .enum, let payload = mirror.children.first else { return nil }
        switch payload.value {
        case let data as DispatchData: return Data(data)
        case let data as Data: return data
        case let file as URL: return try? Data(contentsOf: file)
        case let stream as InputStream: return ChaosURLProtocol.read(stream)
        default: return nil
        }
    }
}

/// Records a download's file where swift-corelibs-foundation reads it when the protocol
/// finishes: `URLProtocol.properties[.temporaryFileURL]`, an internal dictionary its own
/// protocols fill. Without it `download(for:)` force-unwraps a nil location and traps.
///
/// The dictionary is found by reflection (the protocol's first stored property, named
/// `properties`, a `[Key: Any]` whose `Key` has the raw value `temporaryFileURL`); its one
/// word of storage is located by its value among the object's first words, written through
/// the dictionary's own type (so retains and releases are right), and read back to check.
/// Any step that does not hold leaves the object untouched and answers false.
enum DownloadLocation {
    static func record(_ file: URL, in instance: URLProtocol) -> Bool {
        var mirror: Mirror? = Mirror(reflecting: instance)
        while let current = mirror, current.subjectType != URLProtocol.self {
            mirror = current.superclassMirror
        }
        guard let properties = mirror?.children.first, properties.label == "properties",
            let table = properties.value as? any TemporaryFileTable
        else { return false }
        guard table.storing(file, in: instance) else { return false }
        // Read back: the dictionary now holds the file under the key Foundation reads.
        var check: Mirror? = Mirror(reflecting: instance)
        while let current = check, current.subjectType != URLProtocol.self { check = current.superclassMirror }
        guard let written = check?.children.first?.value as? any TemporaryFileTable else { return false }
        return written.temporaryFile == file
    }
}

/// Where stubbed downloads keep their bodies: one folder per process, removed when the
/// process exits, so that the files URLSession hands out (which it never deletes here)
/// do not pile up in the temporary directory. Folders of processes that are gone (a crash
/// skips the removal) are removed when the next process makes its own.
enum DownloadFolder {
    static let prefix = "ChaosKit-downloads-"

    /// This process's folder, made on first use; nil when it cannot be made.
    static let current: URL? = {
        let temporary = FileManager.default.temporaryDirectory
        removeFoldersOfEndedProcesses(in: temporary)
        let folder = temporary.appendingPathComponent("\(prefix)\(getpid())", isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            return nil
        }
        atexit { try? FileManager.default.removeItem(atPath: DownloadFolder.pathAtExit) }
        return folder
    }()

    /// The folder's path, fixed before any exit handler can run (atexit takes no context).
    private static let pathAtExit = FileManager.default.temporaryDirectory.appendingPathComponent(
        "\(prefix)\(getpid())"
    ).path

    /// Removes the download folders in `temporary` whose process no longer runs.
    static func removeFoldersOfEndedProcesses(in temporary: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? []
        for name in names where name.hasPrefix(prefix) {
            guard let pid = Int32(name.dropFirst(prefix.count)), pid > 0, pid != getpid() else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH {
                try? FileManager.default.removeItem(at: temporary.appendingPathComponent(name))
            }
        }
    }
}

/// A `[Key: Any]` dictionary, opened so that its key type can be named.
protocol TemporaryFileTable {
    func storing(_ file: URL, in instance: URLProtocol) -> Bool
    var temporaryFile: URL? { get }
}

extension Dictionary: TemporaryFileTable where Value == Any {
    private static var temporaryFileKey: Key? {
        guard let keyType = Key.self as? any RawRepresentable.Type else { return nil }
        func key<Raw: RawRepresentable>(_: Raw.Type) -> Key? {
            guard let raw = "temporaryFileURL" as? Raw.RawValue else { return nil }
            return Raw(rawValue: raw) as? Key
        }
        return key(keyType)
    }

    var temporaryFile: URL? {
        Self.temporaryFileKey.flatMap { self[$0] as? URL }
    }

    func storing(_ file: URL, in instance: URLProtocol) -> Bool {
        guard MemoryLayout<Self>.size == MemoryLayout<UInt>.size, let key = Self.temporaryFileKey else { return false }
        let pattern = unsafeBitCast(self, to: UInt.self)
        let base = Unmanaged.passUnretained(instance).toOpaque()
        // Words 0 and 1 are the object header; the stored properties of URLProtocol follow.
        let words = base.assumingMemoryBound(to: UInt.self)
        let candidates = (2..<8).filter { words[$0] == pattern }
        guard candidates.count == 1 else { return false }
        var updated = self
        updated[key] = file
        (base + candidates[0] * MemoryLayout<UInt>.stride).assumingMemoryBound(to: Self.self).pointee = updated
        return true
    }
}
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The ELF images loaded in this process, by path, and how a memory entry's `images` names
/// them (``SystemOutcome/outOfMemory(images:)``).
enum LoadedImages {
    /// The paths of the files mapped in this process (every loaded image among them), read
    /// from `/proc/self/maps`.
    static func paths() -> [String] {
        guard let file = fopen("/proc/self/maps", "r") else { return [] }
        defer { fclose(file) }
        var seen = Set<String>()
        var paths: [String] = []
        var line = [CChar](repeating: 0, count: 4352)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard let slash = text.firstIndex(of: "/") else { continue }
            let path = String(text[slash...].trimmingSuffix(while: { $0 == "\n" }))
            if seen.insert(path).inserted { paths.append(path) }
        }
        return paths
    }

    /// Whether the image at `path` is the one `name` names: its path, its file name, or its
    /// file name without a version after it (`libsqlite3.so.0` names `libsqlite3.so.0.8.6`,
    /// the file a link of that name leads to).
    static func path(_ path: String, isNamedBy name: String) -> Bool {
        let file = fileName(path)
        return path == name || file == name || file.hasPrefix(name + ".")
    }

    /// The last component of `path`.
    static func fileName(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path
    }
}

extension Substring {
    fileprivate func trimmingSuffix(while drop: (Character) -> Bool) -> Substring {
        var end = endIndex
        while end > startIndex, drop(self[index(before: end)]) { end = index(before: end) }
        return self[startIndex..<end]
    }
}

public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A controllable process as its endpoint file describes it: where it listens and the
/// token every request must carry.
///
/// Each process with a control endpoint writes one file, `PID.json`, readable only by the
/// user, into the per-user directory ``ControlEndpoint/directory(environment:)`` names; `chaos ctl` reads
/// them to find processes. The file is removed when the endpoint stops; files of processes
/// that died are skipped (and removed) when listed.
public struct ControlEndpoint: Codable, Sendable, Hashable {
    /// The file format's version (1).
    public var version: Int
    /// The process id.
    public var pid: Int32
    /// The program's name.
    public var program: String
    /// Where it listens: `http://127.0.0.1:PORT` (TCP) or `unix:/path/to/socket`.
    public var url: String
    /// The per-session token: `Authorization: Bearer TOKEN`.
    public var token: String
    /// `"swift"` for an in-process endpoint, `"preload"` for a `chaos run` child.
    public var kind: String
    /// When the endpoint started.
    public var started: Date

    /// An endpoint record.
    public init(pid: Int32, program: String, url: String, token: String, kind: String = "swift", started: Date = Date())
    {
        self.version = 1
        self.pid = pid
        self.program = program
        self.url = url
        self.token = token
        self.kind = kind
        self.started = started
    }

    /// The web console's address with the token (for a TCP endpoint): open it in a browser.
    public var consoleURL: String? {
        url.hasPrefix("http://") ? "\(url)/console?token=\(token)" : nil
    }

    // MARK: The directory

    /// The per-user directory of endpoint files: `CHAOS_CONTROL_DIR` when set, else
    /// `$XDG_RUNTIME_DIR/chaoskit`, else `~/.chaoskit/control`.
    public static func directory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let explicit = environment["CHAOS_CONTROL_DIR"], !explicit.isEmpty {
            return URL(fileURLWithPath: explicit, isDirectory: true)
        }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return URL(fileURLWithPath: runtime, isDirectory: true).appendingPathComponent(
                "chaoskit", isDirectory: true)
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(
            ".chaoskit/control", isDirectory: true)
    }

    /// Writes this record as `PID.json` into `directory` (made private to the user if
    /// needed), readable and writable by the user only; returns the file.
    @discardableResult
    public func publish(in directory: URL = ControlEndpoint.directory()) throws(ControlError) -> URL {
        try Self.makePrivateDirectory(directory)
        let file = directory.appendingPathComponent("\(pid).json")
        let temporary = directory.appendingPathComponent(".\(pid).\(UInt32.random(in: .min ... .max)).tmp")
        let data: Data
        do {
            data = try ControlAPI.encoder().encode(self)
        } catch {
            throw ControlError("endpointFiles", subject: file.path, "the endpoint record cannot be encoded (\(error))")
        }
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            throw ControlError(
                "endpointFiles", subject: temporary.path,
                "cannot create the endpoint file (\(Self.lastError())); check the directory's owner and permissions")
        }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == data.count, rename(temporary.path, file.path) == 0 else {
            let reason = Self.lastError()
            unlink(temporary.path)
            throw ControlError(
                "endpointFiles", subject: file.path,
                "cannot write the endpoint file (\(reason)); check free space and permissions")
        }
        return file
    }

    /// Removes this process's endpoint file from `directory` (when it is this record's).
    public func withdraw(from directory: URL = ControlEndpoint.directory()) {
        let file = directory.appendingPathComponent("\(pid).json")
        if let data = FileManager.default.contents(atPath: file.path),
            let record = try? ControlAPI.decoder().decode(ControlEndpoint.self, from: data), record.token != token
        {
            return  // another endpoint of this pid replaced it
        }
        unlink(file.path)
    }

    /// The endpoint files in `directory` whose processes are alive, by pid. Files of dead
    /// processes are removed (with their Unix sockets in `directory`); unreadable files are
    /// skipped.
    public static func all(in directory: URL = ControlEndpoint.directory()) -> [ControlEndpoint] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return [] }
        var found: [ControlEndpoint] = []
        for name in names where name.hasSuffix(".json") && !name.hasPrefix(".") {
            let path = directory.appendingPathComponent(name).path
            guard let data = FileManager.default.contents(atPath: path),
                let record = try? ControlAPI.decoder().decode(ControlEndpoint.self, from: data)
            else { continue }
            guard isAlive(record.pid) else {
                unlink(path)
                // A `chaos run` child that ended with _exit (as dash does) could not remove
                // its socket; it is removed with the file, when it lies in this directory.
                if record.url.hasPrefix("unix:"),
                    URL(fileURLWithPath: String(record.url.dropFirst(5))).deletingLastPathComponent()
                        .standardizedFileURL.path == directory.standardizedFileURL.path
                {
                    unlink(String(record.url.dropFirst(5)))
                }
                continue
            }
            found.append(record)
        }
        return found.sorted { $0.pid < $1.pid }
    }

    /// The live endpoint of process `pid`; an error that says how to find one otherwise.
    public static func find(pid: Int32, in directory: URL = ControlEndpoint.directory()) throws(ControlError)
        -> ControlEndpoint
    {
        if let record = all(in: directory).first(where: { $0.pid == pid }) { return record }
        throw ControlError(
            "noSuchProcess", subject: "pid \(pid)",
            "no controllable process has this pid (no endpoint file in \(directory.path)); `chaos ctl list` shows them, and a Swift program gets an endpoint with CHAOS_CONTROL=127.0.0.1:0"
        )
    }

    private static func isAlive(_ pid: Int32) -> Bool {
        guard pid > 0 else { return false }
        return kill(pid, 0) == 0 || errno == EPERM
    }

    /// Makes `directory` (and missing parents) with mode 0700, and refuses one that another
    /// user owns or that others may write to.
    static func makePrivateDirectory(_ directory: URL) throws(ControlError) {
        let path = directory.path
        var info = stat()
        if lstat(path, &info) != 0 {
            do {
                try FileManager.default.createDirectory(
                    atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw ControlError(
                    "endpointFiles", subject: path,
                    "cannot create the directory of endpoint files (\(error.localizedDescription)); set CHAOS_CONTROL_DIR to a directory you own"
                )
            }
            guard lstat(path, &info) == 0 else {
                throw ControlError(
                    "endpointFiles", subject: path, "the directory of endpoint files vanished (\(lastError()))")
            }
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw ControlError(
                "endpointFiles", subject: path,
                "is not a directory (a symbolic link or a file is refused); remove it or set CHAOS_CONTROL_DIR")
        }
        guard info.st_uid == geteuid() else {
            throw ControlError(
                "endpointFiles", subject: path,
                "belongs to another user (uid \(info.st_uid)); set CHAOS_CONTROL_DIR to a directory you own")
        }
        if info.st_mode & 0o077 != 0, chmod(path, 0o700) != 0 {
            throw ControlError(
                "endpointFiles", subject: path,
                "others may read it and it cannot be made private (\(lastError())); run chmod 700 on it")
        }
    }

    static func lastError() -> String {
        String(cString: strerror(errno))
    }
}

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
    /// The process id: the program's own, as `ps`, its pidfile and its own reports say.
    public var pid: Int32
    /// For a program under `chaos run`: the pid of `chaos run`, which also finds it.
    public var runner: Int32?
    /// The program's name.
    public var program: String
    /// Where it listens: `http://127.0.0.1:PORT` (TCP) or `unix:/path/to/socket`.
    public var url: String
    /// The per-session token: `Authorization: Bearer TOKEN`.
    public var token: String
    /// `"swift"` for an in-process endpoint, `"preload"` for a `chaos run` child served by
    /// the preload library inside it, `"seccomp"` for one served by `chaos run`'s seccomp
    /// supervisor beside it.
    public var kind: String

    /// Whether a `chaos run` program is behind it (either delivery): it takes compiled plans,
    /// not profiles, and keeps no event stream.
    public var isChaosRun: Bool { kind == "preload" || kind == "seccomp" }
    /// When the endpoint started.
    public var started: Date

    /// An endpoint record.
    public init(
        pid: Int32, runner: Int32? = nil, program: String, url: String, token: String, kind: String = "swift",
        started: Date = Date()
    ) {
        self.version = 1
        self.pid = pid
        self.runner = runner
        self.program = program
        self.url = url
        self.token = token
        self.kind = kind
        self.started = started
    }

    /// The web console's address with the token (for a TCP endpoint of a Swift program; a
    /// `chaos run` child serves no page): open it in a browser.
    public var consoleURL: String? {
        !isChaosRun && url.hasPrefix("http://") ? "\(url)/console?token=\(token)" : nil
    }

    // MARK: The directory

    /// The per-user directory of endpoint files: `CHAOS_CONTROL_DIR` when set, else
    /// `$XDG_RUNTIME_DIR/chaoskit`, else `~/.chaoskit/control`; inside a shared sticky
    /// directory such as /tmp, its private subdirectory (see ``filesDirectory(for:)``).
    public static func directory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let explicit = environment["CHAOS_CONTROL_DIR"], !explicit.isEmpty {
            return filesDirectory(for: URL(fileURLWithPath: explicit, isDirectory: true))
        }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return filesDirectory(
                for: URL(fileURLWithPath: runtime, isDirectory: true).appendingPathComponent(
                    "chaoskit", isDirectory: true))
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return filesDirectory(
            for: URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(
                ".chaoskit/control", isDirectory: true))
    }

    /// Where the endpoint files of `directory` are: `directory/chaoskit-UID` when it is a
    /// shared sticky directory (one others may write to, with the sticky bit, as /tmp), else
    /// `directory` itself. The preload library of `chaos run` chooses the same way, so both
    /// find each other's files for the same `CHAOS_CONTROL_DIR`. Nothing is made or changed;
    /// given the subdirectory, it answers the subdirectory.
    public static func filesDirectory(for directory: URL) -> URL {
        var info = stat()
        guard lstat(directory.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR, isSharedSticky(info) else {
            return directory
        }
        return directory.appendingPathComponent("chaoskit-\(geteuid())", isDirectory: true)
    }

    /// Writes this record as `PID.json` into `directory` (see ``filesDirectory(for:)``; made
    /// with mode 0700 when missing, never changed when it exists), readable and writable by
    /// the user only; returns the file.
    @discardableResult
    public func publish(in directory: URL = ControlEndpoint.directory()) throws(ControlError) -> URL {
        let directory = try Self.makePrivateDirectory(directory)
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
        let file = Self.filesDirectory(for: directory).appendingPathComponent("\(pid).json")
        do {
            if let record = try Self.read(file.path, allowingOtherUsers: false), record.token != token {
                return  // another endpoint of this pid replaced it
            }
        } catch {
            return  // another user's file: not this endpoint's to remove
        }
        unlink(file.path)
    }

    /// The endpoint files in `directory` (see ``filesDirectory(for:)``) whose processes are
    /// alive, by pid. Files of dead processes are removed (with their Unix sockets in the
    /// same directory); unreadable files are skipped. So are files another user owns, unless
    /// `allowingOtherUsers`: their process could answer anything and learn what is sent to
    /// it. `refused` hears of each skipped file of another user, as an `untrustedEndpoint`
    /// error.
    public static func all(
        in directory: URL = ControlEndpoint.directory(), allowingOtherUsers: Bool = false,
        refused: (ControlError) -> Void = { _ in }
    ) -> [ControlEndpoint] {
        let directory = filesDirectory(for: directory)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return [] }
        var found: [ControlEndpoint] = []
        for name in names where name.hasSuffix(".json") && !name.hasPrefix(".") {
            let path = directory.appendingPathComponent(name).path
            let record: ControlEndpoint
            do throws(ControlError) {
                guard let read = try read(path, allowingOtherUsers: allowingOtherUsers) else { continue }
                record = read
            } catch {
                refused(error)
                continue
            }
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

    /// The live endpoint of process `pid` in `directory` (see ``filesDirectory(for:)``); an
    /// error that says how to find one otherwise. The pid of a `chaos run` finds the program
    /// it started (the first of its tree to have an endpoint). A file another user owns is an
    /// `untrustedEndpoint` error unless `allowingOtherUsers`.
    public static func find(
        pid: Int32, in directory: URL = ControlEndpoint.directory(), allowingOtherUsers: Bool = false
    ) throws(ControlError) -> ControlEndpoint {
        let directory = filesDirectory(for: directory)
        if let record = try read(
            directory.appendingPathComponent("\(pid).json").path, allowingOtherUsers: allowingOtherUsers),
            record.pid == pid, isAlive(pid)
        {
            return record
        }
        if let program = tree(ofRunner: pid, in: directory, allowingOtherUsers: allowingOtherUsers).first {
            return program
        }
        throw ControlError(
            "noSuchProcess", subject: "pid \(pid)",
            "no controllable process has this pid (no endpoint file in \(directory.path)); `chaos ctl list` shows them, and a Swift program gets an endpoint with CHAOS_CONTROL=127.0.0.1:0"
        )
    }

    /// The live endpoints of the processes `chaos run` `runner` started (its program's tree),
    /// the earliest started first.
    public static func tree(
        ofRunner runner: Int32, in directory: URL = ControlEndpoint.directory(), allowingOtherUsers: Bool = false
    ) -> [ControlEndpoint] {
        all(in: directory, allowingOtherUsers: allowingOtherUsers).filter { $0.runner == runner }
            .sorted { ($0.started, $0.pid) < ($1.started, $1.pid) }
    }

    /// The record in the endpoint file at `path`; nil when there is none or it is not one.
    /// The file is opened without following a symbolic link, and its owner is the opened
    /// file's, so a file swapped in between cannot pass for the user's own.
    static func read(_ path: String, allowingOtherUsers: Bool) throws(ControlError) -> ControlEndpoint? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= 1 << 16 else { return nil }
        if !allowingOtherUsers, info.st_uid != geteuid() {
            throw ControlError(
                "untrustedEndpoint", subject: path,
                "this endpoint file belongs to uid \(info.st_uid), not to you (uid \(geteuid())); its process could answer anything and would learn what is sent to it. Steer it as that user, or allow other users (chaos ctl --allow-other-users) if you trust them"
            )
        }
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while data.count <= 1 << 16 {
            let count = chunk.withUnsafeMutableBytes { Glibc_read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            data.append(contentsOf: chunk[..<count])
        }
        return try? ControlAPI.decoder().decode(ControlEndpoint.self, from: ControlAPI.repaired(data))
    }

    private static func isAlive(_ pid: Int32) -> Bool {
        guard pid > 0 else { return false }
        return kill(pid, 0) == 0 || errno == EPERM
    }

    /// Whether a directory is shared the way /tmp is: others may write to it, and the sticky
    /// bit keeps them from removing or renaming what is not theirs.
    private static func isSharedSticky(_ info: stat) -> Bool {
        info.st_mode & S_ISVTX != 0 && info.st_mode & 0o022 != 0
    }

    /// The directory for endpoint files that `directory` stands for, made when missing (with
    /// its missing parents, mode 0700) and checked as the preload library checks it: an
    /// existing directory is never chmod'ed. A shared sticky one (/tmp) gets the private
    /// subdirectory `chaoskit-UID`, which must then be the user's own, a real directory and
    /// private; one others may write to without the sticky bit is refused, and so is one of
    /// another user.
    static func makePrivateDirectory(_ directory: URL) throws(ControlError) -> URL {
        let path = directory.path
        var info = stat()
        if lstat(path, &info) != 0 {
            guard errno == ENOENT else {
                throw ControlError(
                    "endpointFiles", subject: path,
                    "the directory of endpoint files cannot be read (\(lastError())); set CHAOS_CONTROL_DIR to a directory you own"
                )
            }
            // Made a component at a time, as the preload library does: each made here is 0700.
            var partial = ""
            for component in path.split(separator: "/") {
                partial += "/" + component
                if mkdir(partial, 0o700) != 0 && errno != EEXIST {
                    throw ControlError(
                        "endpointFiles", subject: partial,
                        "cannot create the directory of endpoint files (\(lastError())); set CHAOS_CONTROL_DIR to a directory you own"
                    )
                }
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
        if isSharedSticky(info) {
            let own = filesDirectory(for: directory)
            if mkdir(own.path, 0o700) != 0 && errno != EEXIST {
                throw ControlError(
                    "endpointFiles", subject: own.path,
                    "cannot create a private directory for endpoint files in this shared one (\(lastError())); set CHAOS_CONTROL_DIR to a directory you own"
                )
            }
            var mine = stat()
            guard lstat(own.path, &mine) == 0, (mine.st_mode & S_IFMT) == S_IFDIR, mine.st_uid == geteuid(),
                mine.st_mode & 0o077 == 0
            else {
                throw ControlError(
                    "endpointFiles", subject: own.path,
                    "is not a private directory of yours (mode 0700, a real directory): someone else may have made it; remove it, or set CHAOS_CONTROL_DIR to a directory you own"
                )
            }
            return own
        }
        guard info.st_uid == geteuid() else {
            throw ControlError(
                "endpointFiles", subject: path,
                "belongs to another user (uid \(info.st_uid)); set CHAOS_CONTROL_DIR to a directory you own")
        }
        guard info.st_mode & 0o022 == 0 else {
            throw ControlError(
                "endpointFiles", subject: path,
                "others may write to this directory, and without the sticky bit they could replace endpoint files; run chmod go-w on it (or chmod +t to share it), or set CHAOS_CONTROL_DIR to a private directory"
            )
        }
        return directory
    }

    static func lastError() -> String {
        String(cString: strerror(errno))
    }
}

/// `read(2)`, named apart from the endpoint's own `read`.
// swift-format-ignore: AlwaysUseLowerCamelCase
// Named for the libc function it reaches past the type's own `read`.
private func Glibc_read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}

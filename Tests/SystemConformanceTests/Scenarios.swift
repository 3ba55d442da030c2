#if os(Linux)
import Glibc

/// The scenarios both deliveries must answer alike (issue #13), with the answers.
enum Scenarios {
    private static func files(_ item: String, _ parameters: String) -> String {
        #"{"entries": [{"point": "system.files", "provider": {"item": "\#(item)", "parameters": {\#(parameters)}}}]}"#
    }

    static let enospcOnIO = files("enospc", #""path": "$DIR/io""#)

    /// What the stdio-reads probe gets from the sibling io2/r ("abc\n12\n"): every read works.
    static let siblingReads =
        "sibling-fopen=ok sibling-fgetc=97 sibling-getc=98 sibling-getline=2 sibling-fscanf=1 sibling-fgets=1"

    /// Scenarios with no more than a workspace: files, names, the environment, DNS, the clock.
    static let plain: [Scenario] = [
        Scenario(
            name: "enospc on every write-family and sync-family call, not on the sibling io2",
            profile: enospcOnIO, probe: ["files", "$DIR"],
            // ftruncate cannot return ENOSPC, so it is left alone (then pread sees its byte).
            expected:
                "open=ok write=-1/ENOSPC pwrite=-1/ENOSPC writev=-1/ENOSPC pwritev=-1/ENOSPC fdatasync=-1/ENOSPC fsync=-1/ENOSPC "
                + "ftruncate=0 fallocate=-1/ENOSPC pread=1 close=0 "
                + "sibling-open=ok sibling-write=3 sibling-pwritev=4 sibling-fsync=0 sibling-ftruncate=0 sibling-close=0"
        ),
        Scenario(
            name: "fail EIO on write, sync and truncate",
            profile: files("fail", #""errno": "EIO", "path": "$DIR/io", "operations": ["write", "sync", "truncate"]"#),
            probe: ["files", "$DIR"],
            expected: "open=ok write=-1/EIO pwrite=-1/EIO writev=-1/EIO pwritev=-1/EIO fdatasync=-1/EIO fsync=-1/EIO "
                + "ftruncate=-1/EIO fallocate=-1/EIO pread=0 close=0 "
                + "sibling-open=ok sibling-write=3 sibling-pwritev=4 sibling-fsync=0 sibling-ftruncate=0 sibling-close=0"
        ),
        Scenario(
            name: "openat relative to a dirfd, .., . and // in the probe's paths",
            profile: enospcOnIO, probe: ["paths", "$DIR"],
            expected:
                "dirfd=-1/ENOSPC dirfd-dotdot=-1/ENOSPC dot-slashes=-1/ENOSPC up-and-in=-1/ENOSPC sibling=1 out-of-io=1 sibling-dirfd=1"
        ),
        Scenario(
            name: "the profile's path written with .., . and //",
            profile: files("enospc", #""path": "$DIR/io2/..//io/.""#), probe: ["paths", "$DIR"],
            expected:
                "dirfd=-1/ENOSPC dirfd-dotdot=-1/ENOSPC dot-slashes=-1/ENOSPC up-and-in=-1/ENOSPC sibling=1 out-of-io=1 sibling-dirfd=1"
        ),
        Scenario(
            name: "stat answers the attributes a stat entry names, by path and by descriptor, not the sibling's",
            profile: #"""
                {"entries": [{"point": "system.stat", "provider": {"item": "attributes", "parameters":
                  {"path": "$DIR/io", "size": 42, "mode": "600", "nlink": 3, "mtime": "2001-02-03T04:05:06Z"}}}]}
                """#,
            probe: ["stat", "$DIR"],
            expected: "stat=42,600,3,981173106 lstat=42,600,3,981173106 fstat=42,600,3,981173106 "
                + "fstatat=42,600,3,981173106 statx=42,600,3,981173106 sibling-stat=3,644,1,1000000000"
        ),
        Scenario(
            name: "a file a stat entry hides is not found by any stat call, and its sibling is",
            profile: #"""
                {"entries": [{"point": "system.stat", "provider": {"item": "enoent", "parameters": {"path": "$DIR/io"}}}]}
                """#,
            probe: ["stat", "$DIR"],
            expected: "stat=-1/ENOENT lstat=-1/ENOENT fstat=-1/ENOENT fstatat=-1/ENOENT statx=-1/ENOENT "
                + "sibling-stat=3,644,1,1000000000"
        ),
        Scenario(
            name: "corrupt changes the bytes a read returns at its offset, not what the file holds nor the sibling's",
            profile: files(
                "corrupt", #""path": "$DIR/io", "operations": ["read"], "offset": 2, "bytes": 2, "with": "zero""#),
            probe: ["corrupt", "$DIR"],
            expected: "read=6162000065666768 sibling-read=6162636465666768"
        ),
        Scenario(
            name: "corrupt changes the bytes a write stores, flipped",
            profile: files("corrupt", #""path": "$DIR/io", "operations": ["write"], "offset": 0, "bytes": 1"#),
            probe: ["corrupt", "$DIR"],
            expected: "read=9e62636465666768 sibling-read=6162636465666768"
        ),
        Scenario(
            name: "a data limit on a connection's sends: the send that reaches it is cut, the next is reset",
            profile: #"""
                {"entries": [{"point": "system.send", "provider": {"item": "limit-data", "parameters":
                  {"bytes": 1000, "then": "reset", "roles": ["client"], "host": "127.0.0.1"}}}]}
                """#,
            probe: ["stream"],
            expected: "send=600 send2=400 send3=-1/ECONNRESET peer=1000"
        ),
        Scenario(
            name: "a data limit that closes: the send past it fails with EPIPE",
            profile: #"""
                {"entries": [{"point": "system.send", "provider": {"item": "limit-data", "parameters":
                  {"bytes": 600, "roles": ["client"]}}}]}
                """#,
            probe: ["stream"],
            expected: "send=600 send2=-1/EPIPE send3=-1/EPIPE peer=600"
        ),
        Scenario(
            name: "a glob with ** and *",
            profile: files("enospc", #""path": "$DIR/io/**/*.log""#), probe: ["glob", "$DIR"],
            expected:
                "io/a.log=-1/ENOSPC io/sub/deep/b.log=-1/ENOSPC io/a.txt=1 io/x.log.txt=1 io2/c.log=1 io2/sub/d.log=1",
            folders: ["io/sub/deep", "io2/sub"]
        ),
        Scenario(
            name: "a glob with ?",
            profile: files("enospc", #""path": "$DIR/io?/*.log""#), probe: ["glob", "$DIR"],
            expected: "io/a.log=1 io/sub/deep/b.log=1 io/a.txt=1 io/x.log.txt=1 io2/c.log=-1/ENOSPC io2/sub/d.log=1",
            folders: ["io/sub/deep", "io2/sub"]
        ),
        Scenario(
            name: "copies of a faulty descriptor are faulty, its numbers reused for another file are not",
            profile: files("enospc", #""path": "$DIR/io", "operations": ["write"]"#), probe: ["descriptors", "$DIR"],
            expected: "faulty=-1/ENOSPC outside=1 dup=-1/ENOSPC dup2=-1/ENOSPC dup3=-1/ENOSPC fcntl-dupfd=-1/ENOSPC "
                + "closed-then-raw=1 dup2-over=1 closed-then-open=1 faulty-again=-1/ENOSPC"
        ),
        Scenario(
            name: "stdio writes fail, and nothing reaches the file",
            profile: enospcOnIO, probe: ["stdio", "$DIR"],
            expected: "fopen=ok fwrite=0/ENOSPC fflush=0 ferror=1 fclose=0 fputs=-1/ENOSPC fclose-pending=0 sizes=0,0 "
                + "sibling-fwrite=3 sibling-fclose=0 sibling-size=3"
        ),
        Scenario(
            name: "stdio: buffered writes succeed, fflush and fclose with pending output fail (sequential under match)",
            profile: #"""
                {"entries": [{"point": "system.files", "match": {"path": "$DIR/io", "operations": ["write"]},
                              "provider": {"sequential": ["original", "enospc", "original", "enospc"]}}]}
                """#,
            probe: ["stdio", "$DIR"],
            expected: "fopen=ok fwrite=3 fflush=-1/ENOSPC ferror=1 fclose=0 fputs=0 fclose-pending=-1/ENOSPC sizes=0,0 "
                + "sibling-fwrite=3 sibling-fclose=0 sibling-size=3"
        ),
        Scenario(
            name: "stdio reads fail: characters when the buffer is empty, lines and fscanf on each call",
            profile: files("fail", #""errno": "EIO", "path": "$DIR/io", "operations": ["read"]"#),
            probe: ["stdio-reads", "$DIR"],
            expected: "fopen=ok fgetc=-1/EIO getc=-1/EIO getline=-1/EIO fscanf=-1/EIO fgets=0/EIO "
                + Self.siblingReads
        ),
        Scenario(
            name: "times: 1 on stdio reads fails one refill, then the buffer serves the characters",
            profile: #"""
                {"entries": [{"point": "system.files",
                              "provider": {"item": "fail", "parameters": {"errno": "EIO", "path": "$DIR/io", "operations": ["read"]}, "times": 1}}]}
                """#,
            probe: ["stdio-reads", "$DIR"],
            expected: "fopen=ok fgetc=-1/EIO getc=97 getline=3 fscanf=1 fgets=1 " + Self.siblingReads
        ),
        Scenario(
            name: "rename, unlink and mkdir into, out of and inside io fail; beside it they work",
            profile: files(
                "fail", #""errno": "EACCES", "path": "$DIR/io", "operations": ["rename", "unlink", "mkdir"]"#),
            probe: ["names", "$DIR"],
            expected:
                "rename-into=-1/EACCES rename-out=-1/EACCES renameat-within=-1/EACCES unlink=-1/EACCES unlinkat=-1/EACCES "
                + "mkdir=-1/EACCES mkdirat=-1/EACCES sibling-rename=0 sibling-unlink=0 sibling-mkdir=0 victim-left=1",
            files: ["io/victim", "io2/mover", "io2/victim"]
        ),
        Scenario(
            name: "times: the first two writes fail, then they succeed",
            profile: #"""
                {"entries": [{"point": "system.files", "match": {"path": "$DIR/io", "operations": ["write"]},
                              "provider": {"item": "enospc", "times": 2}}]}
                """#,
            probe: ["writes", "$DIR", "4"],
            expected: "writes=-1/ENOSPC,-1/ENOSPC,1,1"
        ),
        Scenario(
            name: "sequential: two failures, then the original",
            profile: #"""
                {"entries": [{"point": "system.files", "match": {"path": "$DIR/io", "operations": ["write"]},
                              "provider": {"sequential": ["enospc", "enospc", "original"]}}]}
                """#,
            probe: ["writes", "$DIR", "4"],
            expected: "writes=-1/ENOSPC,-1/ENOSPC,1,1"
        ),
        Scenario(
            name: "times on an item aimed at writes: the open before them does not use the count",
            profile: #"""
                {"entries": [{"point": "system.files",
                              "provider": {"item": "enospc", "parameters": {"path": "$DIR/io", "operations": ["write"]}, "times": 1}}]}
                """#,
            probe: ["writes", "$DIR", "5"],
            expected: "writes=-1/ENOSPC,1,1,1,1"
        ),
        Scenario(
            name: "a sequential step with times: 2 covers two calls (the CHAOS line's 2*enospc->original)",
            profile: #"""
                {"entries": [{"point": "system.files", "match": {"path": "$DIR/io", "operations": ["write"]},
                              "provider": {"sequential": [{"item": "enospc", "times": 2}, "original"]}}]}
                """#,
            probe: ["writes", "$DIR", "4"],
            expected: "writes=-1/ENOSPC,-1/ENOSPC,1,1"
        ),
        Scenario(
            name: "getenv set and unset, seen by getenv and secure_getenv",
            profile: #"""
                {"entries": [
                  {"point": "system.getenv", "provider": {"item": "set", "parameters": {"name": "CHAOS_CONFORMANCE_SET", "value": "chaos"}}},
                  {"point": "system.getenv", "provider": {"item": "unset", "parameters": {"name": "CHAOS_CONFORMANCE_UNSET"}}}
                ]}
                """#,
            probe: [
                "getenv", "CHAOS_CONFORMANCE_SET", "CHAOS_CONFORMANCE_UNSET", "secure:CHAOS_CONFORMANCE_SET",
                "CHAOS_CONFORMANCE_OTHER",
            ],
            expected:
                "CHAOS_CONFORMANCE_SET=chaos CHAOS_CONFORMANCE_UNSET=(unset) secure:CHAOS_CONFORMANCE_SET=chaos CHAOS_CONFORMANCE_OTHER=real"
        ),
        Scenario(
            // With a modifier, chaos run cannot set the variable at the start: its interceptor answers.
            name: "getenv set once (times under match), then the real value",
            profile: #"""
                {"entries": [{"point": "system.getenv", "match": {"name": "CHAOS_CONFORMANCE_SET"},
                              "provider": {"item": "set", "parameters": {"name": "CHAOS_CONFORMANCE_SET", "value": "chaos"}, "times": 1}}]}
                """#,
            probe: ["getenv", "CHAOS_CONFORMANCE_SET", "CHAOS_CONFORMANCE_SET"],
            expected: "CHAOS_CONFORMANCE_SET=chaos CHAOS_CONFORMANCE_SET=real",
            folders: []
        ),
        Scenario(
            name: "dns-failure for localhost by host pattern (any case)",
            profile:
                #"{"entries": [{"point": "system.getaddrinfo", "provider": {"item": "dns-failure", "parameters": {"host": "localhost"}}}]}"#,
            probe: ["dns", "localhost", "LocalHost", "hostbyname:localhost"],
            expected: "localhost=EAI_NONAME LocalHost=EAI_NONAME hostbyname:localhost=HOST_NOT_FOUND",
            folders: []
        ),
        Scenario(
            name: "dns-failure for another name pattern leaves localhost resolving",
            profile:
                #"{"entries": [{"point": "system.getaddrinfo", "provider": {"item": "dns-failure", "parameters": {"host": "*.chaos.invalid"}}}]}"#,
            probe: ["dns", "localhost", "api.chaos.invalid", "hostbyname:localhost"],
            expected: "localhost=ok api.chaos.invalid=EAI_NONAME hostbyname:localhost=ok",
            folders: []
        ),
        Scenario(
            name: "clock offset -1d through every realtime reading and file times; monotonic untouched",
            profile:
                #"{"entries": [{"point": "system.clock", "provider": {"item": "offset", "parameters": {"by": "-1d"}}}]}"#,
            probe: ["clock", "$DIR"],
            expected:
                "time=-86400 gettimeofday=-86400 realtime=-86400 realtime-coarse=-86400 tai=-86400 timespec_get=-86400 ftime=-86400 "
                + "monotonic=0 stat-mtime=-86400 fstat-mtime=-86400 statx-mtime=-86400 stat-age=0",
            folders: []
        ),
    ]

    /// `connect` refused on one port of real listeners, not on the other.
    /// Scenarios the seccomp delivery carries too (system.process, system.dir): each runs under
    /// the preload library, under the seccomp supervisor and in-process, with seed 5. The process probe
    /// never forks this process: every scenario fails its fork.
    static let everyDelivery: [Scenario] = [
        Scenario(
            name: "every process creation fails with EAGAIN, threads go on",
            profile: #"{"entries": [{"point": "system.process", "provider": "eagain"}]}"#, probe: ["process"],
            // glibc's popen reports ENOMEM whatever its spawn's error was.
            expected:
                "spawn=EAGAIN fork=-1/EAGAIN thread=0 system=127/EAGAIN popen=NULL/ENOMEM spawn-again=EAGAIN"
        ),
        Scenario(
            name: "times 2: the first two process creations fail, the rest go on",
            profile: #"{"entries": [{"point": "system.process", "provider": {"item": "eagain", "times": 2}}]}"#,
            probe: ["process"],
            expected: "spawn=EAGAIN fork=-1/EAGAIN thread=0 system=3/0 popen=ok/0 spawn-again=0"
        ),
        Scenario(
            name: "omit *.tmp from the listings of io, not of io2",
            profile:
                #"{"entries": [{"point": "system.dir", "provider": {"item": "omit", "parameters": {"name": "*.tmp", "path": "$DIR/io"}}}]}"#,
            probe: ["dirs", "$DIR"], expected: "io=a.txt,c.txt io2=a.txt,b.tmp,c.txt", files: listed
        ),
        Scenario(
            name: "omit one name in two, chosen by the name from the seed",
            profile:
                #"{"entries": [{"point": "system.dir", "provider": {"item": "omit", "parameters": {"every": 2, "path": "$DIR/io"}}}]}"#,
            probe: ["dirs", "$DIR"], expected: "io=a.txt io2=a.txt,b.tmp,c.txt", files: listed
        ),
        Scenario(
            name: "io is gone (ENOENT) when opened, io2 is listed",
            profile:
                #"{"entries": [{"point": "system.dir", "provider": {"item": "enoent", "parameters": {"path": "$DIR/io"}}}]}"#,
            probe: ["dirs", "$DIR"], expected: "io=-1/ENOENT io2=a.txt,b.tmp,c.txt", files: listed
        ),
    ]

    /// The files the dirs probe lists.
    private static let listed = ["io/a.txt", "io/b.tmp", "io/c.txt", "io2/a.txt", "io2/b.tmp", "io2/c.txt"]

    static let refusedOnOnePort = Scenario(
        name: "connect refused for one port of 127.0.0.1",
        profile:
            #"{"entries": [{"point": "system.connect", "provider": {"item": "refused", "parameters": {"host": "127.0.0.1", "port": $PORT_REFUSED}}}]}"#,
        probe: ["connect", "127.0.0.1", "refused:$PORT_REFUSED", "open:$PORT_OPEN"],
        expected: "refused=-1/ECONNREFUSED open=0",
        folders: []
    )

    /// `connect` timing out after its wait.
    static let timeout = Scenario(
        name: "connect timeout waits before ETIMEDOUT",
        profile:
            #"{"entries": [{"point": "system.connect", "provider": {"item": "timeout", "parameters": {"after": "300ms", "port": $PORT_OPEN}}}]}"#,
        probe: ["connect-wait", "127.0.0.1", "$PORT_OPEN", "300"],
        expected: "connect=-1/ETIMEDOUT waited=enough",
        folders: []
    )

    /// Half of 200 writes, drawn from the seed.
    static let draws = Scenario(
        name: "probability 0.5 over 200 writes",
        profile:
            #"{"entries": [{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "$DIR/io", "operations": ["write"]}, "probability": 0.5}}]}"#,
        probe: ["draws", "$DIR", "200"],
        expected: ""
    )

    /// A transaction of one INSERT under enospc, in a database set up in journal mode
    /// `mode`. With a rollback journal (delete) the INSERT already writes — the page's old
    /// contents, to the journal — so it fails and the transaction ends; the profile names
    /// the database's folder. With a write-ahead log only COMMIT writes the log; the
    /// profile names the log file, as the shared-memory index beside it (grown by writes)
    /// would otherwise fail the INSERT with SQLITE_IOERR.
    static func sqliteTransaction(mode: String) -> Scenario {
        let path = mode == "wal" ? "$DIR/db/shop.db-wal" : "$DIR/db"
        return Scenario(
            name: "sqlite transaction under enospc, journal mode \(mode)",
            profile:
                #"{"entries": [{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "\#(path)", "operations": ["write", "sync"]}}}]}"#,
            probe: ["sqlite-commit", "$DIR/db/shop.db"],
            expected: mode == "wal"
                ? #"open=0 begin=0 insert=0 commit=13:"database or disk is full" close=0"#
                : #"open=0 begin=0 insert=13:"database or disk is full" commit=1:"cannot commit - no transaction is active" close=0"#,
            folders: ["db"]
        )
    }
}
#endif

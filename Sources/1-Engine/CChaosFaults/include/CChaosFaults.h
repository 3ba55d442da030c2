// CChaosFaults: the one system fault engine of ChaosKit (plain C11, no Swift runtime).
//
// This header is the contract between three parties:
//   - the Swift side, which compiles a profile's system entries into a *plan* (the text
//     format of Docs/FaultPlan.md, or the same thing built in memory from that text);
//   - the deliveries that intercept calls: the LD_PRELOAD library behind `chaos run`
//     (Sources/2-Deliveries/CChaosPreload) and the in-process GOT hooks (ChaosHooks);
//   - the readers of counters (issue #14: `chaos ctl`, the console).
//
// Division of labour. The engine *decides*; it never performs the intercepted call, never
// sleeps and never sets errno. A delivery describes the call in a `chaos_call`, asks
// `chaos_fault_decide`, and executes the returned `chaos_outcome`: wait `delay_ns`, then
// do the action (call the original, fail with `ret`/`err`, shorten the transfer, report a
// shifted time, answer a getenv...). Apart from the counters, decisions have no side
// effects, so the same plan, seed and sequence of calls give the same outcomes.
//
// Threads. Every function here is thread-safe. `chaos_fault_decide` takes no lock and does
// not allocate (except the first time it meets a descriptor it never saw opened, whose
// path it then records): it reads the active plan inside a short read section (two atomic
// increments), and a plan replaced by `chaos_plan_install`/`chaos_plan_clear` is freed only
// after every read section that could still see it has ended. Installing waits for those
// sections (they are short: a decision walks at most CHAOS_PLAN_MAX_NODES nodes).
//
// Calls the engine makes itself (reading a fd's path, the cwd, the real time) go straight
// to the kernel with syscall(2), so an interposer can call the engine from inside an
// interposed function without recursion.
#ifndef CCHAOS_FAULTS_H
#define CCHAOS_FAULTS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// MARK: - Points, operations, functions

/// The system points a plan entry can target. Values are stable (they are in counters and
/// in the errno table); the text names are in `chaos_fault_point_name`.
typedef enum chaos_point {
    CHAOS_POINT_FILES = 0,   ///< "files": open…mkdir, read/write families, stdio
    CHAOS_POINT_CONNECT = 1, ///< "connect": connect(2)
    CHAOS_POINT_ACCEPT = 2,  ///< "accept": accept/accept4
    CHAOS_POINT_SEND = 3,    ///< "send": send/sendto/sendmsg, write-family calls on sockets
    CHAOS_POINT_RECV = 4,    ///< "recv": recv/recvfrom/recvmsg, read-family calls on sockets
    CHAOS_POINT_DNS = 5,     ///< "dns": getaddrinfo, gethostbyname, gethostbyname2, gethostbyname_r
    CHAOS_POINT_GETENV = 6,  ///< "getenv": getenv, secure_getenv
    CHAOS_POINT_CLOCK = 7,   ///< "clock": realtime readings (and monotonic when opted in)
    CHAOS_POINT_STAT = 8,    ///< "stat": stat, lstat, fstat, fstatat, statx (attributes a file seems to have)
    CHAOS_POINT_PROCESS = 9, ///< "process": fork, vfork, clone (never a thread), posix_spawn, system, popen
    CHAOS_POINT_DIR = 10, ///< "dir": opendir/fdopendir, readdir/readdir64 (seccomp: openat of a directory, getdents64)
    CHAOS_POINT_MEMORY = 11, ///< "memory": malloc, calloc, realloc, the aligned allocators, anonymous mmap
    CHAOS_POINT_COUNT = 12
} chaos_point;

/// File operations (bits). An entry's `ops=` condition is a set of these; every
/// intercepted file function belongs to exactly one (see the function table).
enum {
    CHAOS_OP_OPEN = 1u << 0,     ///< "open": open, openat, creat, fopen, fdopen, freopen
    CHAOS_OP_READ = 1u << 1,     ///< "read": read, pread, readv, preadv, fread/fgets; source side of copies
    CHAOS_OP_WRITE = 1u << 2,    ///< "write": write, pwrite, writev, pwritev, fwrite…fflush; target side of copies
    CHAOS_OP_SYNC = 1u << 3,     ///< "sync": fsync, fdatasync, sync_file_range
    CHAOS_OP_TRUNCATE = 1u << 4, ///< "truncate": ftruncate, fallocate, posix_fallocate
    CHAOS_OP_RENAME = 1u << 5,   ///< "rename": rename, renameat, renameat2
    CHAOS_OP_UNLINK = 1u << 6,   ///< "unlink": unlink, unlinkat (also with AT_REMOVEDIR)
    CHAOS_OP_MKDIR = 1u << 7,    ///< "mkdir": mkdir, mkdirat
    CHAOS_OP_CLOSE = 1u << 8,    ///< "close": close, fclose of a stream with nothing left to write
    CHAOS_OP_CREATE = 1u << 9,   ///< "create": an open that creates or truncates (O_CREAT, O_TRUNC, O_TMPFILE),
                                 ///< creat, link, symlink; such an open is an "open" call too
    CHAOS_OP_ALL_FILES = (1u << 10) - 1
};

// The function table (CHAOS_FN_*) and the errnos each function can return (its own header).
#include "chaos_functions.h"

/// "files", "connect", … (NULL when out of range).
const char *chaos_fault_point_name(int32_t point);

/// "system.files", "system.getaddrinfo", …: the point's name in ChaosKit and in profiles.
const char *chaos_fault_point_public_name(int32_t point);

/// "open", "read", … for one CHAOS_OP_* bit (NULL otherwise).
const char *chaos_fault_op_name(uint32_t op);

/// The engine's tables of names (names.c), for the Swift side to check its own against.
typedef enum chaos_table {
    CHAOS_TABLE_POINTS = 0,            ///< value: CHAOS_POINT_*
    CHAOS_TABLE_OPERATIONS = 1,        ///< value: CHAOS_OP_* bit
    CHAOS_TABLE_FAMILIES = 2,          ///< value: CHAOS_FAMILY_* bit
    CHAOS_TABLE_ROLES = 3,             ///< value: CHAOS_ROLE_* bit
    CHAOS_TABLE_CLOCKS = 4,            ///< value: CHAOS_CLOCKSRC_* bit
    CHAOS_TABLE_NODE_KINDS = 5,        ///< value: CHAOS_NODE_*
    CHAOS_TABLE_UNITS = 6,             ///< duration units a person writes; value: nanoseconds
    CHAOS_TABLE_PLAN_UNITS = 7,        ///< the units plan text takes; value: nanoseconds
    CHAOS_TABLE_ERRNOS = 8,            ///< errno and EAI names; value: the number
    CHAOS_TABLE_PUBLIC_POINTS = 9,     ///< "system.files" …: the points' names in ChaosKit; value: CHAOS_POINT_*
    CHAOS_TABLE_DESCRIPTOR_KINDS = 10, ///< value: CHAOS_DESCRIPTOR_* bit
} chaos_table;

/// The `index`-th name of `table` (from 0), with its value in `*value` (may be NULL); NULL
/// past the end.
const char *chaos_fault_table_name(int32_t table, int32_t index, int64_t *value);

// MARK: - Plans

/// Node kinds of a provider tree (the text keyword in quotes).
typedef enum chaos_node_kind {
    CHAOS_NODE_ORIGINAL = 0,     ///< "original": call the real function; final
    CHAOS_NODE_PASS = 1,         ///< "pass": this entry does not act; the next entry decides
    CHAOS_NODE_FAIL = 2,         ///< "fail": return `ret` (default -1) with errno `err`
    CHAOS_NODE_SHORT = 3,        ///< "short": transfer at most `max` bytes (0: half, at least 1)
    CHAOS_NODE_OFFSET = 4,       ///< "offset": clock reads real + `ns`
    CHAOS_NODE_FROZEN = 5,       ///< "frozen": clock reads `ns` (ns since 1970)
    CHAOS_NODE_SPEED = 6,        ///< "speed": clock reads anchor + (real - anchor) * factor
    CHAOS_NODE_SET = 7,          ///< "set": getenv answers `value`
    CHAOS_NODE_UNSET = 8,        ///< "unset": getenv answers NULL
    CHAOS_NODE_SEQUENTIAL = 9,   ///< "sequential": call i uses child i (weights repeat a child); the last repeats
    CHAOS_NODE_COMPOSITE = 10,   ///< "composite": first case whose conditions hold; else `otherwise`
    CHAOS_NODE_PROBABILITY = 11, ///< "probability": child with probability p (drawn per entry call index), else pass
    CHAOS_NODE_TIMES = 12,       ///< "times": child for the first n calls reaching it, then pass
    CHAOS_NODE_DELAY = 13,       ///< "delay": wait `ns`, then child
    CHAOS_NODE_ASK = 14,         ///< "ask": `id=N`; the in-process delivery asks its chaos_ask_fn (CChaosIntercept.h)
    CHAOS_NODE_VIRTUAL = 15,     ///< "virtual": clock reads the process's virtual time (`at=` its realtime start,
                                 ///< default now; `flow=yes`: it also runs at real pace); monotonic clocks and
    ///< sleeps follow it too. Installing it starts virtual time; a plan without it stops it.
    CHAOS_NODE_AT = 16,         ///< "at": child at the listed calls reaching it (`calls=2,5`, counted from 1; `none`:
                                ///< never), else pass: one fault placed at the K-th targeted call (`chaos explore`)
    CHAOS_NODE_POWER_LOSS = 17, ///< "power-loss": power is lost at a call that changes a file (`torn=yes`: the
                                ///< last unsynced write of each file keeps a seeded prefix of its sectors)
    CHAOS_NODE_CORRUPT = 18,    ///< "corrupt": the bytes a read returns or a write stores are changed (`bytes=N`
                                ///< per call, at `offset=K` or seeded positions, `with=flip|zero|random`)
    CHAOS_NODE_ATTRIBUTES = 19, ///< "attributes": stat answers `size=`, `mtime=` (ns since 1970), `mode=` (octal
                                ///< permission bits), `nlink=` instead of the file's own (chaos_outcome_attributes)
    CHAOS_NODE_PACE = 20,       ///< "pace": send/recv move at most `rate=` bytes a second per connection
    CHAOS_NODE_LIMIT = 21,      ///< "limit": after `bytes=` in its direction the connection ends (`then=reset|close`)
    CHAOS_NODE_STALL = 22,      ///< "stall": data stops for `for=`, then the connection ends (`then=reset|close`)
    CHAOS_NODE_OMIT = 23,       ///< "omit": a directory read leaves out the entries named `name=GLOB`, or one entry
                                ///< in `every=N`, chosen by its name and the entry's seed ("." and ".." never)
    CHAOS_NODE_LINGER = 24,     ///< "linger": closing a socket waits `by=` first (toxiproxy's slow_close; send only)
} chaos_node_kind;

/// Actions an outcome can carry (what the delivery must do after waiting delay_ns).
typedef enum chaos_action {
    CHAOS_ACT_ORIGINAL = 0,    ///< call the real function (after the delay, if any)
    CHAOS_ACT_FAIL = 2,        ///< return `ret` with errno `err` without calling the real function
    CHAOS_ACT_SHORT = 3,       ///< call the real function with the byte count cut to `max_bytes` (0: half, >= 1)
    CHAOS_ACT_OFFSET = 4,      ///< clock: report real + clock_ns
    CHAOS_ACT_FROZEN = 5,      ///< clock: report clock_ns
    CHAOS_ACT_SPEED = 6,       ///< clock: report anchor_ns + (real - anchor_ns) * factor
    CHAOS_ACT_SET = 7,         ///< getenv: answer `value` (lives as long as the process)
    CHAOS_ACT_UNSET = 8,       ///< getenv: answer NULL
    CHAOS_ACT_ASK = 9,         ///< an `ask` node decided: the delivery asks whoever answers `ask_id` (in-process: the
                               ///< registered chaos_ask_fn) and executes that answer; the preload library, which has
                               ///< no one to ask, calls the original
    CHAOS_ACT_VIRTUAL = 10,    ///< clock: report the virtual time (chaos_vt_reading_ns); sleeps wait for it
    CHAOS_ACT_POWER_LOSS = 11, ///< files: the call does not complete; power is lost (chaos_durability.h)
    CHAOS_ACT_CORRUPT = 12,    ///< the call moves its bytes changed: chaos_outcome_corrupt
    CHAOS_ACT_ATTRIBUTES = 13, ///< stat: the call goes on; its answer then says what `attributes` names
    CHAOS_ACT_OMIT = 14,       ///< dir: the read goes on, without the entries chaos_outcome_omits names
} chaos_action;

/// Socket families for `family=` conditions (bits).
enum {
    CHAOS_FAMILY_INET = 1,
    CHAOS_FAMILY_INET6 = 2,
    CHAOS_FAMILY_UNIX = 4,
    CHAOS_FAMILY_OTHER = 8,
    CHAOS_FAMILY_ANY = 15
};

/// Socket roles for `role=` conditions (bits): a socket this process connected (client),
/// one it got from accept (server), or any other (e.g. socketpair, inherited).
enum { CHAOS_ROLE_CLIENT = 1, CHAOS_ROLE_SERVER = 2, CHAOS_ROLE_OTHER = 4, CHAOS_ROLE_ANY = 7 };

/// Clock sources for `clock=` conditions (bits).
enum {
    CHAOS_CLOCKSRC_REALTIME = 1,        ///< CLOCK_REALTIME, gettimeofday, time, timespec_get, ftime
    CHAOS_CLOCKSRC_REALTIME_COARSE = 2, ///< CLOCK_REALTIME_COARSE
    CHAOS_CLOCKSRC_TAI = 4,             ///< CLOCK_TAI
    CHAOS_CLOCKSRC_REALTIME_ALARM = 8,  ///< CLOCK_REALTIME_ALARM
    CHAOS_CLOCKSRC_MONOTONIC = 16,      ///< CLOCK_MONOTONIC, _RAW, _COARSE, BOOTTIME, BOOTTIME_ALARM (opt-in)
    CHAOS_CLOCKSRC_ANY = 31
};

/// Limits the parser enforces (a plan over them is refused with a located error).
enum {
    CHAOS_PLAN_MAX_ENTRIES = 256,
    CHAOS_PLAN_MAX_NODES = 256, ///< per entry
    CHAOS_PLAN_MAX_CASE_CONDITIONS = 8,
    CHAOS_PLAN_MAX_TEXT = 1 << 20, ///< bytes of plan text
    CHAOS_PLAN_MAX_STRING = 4096,  ///< bytes of one path pattern, host, name or value
};

/// A located parse error: 1-based line and column (column 0: the whole line or the end of
/// the text) and a message naming what is wrong and how to fix it.
typedef struct chaos_plan_error {
    int32_t line;
    int32_t column;
    char message[320];
} chaos_plan_error;

/// A parsed plan (opaque). Immutable once parsed, except for its counters.
typedef struct chaos_plan chaos_plan;

/// The version the parser reads and `chaos_plan_format` writes (first line: "chaos-plan 1").
#define CHAOS_PLAN_VERSION 1

/// Parses plan text (`length` bytes; NUL bytes are refused). Returns NULL and fills
/// `error` (when not NULL) if anything is wrong: nothing is half accepted. The result is
/// owned by the caller until given to `chaos_plan_install`.
chaos_plan *chaos_plan_parse(const char *text, size_t length, chaos_plan_error *error);

/// Frees a plan that was never installed.
void chaos_plan_free(chaos_plan *plan);

/// Writes the plan in canonical text form (what `chaos_plan_parse` reads back to an equal
/// plan) into `buffer`; returns the length it needs without the NUL (call with capacity 0
/// to measure), or -1 on error.
long chaos_plan_format(const chaos_plan *plan, char *buffer, size_t capacity);

/// Whether the plan has a `speed anchor=start` node (its delivery then decides the start
/// anchor before installing it: see chaos_fault_set_start_anchor).
int chaos_plan_needs_start_anchor(const chaos_plan *plan);

// What a delivery reads of a plan before it installs it (its own header).
#include "chaos_plan_entries.h"

/// Makes `plan` the active plan of the process (taking ownership) and returns 0. The
/// previous plan stops being used at once and is freed once no decision can still read
/// it. NULL clears (as `chaos_plan_clear`). Call indexes and node counters (times,
/// sequential) start at zero for the new plan, and so do its entries' counts, except those
/// given counts that outlive plans (`chaos_plan_count_into`).
/// `speed anchor=start` nodes take the start anchor (see chaos_fault_set_start_anchor).
/// Returns -1 (and changes nothing) when `plan` is already the active plan. Not for use
/// from a signal handler.
int chaos_plan_install(chaos_plan *plan);

/// Removes the active plan (every point back to the original, counters dropped).
void chaos_plan_clear(void);

/// Whether the active plan has an entry for `point` (one atomic load; the hot-path test).
int chaos_fault_point_active(int32_t point);

/// Bit i set when the active plan has an entry for point i (one atomic load).
uint32_t chaos_fault_active_points(void);

/// Generation of the active plan: changes on every install/clear (0: none ever installed).
uint64_t chaos_fault_plan_generation(void);

/// What the clock entries of the active plan ask of a delivery beyond readings (bits).
enum {
    CHAOS_CLOCK_FLAG_MONOTONIC = 1, ///< some clock entry has monotonic=yes
    CHAOS_CLOCK_FLAG_STAT = 2,      ///< some clock entry shifts file times (stat=yes, the default)
    CHAOS_CLOCK_FLAG_SLEEP = 4,     ///< some clock entry scales sleeps under speed (sleep=yes, the default)
    CHAOS_CLOCK_FLAG_VIRTUAL = 8,   ///< some clock entry is virtual time (chaos_plan_entry_clock_flags only)
};

/// CHAOS_CLOCK_FLAG_* of the active plan (0 when it has no clock entry).
uint32_t chaos_fault_clock_flags(void);

/// The real CLOCK_REALTIME / CLOCK_MONOTONIC instant `speed anchor=start` uses for plans
/// installed from now on. A preload library sets it once from the environment
/// (CHAOS_CLOCK_ANCHOR) or from the current time, so a process tree shares one anchor.
/// Without a call, each install takes the current time.
void chaos_fault_set_start_anchor(int64_t realtime_ns);

// MARK: - Virtual time (its own header)

#include "chaos_virtual_time.h"

// MARK: - Decisions

/// One intercepted call, as the delivery describes it. Zero-initialize, then fill what
/// the point uses; everything else is ignored.
typedef struct chaos_call {
    int32_t point;           ///< chaos_point
    int32_t fn;              ///< chaos_fn (selects the op and the errno table)
    int32_t fd;              ///< files/sockets: the descriptor (-1 for path-only calls)
    const char *path;        ///< files: absolute path (see chaos_path_reached); NULL: take fd's
    const char *path2;       ///< files: rename's second path (an entry matches when either does)
    int32_t special;         ///< files: 1 for a descriptor 0–2 the process inherited (only its exact path
                             ///< matches); /dev, /proc and /sys are recognized from the path itself
    int32_t family;          ///< sockets: CHAOS_FAMILY_* of the socket / address
    int32_t role;            ///< send/recv: CHAOS_ROLE_* of the socket
    const uint8_t *address;  ///< connect/accept: peer address bytes (4 or 16), NULL when unknown
    int32_t address_length;  ///< 4 (IPv4) or 16 (IPv6)
    int32_t port;            ///< connect: peer port; accept: local port (-1 when unknown)
    const char *name;        ///< getenv: the variable; dns: the host name
    int32_t clock_source;    ///< clock: CHAOS_CLOCKSRC_* bit of the reading
    int64_t real_ns;         ///< clock: the reading's real CLOCK_REALTIME (0: unknown), which then
                             ///< stamps the counters instead of a second reading of the clock
    int32_t creates;         ///< files: 1 for an open that creates or truncates (a "create" call too)
    int32_t descriptor_kind; ///< files, on a descriptor: its CHAOS_DESCRIPTOR_* bit. 0: the engine looks `fd`
                             ///< up in this process when it needs to; a delivery outside the program sets it,
                             ///< with `fd` the program's number and `path` NULL for one that is no file
    uint64_t size;           ///< memory: the bytes asked for (an `above=` condition compares them)
} chaos_call;

#include "chaos_streams.h"

#include "chaos_attributes.h"

/// What to do with a call.
typedef struct chaos_outcome {
    int32_t action;              ///< chaos_action
    int32_t entry;               ///< index of the deciding entry, -1 when none acted
    int64_t delay_ns;            ///< wait this long first (sum of the delay nodes passed)
    int64_t ret;                 ///< FAIL: the return value (-1, or an EAI_* code for dns)
    int32_t err;                 ///< FAIL: errno (0 for dns codes other than EAI_SYSTEM)
    int64_t max_bytes;           ///< SHORT: the most bytes to move (0: half of what was asked, >= 1)
    int64_t clock_ns;            ///< OFFSET: shift; FROZEN: the instant
    double factor;               ///< SPEED: rate
    int64_t anchor_ns;           ///< SPEED: the real instant time is scaled from
    const char *value;           ///< SET: the answer (never freed)
    int32_t monotonic;           ///< clock: 1 when the deciding entry also fakes monotonic clocks
    int32_t stat_times;          ///< clock: 1 when the deciding entry shifts file times (default)
    uint32_t ask_id;             ///< ASK: the `id=` of the ask node that decided
    int32_t torn;                ///< POWER_LOSS: 1 when the last unsynced write of each file is torn
    int32_t corrupt_with;        ///< CORRUPT: CHAOS_CORRUPT_* (flip, zero, random)
    int64_t corrupt_bytes;       ///< CORRUPT: how many bytes of the call's transfer change (>= 1)
    int64_t corrupt_offset;      ///< CORRUPT: where in the transfer they start (-1: positions drawn)
    uint64_t corrupt_seed;       ///< CORRUPT: the draws of this call (positions, random bytes); OMIT: the seed
    chaos_attributes attributes; ///< ATTRIBUTES: what the answer says instead
    chaos_stream_note stream;    ///< pace, limit, stall: what the delivery reports or ends (key 0: nothing)
    const char *omit_name;       ///< OMIT: the glob of the names left out (NULL: by `omit_every`)
    int64_t omit_every;          ///< OMIT: one name in this many is left out (0: by `omit_name`)
} chaos_outcome;

/// What a corrupted byte becomes.
enum { CHAOS_CORRUPT_FLIP = 0, CHAOS_CORRUPT_ZERO = 1, CHAOS_CORRUPT_RANDOM = 2 };

/// Decides `call` against the active plan: tries the point's entries in plan order; the
/// first whose tree ends in something other than `pass` decides. Returns 1 when the
/// outcome is anything but a plain original call (so the delivery has work to do), else 0
/// (`out` then says ORIGINAL with no delay). Counts the call on the entries it reached.
int chaos_fault_decide(const chaos_call *call, chaos_outcome *out);

/// Decides a call on descriptor `fd`, routed by what the table knows of it: a file goes to
/// the files point as `file_fn` (-1: not a files call), a socket to `socket_point` as
/// `socket_fn` (-1: none); anything else (pipes, unknown) is left alone. A file no files
/// entry can act on (by its path) is remembered per plan, so later calls on it cost a few
/// plain loads. Returns as `chaos_fault_decide` (when it returns 0, only `action`,
/// `entry` and `delay_ns` of `out` are set).
int chaos_fault_decide_fd(int fd, int32_t file_fn, int32_t socket_point, int32_t socket_fn, chaos_outcome *out);

/// CHAOS_FAMILY_* of a socket domain (AF_INET …).
int32_t chaos_call_family(int domain);

/// Fills `call`'s family, address and port from a sockaddr of `length` bytes (`address`
/// must outlive the decision: `call->address` points into it). A NULL address or one too
/// short for its family leaves the address unknown (port -1).
void chaos_call_describe_address(chaos_call *call, const void *address, size_t length);

/// The CHAOS_CLOCKSRC_* bit of a clock id (CLOCK_REALTIME …); 0 for clocks the clock
/// point never fakes (CPU-time clocks).
int32_t chaos_clock_source(int clock);

/// How many of `count` bytes a SHORT outcome moves: at most its `max_bytes`, or half
/// (at least 1) when it names none.
size_t chaos_outcome_short_count(const chaos_outcome *outcome, size_t count);

/// A copy of `text` that lives as long as the process (equal strings share one copy), as
/// the engine keeps `set` answers: for answers a delivery gets elsewhere (an `ask`). NULL
/// for NULL or when out of memory.
const char *chaos_fault_intern(const char *text);

/// Like `chaos_fault_decide` for a clock call, but counts nothing and draws as the next
/// call would: what the clock reads *now* (used for file times and sleeps).
int chaos_fault_peek_clock(int32_t clock_source, chaos_outcome *out);

/// The clock's constant fast path: when the active plan's only clock entry is a single
/// offset, frozen or speed node (without monotonic=yes), sets `fake_ns` to the reading of a
/// realtime clock whose real value is `real_ns`, counts it on that entry (seen and acted;
/// see chaos_fault_counters) and returns 1. Returns 0 otherwise: decide the call as usual.
/// No read section, no tree walk: a sequence lock and one counter.
int chaos_fault_clock_constant(int64_t real_ns, int64_t *fake_ns);

/// The reported time for `real_ns` under a clock outcome (ORIGINAL: unchanged).
int64_t chaos_fault_apply_clock(const chaos_outcome *outcome, int64_t real_ns);

/// What clock `clock` (a clockid_t), reading `real_ns`, reads under `outcome` of a clock
/// entry: unchanged for ORIGINAL; the virtual reading while virtual time runs; else the real
/// reading shifted, frozen or scaled, where clocks with their own origin (monotonic, TAI)
/// move by the realtime clock's shift at this instant. For a delivery that cannot tell one
/// thread of the program from another (the seccomp supervisor): it has no exempt threads.
int64_t chaos_fault_reading_ns(const chaos_outcome *outcome, int clock, int64_t real_ns);

/// The real clock the engine reads for its own purposes (last_fire_ns, `anchor=start`).
/// Default: the clock_gettime system call. A delivery that has the real function (from
/// dlsym(RTLD_NEXT), or saved before hooking) can pass it here to save a system call per
/// acted call. `clock` is a clockid_t.
struct timespec;
typedef int (*chaos_real_clock_fn)(int clock, struct timespec *now);
void chaos_fault_set_real_clock(chaos_real_clock_fn function);

/// The real time of clock id `clock` in ns, read with the system call itself (no
/// interposer, no hook can change it).
int64_t chaos_fault_real_ns(int clock);

// MARK: - What a clock outcome means for a call (its own header)

#include "chaos_outcomes.h"

/// The deterministic draw behind probability nodes, in [0, 1): the same arithmetic as a
/// ChaosKit `probability` modifier (SplitMix64 over the entry's seed, the node's salt and
/// `asked`, how many calls the node was asked about before this one). The same seed gives
/// the same draws in Swift, in-process and under `chaos run`.
double chaos_fault_draw(uint64_t entry_seed, uint64_t salt, uint64_t asked);

/// The seed of an entry on `point` in a plan seeded `plan_seed` that gives none itself
/// (`seed=` on its `entry` line): as ChaosKit derives it from a `Chaos` seed and the
/// point's name, so a profile's seed draws alike in-process and under `chaos run`.
uint64_t chaos_fault_entry_seed(uint64_t plan_seed, int32_t point);

// MARK: - Conditions outside a plan

/// The conditions of one `case` line, for testing calls outside any plan: the Swift side
/// evaluates providers it cannot compile (blocks, task scopes) with the same matching
/// rules as a composite node, paths and protected targets included.
typedef struct chaos_case_test chaos_case_test;

/// Parses `conditions` (the words after a case's child, e.g. `path=/srv/db ops=write,sync`)
/// for `point`; NULL with `error` filled when they do not parse.
chaos_case_test *chaos_case_test_make(int32_t point, const char *conditions, chaos_plan_error *error);

/// Whether every condition holds for `call` (its `path` already resolved).
int chaos_case_test_holds(const chaos_case_test *test, const chaos_call *call);

/// Frees a test made by chaos_case_test_make.
void chaos_case_test_free(chaos_case_test *test);

// MARK: - Counters

/// Per-entry counters of the active plan.
typedef struct chaos_entry_counters {
    int32_t point;           ///< chaos_point of the entry
    uint64_t seen;           ///< calls that reached the entry: not decided by an earlier entry, and for
                             ///< files on a path the entry can decide (its path conditions allow it).
                             ///< Always acted + passed: a call counts once its decision is made
    uint64_t acted;          ///< calls it answered with anything but the original
    uint64_t passed;         ///< calls it sent to the original or passed on
    int64_t last_fire_ns;    ///< real CLOCK_REALTIME of the last acted call (0: never)
    uint64_t last_fire_call; ///< the entry's call index (0-based) of that call
    uint64_t seed;           ///< the plan seed: with last_fire_call, what replays the call
    uint64_t generation;     ///< chaos_fault_plan_generation of the plan read
    int32_t last_fn;         ///< CHAOS_FN_* of the last act, + 1 (0: none known; clock acts are not noted)
    char last_target[120];   ///< what it was aimed at: a path, a host name, a variable ("" for the rest)
} chaos_entry_counters;

/// Copies entry `entry`'s counters of the active plan; 0 on success, -1 when there is no
/// such entry.
int chaos_fault_counters(int32_t entry, chaos_entry_counters *out);

/// The counts of one plan entry (opaque, reference counted), kept apart from the plan so
/// that they can outlive it. A delivery that replaces its plan to add, remove or switch
/// entries gives each entry of the new plan the counts the same entry had in the old one:
/// then no count is carried from plan to plan, and a call decided under the old plan while
/// the new one is installed counts once, for the entry that decided it.
typedef struct chaos_counts chaos_counts;

/// The counts of entry `entry` of `plan`, with a reference for the caller; NULL when there
/// is no such entry.
chaos_counts *chaos_plan_counts(const chaos_plan *plan, int32_t entry);

/// Makes entry `entry` of `plan`, which was never installed, count into `counts` (taking a
/// reference; the entry's own counts are dropped). 0, or -1 when there is no such entry,
/// the plan was installed, or `counts` are for another point.
int chaos_plan_count_into(chaos_plan *plan, int32_t entry, chaos_counts *counts);

#include "chaos_tally.h"
#include "chaos_reach.h"
#include "chaos_notice.h"
#include "chaos_durability.h"

/// Drops a reference to `counts` (NULL: nothing).
void chaos_counts_release(chaos_counts *counts);

/// Copies `counts` into `out` (its seed and generation are 0: counts belong to no plan).
void chaos_counts_read(const chaos_counts *counts, chaos_entry_counters *out);

/// Copies the label of entry `entry` of the active plan into `out` (cut to fit): 1, or 0
/// when it has none (`out` is then ""), -1 when there is no such entry.
int chaos_fault_entry_label(int32_t entry, char *out, size_t capacity);

/// Number of entries of the active plan (0 when none).
int32_t chaos_fault_entry_count(void);

/// The seed of the active plan (0 when none).
uint64_t chaos_fault_seed(void);

// MARK: - Paths and the descriptor table (their own header)

#include "chaos_paths.h"

// MARK: - UTF-8 (utf8.c)

/// The character at the start of `text` (`length` > 0 bytes): how many bytes it takes, and
/// in `*valid` whether it is well-formed UTF-8 (no overlong forms, surrogates or code points
/// past U+10FFFF). An ill-formed part counts as Swift's and Python's decoders count it (the
/// "maximal subpart", 1 to 3 bytes), so one U+FFFD written for it matches theirs.
size_t chaos_utf8_next(const char *text, size_t length, int *valid);

/// Whether `length` bytes of `text` are well-formed UTF-8; when not, `*bad` (if given) is
/// the offset of the first byte that is not.
int chaos_utf8_valid(const char *text, size_t length, size_t *bad);

/// The longest prefix of `text`, at most `limit` bytes, that does not split a character:
/// where a quote of input may be cut.
size_t chaos_utf8_cut(const char *text, size_t length, size_t limit);

/// `length` without a character cut short at the end of `text` (what a cut at a byte count
/// leaves, as the kernel's 15-byte program names do); other bytes are kept.
size_t chaos_utf8_trim_incomplete(const char *text, size_t length);

#ifdef __cplusplus
}
#endif

#endif

// The one table of names: points, file operations, socket families and roles, clocks, node
// kinds, duration units and errno names, as plan text and the control endpoint spell them.
// plan.c and errnos.c read these arrays; the Swift side reads them through
// chaos_fault_table_name, and a test (SharedNameTableTests) requires Swift's own names
// (SystemPointKind, FileOperationKind, SocketFamily, SocketRole, ClockSource, the plan
// compiler's node kinds, DurationText's units) to agree with them.
//
// Every array here is constant: nothing guards them.
#define _GNU_SOURCE
#include "internal.h"
#include "CChaosRules.h"

#include <errno.h>
#include <netdb.h>

// Indexed by CHAOS_POINT_*.
const char *const cf_point_names[] = {"files", "connect", "accept",  "send", "recv",   "dns", "getenv",
                                      "clock", "stat",    "process", "dir",  "memory", NULL};
_Static_assert(sizeof cf_point_names / sizeof cf_point_names[0] == CHAOS_POINT_COUNT + 1, "one name per point");
// What ChaosKit calls each point (an entry's seed derives from it, as in Swift); indexed
// by CHAOS_POINT_*.
const char *const cf_point_public_names[] = {"system.files",
                                             "system.connect",
                                             "system.accept",
                                             "system.send",
                                             "system.recv",
                                             "system.getaddrinfo",
                                             "system.getenv",
                                             "system.clock",
                                             "system.stat",
                                             "system.process",
                                             "system.dir",
                                             "system.memory",
                                             NULL};
_Static_assert(sizeof cf_point_public_names / sizeof cf_point_public_names[0] == CHAOS_POINT_COUNT + 1,
               "one per point");

const char *const cf_op_names[] = {"open",   "read",  "write", "sync",   "truncate", "rename",
                                   "unlink", "mkdir", "close", "create", NULL};
const uint32_t cf_op_bits[] = {CHAOS_OP_OPEN,   CHAOS_OP_READ,   CHAOS_OP_WRITE, CHAOS_OP_SYNC,  CHAOS_OP_TRUNCATE,
                               CHAOS_OP_RENAME, CHAOS_OP_UNLINK, CHAOS_OP_MKDIR, CHAOS_OP_CLOSE, CHAOS_OP_CREATE};
_Static_assert(sizeof cf_op_bits / sizeof cf_op_bits[0] + 1 == sizeof cf_op_names / sizeof cf_op_names[0],
               "one bit per operation");

const char *const cf_descriptor_kind_names[] = {"file", "pipe", "tty", "other", NULL};
const uint32_t cf_descriptor_kind_bits[] = {CHAOS_DESCRIPTOR_FILE, CHAOS_DESCRIPTOR_PIPE, CHAOS_DESCRIPTOR_TTY,
                                            CHAOS_DESCRIPTOR_OTHER};

const char *const cf_family_names[] = {"inet", "inet6", "unix", "other", NULL};
const uint32_t cf_family_bits[] = {CHAOS_FAMILY_INET, CHAOS_FAMILY_INET6, CHAOS_FAMILY_UNIX, CHAOS_FAMILY_OTHER};

const char *const cf_role_names[] = {"client", "server", "other", NULL};
const uint32_t cf_role_bits[] = {CHAOS_ROLE_CLIENT, CHAOS_ROLE_SERVER, CHAOS_ROLE_OTHER};

const char *const cf_clock_names[] = {"realtime", "realtime_coarse", "tai", "realtime_alarm", "monotonic", NULL};
const uint32_t cf_clock_bits[] = {CHAOS_CLOCKSRC_REALTIME, CHAOS_CLOCKSRC_REALTIME_COARSE, CHAOS_CLOCKSRC_TAI,
                                  CHAOS_CLOCKSRC_REALTIME_ALARM, CHAOS_CLOCKSRC_MONOTONIC};

// Indexed by CHAOS_NODE_*.
const char *const cf_kind_names[] = {
    "original",   "pass",       "fail",        "short", "offset", "frozen", "speed",   "set", "unset",
    "sequential", "composite",  "probability", "times", "delay",  "ask",    "virtual", "at",  "power-loss",
    "corrupt",    "attributes", "pace",        "limit", "stall",  "omit",   "linger",  NULL};
_Static_assert(sizeof cf_kind_names / sizeof cf_kind_names[0] == CHAOS_NODE_LINGER + 2, "one name per node kind");

// Units are CChaosRules' (chaos_rules_units): plan text takes the ones a program writes
// (no `µs`, no weeks), a person's text all of them. A plan number without a unit is ns.
// EWOULDBLOCK is EAGAIN here: listed after it, so a value's name is EAGAIN.
const cf_errno_name cf_errno_names[] = {
    {"EPERM", EPERM},
    {"ENOENT", ENOENT},
    {"EINTR", EINTR},
    {"EIO", EIO},
    {"ENXIO", ENXIO},
    {"EBADF", EBADF},
    {"EAGAIN", EAGAIN},
    {"EWOULDBLOCK", EWOULDBLOCK},
    {"ENOMEM", ENOMEM},
    {"EACCES", EACCES},
    {"EFAULT", EFAULT},
    {"EBUSY", EBUSY},
    {"EEXIST", EEXIST},
    {"EXDEV", EXDEV},
    {"ENODEV", ENODEV},
    {"ENOTDIR", ENOTDIR},
    {"EISDIR", EISDIR},
    {"EINVAL", EINVAL},
    {"ENFILE", ENFILE},
    {"EMFILE", EMFILE},
    {"ETXTBSY", ETXTBSY},
    {"EFBIG", EFBIG},
    {"ENOSPC", ENOSPC},
    {"ESPIPE", ESPIPE},
    {"EROFS", EROFS},
    {"EMLINK", EMLINK},
    {"EPIPE", EPIPE},
    {"ENAMETOOLONG", ENAMETOOLONG},
    {"ENOSYS", ENOSYS},
    {"ENOTEMPTY", ENOTEMPTY},
    {"ELOOP", ELOOP},
    {"ENONET", ENONET},
    {"EPROTO", EPROTO},
    {"EOVERFLOW", EOVERFLOW},
    {"ENOTSOCK", ENOTSOCK},
    {"EDESTADDRREQ", EDESTADDRREQ},
    {"EMSGSIZE", EMSGSIZE},
    {"EPROTOTYPE", EPROTOTYPE},
    {"ENOPROTOOPT", ENOPROTOOPT},
    {"EOPNOTSUPP", EOPNOTSUPP},
    {"EAFNOSUPPORT", EAFNOSUPPORT},
    {"EADDRINUSE", EADDRINUSE},
    {"EADDRNOTAVAIL", EADDRNOTAVAIL},
    {"ENETDOWN", ENETDOWN},
    {"ENETUNREACH", ENETUNREACH},
    {"ECONNABORTED", ECONNABORTED},
    {"ECONNRESET", ECONNRESET},
    {"ENOBUFS", ENOBUFS},
    {"EISCONN", EISCONN},
    {"ENOTCONN", ENOTCONN},
    {"ETIMEDOUT", ETIMEDOUT},
    {"ECONNREFUSED", ECONNREFUSED},
    {"EHOSTDOWN", EHOSTDOWN},
    {"EHOSTUNREACH", EHOSTUNREACH},
    {"EALREADY", EALREADY},
    {"EINPROGRESS", EINPROGRESS},
    {"EDQUOT", EDQUOT},
    {"EAI_ADDRFAMILY", EAI_ADDRFAMILY},
    {"EAI_AGAIN", EAI_AGAIN},
    {"EAI_BADFLAGS", EAI_BADFLAGS},
    {"EAI_FAIL", EAI_FAIL},
    {"EAI_FAMILY", EAI_FAMILY},
    {"EAI_MEMORY", EAI_MEMORY},
    {"EAI_NODATA", EAI_NODATA},
    {"EAI_NONAME", EAI_NONAME},
    {"EAI_SERVICE", EAI_SERVICE},
    {"EAI_SOCKTYPE", EAI_SOCKTYPE},
    {"EAI_SYSTEM", EAI_SYSTEM},
    {NULL, 0},
};

/// The index-th name of `table` and its value (a CHAOS_* number or bit, nanoseconds for a
/// unit, the errno or EAI code), or NULL past the end.
const char *chaos_fault_table_name(int32_t table, int32_t index, int64_t *value) {
    if (index < 0) return NULL;
    const char *const *names = NULL;
    const uint32_t *bits = NULL;
    switch (table) {
    case CHAOS_TABLE_POINTS: names = cf_point_names; break;
    case CHAOS_TABLE_PUBLIC_POINTS: names = cf_point_public_names; break;
    case CHAOS_TABLE_OPERATIONS:
        names = cf_op_names;
        bits = cf_op_bits;
        break;
    case CHAOS_TABLE_FAMILIES:
        names = cf_family_names;
        bits = cf_family_bits;
        break;
    case CHAOS_TABLE_ROLES:
        names = cf_role_names;
        bits = cf_role_bits;
        break;
    case CHAOS_TABLE_DESCRIPTOR_KINDS:
        names = cf_descriptor_kind_names;
        bits = cf_descriptor_kind_bits;
        break;
    case CHAOS_TABLE_CLOCKS:
        names = cf_clock_names;
        bits = cf_clock_bits;
        break;
    case CHAOS_TABLE_NODE_KINDS: names = cf_kind_names; break;
    case CHAOS_TABLE_UNITS:
    case CHAOS_TABLE_PLAN_UNITS:
        for (const chaos_rules_time_unit *u = chaos_rules_units; u->name; u++) {
            if (table == CHAOS_TABLE_PLAN_UNITS && !u->in_plan_text) continue;
            if (index-- > 0) continue;
            if (value) *value = u->nanoseconds;
            return u->name;
        }
        return NULL;
    case CHAOS_TABLE_ERRNOS:
        for (const cf_errno_name *e = cf_errno_names; e->name; e++, index--) {
            if (index > 0) continue;
            if (value) *value = e->value;
            return e->name;
        }
        return NULL;
    default: return NULL;
    }
    for (int32_t i = 0; names[i]; i++) {
        if (i != index) continue;
        if (value) *value = bits ? (int64_t)bits[i] : i;
        return names[i];
    }
    return NULL;
}

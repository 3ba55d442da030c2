// Connections under the stream nodes (pace, limit, stall on send and recv): what each has
// moved in each direction, when its paced bytes may move next, and when it stalled. The
// state is keyed by the socket's inode, so every descriptor naming one connection shares
// it, in a fixed table of slots that are reused, oldest first, once it is full.
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define STREAM_SLOTS 1024
#define STREAM_PROBES 16
#define NS 1000000000LL

typedef struct stream_state {
    _Atomic uint64_t key;    ///< the socket's inode + 1 (0: free)
    _Atomic int64_t used_ns; ///< when a decision last used it (monotonic), for reuse
    _Atomic int64_t moved[2];
    _Atomic int64_t next_ns[2]; ///< pace: when the next paced bytes may move (monotonic)
    _Atomic int64_t stalled_ns; ///< stall: when data stopped (0: not yet)
} stream_state;

// Slots are claimed and reset by compare-and-swap on `key`; their counters are atomics.
static stream_state states[STREAM_SLOTS];

static int64_t monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * NS + now.tv_nsec;
}

/// The state of connection `key`, claimed (and reset) when it has none yet.
static stream_state *state_of(uint64_t key, int64_t now) {
    uint64_t start = (key * 0x9E3779B97F4A7C15ull) >> 54; // 10 bits: STREAM_SLOTS
    stream_state *oldest = NULL;
    for (int tries = 0; tries < 4; tries++) {
        for (int i = 0; i < STREAM_PROBES; i++) {
            stream_state *s = &states[(start + (uint64_t)i) % STREAM_SLOTS];
            uint64_t held = atomic_load_explicit(&s->key, memory_order_acquire);
            if (held == key) {
                atomic_store_explicit(&s->used_ns, now, memory_order_relaxed);
                return s;
            }
            if (held == 0) {
                uint64_t free_key = 0;
                if (!atomic_compare_exchange_strong(&s->key, &free_key, key)) continue;
                atomic_store(&s->used_ns, now);
                return s;
            }
            if (!oldest || atomic_load(&s->used_ns) < atomic_load(&oldest->used_ns)) oldest = s;
        }
        // Every slot of the window holds another connection: the least recently used one's
        // connection starts afresh if it is seen again.
        uint64_t was = atomic_load(&oldest->key);
        if (atomic_compare_exchange_strong(&oldest->key, &was, key)) {
            for (int d = 0; d < 2; d++) {
                atomic_store(&oldest->moved[d], 0);
                atomic_store(&oldest->next_ns[d], 0);
            }
            atomic_store(&oldest->stalled_ns, 0);
            atomic_store(&oldest->used_ns, now);
            return oldest;
        }
        oldest = NULL;
    }
    return NULL;
}

/// The call's connection: its socket's inode + 1, or 0 when the descriptor cannot be read.
static uint64_t connection_of(int fd) {
    struct stat info;
    if (fd < 0 || syscall(SYS_fstat, fd, &info) != 0 || !S_ISSOCK(info.st_mode)) return 0;
    return (uint64_t)info.st_ino + 1;
}

/// Fills `out` for a connection that ends here: a reset, or a close (a receive reads the
/// end of the stream, a send fails as on a socket whose peer has gone).
static void ends(chaos_outcome *out, int32_t end, int direction) {
    out->action = CHAOS_ACT_FAIL;
    out->stream.end = end;
    if (end == CHAOS_STREAM_END_CLOSE && direction == 1) {
        out->ret = 0;
        out->err = 0;
    } else {
        out->ret = -1;
        out->err = end == CHAOS_STREAM_END_CLOSE ? EPIPE : ECONNRESET;
    }
}

bool cf_stream_close_passes(int32_t kind) {
    switch (kind) {
    case CHAOS_NODE_SEQUENTIAL:
    case CHAOS_NODE_COMPOSITE:
    case CHAOS_NODE_PROBABILITY:
    case CHAOS_NODE_TIMES:
    case CHAOS_NODE_AT:
    case CHAOS_NODE_LINGER: return false;
    default: return true;
    }
}

int chaos_stream_lingers(void) { return atomic_load_explicit(&cf_stream_lingers, memory_order_acquire); }

int cf_stream_decide(const cf_node *node, const chaos_call *call, chaos_outcome *out, int64_t *delay) {
    if (node->kind == CHAOS_NODE_LINGER) {
        if (call->fn != CHAOS_FN_SOCKET_CLOSE) return 0;
        *delay += node->ns; // then the close itself
        return 1;
    }
    const chaos_fn_info *info = chaos_fault_fn_info(call->fn);
    if (!info || !info->transfers) return 0;
    uint64_t key = connection_of(call->fd);
    int64_t now = monotonic_ns();
    stream_state *s = key ? state_of(key, now) : NULL;
    if (!s) return 0;
    int direction = call->point == CHAOS_POINT_RECV;
    out->stream = (chaos_stream_note){key, direction, CHAOS_STREAM_END_NONE, 0, 0};
    switch (node->kind) {
    case CHAOS_NODE_PACE: {
        // Time for a hundredth of a second's bytes at a time, taken from the connection's
        // schedule before the call; chaos_stream_moved gives back what it did not move, so a
        // small message waits only for the bytes before it.
        int64_t rate = (int64_t)node->n, chunk = rate / 100 > 0 ? rate / 100 : 1;
        int64_t span = (int64_t)((double)chunk * 1e9 / (double)rate);
        int64_t next = atomic_load(&s->next_ns[direction]), start;
        do {
            start = next > now ? next : now;
        } while (!atomic_compare_exchange_weak(&s->next_ns[direction], &next, start + span));
        *delay += start - now;
        out->action = CHAOS_ACT_SHORT;
        out->max_bytes = chunk;
        out->stream.reserved = chunk;
        out->stream.rate = rate;
        return 1;
    }
    case CHAOS_NODE_LIMIT: {
        int64_t moved = atomic_load(&s->moved[direction]), limit = (int64_t)node->n;
        if (moved >= limit) {
            ends(out, node->stream_end, direction);
            return 1;
        }
        out->action = CHAOS_ACT_SHORT;
        out->max_bytes = limit - moved;
        return 1;
    }
    case CHAOS_NODE_STALL: {
        int64_t none = 0;
        atomic_compare_exchange_strong(&s->stalled_ns, &none, now);
        int64_t until = atomic_load(&s->stalled_ns) + node->ns;
        if (until > now) *delay += until - now;
        ends(out, node->stream_end, direction);
        return 1;
    }
    default: return 0;
    }
}

int chaos_stream_answer(int32_t kind, uint64_t amount, int64_t ns, int32_t end, const chaos_call *call,
                        chaos_outcome *out) {
    if (!call || !out || (kind != CHAOS_NODE_PACE && kind != CHAOS_NODE_LIMIT && kind != CHAOS_NODE_STALL)) return 0;
    if (kind == CHAOS_NODE_PACE && amount < 1) return 0;
    cf_node node = {0};
    node.kind = kind;
    node.n = amount;
    node.ns = ns;
    node.stream_end = end;
    int64_t delay = 0;
    if (!cf_stream_decide(&node, call, out, &delay)) return 0;
    out->delay_ns += delay;
    return 1;
}

void chaos_stream_moved(const chaos_stream_note *note, int64_t moved) {
    if (!note || !note->key) return;
    stream_state *s = state_of(note->key, monotonic_ns());
    if (!s) return;
    int direction = note->direction ? 1 : 0;
    if (moved > 0) atomic_fetch_add(&s->moved[direction], moved);
    if (note->rate > 0 && note->reserved > (moved > 0 ? moved : 0)) {
        int64_t unused = note->reserved - (moved > 0 ? moved : 0);
        atomic_fetch_sub(&s->next_ns[direction], (int64_t)((double)unused * 1e9 / (double)note->rate));
    }
}

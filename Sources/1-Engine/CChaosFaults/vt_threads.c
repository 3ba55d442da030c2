// Virtual time, threads on real time: the exempt threads' table (virtual.c has the clock).
#define _GNU_SOURCE
#include "virtual.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

// MARK: - Threads on real time
//
// A thread the test did not start (a server's event loop, a heartbeat, a log flusher) may
// need real time while the rest of the process runs on virtual time. Exempt threads are
// kept by kernel id in a small lock-free table; the count lives in `cf_vt` so that the
// clock's fast path pays one relaxed load while nobody is exempt.

enum { VT_EXEMPT = 64 };
static _Atomic int32_t exempt_ids[VT_EXEMPT];                   ///< 0: free
static pthread_mutex_t exempt_lock = PTHREAD_MUTEX_INITIALIZER; ///< serializes changes

/// The caller's id, cached: gettid is a system call, and an exempt thread's every clock
/// reading asks. A forked child's thread has a new id, so the cache is dropped at fork.
static _Thread_local pid_t cached_thread_id __attribute__((tls_model("initial-exec")));
// Registers the fork handler once (pthread_once guards it).
static pthread_once_t fork_reset_once = PTHREAD_ONCE_INIT;
static void forget_thread_id(void) { cached_thread_id = 0; }
static void register_fork_reset(void) { pthread_atfork(NULL, NULL, forget_thread_id); }

int32_t chaos_vt_current_thread(void) {
    if (!cached_thread_id) {
        pthread_once(&fork_reset_once, register_fork_reset);
        cached_thread_id = (pid_t)syscall(SYS_gettid);
    }
    return cached_thread_id;
}

int cf_vt_is_exempt(pid_t tid) {
    for (int i = 0; i < VT_EXEMPT; i++)
        if (atomic_load_explicit(&exempt_ids[i], memory_order_relaxed) == tid) return 1;
    return 0;
}

/// Depth of chaos_vt_real_time_scope on this thread (each level also counts in
/// cf_vt.exempt_threads, so that the fast path looks).
static _Thread_local int real_time_depth __attribute__((tls_model("initial-exec")));

int chaos_vt_thread_exempt(void) {
    if (!atomic_load_explicit(&cf_vt.exempt_threads, memory_order_acquire)) return 0;
    return real_time_depth > 0 || cf_vt_is_exempt(chaos_vt_current_thread());
}

void chaos_vt_real_time_scope(int enter) {
    if (enter) {
        real_time_depth++;
        atomic_fetch_add_explicit(&cf_vt.exempt_threads, 1, memory_order_release);
    } else if (real_time_depth > 0) {
        real_time_depth--;
        atomic_fetch_sub_explicit(&cf_vt.exempt_threads, 1, memory_order_release);
    }
}

static int thread_exists(pid_t tid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d", (int)tid);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return 0;
    syscall(SYS_close, fd);
    return 1;
}

int chaos_vt_set_thread_exempt(int32_t tid, int exempt) {
    if (tid == 0) tid = chaos_vt_current_thread();
    if (tid < 0) return ESRCH;
    pthread_mutex_lock(&exempt_lock);
    int result = 0, slot = -1;
    for (int i = 0; i < VT_EXEMPT; i++) {
        pid_t held = atomic_load_explicit(&exempt_ids[i], memory_order_relaxed);
        if (held && !thread_exists(held)) { // exited: its id may come back for a stranger
            atomic_store_explicit(&exempt_ids[i], 0, memory_order_relaxed);
            atomic_fetch_sub_explicit(&cf_vt.exempt_threads, 1, memory_order_release);
            held = 0;
        }
        if (held == tid) slot = i;
    }
    if (exempt && slot < 0) {
        if (!thread_exists(tid))
            result = ESRCH;
        else {
            result = ENOSPC;
            for (int i = 0; i < VT_EXEMPT && result; i++) {
                if (atomic_load_explicit(&exempt_ids[i], memory_order_relaxed)) continue;
                atomic_store_explicit(&exempt_ids[i], tid, memory_order_relaxed);
                atomic_fetch_add_explicit(&cf_vt.exempt_threads, 1, memory_order_release);
                result = 0;
            }
        }
    } else if (!exempt && slot >= 0) {
        atomic_store_explicit(&exempt_ids[slot], 0, memory_order_relaxed);
        atomic_fetch_sub_explicit(&cf_vt.exempt_threads, 1, memory_order_release);
    }
    pthread_mutex_unlock(&exempt_lock);
    return result;
}

int32_t chaos_vt_exempt_threads(int32_t *ids, int32_t capacity) {
    int32_t count = 0;
    for (int i = 0; i < VT_EXEMPT; i++) {
        pid_t held = atomic_load_explicit(&exempt_ids[i], memory_order_relaxed);
        if (!held) continue;
        if (ids && count < capacity) ids[count] = held;
        count++;
    }
    return count;
}

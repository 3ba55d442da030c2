// Virtual time when nobody can advance it any more: a probe the delivery names says so
// (chaos_vt_set_advancer_probe), and the watchdog then lets virtual time flow on from where
// it stands, so that the waits it held go on in real time instead of for ever.
#define _GNU_SOURCE
#include "virtual.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

// Set once, before or while virtual time runs; read by the watchdog.
static const char *(*_Atomic advancer_probe)(void);

int cf_vt_has_advancer_probe(void) { return atomic_load(&advancer_probe) != NULL; }

void chaos_vt_set_advancer_probe(const char *(*probe)(void)) {
    pthread_once(&cf_vt_once, cf_vt_init_once);
    atomic_store(&advancer_probe, probe);
    pthread_mutex_lock(&cf_vt_lock);
    cf_vt_notify(); // the watchdog looks at once
    pthread_mutex_unlock(&cf_vt_lock);
}

/// Virtual time flows on from where it stands, at real pace: sleepers' and timers' deadlines
/// come in real time. Under cf_vt_lock.
static void flow_from_now_locked(void) {
    if (atomic_load(&cf_vt.flowing)) return;
    int64_t now = cf_vt_now();
    // Readers ignore the anchor until `flowing` is set, which is stored last.
    atomic_store(&cf_vt.anchor, cf_vt_real_mono());
    atomic_store(&cf_vt.base, now);
    atomic_store_explicit(&cf_vt.flowing, 1, memory_order_release);
    settime_fn settime = cf_vt_saved_settime ? cf_vt_saved_settime : cf_vt_raw_settime;
    for (int i = 0; i < VT_TIMERS; i++)
        if (cf_vt_timers[i].fd >= 0 && cf_vt_timers[i].deadline > 0) cf_vt_arm_real(&cf_vt_timers[i], settime, now);
    cf_vt_notify();
}

const char *cf_vt_advancer_gone(void) {
    const char *(*probe)(void) = atomic_load(&advancer_probe);
    return probe && !atomic_load(&cf_vt.flowing) ? probe() : NULL;
}

void cf_vt_flow_unadvanceable_locked(const char *why) {
    if (atomic_load(&cf_vt.flowing)) return; // already said
    int held = 0;
    for (vt_sleeper *s = cf_vt_sleepers; s; s = s->next) held++;
    for (int i = 0; i < VT_TIMERS; i++)
        if (cf_vt_timers[i].fd >= 0 && cf_vt_timers[i].deadline > 0) held++;
    flow_from_now_locked();
    char program[256] = "", text[768];
    long length = syscall(SYS_readlink, "/proc/self/exe", program, sizeof program - 1);
    program[length > 0 ? length : 0] = 0;
    snprintf(text, sizeof text,
             "chaos: process %d (%s): nobody can advance virtual time (%s), so it flows on from where it stands, "
             "in real time; %d wait%s it held go%s on in real time\n",
             (int)syscall(SYS_getpid), program, why, held, held == 1 ? "" : "s", held == 1 ? "es" : "");
    syscall(SYS_write, 2, text, strlen(text));
}

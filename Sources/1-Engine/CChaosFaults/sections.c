// Read sections: a reader adds itself to readers[epoch & 1] and re-checks the epoch (so it
// is counted under the parity it will be waited for); a writer swaps what readers see
// (the active plan, a descriptor's path), flips the epoch and waits until the old parity
// has drained. Writers are serialized by sync_lock; readers never wait.
#define _GNU_SOURCE
#include "internal.h"
#include "chaos_fast_clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// The epoch's parity names the readers' counter new sections count in; both atomics.
static _Atomic uint64_t epoch;
static _Atomic int64_t readers[2];
// Serializes cf_synchronize's writers (a spin lock: no allocation, usable anywhere).
static _Atomic int sync_lock;

_Thread_local int cf_section_depth __attribute__((tls_model("initial-exec")));

unsigned cf_read_enter(void) {
    cf_section_depth++;
    for (;;) {
        uint64_t e = atomic_load(&epoch);
        unsigned parity = (unsigned)(e & 1);
        atomic_fetch_add(&readers[parity], 1);
        if (atomic_load(&epoch) == e) return parity;
        atomic_fetch_sub(&readers[parity], 1);
    }
}

void cf_read_leave(unsigned parity) {
    atomic_fetch_sub(&readers[parity], 1);
    cf_section_depth--;
}

void cf_synchronize(void) {
    cf_spin_lock(&sync_lock);
    uint64_t e = atomic_fetch_add(&epoch, 1);
    while (atomic_load(&readers[e & 1]) != 0) syscall(SYS_sched_yield);
    cf_spin_unlock(&sync_lock);
}

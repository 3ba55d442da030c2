// Sections and grace periods: the read side of a quiescent-state scheme, so that a call
// can read a point's newest entry without a lock or a reference count. Hook sections (the
// re-entrancy guard of the generic C hooks) and point sections (Swift injection points)
// each have a thread-local counter, odd while inside; entering and leaving are plain
// stores to it. Whoever retires an object issues
// membarrier(2), which puts a full barrier in every running thread: afterwards a thread
// either shows an odd counter (it may hold the old object; wait for the counter to move)
// or will read the new state. Where membarrier is unavailable, readers fence themselves.
//
// The registry lists heap slots, one per live thread, pointing at the thread's state.
// A thread's exit clears its slot under the registry lock, and every read of another
// thread's state happens under that lock, so no one reads thread-local memory that is gone.
#define _GNU_SOURCE
#include "CChaosGrace.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

struct chaos_reader_slot {
    struct chaos_thread_state *state; // NULL while free; guarded by registry_lock
    uint64_t owner;                   // bumped when a thread takes the slot; registry_lock
    struct chaos_reader_slot *next;   // append-only list
};

struct chaos_grace {
    size_t count;
    // A thread seen inside a section: its slot, which owner that was, and its counters then.
    // A new thread can reuse both the slot and the exited thread's thread-local memory,
    // so the owner number, not the state's address, tells whether it is still that thread.
    struct {
        struct chaos_reader_slot *slot;
        uint64_t owner;
        uint64_t sections;
        uint64_t point_sections;
    } waiting[];
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct chaos_reader_slot *registry; // guarded by registry_lock
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static int readers_fence; // set once in setup, before any thread registers
__thread struct chaos_thread_state chaos_thread;

static void thread_exit(void *value) {
    struct chaos_reader_slot *slot = value;
    pthread_mutex_lock(&registry_lock);
    slot->state = NULL;
    pthread_mutex_unlock(&registry_lock);
    // Hooked calls made by later destructors run the original: the thread is untracked.
    chaos_thread.status = 3;
    chaos_thread.slot = NULL;
}

static void setup(void) {
    pthread_key_create(&exit_key, thread_exit);
#if defined(__linux__) && defined(__NR_membarrier)
    long supported = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (supported < 0 || !(supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
        syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0) {
        readers_fence = 1;
    }
#else
    readers_fence = 1;
#endif
}

int chaos_thread_register(void) {
    if (chaos_thread.status == 3) return 0; // exiting: the thread is untracked
    if (chaos_thread.status != 0) return 1;
    pthread_once(&setup_once, setup);
    pthread_mutex_lock(&registry_lock);
    struct chaos_reader_slot *slot = NULL;
    for (struct chaos_reader_slot *s = registry; s; s = s->next) {
        if (!s->state) {
            slot = s;
            break;
        }
    }
    if (!slot) {
        slot = calloc(1, sizeof *slot);
        if (slot) {
            slot->next = registry;
            registry = slot;
        }
    }
    if (slot) {
        slot->state = &chaos_thread;
        slot->owner++;
    }
    pthread_mutex_unlock(&registry_lock);
    if (!slot) return 0; // out of memory: the thread stays untracked
    chaos_thread.errno_location = &errno;
    chaos_thread.slot = slot;
    pthread_setspecific(exit_key, slot);
    chaos_thread.status = readers_fence ? 2 : 1;
    return 1;
}

int chaos_hook_enter_slow(void) {
    // Exiting or unregistrable: behave as nested, the original runs.
    if (!chaos_thread_register()) return 0;
    if (chaos_thread.status == 2) {
        uint64_t sections = __atomic_load_n(&chaos_thread.sections, __ATOMIC_RELAXED);
        if (sections & 1) return 0;
        __atomic_store_n(&chaos_thread.sections, sections + 1, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        return 1;
    }
    return chaos_hook_enter();
}

uint64_t chaos_point_enter_slow(void) {
    if (!chaos_thread_register()) return CHAOS_POINT_UNPROTECTED;
    return chaos_point_enter();
}

int chaos_hook_in_section(void) { return (int)(__atomic_load_n(&chaos_thread.sections, __ATOMIC_RELAXED) & 1); }

static void barrier_all_threads(void) {
    pthread_once(&setup_once, setup);
#if defined(__linux__) && defined(__NR_membarrier)
    if (!readers_fence && syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return;
#endif
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

// The record chaos_grace_start returns when it had no memory for a real one: it counts as
// elapsed once a scan finds no section of any kind running (later, never sooner).
static chaos_grace unknown_sections = {0};

// Which sections a grace period waits for.
enum { HOOK_SECTIONS = 1, POINT_SECTIONS = 2 };

// Reads the counters of the kinds asked for (the others read as 0, "not inside").
static int in_section(const struct chaos_thread_state *state, int kinds, uint64_t *sections, uint64_t *point_sections) {
    *sections = (kinds & HOOK_SECTIONS) ? __atomic_load_n(&state->sections, __ATOMIC_ACQUIRE) : 0;
    *point_sections = (kinds & POINT_SECTIONS) ? __atomic_load_n(&state->point_sections, __ATOMIC_ACQUIRE) : 0;
    return ((*sections | *point_sections) & 1) != 0;
}

static int any_section_running(int kinds) {
    uint64_t sections, point_sections;
    for (struct chaos_reader_slot *s = registry; s; s = s->next) {
        if (s->state && in_section(s->state, kinds, &sections, &point_sections)) return 1;
    }
    return 0;
}

static chaos_grace *grace_start(int kinds) {
    pthread_mutex_lock(&registry_lock);
    chaos_grace *grace = NULL;
    if (any_section_running(kinds)) {
        size_t slots = 0;
        for (struct chaos_reader_slot *s = registry; s; s = s->next) slots++;
        grace = malloc(sizeof *grace + slots * sizeof grace->waiting[0]);
        if (grace) {
            size_t count = 0;
            for (struct chaos_reader_slot *s = registry; s; s = s->next) {
                uint64_t sections, point_sections;
                if (s->state && in_section(s->state, kinds, &sections, &point_sections)) {
                    grace->waiting[count].slot = s;
                    grace->waiting[count].owner = s->owner;
                    grace->waiting[count].sections = sections;
                    grace->waiting[count].point_sections = point_sections;
                    count++;
                }
            }
            grace->count = count;
        } else {
            grace = &unknown_sections;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return grace;
}

chaos_grace *chaos_grace_start(void) {
    barrier_all_threads();
    return grace_start(HOOK_SECTIONS | POINT_SECTIONS);
}

chaos_grace *chaos_grace_start_points(void) {
    // Point sections enter with a sequentially consistent store; this fence pairs with it.
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    pthread_once(&setup_once, setup);
    return grace_start(POINT_SECTIONS);
}

int chaos_grace_elapsed(const chaos_grace *grace) {
    if (!grace) return 1;
    int elapsed = 1;
    pthread_mutex_lock(&registry_lock);
    if (grace == &unknown_sections) {
        elapsed = !any_section_running(HOOK_SECTIONS | POINT_SECTIONS);
    } else {
        for (size_t i = 0; i < grace->count && elapsed; i++) {
            struct chaos_reader_slot *slot = grace->waiting[i].slot;
            // A slot now empty or owned by another thread: the thread seen running has exited.
            if (!slot->state || slot->owner != grace->waiting[i].owner) continue;
            // A section seen running (odd) holds the grace period until its counter moves.
            uint64_t sections = grace->waiting[i].sections, point_sections = grace->waiting[i].point_sections;
            if (((sections & 1) && __atomic_load_n(&slot->state->sections, __ATOMIC_ACQUIRE) == sections) ||
                ((point_sections & 1) &&
                 __atomic_load_n(&slot->state->point_sections, __ATOMIC_ACQUIRE) == point_sections)) {
                elapsed = 0;
            }
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return elapsed;
}

void chaos_grace_free(chaos_grace *grace) {
    if (grace != &unknown_sections) free(grace);
}

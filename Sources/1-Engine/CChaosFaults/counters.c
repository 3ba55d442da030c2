// The counts of plan entries, and the fast path's tallies of the readings it answered.
//
// A decision counts its call once, in the counts of the entry that decided it: `acted`
// when it acted, `passed` when it sent the call to the original or on to later entries.
// Seen is no word of its own but their sum, so counts read at any moment add up, and a call
// still being decided is not counted yet. Counts live apart from plans: a delivery that
// reinstalls its entries (the control endpoint, in-process recompiles) gives the new plan's
// entry the counts the old one had (chaos_plan_count_into), so a call decided under the old
// plan while the new one is installed still counts once, for the entry that decided it,
// and nothing is carried from plan to plan.
#define _GNU_SOURCE
#include "internal.h"
#include "chaos_fast_clock.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/// The last id handed to counts; ids are never reused.
static _Atomic uint64_t last_id;

chaos_counts *cf_counts_make(int32_t point) {
    chaos_counts *counts = calloc(1, sizeof *counts);
    if (!counts) return NULL;
    atomic_init(&counts->references, 1);
    counts->id = atomic_fetch_add_explicit(&last_id, 1, memory_order_relaxed) + 1;
    counts->point = point;
    return counts;
}

// MARK: - Tallies of the fast path (chaos_fast_clock.h)

// A thread's tally is listed at its first fast reading and leaves the list when the thread
// exits (a pthread key's destructor moves its readings into their counts); a forked child
// keeps only its own thread's. A tally holds the readings of one counts at a time, named by
// id: the thread moves them into those counts (`fast`) before it tallies for others, and
// readings for counts that are gone are dropped. Readers take the lock, so they see a
// tally's readings either there or in the counts, never in both or neither.

// The calling thread's tally (per thread: the thread itself writes it).
_Thread_local cf_fast_tally cf_fast_mine;
static pthread_mutex_t tallies_lock = PTHREAD_MUTEX_INITIALIZER;
static cf_fast_tally *tallies;  ///< threads that made fast readings; under tallies_lock
static chaos_counts *published; ///< live counts the fast path was published for; under tallies_lock
// The key whose destructor retires a thread's tally; made once (tally_once guards it).
static pthread_key_t tally_key;
static pthread_once_t tally_once = PTHREAD_ONCE_INIT;

/// The live counts with this id, if the fast path was published for them. Under tallies_lock.
static chaos_counts *published_counts(uint64_t id) {
    for (chaos_counts *counts = published; counts; counts = counts->next)
        if (counts->id == id) return counts;
    return NULL;
}

/// Moves the readings of `tally` into the counts they were made for. Under tallies_lock,
/// on the tally's own thread (the only one that adds to it).
static void settle(cf_fast_tally *tally) {
    uint64_t calls = atomic_load_explicit(&tally->calls, memory_order_relaxed);
    chaos_counts *counts = calls ? published_counts(atomic_load_explicit(&tally->counts, memory_order_relaxed)) : NULL;
    if (counts) {
        counts->fast += calls;
        int64_t last = atomic_load_explicit(&tally->last_ns, memory_order_relaxed);
        if (last > counts->fast_last_ns) counts->fast_last_ns = last;
    }
    atomic_store_explicit(&tally->calls, 0, memory_order_relaxed);
    atomic_store_explicit(&tally->last_ns, 0, memory_order_relaxed);
}

static void tally_leave(void *tally_pointer) {
    cf_fast_tally *tally = tally_pointer;
    pthread_mutex_lock(&tallies_lock);
    for (cf_fast_tally **link = &tallies; *link; link = &(*link)->next) {
        if (*link != tally) continue;
        *link = tally->next;
        break;
    }
    settle(tally);
    tally->state = -1; // readings in later destructors go straight to their counts
    pthread_mutex_unlock(&tallies_lock);
}

static void tallies_after_fork(void) {
    pthread_mutex_init(&tallies_lock, NULL);
    tallies = cf_fast_mine.state == 1 ? &cf_fast_mine : NULL;
    if (tallies) tallies->next = NULL;
}

static void tallies_init(void) {
    pthread_key_create(&tally_key, tally_leave);
    pthread_atfork(NULL, NULL, tallies_after_fork);
}

void cf_fast_count_slow(uint64_t id, int64_t real_ns) {
    cf_fast_tally *mine = &cf_fast_mine;
    int first = mine->state == 0;
    if (first) pthread_once(&tally_once, tallies_init);
    pthread_mutex_lock(&tallies_lock);
    if (mine->state == -1) {
        chaos_counts *counts = published_counts(id);
        if (counts) {
            counts->fast++;
            if (real_ns > counts->fast_last_ns) counts->fast_last_ns = real_ns;
        }
        pthread_mutex_unlock(&tallies_lock);
        return;
    }
    if (first) {
        mine->next = tallies;
        tallies = mine;
        mine->state = 1;
    }
    settle(mine);
    atomic_store_explicit(&mine->counts, id, memory_order_relaxed);
    atomic_store_explicit(&mine->calls, 1, memory_order_relaxed);
    if (real_ns) atomic_store_explicit(&mine->last_ns, real_ns, memory_order_relaxed);
    pthread_mutex_unlock(&tallies_lock);
    if (first) pthread_setspecific(tally_key, mine);
}

void cf_fast_count_many(uint64_t id, uint64_t calls, int64_t real_ns) {
    if (!calls) return;
    pthread_mutex_lock(&tallies_lock);
    chaos_counts *counts = published_counts(id);
    if (counts) {
        counts->fast += calls;
        if (real_ns > counts->fast_last_ns) counts->fast_last_ns = real_ns;
    }
    pthread_mutex_unlock(&tallies_lock);
}

void cf_counts_publish(chaos_counts *counts) {
    pthread_mutex_lock(&tallies_lock);
    if (!counts->published) {
        counts->published = true;
        counts->next = published;
        published = counts;
    }
    pthread_mutex_unlock(&tallies_lock);
}

// MARK: - Counts

void cf_counts_retain(chaos_counts *counts) { atomic_fetch_add_explicit(&counts->references, 1, memory_order_relaxed); }

void chaos_counts_release(chaos_counts *counts) {
    if (!counts || atomic_fetch_sub_explicit(&counts->references, 1, memory_order_acq_rel) != 1) return;
    pthread_mutex_lock(&tallies_lock);
    for (chaos_counts **link = &published; counts->published && *link; link = &(*link)->next) {
        if (*link != counts) continue;
        *link = counts->next;
        break;
    }
    pthread_mutex_unlock(&tallies_lock);
    free(counts);
}

// Called before counts are read (cf_fast_collect_with); set by a delivery at its start.
static _Atomic(void (*)(void)) collector;

void cf_fast_collect_with(void (*collect)(void)) { atomic_store(&collector, collect); }

void chaos_counts_read(const chaos_counts *counts, chaos_entry_counters *out) {
    memset(out, 0, sizeof *out);
    if (!counts) return;
    void (*collect)(void) = atomic_load(&collector);
    if (collect) collect(); // readings counted elsewhere come in first
    uint64_t acted = atomic_load_explicit(&counts->acted, memory_order_relaxed);
    uint64_t passed = atomic_load_explicit(&counts->passed, memory_order_relaxed);
    out->last_fire_call = atomic_load_explicit(&counts->last_fire_call, memory_order_relaxed);
    out->last_fire_ns = atomic_load_explicit(&counts->last_fire_ns, memory_order_relaxed);
    chaos_last_act_read((chaos_last_act *)&counts->last, &out->last_fn, out->last_target, sizeof out->last_target);
    pthread_mutex_lock(&tallies_lock);
    uint64_t fast = counts->fast;
    int64_t fast_last_ns = counts->fast_last_ns;
    for (cf_fast_tally *tally = tallies; tally; tally = tally->next) {
        if (atomic_load_explicit(&tally->counts, memory_order_relaxed) != counts->id) continue;
        fast += atomic_load_explicit(&tally->calls, memory_order_relaxed);
        int64_t at = atomic_load_explicit(&tally->last_ns, memory_order_relaxed);
        if (at > fast_last_ns) fast_last_ns = at;
    }
    pthread_mutex_unlock(&tallies_lock);
    out->point = counts->point;
    out->acted = acted + fast;
    out->passed = passed;
    out->seen = out->acted + out->passed;
    // Readings the fast path answered count as seen and acted; it acts on every call, so
    // its last one is the entry's last.
    if (fast) {
        out->last_fire_call = out->seen - 1;
        if (fast_last_ns > out->last_fire_ns) out->last_fire_ns = fast_last_ns;
    }
}

// MARK: - Counts of plan entries

chaos_counts *chaos_plan_counts(const chaos_plan *plan, int32_t entry) {
    if (!plan || entry < 0 || entry >= plan->count) return NULL;
    chaos_counts *counts = plan->entries[entry].counts;
    cf_counts_retain(counts);
    return counts;
}

int chaos_plan_count_into(chaos_plan *plan, int32_t entry, chaos_counts *counts) {
    // Once installed, decisions read the pointer without a lock: it must not change.
    if (!plan || !counts || plan->generation || entry < 0 || entry >= plan->count) return -1;
    cf_entry *target = &plan->entries[entry];
    if (counts->point != target->point) return -1;
    if (target->counts == counts) return 0;
    cf_counts_retain(counts);
    chaos_counts_release(target->counts);
    target->counts = counts;
    return 0;
}

// MARK: - Mirrors

// A delivery that reports across a process tree (`chaos run`) gives each entry a pair of
// counters in memory every process of the tree maps: decisions add to it as they count,
// so a process killed or replaced by exec has counted all the same. Readings the clock's
// fast path answered are tallied per thread; a process adds them when it ends
// (chaos_fault_mirror_flush), and a forked child only those it made itself.

static chaos_counts *mirrored[CHAOS_PLAN_MAX_MIRRORS]; ///< under tallies_lock
static int mirrored_count;                             ///< under tallies_lock
static pthread_once_t mirror_once = PTHREAD_ONCE_INIT;

/// The fast readings of `counts` so far, settled or not. Under tallies_lock.
static uint64_t fast_total(const chaos_counts *counts) {
    uint64_t total = counts->fast;
    for (cf_fast_tally *tally = tallies; tally; tally = tally->next)
        if (atomic_load_explicit(&tally->counts, memory_order_relaxed) == counts->id)
            total += atomic_load_explicit(&tally->calls, memory_order_relaxed);
    return total;
}

static void mirror_before_fork(void) { pthread_mutex_lock(&tallies_lock); }
static void mirror_parent_after_fork(void) { pthread_mutex_unlock(&tallies_lock); }

/// In a forked child: the readings so far are the parent's to add.
static void mirror_child_after_fork(void) {
    for (int i = 0; i < mirrored_count; i++) mirrored[i]->mirrored_fast = fast_total(mirrored[i]);
    pthread_mutex_unlock(&tallies_lock);
}

static void mirror_init(void) { pthread_atfork(mirror_before_fork, mirror_parent_after_fork, mirror_child_after_fork); }

int chaos_plan_mirror_counts(chaos_plan *plan, int32_t entry, uint64_t *pair) {
    if (!plan || !pair || plan->generation || entry < 0 || entry >= plan->count) return -1;
    pthread_once(&mirror_once, mirror_init);
    chaos_counts *counts = plan->entries[entry].counts;
    pthread_mutex_lock(&tallies_lock);
    int listed = counts->mirror != NULL;
    if (!listed && mirrored_count == CHAOS_PLAN_MAX_MIRRORS) {
        pthread_mutex_unlock(&tallies_lock);
        return -1;
    }
    if (!listed) {
        cf_counts_retain(counts);
        mirrored[mirrored_count++] = counts;
    }
    counts->mirror = (_Atomic uint64_t *)pair;
    counts->mirrored_fast = fast_total(counts);
    pthread_mutex_unlock(&tallies_lock);
    return 0;
}

void chaos_last_act_read(chaos_last_act *slot, int32_t *fn, char *target, size_t capacity) {
    *fn = 0;
    if (capacity) target[0] = 0;
    // A note is written in well under a microsecond: a few tries, then none is said.
    for (int tries = 0; tries < 10000; tries++) {
        int32_t free_slot = 0;
        if (!atomic_compare_exchange_weak_explicit((_Atomic int32_t *)&slot->busy, &free_slot, 1, memory_order_acquire,
                                                   memory_order_relaxed))
            continue;
        *fn = slot->fn;
        if (capacity) {
            size_t length = strnlen(slot->target, sizeof slot->target - 1);
            if (length >= capacity) length = capacity - 1;
            memcpy(target, slot->target, length);
            target[length] = 0;
        }
        atomic_store_explicit((_Atomic int32_t *)&slot->busy, 0, memory_order_release);
        return;
    }
}

int chaos_plan_mirror_last_act(chaos_plan *plan, int32_t entry, chaos_last_act *slot) {
    if (!plan || !slot || plan->generation || entry < 0 || entry >= plan->count) return -1;
    plan->entries[entry].counts->mirror_last = slot;
    return 0;
}

void chaos_fault_mirror_flush(void) {
    pthread_mutex_lock(&tallies_lock);
    for (int i = 0; i < mirrored_count; i++) {
        chaos_counts *counts = mirrored[i];
        uint64_t total = fast_total(counts);
        if (total > counts->mirrored_fast)
            atomic_fetch_add_explicit(&counts->mirror[0], total - counts->mirrored_fast, memory_order_relaxed);
        counts->mirrored_fast = total;
    }
    pthread_mutex_unlock(&tallies_lock);
}

// MARK: - Counters a process tree shares

int32_t chaos_plan_shared_counter_count(const chaos_plan *plan, int32_t entry) {
    if (!plan || entry < 0 || entry >= plan->count) return 0;
    return 1 + plan->entries[entry].count;
}

int chaos_plan_share_counters(chaos_plan *plan, int32_t entry, uint64_t *counters) {
    if (!plan || !counters || plan->generation || entry < 0 || entry >= plan->count) return -1;
    cf_entry *target = &plan->entries[entry];
    target->shared_calls = (_Atomic uint64_t *)&counters[0];
    for (int32_t i = 0; i < target->count; i++) target->nodes[i].shared = (_Atomic uint64_t *)&counters[1 + i];
    return 0;
}

// What a clock outcome means for a call (chaos_outcomes.h): the one place where both
// deliveries learn what a reading reports, how a sleep is carried out, when a timed wait
// ends and how far file times move. Stateless beyond the active plan and virtual time.
#define _GNU_SOURCE
#include <sys/stat.h>
#include <string.h>
#include <time.h>

#include "CChaosFaults.h"
#include "internal.h"
#include "CChaosRules.h"

#define NS 1000000000LL

static int64_t plus_saturated(int64_t a, int64_t b) { return b > INT64_MAX - a ? INT64_MAX : a + b; }

/// Whether the clock entry for `source` may touch it at all, before any decision:
/// monotonic clocks only once some entry has monotonic=yes.
static int clock_may_move(int32_t source) {
    if (!source) return 0;
    return source != CHAOS_CLOCKSRC_MONOTONIC || (chaos_fault_clock_flags() & CHAOS_CLOCK_FLAG_MONOTONIC);
}

int chaos_outcome_decide_clock(int32_t fn, int clock, int64_t real_ns, chaos_call *call, chaos_outcome *out) {
    *call = (chaos_call){0};
    out->action = CHAOS_ACT_ORIGINAL;
    out->entry = -1;
    out->delay_ns = 0;
    int32_t source = chaos_clock_source(clock);
    if (!clock_may_move(source)) return 0;
    call->point = CHAOS_POINT_CLOCK;
    call->fn = fn;
    call->fd = -1;
    call->port = -1;
    call->clock_source = source;
    // Clocks with their own origin carry no wall instant for `after`/`before` to test.
    if (source != CHAOS_CLOCKSRC_MONOTONIC && source != CHAOS_CLOCKSRC_TAI) call->real_ns = real_ns;
    return chaos_fault_decide(call, out);
}

int64_t chaos_outcome_reading_for_thread(const chaos_outcome *outcome, int clock, int64_t real_ns) {
    if (outcome->action == CHAOS_ACT_VIRTUAL && !chaos_vt_applies()) return real_ns;
    return chaos_fault_reading_ns(outcome, clock, real_ns);
}

/// The outcome the clock gives sleeps and timed waits on `source` now, counting nothing:
/// 1 when a clock entry speaks for them.
static int sleeps_follow(int32_t source, chaos_outcome *o) {
    if (!(chaos_fault_clock_flags() & CHAOS_CLOCK_FLAG_SLEEP) || !clock_may_move(source)) return 0;
    return chaos_fault_peek_clock(source, o) && o->action != CHAOS_ACT_ORIGINAL;
}

static int64_t scaled(const chaos_outcome *o, int64_t ns) {
    if (o->action != CHAOS_ACT_SPEED || o->factor <= 0) return ns;
    double real = (double)ns / o->factor;
    return real > 9.2e18 ? INT64_MAX : (int64_t)real;
}

chaos_sleep_how chaos_outcome_sleep(int clock, int absolute, int64_t request_ns, chaos_sleep *out) {
    *out = (chaos_sleep){CHAOS_SLEEP_AS_ASKED, 0, 1.0};
    int32_t source = absolute ? chaos_clock_source(clock) : CHAOS_CLOCKSRC_REALTIME;
    chaos_outcome o;
    if (request_ns < 0 || !sleeps_follow(source, &o)) return out->how;
    if (o.action == CHAOS_ACT_VIRTUAL) {
        if (!chaos_vt_applies()) return out->how;
        out->how = CHAOS_SLEEP_VIRTUAL;
        out->ns =
            absolute ? chaos_vt_to_monotonic(clock, request_ns) : plus_saturated(chaos_vt_monotonic_ns(), request_ns);
        return out->how;
    }
    if (o.action == CHAOS_ACT_SPEED && o.factor > 0) out->factor = o.factor;
    if (!absolute) {
        if (o.action != CHAOS_ACT_SPEED || o.factor <= 0) return out->how;
        out->how = CHAOS_SLEEP_REAL;
        out->ns = scaled(&o, request_ns);
        return out->how;
    }
    // Until the faked clock reads the target: the faked time left, scaled.
    int64_t faked_now = chaos_fault_reading_ns(&o, clock, cf_real_ns(clock));
    int64_t left = request_ns > faked_now ? (int64_t)((uint64_t)request_ns - (uint64_t)faked_now) : 0;
    if (left < 0) left = INT64_MAX; // overflowed: as far as it goes
    out->how = CHAOS_SLEEP_REAL;
    out->ns = scaled(&o, left);
    return out->how;
}

int64_t chaos_outcome_virtual_timeout(int64_t timeout_ns) {
    chaos_outcome o;
    if (timeout_ns <= 0 || !chaos_vt_applies() || !sleeps_follow(CHAOS_CLOCKSRC_MONOTONIC, &o) ||
        o.action != CHAOS_ACT_VIRTUAL)
        return 0;
    return plus_saturated(chaos_vt_monotonic_ns(), timeout_ns);
}

int64_t chaos_outcome_virtual_instant(int clock, int64_t deadline_ns) {
    chaos_outcome o;
    if (!chaos_vt_applies() || !sleeps_follow(CHAOS_CLOCKSRC_MONOTONIC, &o) || o.action != CHAOS_ACT_VIRTUAL) return 0;
    int64_t deadline = chaos_vt_to_monotonic(clock, deadline_ns);
    return deadline > 0 ? deadline : 1; // 0 means "not virtual": an instant long past is still one
}

int chaos_outcome_real_deadline(int clock, int64_t deadline_ns, int64_t *real_instant_ns) {
    int32_t source = chaos_clock_source(clock);
    if (!clock_may_move(source) || !chaos_fault_point_active(CHAOS_POINT_CLOCK)) return 0;
    chaos_outcome o;
    if (!chaos_fault_peek_clock(source, &o) || o.action == CHAOS_ACT_VIRTUAL || o.action == CHAOS_ACT_ORIGINAL)
        return 0;
    int64_t real = cf_real_ns(clock);
    int64_t faked = chaos_fault_reading_ns(&o, clock, real);
    int64_t left = deadline_ns > faked ? (int64_t)((uint64_t)deadline_ns - (uint64_t)faked) : 0;
    if (left < 0) left = INT64_MAX; // overflowed: as far as it goes
    if (chaos_fault_clock_flags() & CHAOS_CLOCK_FLAG_SLEEP) left = scaled(&o, left);
    *real_instant_ns = plus_saturated(real, left);
    return 1;
}

int64_t chaos_outcome_file_time_shift(void) {
    if (!(chaos_fault_clock_flags() & CHAOS_CLOCK_FLAG_STAT)) return 0;
    chaos_outcome o;
    if (!chaos_fault_peek_clock(CHAOS_CLOCKSRC_REALTIME, &o) || !o.stat_times || o.action == CHAOS_ACT_ORIGINAL)
        return 0;
    int64_t real = cf_real_ns(CLOCK_REALTIME);
    return chaos_outcome_reading_for_thread(&o, CLOCK_REALTIME, real) - real;
}

void chaos_outcome_shift_parts(int64_t *seconds, uint32_t *nanoseconds, int64_t shift_ns) {
    int64_t ns = *seconds * NS + (int64_t)*nanoseconds + shift_ns;
    int64_t whole = ns / NS, rest = ns % NS;
    if (rest < 0) {
        rest += NS;
        whole -= 1;
    }
    *seconds = whole;
    *nanoseconds = (uint32_t)rest;
}

void chaos_outcome_shift_timespec(struct timespec *time, int64_t shift_ns) {
    int64_t seconds = (int64_t)time->tv_sec;
    uint32_t nanoseconds = (uint32_t)time->tv_nsec;
    chaos_outcome_shift_parts(&seconds, &nanoseconds, shift_ns);
    time->tv_sec = (time_t)seconds;
    time->tv_nsec = (long)nanoseconds;
}

void chaos_outcome_corrupt(const chaos_outcome *o, unsigned char *bytes, size_t length) {
    if (!o || o->action != CHAOS_ACT_CORRUPT || !bytes || length == 0) return;
    uint64_t count = (uint64_t)o->corrupt_bytes;
    for (uint64_t i = 0; i < count; i++) {
        size_t at;
        if (o->corrupt_offset >= 0) {
            if ((uint64_t)o->corrupt_offset + i >= length) break;
            at = (size_t)((uint64_t)o->corrupt_offset + i);
        } else {
            at = (size_t)(chaos_rules_derive(o->corrupt_seed, 2 * i) % length);
        }
        unsigned char was = bytes[at];
        switch (o->corrupt_with) {
        case CHAOS_CORRUPT_ZERO: bytes[at] = 0; break;
        case CHAOS_CORRUPT_RANDOM: {
            unsigned char drawn = (unsigned char)chaos_rules_derive(o->corrupt_seed, 2 * i + 1);
            bytes[at] = drawn == was ? (unsigned char)(drawn ^ 0x80) : drawn;
            break;
        }
        default: bytes[at] = (unsigned char)~was; break;
        }
    }
}

void chaos_outcome_attributes(const chaos_outcome *o, struct stat *s) {
    if (!o || o->action != CHAOS_ACT_ATTRIBUTES || !s) return;
    const chaos_attributes *a = &o->attributes;
    if (a->set & CHAOS_ATTRIBUTE_SIZE) s->st_size = (off_t)a->size;
    if (a->set & CHAOS_ATTRIBUTE_MTIME) {
        s->st_mtim.tv_sec = (time_t)(a->mtime_ns / NS - (a->mtime_ns % NS < 0));
        s->st_mtim.tv_nsec = (long)((a->mtime_ns % NS + NS) % NS);
    }
    if (a->set & CHAOS_ATTRIBUTE_MODE) s->st_mode = (s->st_mode & S_IFMT) | (mode_t)a->mode;
    if (a->set & CHAOS_ATTRIBUTE_NLINK) s->st_nlink = (nlink_t)a->nlink;
}

void chaos_outcome_attributes_statx(const chaos_outcome *o, struct statx *s) {
    if (!o || o->action != CHAOS_ACT_ATTRIBUTES || !s) return;
    const chaos_attributes *a = &o->attributes;
    if (a->set & CHAOS_ATTRIBUTE_SIZE) {
        s->stx_size = (uint64_t)a->size;
        s->stx_mask |= STATX_SIZE;
    }
    if (a->set & CHAOS_ATTRIBUTE_MTIME) {
        s->stx_mtime.tv_sec = a->mtime_ns / NS - (a->mtime_ns % NS < 0);
        s->stx_mtime.tv_nsec = (uint32_t)((a->mtime_ns % NS + NS) % NS);
        s->stx_mask |= STATX_MTIME;
    }
    if (a->set & CHAOS_ATTRIBUTE_MODE) {
        s->stx_mode = (uint16_t)((s->stx_mode & S_IFMT) | a->mode);
        s->stx_mask |= STATX_MODE;
    }
    if (a->set & CHAOS_ATTRIBUTE_NLINK) {
        s->stx_nlink = a->nlink > UINT32_MAX ? UINT32_MAX : (uint32_t)a->nlink;
        s->stx_mask |= STATX_NLINK;
    }
}

int chaos_outcome_omits(const chaos_outcome *o, const char *name) {
    if (!o || o->action != CHAOS_ACT_OMIT || !name) return 0;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) return 0; // a directory always has them
    size_t length = strlen(name);
    if (o->omit_name) return cf_glob_component(o->omit_name, strlen(o->omit_name), name, length, false);
    if (o->omit_every < 1) return 0;
    // By the name, not the call: an entry left out of one listing is left out of every one.
    uint64_t hash = 1469598103934665603ull;
    for (size_t i = 0; i < length; i++) hash = (hash ^ (unsigned char)name[i]) * 1099511628211ull;
    return chaos_rules_derive2(o->corrupt_seed, hash, 0) % (uint64_t)o->omit_every == 0;
}

size_t chaos_outcome_omit_records(const chaos_outcome *o, void *records, size_t length) {
    // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name.
    unsigned char *bytes = records, *kept_last = NULL;
    size_t read = 0, written = 0;
    while (read + 19 < length) {
        uint16_t size;
        memcpy(&size, bytes + read + 16, sizeof size);
        if (size < 20 || read + size > length) break;
        const char *name = (const char *)bytes + read + 19;
        if (memchr(name, 0, size - 19) && chaos_outcome_omits(o, name)) {
            // The kept record before it now leads past it (its d_off: where the next begins).
            if (kept_last) memcpy(kept_last + 8, bytes + read + 8, 8);
        } else {
            if (written != read) memmove(bytes + written, bytes + read, size);
            kept_last = bytes + written;
            written += size;
        }
        read += size;
    }
    return written;
}

// Sleeps and timed waits under the seccomp delivery: what the preload library's
// interceptors do inside the program (interceptors/clock.inc and waits.inc), done by the
// supervisor. A sleep that a speed entry scales is held for its scaled length in real
// time. Under virtual time a sleep, or the timeout of a wait on descriptors (epoll, poll),
// is held until virtual time reaches its deadline; a wait whose descriptors become ready
// first goes on at once, and the kernel then finds them ready.
//
// Each held call waits on a thread of the supervisor, as a sleeping thread of the program
// would under the preload: virtual time's sleepers and its advance (`chaos ctl advance`,
// served by this supervisor) need no other form. Held threads look every few
// milliseconds whether their call is still waiting: a signal that interrupts it makes the
// kernel drop the notification (and restart or fail the call), and nobody is answered
// twice.
#define _GNU_SOURCE
#include "waits.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "CChaosFaults.h"
#include "reply.h"
#include "tracee.h"

#define NS 1000000000LL
#define MOST_WATCHED 256 // a poll of more descriptors is not held: it goes on as asked

enum { HOLD_DUE, HOLD_READY, HOLD_GONE, HOLD_LET_GO };

/// One held call and what it watches.
struct hold {
    int listener;
    struct seccomp_notif call;
    const struct chaos_syscall *sc;
    int64_t virtual_deadline;            ///< virtual monotonic ns; 0: a real hold until `real_due`
    int64_t real_due;                    ///< real monotonic ns
    struct pollfd watched[MOST_WATCHED]; ///< borrowed descriptors (this process's numbers)
    int watched_count;
    uint64_t poll_array;                 ///< poll: where the program's pollfd array is (revents cleared on timeout)
    struct pollfd program[MOST_WATCHED]; ///< poll: the array as the program gave it
    int program_count;
};

static _Atomic int released; // chaos_waits_release: every hold lets its call go on
static _Atomic int holding;  // holds not yet answered

static int64_t real_monotonic(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * NS + now.tv_nsec;
}

static void respond(const struct hold *h, int64_t value, int go_on) {
    chaos_reply(h->listener, h->call.id, value, 0, go_on);
}

/// One look at the held call, waiting at most `slice_ms` for its descriptors.
static int look(struct hold *h, int slice_ms) {
    int ready = poll(h->watched, (nfds_t)h->watched_count, slice_ms);
    if (ready > 0) return HOLD_READY;
    if (atomic_load(&released)) return HOLD_LET_GO;
    uint64_t id = h->call.id;
    if (ioctl(h->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) != 0) return HOLD_GONE;
    return HOLD_DUE - 1; // nothing yet
}

// chaos_vt_wait_with's attempt: non-zero ends the wait with that value (HOLD_DUE is 0,
// what the wait returns when virtual time reached the deadline).
static int virtual_attempt(void *context, int slice_ms) {
    if (slice_ms == -2) return HOLD_LET_GO; // virtual time is off: the call as asked
    int seen = look(context, slice_ms);
    return seen < HOLD_DUE ? 0 : seen;
}

static void *hold_main(void *context) {
    struct hold *h = context;
    int outcome;
    if (h->virtual_deadline) {
        outcome = chaos_vt_wait_with(h->virtual_deadline, virtual_attempt, h);
    } else {
        for (outcome = HOLD_DUE - 1; outcome < HOLD_DUE;) {
            int64_t left = h->real_due - real_monotonic();
            if (left <= 0)
                outcome = HOLD_DUE;
            else
                outcome = look(h, left > 5000000 ? 5 : (int)((left + 999999) / 1000000));
        }
    }
    if (outcome == HOLD_DUE && h->program_count) {
        // A poll that timed out reports no event on any descriptor.
        for (int i = 0; i < h->program_count; i++) h->program[i].revents = 0;
        chaos_tracee_write((pid_t)h->call.pid, h->poll_array, h->program,
                           (size_t)h->program_count * sizeof h->program[0]);
    }
    if (outcome == HOLD_DUE)
        respond(h, 0, 0); // slept, or timed out with nothing ready
    else if (outcome != HOLD_GONE)
        respond(h, 0, 1);
    for (int i = 0; i < h->watched_count; i++) close(h->watched[i].fd);
    free(h);
    atomic_fetch_sub(&holding, 1);
    return NULL;
}

/// Starts the thread that holds `h` (and then frees it); lets the call go on when it
/// cannot.
static void hold(struct hold *h) {
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, 64 * 1024);
    // Signals are the main thread's to take.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pthread_t thread;
    atomic_fetch_add(&holding, 1);
    int started = pthread_create(&thread, &attributes, hold_main, h) == 0;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    pthread_attr_destroy(&attributes);
    if (started) return;
    atomic_fetch_sub(&holding, 1);
    respond(h, 0, 1);
    for (int i = 0; i < h->watched_count; i++) close(h->watched[i].fd);
    free(h);
}

static int64_t ns_of(const struct timespec *t) { return (int64_t)t->tv_sec * NS + t->tv_nsec; }

/// Fills `h` for a sleep as the engine has it (chaos_outcome_sleep); 0 when the clock
/// leaves it alone (or it cannot be read).
static int sleep_hold(struct hold *h) {
    pid_t tid = (pid_t)h->call.pid;
    const __u64 *a = h->call.data.args;
    int nano = h->sc->shape == CHAOS_SHAPE_SLEEP;
    int clock = nano ? CLOCK_REALTIME : (int)a[0], absolute = !nano && ((int)a[1] & TIMER_ABSTIME);
    struct timespec request;
    if (chaos_tracee_read(tid, nano ? a[0] : a[2], &request, sizeof request) != 0) return 0;
    if (request.tv_sec < 0 || request.tv_nsec < 0 || request.tv_nsec >= NS) return 0; // the kernel's EINVAL
    if (!chaos_clock_source(clock)) return 0;
    chaos_sleep s;
    switch (chaos_outcome_sleep(clock, absolute, ns_of(&request), &s)) {
    case CHAOS_SLEEP_VIRTUAL: h->virtual_deadline = s.ns; return 1;
    case CHAOS_SLEEP_REAL: h->real_due = real_monotonic() + s.ns; return 1;
    default: return 0;
    }
}

/// Fills `h` for an epoll or poll wait; 0 when it is not held (no timeout, or not under
/// virtual time).
static int wait_hold(struct hold *h) {
    pid_t tid = (pid_t)h->call.pid;
    const __u64 *a = h->call.data.args;
    int64_t timeout;
    int timespec_timeout = h->sc->positioned; // epoll_pwait2 and ppoll take a timespec
    if (timespec_timeout) {
        struct timespec given;
        if (!a[h->sc->shape == CHAOS_SHAPE_EPOLL ? 3 : 2]) return 0; // no timeout
        if (chaos_tracee_read(tid, a[h->sc->shape == CHAOS_SHAPE_EPOLL ? 3 : 2], &given, sizeof given) != 0) return 0;
        timeout = ns_of(&given);
    } else {
        int ms = (int)a[h->sc->shape == CHAOS_SHAPE_EPOLL ? 3 : 2];
        timeout = ms < 0 ? -1 : (int64_t)ms * 1000000;
    }
    int64_t deadline = chaos_outcome_virtual_timeout(timeout);
    if (!deadline) return 0;
    if (h->sc->shape == CHAOS_SHAPE_EPOLL) {
        int copy = chaos_tracee_borrow(tid, (int)a[0]);
        if (copy < 0) return 0;
        h->watched[h->watched_count++] = (struct pollfd){copy, POLLIN, 0};
    } else {
        if (a[1] > MOST_WATCHED) return 0;
        h->program_count = (int)a[1];
        h->poll_array = a[0];
        if (h->program_count &&
            chaos_tracee_read(tid, a[0], h->program, (size_t)h->program_count * sizeof h->program[0]) != 0)
            return 0;
        for (int i = 0; i < h->program_count; i++) {
            if (h->program[i].fd < 0) continue;
            int copy = chaos_tracee_borrow(tid, h->program[i].fd);
            if (copy < 0) {
                // POLLNVAL, or no copy: the kernel answers it now.
                for (int j = 0; j < h->watched_count; j++) close(h->watched[j].fd);
                return 0;
            }
            h->watched[h->watched_count++] = (struct pollfd){copy, h->program[i].events, 0};
        }
    }
    h->virtual_deadline = deadline;
    return 1;
}

void chaos_waits_answer(int listener, const struct seccomp_notif *n, const struct chaos_syscall *sc) {
    struct hold *h = atomic_load(&released) ? NULL : calloc(1, sizeof *h);
    if (!h) {
        chaos_reply_go_on(listener, n->id);
        return;
    }
    *h = (struct hold){.listener = listener, .call = *n, .sc = sc};
    int held = sc->shape == CHAOS_SHAPE_SLEEP || sc->shape == CHAOS_SHAPE_CLOCK_SLEEP ? sleep_hold(h) : wait_hold(h);
    uint64_t id = n->id;
    if (!held || ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) != 0) {
        chaos_reply_go_on(listener, n->id);
        for (int i = 0; i < h->watched_count; i++) close(h->watched[i].fd);
        free(h);
        return;
    }
    hold(h);
}

void chaos_waits_release(void) {
    atomic_store(&released, 1);
    for (int i = 0; i < 200 && atomic_load(&holding) > 0; i++) poll(NULL, 0, 5);
}

// MARK: - The program's threads, for virtual time's settle

static _Atomic pid_t tree_root;

/// Whether any thread of process `pid` or of its descendants is running (depth-limited).
static int tree_running(pid_t pid, int depth) {
    char path[96], text[512];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *tasks = opendir(path);
    if (!tasks) return 0;
    int running = 0;
    for (struct dirent *task; !running && (task = readdir(tasks));) {
        if (task->d_name[0] < '0' || task->d_name[0] > '9') continue;
        snprintf(path, sizeof path, "/proc/%d/task/%s/stat", (int)pid, task->d_name);
        FILE *stat = fopen(path, "re");
        if (stat) {
            size_t got = fread(text, 1, sizeof text - 1, stat);
            fclose(stat);
            text[got] = 0;
            const char *end = strrchr(text, ')');
            if (end && end[1] == ' ' && end[2] == 'R') running = 1;
        }
        if (running || depth >= 8) continue;
        snprintf(path, sizeof path, "/proc/%d/task/%s/children", (int)pid, task->d_name);
        FILE *children = fopen(path, "re");
        if (!children) continue;
        int child;
        while (!running && fscanf(children, "%d", &child) == 1) running = tree_running((pid_t)child, depth + 1);
        fclose(children);
    }
    closedir(tasks);
    return running;
}

static int tree_idle(void) {
    pid_t root = atomic_load(&tree_root);
    return root <= 0 || !tree_running(root, 0);
}

void chaos_waits_watch_tree(pid_t root) {
    atomic_store(&tree_root, root);
    chaos_vt_set_idle_probe(tree_idle);
}

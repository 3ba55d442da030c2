// The seccomp delivery's supervisor: `chaos run` itself, as the parent of the program.
//
//   1. The child asks to be traced, installs the filter (syscalls.c) with a new listener,
//      and stops. The parent reads the listener's number out of the child's memory (the
//      same address after fork), takes a copy of it (pidfd_getfd) and lets the child exec.
//   2. At the exec stop, when the plan has clock entries, the parent patches the new
//      program's vDSO (vdso.c): steady clock faults are answered inside the program, and
//      the other readings become system calls the filter traps. Where it cannot patch,
//      it hides the vDSO (tracee.c), so that every reading is trapped, and says so. Then
//      it stops tracing the program.
//   3. Until the program ends, a thread of the parent answers trapped calls (answer.c)
//      while the main thread forwards the signals it is sent, reaps the program, traces
//      threads about to exec and answers delayed calls when their time comes. The filter
//      is inherited: the program's threads and children are supervised too.
//   4. When the program ends it reports, and exits as the program did. Processes the
//      program left running keep a supervisor: a copy of this one that serves them in
//      the background until the last has gone (the listener then hangs up).
#define _GNU_SOURCE
#include "supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "answer.h"
#include "chaos_control.h"
#include "parent.h"
#include "power.h"
#include "descriptors.h"
#include "reply.h"
#include "report.h"
#include "syscalls.h"
#include "tracee.h"
#include "tree.h"
#include "vdso.h"
#include "waits.h"

#define MOST_INSTRUCTIONS 256

// Linux 6.6: the supervisor and the thread it answers hand the CPU to each other directly,
// which halves the cost of a trapped call. Older headers lack the names; older kernels
// refuse the flag, and the delivery works as before.
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

/// The child's listener descriptor: written by the child, read by the parent through ptrace.
static volatile int listener_number = -1;

int chaos_seccomp_available(void) {
    struct seccomp_notif_sizes sizes;
    return syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0;
}

int chaos_seccomp_refusal(const chaos_plan *plan, char *why, size_t capacity) {
    for (int32_t e = 0; e < chaos_plan_entry_count(plan); e++) {
        int32_t point = chaos_plan_entry_point(plan, e);
        const char *name = chaos_fault_point_public_name(point), *reason = NULL;
        if (point == CHAOS_POINT_GETENV || point == CHAOS_POINT_DNS)
            reason =
                "the program answers it inside its own C library, where only the preload library reaches (constant "
                "set/unset answers do reach: chaos run puts them in the environment)";
        else if (point == CHAOS_POINT_MEMORY)
            reason = "malloc and its family are no system calls (the C library hands out memory it already has), so "
                     "only the preload library reaches them";
        else if (point != CHAOS_POINT_FILES && point != CHAOS_POINT_CONNECT && point != CHAOS_POINT_CLOCK &&
                 point != CHAOS_POINT_STAT && point != CHAOS_POINT_PROCESS && point != CHAOS_POINT_DIR)
            reason = "the seccomp delivery carries files, connect, clock, stat, process and dir entries; socket "
                     "reads, writes and accepts are the preload library's";
        else if (chaos_plan_entry_has_kind(plan, e, CHAOS_NODE_ASK))
            reason = "an ask node needs an answerer inside the program";
        else if (point == CHAOS_POINT_FILES && (chaos_plan_entry_ops(plan, e) & CHAOS_OP_CLOSE) &&
                 chaos_plan_entry_ops(plan, e) != CHAOS_OP_ALL_FILES)
            reason =
                "a supervisor cannot close another process's descriptor, so close faults are the preload library's";
        if (!reason) continue;
        const char *label = chaos_plan_entry_label(plan, e);
        char entry[160];
        if (label)
            snprintf(entry, sizeof entry, "entry %s", label);
        else
            snprintf(entry, sizeof entry, "entry %d (%s)", e + 1, name);
        snprintf(why, capacity,
                 "%s cannot be delivered to it: %s. Remove the entry, or run a dynamically linked, "
                 "non-Go build of the program",
                 entry, reason);
        return -1;
    }
    return 0;
}

/// The child: be traced, filter, stop for the parent, become the program.
static void become_program(char **argv, const struct sock_fprog *filter, const sigset_t *mask, pid_t parent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);
    sigprocmask(SIG_SETMASK, mask, NULL);
    if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0) {
        fprintf(stderr, "chaos run: cannot be traced by chaos run (%s), which the seccomp delivery needs\n",
                strerror(errno));
        _exit(125);
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(125);
    int listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, filter);
    if (listener < 0) {
        fprintf(stderr, "chaos run: cannot install the seccomp filter: %s\n", strerror(errno));
        _exit(125);
    }
    listener_number = listener; // close-on-exec: the program never sees it
    raise(SIGSTOP);
    chaos_parent_become(argv);
}

/// Takes the child's listener at its first stop; -1 when it cannot.
static int take_listener(pid_t child) {
    int status;
    if (waitpid(child, &status, __WALL) != child || !WIFSTOPPED(status)) return -1;
    if (ptrace(PTRACE_SETOPTIONS, child, NULL, (void *)(uintptr_t)(PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL)) != 0)
        return -1;
    errno = 0;
    long number = ptrace(PTRACE_PEEKDATA, child, (void *)&listener_number, NULL);
    if (errno) return -1;
    int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
    if (pidfd < 0) return -1;
    int listener = (int)syscall(SYS_pidfd_getfd, pidfd, (int)number, 0);
    close(pidfd);
    if (listener < 0) return -1;
    fcntl(listener, F_SETFD, FD_CLOEXEC);
    ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
    return listener;
}

/// The threads this supervisor traces until they exec: the program at first, then every
/// thread of it that calls exec when the plan has clock entries. At most a few at a time.
struct tracing {
    pid_t threads[64];
    int count;
    int started; ///< the program's first exec succeeded (a failed one ends it with 127 or 126)
};

static int traced_index(const struct tracing *tracing, pid_t tid) {
    for (int i = 0; i < tracing->count; i++)
        if (tracing->threads[i] == tid) return i;
    return -1;
}

static void untrace(struct tracing *tracing, pid_t tid) {
    int i = traced_index(tracing, tid);
    if (i >= 0) tracing->threads[i] = tracing->threads[--tracing->count];
}

/// A thread is about to exec: trace it, so that its exec stop patches the vDSO of the
/// program it starts. An exec that fails leaves it traced until its next exec or its end.
static void watch_exec(struct tracing *tracing, pid_t tid) {
    if (!tracing || !chaos_vdso_wanted() || traced_index(tracing, tid) >= 0 || tracing->count == 64) return;
    if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(uintptr_t)(PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL)) == 0)
        tracing->threads[tracing->count++] = tid;
}

/// Answers one call waiting on `listener` (the background supervisor's way: it traces
/// nothing).
static void serve(int listener, struct seccomp_notif *notification, size_t size) {
    memset(notification, 0, size);
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, notification) == 0) chaos_answer(listener, notification);
}

// MARK: - The thread that answers calls

// While the program runs, one thread does nothing but receive trapped calls and answer
// them: a blocking receive, no poll in between, is a third fewer system calls per trapped
// call. The main thread keeps everything else: signals, reaping, tracing (ptrace belongs
// to the thread that traces) and delays.

/// The answering thread and what it hands to the main thread.
struct server {
    int listener;
    size_t size;
    int wake; ///< eventfd: an exec to trace, or a new delay
    _Atomic int stop;
    pthread_t thread;
    pthread_mutex_t lock;
    struct {
        uint64_t id;
        pid_t tid;
    } execs[64];    ///< under lock
    int exec_count; ///< under lock
};

/// The signal that interrupts the answering thread's receive when it is to stop.
#define SERVER_STOP (SIGRTMIN + 1)

static void server_interrupted(int signal_number) { (void)signal_number; }

static void *server_main(void *context) {
    struct server *server = context;
    struct seccomp_notif *notification = calloc(1, server->size);
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SERVER_STOP);
    pthread_sigmask(SIG_UNBLOCK, &stop, NULL);
    while (notification && !atomic_load(&server->stop)) {
        memset(notification, 0, server->size);
        if (ioctl(server->listener, SECCOMP_IOCTL_NOTIF_RECV, notification) != 0) continue; // EINTR, ENOENT
        const struct chaos_syscall *call = chaos_syscall_find(notification->data.nr);
        if (call && call->shape == CHAOS_SHAPE_EXEC && chaos_vdso_wanted()) {
            chaos_answer_note_exec(notification);
            chaos_descriptors_forget();
            pthread_mutex_lock(&server->lock);
            int queued = server->exec_count < 64;
            if (queued)
                server->execs[server->exec_count++] =
                    (typeof(server->execs[0])){notification->id, (pid_t)notification->pid};
            pthread_mutex_unlock(&server->lock);
            if (!queued) chaos_reply_go_on(server->listener, notification->id);
            uint64_t one = 1;
            ssize_t told = write(server->wake, &one, sizeof one);
            (void)told; // an eventfd only refuses a write at 2^64 - 2 unread wakes
            continue;
        }
        chaos_answer(server->listener, notification);
    }
    free(notification);
    return NULL;
}

/// Traces the threads about to exec that the answering thread handed over, then lets
/// their execs go on.
static void trace_execs(struct server *server, struct tracing *tracing) {
    pthread_mutex_lock(&server->lock);
    for (int i = 0; i < server->exec_count; i++) {
        watch_exec(tracing, server->execs[i].tid);
        chaos_reply_go_on(server->listener, server->execs[i].id);
    }
    server->exec_count = 0;
    pthread_mutex_unlock(&server->lock);
}

static int server_start(struct server *server) {
    struct sigaction action = {.sa_handler = server_interrupted}; // no SA_RESTART: the receive returns EINTR
    sigemptyset(&action.sa_mask);
    sigaction(SERVER_STOP, &action, NULL);
    pthread_mutex_init(&server->lock, NULL);
    return pthread_create(&server->thread, NULL, server_main, server) == 0 ? 0 : -1;
}

/// Stops the answering thread. A receive it was about to start when told would not see
/// the signal: it is told again until it has gone.
static void server_stop(struct server *server, struct tracing *tracing) {
    atomic_store(&server->stop, 1);
    for (;;) {
        pthread_kill(server->thread, SERVER_STOP);
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_nsec += 10 * 1000000;
        if (deadline.tv_nsec >= 1000000000) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000;
        }
        if (pthread_timedjoin_np(server->thread, NULL, &deadline) == 0) break;
    }
    trace_execs(server, tracing);
}

/// After the program ended: serves what it left running, in the background, until the
/// listener hangs up (when no process under the filter is left).
static void serve_the_rest(int listener, struct seccomp_notif *notification, size_t size) {
    struct pollfd probe = {listener, POLLIN, 0};
    if (poll(&probe, 1, 0) >= 0 && (probe.revents & POLLHUP) && !(probe.revents & POLLIN)) return;
    pid_t helper = fork();
    if (helper != 0) return;
    // Whoever waits for this run's output (a pipe, $(…)) must see it end with the program.
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd < 3 && null >= 0; fd++) dup2(null, fd);
    setsid();
    for (;;) {
        struct pollfd waiting = {listener, POLLIN, 0};
        int timeout = chaos_answer_due(listener);
        if (poll(&waiting, 1, timeout) < 0 && errno != EINTR) break;
        if (waiting.revents & POLLIN)
            serve(listener, notification, size);
        else if (waiting.revents & (POLLHUP | POLLERR))
            break;
    }
    _exit(0);
}

/// Handles the state changes of the program and the threads traced; returns 1 when the
/// program has ended (its status in `status`).
static int children_changed(pid_t child, struct tracing *tracing, int *status) {
    int changed, ended = 0;
    pid_t got;
    while ((got = waitpid(-1, &changed, WNOHANG | WUNTRACED | __WALL)) > 0) {
        if (WIFEXITED(changed) || WIFSIGNALED(changed)) {
            untrace(tracing, got);
            if (got == child) {
                *status = changed;
                ended = 1;
            }
            continue;
        }
        if (!WIFSTOPPED(changed)) continue;
        if (traced_index(tracing, got) < 0) {
            if (got == child) chaos_parent_child_stopped(child, changed);
            continue;
        }
        if (changed >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) {
            tracing->started = 1;
            int signal_number = chaos_vdso_wanted() ? chaos_vdso_exec_stop(got) : 0;
            ptrace(PTRACE_DETACH, got, NULL, (void *)(uintptr_t)signal_number);
            untrace(tracing, got);
        } else if (changed >> 16 == PTRACE_EVENT_STOP) {
            ptrace(PTRACE_CONT, got, NULL, NULL);
        } else {
            ptrace(PTRACE_CONT, got, NULL, (void *)(uintptr_t)WSTOPSIG(changed));
        }
    }
    return ended;
}

/// What a plan applied through the control endpoint must pass: entries this delivery
/// carries, on calls the filter installed at the start traps.
static int deliverable(const chaos_plan *plan, char *why, size_t capacity) {
    if (chaos_seccomp_refusal(plan, why, capacity) != 0) return -1;
    if (chaos_syscall_covers(plan)) return 0;
    snprintf(why, capacity,
             "under the seccomp delivery the program's filter was fixed when it started, and it does "
             "not trap the calls these entries need; start chaos run with a profile that has an entry on the same "
             "point and operations (it may be disabled)");
    return -1;
}

/// Serves `chaos ctl` from here when CHAOS_CONTROL asks: the plan is the supervisor's, the
/// pid the program's (`child`).
static void start_control(char **argv, pid_t child) {
    if (!chaos_control_wanted(getenv)) return;
    const char *slash = strrchr(argv[0], '/');
    chaos_control_serve_for(slash ? slash + 1 : argv[0], "seccomp");
    chaos_control_serve_for_process(child);
    chaos_control_check_plans(deliverable);
    chaos_control_start(getenv, NULL);
}

/// Whether every entry of the active plan has acted (--require-fired needs wait no longer).
static int engine_all_fired(void) {
    chaos_vdso_readings(NULL); // the readings the patched vDSOs answered count too
    for (int32_t e = 0; e < chaos_fault_entry_count(); e++) {
        chaos_entry_counters counters;
        if (chaos_fault_counters(e, &counters) == 0 && counters.acted == 0) return 0;
    }
    return 1;
}

/// Reports the entries' counts and returns what `chaos run` exits with. The active plan's
/// entries: `chaos ctl` may have replaced the plan the program started with. `run` says how
/// the program and its tree went.
static int finish(struct chaos_report_run *run, const struct chaos_report_options *options) {
    int count = chaos_fault_entry_count();
    struct chaos_report_entry *entries = calloc((size_t)(count ? count : 1), sizeof *entries);
    char(*labels)[256] = calloc((size_t)(count ? count : 1), sizeof *labels);
    for (int32_t e = 0; entries && labels && e < count; e++) {
        chaos_entry_counters counters;
        if (chaos_fault_counters(e, &counters) != 0) continue;
        int labelled = chaos_fault_entry_label(e, labels[e], sizeof labels[e]) == 1;
        entries[e] = (struct chaos_report_entry){.point = counters.point,
                                                 .label = labelled ? labels[e] : NULL,
                                                 .seen = counters.seen,
                                                 .acted = counters.acted};
        entries[e].last_fn = counters.last_fn;
        memcpy(entries[e].last_target, counters.last_target, sizeof entries[e].last_target);
    }
    run->seed = chaos_fault_seed();
    run->events = chaos_answer_tree_events(&run->event_count);
    run->power_loss = chaos_power_report();
    run->vdso_readings = chaos_vdso_readings(&run->vdso_processes);
    int code = chaos_parent_finish(run, entries, entries && labels ? count : 0, options);
    free(entries);
    free(labels);
    return code;
}

int chaos_supervise(chaos_plan *plan, char **argv, const struct chaos_report_options *options) {
    // Before any thread starts (installing a virtual-time plan starts its watchdog): a
    // thread that had them unblocked would take the signals meant for the signalfd.
    sigset_t original;
    int signals = chaos_parent_block_signals(&original);
    if (chaos_plan_needs_start_anchor(plan)) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        chaos_fault_set_start_anchor((int64_t)now.tv_sec * 1000000000 + now.tv_nsec);
    }
    int control = chaos_control_wanted(getenv);
    if (control) chaos_control_adopt(plan);
    chaos_power_start(plan);
    int clocks = 0; // the filter traps clock readings: every exec is patched, for entries enabled later too
    for (int32_t e = 0; e < chaos_plan_entry_count(plan); e++)
        clocks |= chaos_plan_entry_point(plan, e) == CHAOS_POINT_CLOCK;
    chaos_vdso_start(clocks);
    chaos_plan_install(plan);
    chaos_descriptors_remember_inherited();
    struct sock_filter instructions[MOST_INSTRUCTIONS];
    int length = chaos_syscall_filter(plan, instructions, MOST_INSTRUCTIONS);
    if (length < 0) {
        fprintf(stderr, "chaos run: the seccomp delivery does not support this machine's architecture\n");
        return 125;
    }
    struct sock_fprog filter = {(unsigned short)length, instructions};
    struct seccomp_notif_sizes sizes;
    if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) != 0) return 125;
    size_t size =
        sizes.seccomp_notif > sizeof(struct seccomp_notif) ? sizes.seccomp_notif : sizeof(struct seccomp_notif);
    struct seccomp_notif *notification = calloc(1, size);

    chaos_answer_allow_io_uring(options->io_uring_allowed);
    chaos_tree_adopt_orphans();
    pid_t parent = getpid();
    pid_t child = fork();
    if (child < 0 || signals < 0 || !notification) {
        fprintf(stderr, "chaos run: cannot start the program: %s\n", strerror(errno));
        return 125;
    }
    if (child == 0) become_program(argv, &filter, &original, parent);
    int listener = take_listener(child);
    if (listener < 0) {
        fprintf(stderr, "chaos run: cannot take the program's seccomp listener: %s\n", strerror(errno));
        kill(child, SIGKILL);
        waitpid(child, NULL, __WALL);
        return 125;
    }
    chaos_waits_watch_tree(child);
    struct tracing tracing = {.threads = {child}, .count = 1};
    int status = 0;
    struct server server = {.listener = listener, .size = size, .wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
    chaos_answer_wake(server.wake);
    if (server.wake < 0 || server_start(&server) != 0) {
        fprintf(stderr, "chaos run: cannot start the supervisor's thread: %s\n", strerror(errno));
        kill(child, SIGKILL);
        waitpid(child, NULL, __WALL);
        return 125;
    }
    // After the fork: the child must not inherit a thread that could hold a lock.
    if (control) start_control(argv, child);
    ptrace(PTRACE_CONT, child, NULL, NULL);
    // Until the program ends; then, under --wait-tree, until the rest of its tree has too.
    int ended = 0, interrupted = 0;
    int64_t deadline = 0;
    struct chaos_report_run run = {.program = argv[0], .delivery = "seccomp"};
    for (;;) {
        int timeout = chaos_answer_due(listener);
        if (ended) {
            int look = chaos_tree_wait_look(options, &deadline, interrupted,
                                            options->require_fired && engine_all_fired(), &run);
            if (look == -2) break;
            if (look >= 0 && (timeout < 0 || look < timeout)) timeout = look;
        }
        struct pollfd waiting[2] = {{server.wake, POLLIN, 0}, {signals, POLLIN, 0}};
        if (poll(waiting, 2, timeout) < 0 && errno != EINTR) break;
        if (waiting[0].revents & POLLIN) {
            uint64_t wakes;
            ssize_t taken = read(server.wake, &wakes, sizeof wakes);
            (void)taken; // nonblocking: nothing to take is no news
            trace_execs(&server, &tracing);
        }
        if (!(waiting[1].revents & POLLIN)) continue;
        struct signalfd_siginfo info;
        while (read(signals, &info, sizeof info) == sizeof info) {
            if (info.ssi_signo == SIGCHLD)
                ended |= children_changed(child, &tracing, &status);
            else if (ended)
                interrupted |= info.ssi_signo == SIGINT || info.ssi_signo == SIGTERM;
            else
                chaos_parent_pass_on(&info, child);
        }
        if (ended && !options->wait_tree) break;
    }
    run.status = status;
    run.never_started = !tracing.started;
    // After the answering thread: a power loss it is carrying out ends the whole tree first.
    server_stop(&server, &tracing);
    chaos_power_at_exit();
    chaos_tree_note_running(&run, 0);
    chaos_answer_wake(-1);
    close(server.wake);
    chaos_waits_release(); // what the program left running sleeps in real time from here
    chaos_vdso_end();
    serve_the_rest(listener, notification, size);
    close(listener);
    free(notification);
    return finish(&run, options);
}

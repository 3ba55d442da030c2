// `chaos run` as its program's parent (both deliveries). It stays the parent, rather than
// becoming the program, so that it can tell what fired when the program ends: the seccomp
// supervisor counts every decision itself; under the preload every process of the tree
// counts into a file they all map (CHAOS_RUN_TALLY, chaos_plan_mirror_counts), so a
// process killed or replaced by exec has counted all the same.
//
// A parent has to behave like the program for whoever started it: signals it is sent go
// on to the program, a terminal's Ctrl-Z stops both, `chaos ctl` finds the program's
// control endpoint under the program's own pid and under the parent's (the endpoint file
// names both), killing the parent kills the program (PR_SET_PDEATHSIG), and it ends
// as the program ended. It is the subreaper of the program's tree, so that it sees the
// end of what the program leaves running (daemons) and can wait for it (tree.c).
#define _GNU_SOURCE
#include "parent.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tree.h"

/// Signals `chaos run` passes on to its program.
static const int passed_on[] = {SIGHUP,  SIGINT,  SIGQUIT,  SIGTERM, SIGUSR1,
                                SIGUSR2, SIGALRM, SIGWINCH, SIGCONT, SIGTSTP};

int chaos_parent_block_signals(sigset_t *original) {
    sigset_t handled;
    sigemptyset(&handled);
    sigaddset(&handled, SIGCHLD);
    for (size_t i = 0; i < sizeof passed_on / sizeof passed_on[0]; i++) sigaddset(&handled, passed_on[i]);
    sigprocmask(SIG_BLOCK, &handled, original);
    return signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
}

void chaos_parent_pass_on(const struct signalfd_siginfo *info, pid_t child) {
    if (info->ssi_signo == SIGCHLD || info->ssi_code == SI_KERNEL) return;
    kill(child, (int)info->ssi_signo);
}

void chaos_parent_child_stopped(pid_t child, int status) {
    int stop = WSTOPSIG(status);
    if (stop != SIGTSTP && stop != SIGTTIN && stop != SIGTTOU) return;
    raise(SIGSTOP);
    kill(child, SIGCONT); // resumed (fg, bg): so is the program
}

/// Ends `chaos run` as its program ended: the same exit code, or the same signal.
static int end_like(int status) {
    if (!WIFSIGNALED(status)) return WIFEXITED(status) ? WEXITSTATUS(status) : 125;
    int signal_number = WTERMSIG(status);
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none); // the program dumped its own core, if any
    signal(signal_number, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, signal_number);
    sigprocmask(SIG_UNBLOCK, &only, NULL);
    raise(signal_number);
    return 128 + signal_number;
}

int chaos_parent_exec_failure_fd = -1;

void chaos_parent_become(char **argv) {
    execvp(argv[0], argv);
    int failure = errno;
    if (chaos_parent_exec_failure_fd >= 0) {
        ssize_t told = write(chaos_parent_exec_failure_fd, "x", 1);
        (void)told; // a full pipe of one byte cannot refuse it
    }
    char message[512];
    int length = snprintf(message, sizeof message, "chaos run: %s: %s\n", argv[0],
                          failure == ENOENT ? "command not found" : strerror(failure));
    ssize_t written =
        write(2, message, length > 0 && (size_t)length < sizeof message ? (size_t)length : sizeof message - 1);
    (void)written; // nothing more to say if even this fails
    _exit(failure == ENOENT ? 127 : 126);
}

void chaos_parent_wait_tree(int signals, const struct chaos_report_options *options, int (*all_fired)(void *),
                            void *context, pid_t except, struct chaos_report_run *run) {
    int64_t deadline = 0;
    int interrupted = 0, look;
    while ((look = chaos_tree_wait_look(options, &deadline, interrupted, all_fired && all_fired(context), run)) != -2) {
        // Woken by an end (SIGCHLD), or at the next look.
        struct pollfd waiting = {signals, POLLIN, 0};
        if (poll(&waiting, 1, look) < 0 && errno != EINTR) break;
        struct signalfd_siginfo info;
        while (read(signals, &info, sizeof info) == sizeof info)
            interrupted |= info.ssi_signo == SIGINT || info.ssi_signo == SIGTERM;
        while (waitpid(-1, NULL, WNOHANG | __WALL) > 0) {}
    }
    chaos_tree_note_running(run, except);
}

int chaos_parent_finish(const struct chaos_report_run *run, struct chaos_report_entry *entries, int count,
                        const struct chaos_report_options *options) {
    if (run->never_started) return end_like(run->status);
    int never = chaos_report_write(run, entries, count, options);
    if (options->require_fired && never != 0) {
        if (never > 0)
            fprintf(stderr, "chaos run: %d entr%s never acted (--require-fired)%s\n", never, never == 1 ? "y" : "ies",
                    run->still_running ? ", judged while processes of the tree still ran" : "");
        return 125;
    }
    // Power lost: the tree was killed on purpose, which the exit code says as a kill would.
    if (run->power_loss) return 128 + SIGKILL;
    return end_like(run->status);
}

// MARK: - The preload delivery

/// The shared file every preloaded process of the tree counts into and decides from, sized
/// for `plan`. Returns its mapping (and the path in `path`, its folder in `folder`), or NULL.
///
/// Processes of the tree may run as other users (postgres, nginx workers drop root), so
/// the file is writable by all; it lies in a folder others may pass through but not list
/// (0711), under a name drawn at random, so only those told the name (the tree, through
/// its environment) find it.
static chaos_tally_header *make_tally(const chaos_plan *plan, char *path, size_t capacity, char *folder,
                                      size_t folder_capacity) {
    // $TMPDIR when set; else memory (/dev/shm), where making and removing the folder costs
    // a tenth of what it does on a disk, at every start.
    const char *base = getenv("TMPDIR");
    if (!base || !*base || access(base, W_OK) != 0) base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    uint64_t random[2] = {0, 0};
    if (getrandom(random, sizeof random, 0) != sizeof random) {
        random[0] = (uint64_t)getpid() * 2654435761u ^ (uint64_t)time(NULL);
        random[1] = random[0] * 0x9E3779B97F4A7C15ull;
    }
    snprintf(folder, folder_capacity, "%s/chaos-run-%d-%08llx", base, (int)getpid(),
             (unsigned long long)(random[0] & 0xffffffffu));
    if (mkdir(folder, 0711) != 0) return NULL;
    chmod(folder, 0711); // whatever the umask
    snprintf(path, capacity, "%s/%016llx.tally", folder, (unsigned long long)random[1]);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
        rmdir(folder);
        return NULL;
    }
    fchmod(fd, 0666);
    size_t size = chaos_tally_size(plan);
    void *mapped =
        ftruncate(fd, (off_t)size) == 0 ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    if (mapped == MAP_FAILED) {
        unlink(path);
        rmdir(folder);
        return NULL;
    }
    chaos_tally_header *header = mapped;
    snprintf(header->magic, sizeof header->magic, "%s", CHAOS_TALLY_MAGIC);
    header->entries = (uint64_t)chaos_plan_entry_count(plan);
    return header;
}

/// Whether every entry of the tally has acted (--require-fired needs wait no longer).
static int tally_all_fired(void *context) {
    chaos_tally_header *tally = context;
    _Atomic uint64_t *pairs = (_Atomic uint64_t *)(tally + 1);
    for (uint64_t e = 0; e < tally->entries; e++)
        if (atomic_load(&pairs[2 * e]) == 0) return 0;
    return 1;
}

int chaos_run_preloaded(const char *plan_text, char **argv, const struct chaos_report_options *options) {
    chaos_plan_error error;
    chaos_plan *plan = chaos_plan_parse(plan_text, strlen(plan_text), &error);
    if (!plan) {
        fprintf(stderr, "chaos run: the compiled plan is damaged (%s); run again with --no-cache\n", error.message);
        return 125;
    }
    int count = chaos_plan_entry_count(plan);
    char tally_path[4096], tally_folder[4096];
    chaos_tally_header *tally = make_tally(plan, tally_path, sizeof tally_path, tally_folder, sizeof tally_folder);
    if (!tally) {
        fprintf(stderr, "chaos run: cannot make the file its program's processes count into (%s)\n", strerror(errno));
        return 125;
    }
    setenv("CHAOS_RUN_TALLY", tally_path, 1);
    char parent_text[32];
    snprintf(parent_text, sizeof parent_text, "%d", (int)getpid());
    setenv("CHAOS_RUN_PARENT", parent_text, 1);
    if (options->io_uring_allowed) setenv("CHAOS_IO_URING", "allow", 1);
    // What this run was handed as 0–2 stays outside unnamed entries in every process of the
    // tree; what the tree opens and hands down itself is matched by its path.
    char stdio[128];
    size_t used = 0;
    for (int fd = 0; fd < 3; fd++) {
        struct stat info;
        int open_here = fstat(fd, &info) == 0;
        used += (size_t)snprintf(stdio + used, sizeof stdio - used, "%s%llu:%llu", fd ? "," : "",
                                 open_here ? (unsigned long long)info.st_dev : 0ull,
                                 open_here ? (unsigned long long)info.st_ino : 0ull);
    }
    setenv("CHAOS_RUN_STDIO", stdio, 1);
    chaos_tree_adopt_orphans();
    sigset_t original;
    int signals = chaos_parent_block_signals(&original);
    pid_t parent = getpid();
    int failure_pipe[2] = {-1, -1};
    pid_t child = signals < 0 || pipe2(failure_pipe, O_CLOEXEC | O_NONBLOCK) != 0
                      ? -1
                      : (chaos_parent_exec_failure_fd = failure_pipe[1], vfork());
    if (child < 0) {
        fprintf(stderr, "chaos run: cannot start the program: %s\n", strerror(errno));
        unlink(tally_path);
        rmdir(tally_folder);
        return 125;
    }
    if (child == 0) {
        // vfork: this child borrows the parent's memory until it execs (copying the
        // launcher's page tables for a fork cost a whole millisecond per run), so it
        // touches nothing shared: no stdio, no allocation.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(125);
        sigprocmask(SIG_SETMASK, &original, NULL);
        chaos_parent_become(argv);
    }
    close(failure_pipe[1]);
    chaos_parent_exec_failure_fd = -1;
    int status = 0;
    for (;;) {
        struct pollfd waiting = {signals, POLLIN, 0};
        if (poll(&waiting, 1, -1) < 0 && errno != EINTR) break;
        struct signalfd_siginfo info;
        int ended = 0;
        while (!ended && read(signals, &info, sizeof info) == sizeof info) {
            chaos_parent_pass_on(&info, child);
            int changed;
            pid_t got;
            // As the tree's subreaper it reaps orphans too: only the program's end ends this.
            while (!ended && (got = waitpid(-1, &changed, WNOHANG | WUNTRACED)) > 0) {
                if (got != child) continue;
                if (WIFSTOPPED(changed))
                    chaos_parent_child_stopped(child, changed);
                else if (WIFEXITED(changed) || WIFSIGNALED(changed)) {
                    status = changed;
                    ended = 1;
                }
            }
        }
        if (ended) break;
    }
    // The child has ended, and every copy of the write end with it (nonblocking all the same).
    char told;
    int never_started = read(failure_pipe[0], &told, 1) == 1;
    close(failure_pipe[0]);
    struct chaos_report_run run = {.program = argv[0],
                                   .delivery = "preload",
                                   .seed = chaos_plan_seed(plan),
                                   .status = status,
                                   .never_started = never_started};
    if (!never_started)
        chaos_parent_wait_tree(signals, options, options->require_fired ? tally_all_fired : NULL, tally, 0, &run);
    unlink(tally_path); // processes the program left running go on without a report
    rmdir(tally_folder);
    struct chaos_report_entry *entries = calloc((size_t)(count ? count : 1), sizeof *entries);
    _Atomic uint64_t *pairs = (_Atomic uint64_t *)(tally + 1);
    chaos_last_act *last = chaos_tally_last_acts(tally, plan);
    for (int e = 0; entries && e < count; e++) {
        uint64_t acted = atomic_load(&pairs[2 * e]), passed = atomic_load(&pairs[2 * e + 1]);
        entries[e] = (struct chaos_report_entry){.point = chaos_plan_entry_point(plan, e),
                                                 .label = chaos_plan_entry_label(plan, e),
                                                 .seen = acted + passed,
                                                 .acted = acted};
        chaos_last_act_read(&last[e], &entries[e].last_fn, entries[e].last_target, sizeof entries[e].last_target);
    }
    run.applied_later = atomic_load((_Atomic uint64_t *)&tally->applied_later);
    run.events = tally->events;
    run.event_count = atomic_load((_Atomic uint64_t *)&tally->event_count);
    run.processes = atomic_load((_Atomic uint64_t *)&tally->processes);
    for (int e = 0; e < count; e++)
        run.places_calls |= chaos_plan_entry_has_kind(plan, e, CHAOS_NODE_TIMES) ||
                            chaos_plan_entry_has_kind(plan, e, CHAOS_NODE_AT) ||
                            chaos_plan_entry_has_kind(plan, e, CHAOS_NODE_SEQUENTIAL) ||
                            chaos_plan_entry_has_kind(plan, e, CHAOS_NODE_PROBABILITY);
    int code = chaos_parent_finish(&run, entries, entries ? count : 0, options);
    free(entries);
    chaos_plan_free(plan);
    return code;
}

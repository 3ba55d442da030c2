// The control endpoint of a `chaos run` child (Docs/Console.md, "The protocol (version 1)"):
// the required subset of the protocol over a Unix socket, switched on by CHAOS_CONTROL.
//
// Two threads. The endpoint thread accepts connections and answers them all at once from
// one poll loop (see "Connections"); the worker carries out, one at a time, the requests that
// change something. Their own I/O is made with raw system calls, and the interposer marks
// both threads busy (`quiet`), so nothing this endpoint does is ever decided by the plan it
// serves: a plan that refuses every socket must not lock the controller out.
//
// The endpoint thread keeps a descriptor table of its own (unshare(CLONE_FILES)), holding nothing but
// its socket and its connections. A daemon closes every descriptor it did not open and
// reuses the numbers: in a shared table the endpoint would then accept on the program's own
// listener. Here the program cannot close the endpoint's descriptors, the endpoint cannot
// touch the program's, and a forked child inherits none of the endpoint's.
//
// Entries: every `entry` of the starting plan and of each applied plan is one control
// entry. The plan installed is made of the enabled entries, those of the plan applied last
// first (as profiles stack in-process), with the seed of the last plan applied. Each entry
// keeps the engine's counts it was first installed with, and every later plan counts its
// calls there too: switching plans moves no count and loses none.
#define _GNU_SOURCE
#include "control.h"

#if defined(__linux__)

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436 // the same number on every architecture
#endif

// Who serves: written once by chaos_control_start before the threads start, read after.
// The owner is this process; the endpoint is published under `ctl_public_pid`, which is
// `chaos run`'s pid when this is the program it started (it stays the program's parent,
// and the pid a user has of it is its own).
pid_t ctl_owner_pid, ctl_public_pid, ctl_runner_pid;
/// The process a supervisor serves the endpoint of (chaos_control_serve_for_process); 0: this one.
static pid_t served_pid;
// "preload", or "seccomp" for chaos run's supervisor: written once before the threads start.
const char *ctl_kind = "preload";
char ctl_token[65], ctl_program[256];
// Where the endpoint lives: written by chaos_control_start before the threads start.
static char directory[4096], socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)], file_path[4200];
// The listening socket, in the endpoint thread's own descriptor table only.
static int listener = -1;
// The endpoint file was written (the destructor removes it); set once by chaos_control_start.
int ctl_started;

/// The program's name, from /proc/self/comm, into `program`. The kernel keeps 15 bytes of
/// it and may cut a character in two (`ñ` is two bytes): what is left of one is dropped.
static void read_program_name(void) {
    if (ctl_program[0]) return; // named by chaos_control_name_program
    long got = ctl_read_small("/proc/self/comm", ctl_program, sizeof ctl_program);
    if (got <= 0) snprintf(ctl_program, sizeof ctl_program, "program");
    ctl_program[strcspn(ctl_program, "\n")] = 0;
    ctl_program[chaos_utf8_trim_incomplete(ctl_program, strlen(ctl_program))] = 0;
    if (!ctl_program[0]) snprintf(ctl_program, sizeof ctl_program, "program");
}

HIDDEN void chaos_control_serve_for(const char *name, const char *kind) {
    ctl_kind = kind;
    snprintf(ctl_program, sizeof ctl_program, "%s", name);
    ctl_program[chaos_utf8_trim_incomplete(ctl_program, strlen(ctl_program))] = 0;
}

HIDDEN void chaos_control_serve_for_process(pid_t pid) { served_pid = pid; }

HIDDEN int chaos_control_wanted(chaos_control_getenv_fn get) {
    const char *value = get("CHAOS_CONTROL");
    return value && *value && strcmp(value, "0") != 0 && strcasecmp(value, "off") != 0 && strcasecmp(value, "no") != 0;
}

// What the endpoint thread tells chaos_control_start once its socket listens, or why not.
static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int done;
    char failure[300];
} startup = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, ""};

static void report_startup(const char *what, int error) {
    pthread_mutex_lock(&startup.lock);
    if (what) snprintf(startup.failure, sizeof startup.failure, "%s: %s", what, strerror(error));
    startup.done = 1;
    pthread_cond_signal(&startup.changed);
    pthread_mutex_unlock(&startup.lock);
}

// Gives this thread a descriptor table of its own, without the program's descriptors: the
// copies unshare makes would keep the program's pipes and sockets open after it closes them.
static int own_descriptor_table(void) {
    if (syscall(SYS_unshare, CLONE_FILES) != 0) return -1;
    if (syscall(SYS_close_range, 0U, ~0U, 0U) == 0) return 0;
    struct rlimit limit; // close_range is Linux 5.9; before it, one by one
    unsigned long highest =
        getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY ? limit.rlim_cur : 65536;
    for (unsigned long fd = 0; fd < highest && fd < (1UL << 20); fd++) ctl_close((int)fd);
    return 0;
}

static int open_listener(void) {
    int fd = (int)syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    struct sockaddr_un address;
    memset(&address, 0, sizeof address);
    address.sun_family = AF_UNIX;
    memcpy(address.sun_path, socket_path, strlen(socket_path) + 1);
    syscall(SYS_unlinkat, AT_FDCWD, socket_path, 0); // left by an earlier process with this pid
    if (syscall(SYS_bind, fd, &address, sizeof address) != 0 || syscall(SYS_listen, fd, 128) != 0) {
        int error = errno;
        ctl_close(fd);
        errno = error;
        return -1;
    }
    syscall(SYS_fchmodat, AT_FDCWD, socket_path, 0600);
    return fd;
}

static void *run(void *argument) {
    void (*quiet)(void) = (void (*)(void))(uintptr_t)argument;
    if (quiet) quiet();
    if (own_descriptor_table() != 0) {
        report_startup("cannot give the endpoint a descriptor table of its own (unshare)", errno);
        return NULL;
    }
    listener = open_listener();
    if (listener < 0) {
        report_startup(socket_path, errno);
        return NULL;
    }
    report_startup(NULL, 0);
    ctl_serve_connections(listener);
    return NULL;
}

// MARK: - Starting and stopping

static void say(const char *what, const char *detail) {
    char line[sizeof directory + 512];
    int length = snprintf(line, sizeof line, "chaos preload: no control endpoint: %s%s%s\n", what, detail ? ": " : "",
                          detail ? detail : "");
    if (length > 0) syscall(SYS_write, 2, line, (size_t)(length < (int)sizeof line ? length : (int)sizeof line - 1));
}

/// Chooses the directory of the endpoint files for `path` (the one the environment names)
/// as ControlEndpoint does, so that `chaos ctl` looks where the files are, and leaves it in
/// `directory`. A missing directory is made (with its missing parents, mode 0700); an
/// existing one is never chmod'ed, since it may be anyone's (CHAOS_CONTROL_DIR=/tmp). A
/// shared sticky directory such as /tmp gets the private subdirectory chaoskit-UID; one that
/// others may write to without the sticky bit is refused, and so is one of another user.
static int private_directory(const char *path) {
    char partial[sizeof directory];
    snprintf(partial, sizeof partial, "%s", path);
    struct stat info;
    if (syscall(SYS_newfstatat, AT_FDCWD, partial, &info, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno != ENOENT) {
            say(partial, strerror(errno));
            return -1;
        }
        for (char *slash = partial + 1; *slash; slash++) {
            if (*slash != '/') continue;
            *slash = 0;
            syscall(SYS_mkdirat, AT_FDCWD, partial, 0700);
            *slash = '/';
        }
        syscall(SYS_mkdirat, AT_FDCWD, partial, 0700);
        if (syscall(SYS_newfstatat, AT_FDCWD, partial, &info, AT_SYMLINK_NOFOLLOW) != 0) {
            say(partial, strerror(errno));
            return -1;
        }
    }
    if (!S_ISDIR(info.st_mode)) {
        say(partial, "is not a directory (a symbolic link or a file is refused); set CHAOS_CONTROL_DIR");
        return -1;
    }
    if ((info.st_mode & S_ISVTX) && (info.st_mode & 022)) {
        // Shared, as /tmp is: the sticky bit keeps others from renaming or removing what is
        // ours, so a subdirectory of our own, checked once made, is private.
        int length = snprintf(directory, sizeof directory, "%s/chaoskit-%u", partial, (unsigned)geteuid());
        if (length <= 0 || (size_t)length >= sizeof directory) {
            say(partial, "is too long a path; set CHAOS_CONTROL_DIR");
            return -1;
        }
        if (syscall(SYS_mkdirat, AT_FDCWD, directory, 0700) != 0 && errno != EEXIST) {
            say(directory, strerror(errno));
            return -1;
        }
        if (syscall(SYS_newfstatat, AT_FDCWD, directory, &info, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(info.st_mode) ||
            info.st_uid != geteuid() || (info.st_mode & 077)) {
            say(directory, "is not a private directory of yours (mode 0700, a real directory): someone else may have "
                           "made it; remove it, or set CHAOS_CONTROL_DIR to a directory you own");
            return -1;
        }
        return 0;
    }
    if (info.st_uid != geteuid()) {
        say(partial, "belongs to another user; set CHAOS_CONTROL_DIR to a directory you own");
        return -1;
    }
    if (info.st_mode & 022) {
        say(partial,
            "others may write to this directory, and without the sticky bit they could replace endpoint files; run "
            "chmod go-w on it (or chmod +t to share it), or set CHAOS_CONTROL_DIR to a private directory");
        return -1;
    }
    return 0;
}

__attribute__((destructor)) static void chaos_control_stop(void) {
    // A forked child shares the names but not the endpoint: only the owner removes them.
    if (!ctl_started || (pid_t)syscall(SYS_getpid) != ctl_owner_pid) return;
    syscall(SYS_unlinkat, AT_FDCWD, file_path, 0);
    syscall(SYS_unlinkat, AT_FDCWD, socket_path, 0);
}

/// Whether process `pid` exists and has not ended (its state in /proc is not Z or X).
static int process_alive(pid_t pid) {
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno != ENOENT;
    long got = syscall(SYS_read, fd, text, sizeof text - 1);
    syscall(SYS_close, fd);
    if (got <= 0) return 1;
    text[got] = 0;
    const char *end = strrchr(text, ')'); // the name may hold spaces and parentheses
    return !end || (end[1] != ' ' || (end[2] != 'Z' && end[2] != 'X'));
}

HIDDEN const char *chaos_control_advancer_gone(void) {
    if (!ctl_started) return "its control endpoint could not be served";
    if ((pid_t)syscall(SYS_getpid) != ctl_owner_pid) return "a forked child has no control endpoint of its own";
    // The runner is the session: once it has ended (a zombie its parent has not reaped yet
    // has ended too), nobody is left to advance.
    if (ctl_runner_pid > 0 && !process_alive(ctl_runner_pid)) return "chaos run, which started the program, has ended";
    return NULL;
}

HIDDEN void chaos_control_start(chaos_control_getenv_fn get, void (*quiet)(void)) {
    ctl_owner_pid = (pid_t)syscall(SYS_getpid);
    // Known by the pid users see (ps, pidfiles, INFO server): the program's own. `chaos run`
    // is named beside it, so that its pid finds the program too.
    const char *run_parent = get("CHAOS_RUN_PARENT");
    long parent = run_parent ? strtol(run_parent, NULL, 10) : 0;
    ctl_public_pid = served_pid > 0 ? served_pid : ctl_owner_pid;
    ctl_runner_pid = served_pid > 0 ? ctl_owner_pid : parent > 0 ? (pid_t)parent : 0;
    const char *explicit = get("CHAOS_CONTROL_DIR"), *runtime = get("XDG_RUNTIME_DIR"), *home = get("HOME");
    int length;
    if (explicit && *explicit)
        length = snprintf(directory, sizeof directory, "%s", explicit);
    else if (runtime && *runtime)
        length = snprintf(directory, sizeof directory, "%s/chaoskit", runtime);
    else if (home && *home)
        length = snprintf(directory, sizeof directory, "%s/.chaoskit/control", home);
    else {
        say("no directory for the endpoint file", "set CHAOS_CONTROL_DIR");
        return;
    }
    if (length <= 0 || (size_t)length >= sizeof directory || directory[0] != '/') {
        say("CHAOS_CONTROL_DIR must be an absolute path", directory);
        return;
    }
    while (length > 1 && directory[length - 1] == '/') directory[--length] = 0;
    if (private_directory(directory) != 0) return;
    length = snprintf(socket_path, sizeof socket_path, "%s/%d.sock", directory, (int)ctl_public_pid);
    if (length <= 0 || length >= 104) {
        say("the socket path would be 104 bytes or longer; choose a shorter CHAOS_CONTROL_DIR", directory);
        return;
    }
    snprintf(file_path, sizeof file_path, "%s/%d.json", directory, (int)ctl_public_pid);

    unsigned char random[32];
    if (syscall(SYS_getrandom, random, sizeof random, 0) != (long)sizeof random) {
        say("getrandom failed", strerror(errno));
        return;
    }
    for (int i = 0; i < 32; i++) snprintf(ctl_token + 2 * i, 3, "%02x", random[i]);
    read_program_name();

    // The program's signals are its own: the endpoint's thread never takes one.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, 256 * 1024);
    pthread_t thread;
    // The worker first: it shares the program's descriptor table, which the endpoint thread
    // leaves for a table of its own.
    int failed = pthread_create(&thread, &attributes, ctl_work, (void *)(uintptr_t)quiet);
    if (!failed) failed = pthread_create(&thread, &attributes, run, (void *)(uintptr_t)quiet);
    pthread_attr_destroy(&attributes);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    if (failed) {
        say("cannot start its thread", strerror(failed));
        return;
    }
    // The endpoint file names a socket that listens: wait until it does, or why it cannot.
    pthread_mutex_lock(&startup.lock);
    while (!startup.done) pthread_cond_wait(&startup.changed, &startup.lock);
    pthread_mutex_unlock(&startup.lock);
    if (startup.failure[0]) {
        say(startup.failure, NULL);
        return;
    }

    buffer record = {0};
    ctl_put(&record, "{\"version\":1,\"pid\":%d,", (int)ctl_public_pid);
    if (ctl_runner_pid > 0) ctl_put(&record, "\"runner\":%d,", (int)ctl_runner_pid);
    ctl_put(&record, "\"program\":");
    ctl_put_json_string(&record, ctl_program);
    ctl_put(&record, ",\"kind\":\"%s\",\"url\":", ctl_kind);
    char url[sizeof socket_path + 8];
    snprintf(url, sizeof url, "unix:%s", socket_path);
    ctl_put_json_string(&record, url);
    ctl_put(&record, ",\"token\":\"%s\",\"started\":", ctl_token);
    ctl_put_date(&record, chaos_fault_real_ns(CLOCK_REALTIME));
    ctl_put(&record, "}\n");
    char temporary[sizeof file_path + 32];
    snprintf(temporary, sizeof temporary, "%s/.%d.%02x%02x%02x%02x.tmp", directory, (int)ctl_public_pid, random[0],
             random[1], random[2], random[3]);
    int file = record.failed ? -1
                             : (int)syscall(SYS_openat, AT_FDCWD, temporary,
                                            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int written = file >= 0 && ctl_write_all(file, record.data, record.length) == (long)record.length;
    if (file >= 0) ctl_close(file);
    free(record.data);
    if (!written || syscall(SYS_renameat, AT_FDCWD, temporary, AT_FDCWD, file_path) != 0) {
        // The thread listens on, but nobody can find it: no endpoint, as far as users go.
        say(file_path, strerror(errno));
        syscall(SYS_unlinkat, AT_FDCWD, temporary, 0);
        syscall(SYS_unlinkat, AT_FDCWD, socket_path, 0);
        return;
    }
    ctl_started = 1;
#if defined(__GLIBC__)
    on_exit(ctl_at_exit, NULL);
#endif
}

#endif

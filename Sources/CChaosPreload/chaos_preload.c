// Interposition library for `chaos run`: the role libfaketime plays for time, for the
// clock, the environment, sockets and files.
//
// Configuration (environment, read once in a constructor; written by `chaos run`):
//   CHAOS_PRELOAD_CLOCK    "offset:<seconds>" | "freeze:<unix seconds>" | "speed:<factor>"
//                          | "jump:<seconds>:<after readings>"
//                          (realtime clocks only; monotonic clocks stay real so sleeps work)
//   CHAOS_PRELOAD_GETENV   entries "NAME=VALUE" or "-NAME" (unset), separated by \x1f
//   CHAOS_PRELOAD_CONNECT  "<errno>:<probability>"   e.g. "111:1" (ECONNREFUSED always)
//   CHAOS_PRELOAD_CONNECT_LATENCY  nanoseconds to wait before each internet connect
//   CHAOS_PRELOAD_SOCKETS  "<errno>:<probability>:<latency ns>" for send/recv on sockets
//                          (errno 0: no failure, only the latency)
//   CHAOS_PRELOAD_DNS      "<EAI code>:<probability>" e.g. "-2:1"  (EAI_NONAME)
//   CHAOS_PRELOAD_FILES    "<errno>:<probability>:<ops>:<path prefix>", ops a subset of "owrf"
//                          (open, write, read, fsync); e.g. "28:1:w:/tmp/x" (ENOSPC on
//                          writes); errno 0 means short transfers: reads and writes move at
//                          most half the bytes asked for (at least one)
//   CHAOS_PRELOAD_SEED     seed of the probability draws
// The real functions come from dlsym(RTLD_NEXT), never from a GOT slot.
#define _GNU_SOURCE
#include "chaos_preload.h"

#if defined(__linux__)

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
typedef int (*gettimeofday_fn)(struct timeval *, void *);
typedef time_t (*time_fn)(time_t *);
typedef char *(*getenv_fn)(const char *);
typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);
typedef int (*getaddrinfo_fn)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
typedef int (*open_fn)(const char *, int, ...);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef int (*fsync_fn)(int);
typedef ssize_t (*read_fn)(int, void *, size_t);
typedef ssize_t (*send_fn)(int, const void *, size_t, int);
typedef ssize_t (*recv_fn)(int, void *, size_t, int);

enum clock_mode { CLOCK_REAL, CLOCK_OFFSET, CLOCK_FREEZE, CLOCK_SPEED, CLOCK_JUMP };

#define MAX_ENV 64
#define MAX_FAILING_FDS 1024

static struct {
    int ready;
    enum clock_mode clock_mode;
    int64_t clock_ns;       // offset, frozen instant, or the anchor of speed
    int64_t anchor_real_ns; // real time when speed started
    double speed;
    long jump_after;           // realtime readings before a jump takes effect
    int64_t connect_latency_ns;
    int sockets_errno;
    double sockets_probability;
    int64_t sockets_latency_ns;
    int env_count;
    char *env_names[MAX_ENV];
    char *env_values[MAX_ENV]; // NULL: unset
    int connect_errno;
    double connect_probability;
    int dns_code;
    double dns_probability;
    int files_errno;
    double files_probability;
    int files_ops; // bit 1 open, 2 write, 4 fsync, 8 read
    char *files_prefix;
    unsigned char failing_fds[MAX_FAILING_FDS];
} config;

static _Atomic uint64_t draw_state = 0x9E3779B97F4A7C15ull;
static _Atomic unsigned long chaotic_calls = 0;
static _Atomic long clock_readings = 0;

unsigned long chaos_preload_chaotic_calls(void) { return atomic_load(&chaotic_calls); }

static void *real(const char *name) { return dlsym(RTLD_NEXT, name); }

static int draw(double probability) {
    if (probability >= 1.0) return 1;
    if (probability <= 0.0) return 0;
    uint64_t z = atomic_fetch_add(&draw_state, 0x9E3779B97F4A7C15ull) + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53 < probability;
}

static char *real_getenv_value(const char *name) {
    static getenv_fn original;
    if (!original) original = (getenv_fn)real("getenv");
    return original ? original(name) : NULL;
}

static int64_t real_realtime_ns(void) {
    static clock_gettime_fn original;
    if (!original) original = (clock_gettime_fn)real("clock_gettime");
    struct timespec now;
    original(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

__attribute__((constructor)) static void chaos_preload_init(void) {
    const char *text;
    if ((text = real_getenv_value("CHAOS_PRELOAD_SEED"))) atomic_store(&draw_state, strtoull(text, NULL, 10));
    if ((text = real_getenv_value("CHAOS_PRELOAD_CLOCK"))) {
        double value = 0;
        if (sscanf(text, "offset:%lf", &value) == 1) {
            config.clock_mode = CLOCK_OFFSET;
            config.clock_ns = (int64_t)(value * 1e9);
        } else if (sscanf(text, "freeze:%lf", &value) == 1) {
            config.clock_mode = CLOCK_FREEZE;
            config.clock_ns = (int64_t)(value * 1e9);
        } else if (sscanf(text, "jump:%lf:%ld", &value, &config.jump_after) == 2) {
            config.clock_mode = CLOCK_JUMP;
            config.clock_ns = (int64_t)(value * 1e9);
        } else if (sscanf(text, "speed:%lf", &value) == 1) {
            config.clock_mode = CLOCK_SPEED;
            config.speed = value;
            config.anchor_real_ns = real_realtime_ns();
        }
    }
    if ((text = real_getenv_value("CHAOS_PRELOAD_GETENV"))) {
        char *copy = strdup(text);
        char *save = NULL;
        for (char *item = strtok_r(copy, "\x1f", &save); item && config.env_count < MAX_ENV; item = strtok_r(NULL, "\x1f", &save)) {
            if (item[0] == '-') {
                config.env_names[config.env_count] = item + 1;
                config.env_values[config.env_count++] = NULL;
            } else if (strchr(item, '=')) {
                char *equals = strchr(item, '=');
                *equals = 0;
                config.env_names[config.env_count] = item;
                config.env_values[config.env_count++] = equals + 1;
            }
        }
    }
    if ((text = real_getenv_value("CHAOS_PRELOAD_CONNECT")))
        sscanf(text, "%d:%lf", &config.connect_errno, &config.connect_probability);
    if ((text = real_getenv_value("CHAOS_PRELOAD_CONNECT_LATENCY")))
        config.connect_latency_ns = strtoll(text, NULL, 10);
    if ((text = real_getenv_value("CHAOS_PRELOAD_SOCKETS")))
        sscanf(text, "%d:%lf:%ld", &config.sockets_errno, &config.sockets_probability, &config.sockets_latency_ns);
    if ((text = real_getenv_value("CHAOS_PRELOAD_DNS")))
        sscanf(text, "%d:%lf", &config.dns_code, &config.dns_probability);
    if ((text = real_getenv_value("CHAOS_PRELOAD_FILES"))) {
        char ops[8] = {0};
        int consumed = 0;
        if (sscanf(text, "%d:%lf:%7[owrf]:%n", &config.files_errno, &config.files_probability, ops, &consumed) >= 3) {
            config.files_prefix = strdup(text + consumed);
            config.files_ops = (strchr(ops, 'o') ? 1 : 0) | (strchr(ops, 'w') ? 2 : 0) | (strchr(ops, 'f') ? 4 : 0)
                | (strchr(ops, 'r') ? 8 : 0);
        }
    }
    config.ready = 1;
}

static int64_t chaotic_realtime_ns(int64_t real_ns) {
    switch (config.clock_mode) {
    case CLOCK_OFFSET: return real_ns + config.clock_ns;
    case CLOCK_FREEZE: return config.clock_ns;
    case CLOCK_SPEED: return config.anchor_real_ns + (int64_t)((double)(real_ns - config.anchor_real_ns) * config.speed);
    case CLOCK_JUMP: return atomic_fetch_add(&clock_readings, 1) < config.jump_after ? real_ns : real_ns + config.clock_ns;
    default: return real_ns;
    }
}

static int is_realtime(clockid_t clock) {
    return clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE;
}

int clock_gettime(clockid_t clock, struct timespec *result) {
    static clock_gettime_fn original;
    if (!original) original = (clock_gettime_fn)real("clock_gettime");
    int status = original(clock, result);
    if (status == 0 && config.clock_mode != CLOCK_REAL && is_realtime(clock)) {
        int64_t ns = chaotic_realtime_ns((int64_t)result->tv_sec * 1000000000 + result->tv_nsec);
        result->tv_sec = (time_t)(ns / 1000000000);
        result->tv_nsec = (long)(ns % 1000000000);
        if (result->tv_nsec < 0) { result->tv_nsec += 1000000000; result->tv_sec -= 1; }
        atomic_fetch_add(&chaotic_calls, 1);
    }
    return status;
}

int gettimeofday(struct timeval *result, void *zone) {
    static gettimeofday_fn original;
    if (!original) original = (gettimeofday_fn)real("gettimeofday");
    int status = original(result, zone);
    if (status == 0 && config.clock_mode != CLOCK_REAL) {
        int64_t ns = chaotic_realtime_ns((int64_t)result->tv_sec * 1000000000 + (int64_t)result->tv_usec * 1000);
        result->tv_sec = (time_t)(ns / 1000000000);
        result->tv_usec = (suseconds_t)((ns % 1000000000) / 1000);
        if (result->tv_usec < 0) { result->tv_usec += 1000000; result->tv_sec -= 1; }
        atomic_fetch_add(&chaotic_calls, 1);
    }
    return status;
}

time_t time(time_t *result) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (result) *result = now.tv_sec;
    return now.tv_sec;
}

char *getenv(const char *name) {
    if (config.ready) {
        for (int index = 0; index < config.env_count; index++) {
            if (strcmp(config.env_names[index], name) == 0) {
                atomic_fetch_add(&chaotic_calls, 1);
                return config.env_values[index];
            }
        }
    }
    return real_getenv_value(name);
}

static void wait_ns(int64_t nanoseconds) {
    if (nanoseconds <= 0) return;
    struct timespec delay = { (time_t)(nanoseconds / 1000000000), (long)(nanoseconds % 1000000000) };
    while (nanosleep(&delay, &delay) != 0 && errno == EINTR) {}
}

int connect(int socket, const struct sockaddr *address, socklen_t length) {
    static connect_fn original;
    if (!original) original = (connect_fn)real("connect");
    int family = address ? address->sa_family : AF_UNSPEC;
    if (config.connect_latency_ns && (family == AF_INET || family == AF_INET6)) {
        atomic_fetch_add(&chaotic_calls, 1);
        wait_ns(config.connect_latency_ns);
    }
    if (config.connect_errno && (family == AF_INET || family == AF_INET6) && draw(config.connect_probability)) {
        atomic_fetch_add(&chaotic_calls, 1);
        errno = config.connect_errno;
        return -1;
    }
    return original(socket, address, length);
}

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **result) {
    static getaddrinfo_fn original;
    if (!original) original = (getaddrinfo_fn)real("getaddrinfo");
    if (config.dns_code && node && draw(config.dns_probability)) {
        atomic_fetch_add(&chaotic_calls, 1);
        return config.dns_code;
    }
    return original(node, service, hints, result);
}

static int path_is_targeted(const char *path) {
    return config.files_prefix && path && strncmp(path, config.files_prefix, strlen(config.files_prefix)) == 0;
}

static int open_common(const char *name, const char *path, int flags, mode_t mode) {
    open_fn original = (open_fn)real(name);
    if ((config.files_ops & 1) && path_is_targeted(path) && draw(config.files_probability)) {
        atomic_fetch_add(&chaotic_calls, 1);
        errno = config.files_errno;
        return -1;
    }
    int fd = original(path, flags, mode);
    if (fd >= 0 && fd < MAX_FAILING_FDS) config.failing_fds[fd] = (unsigned char)path_is_targeted(path);
    return fd;
}

int open(const char *path, int flags, ...) {
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) { va_list list; va_start(list, flags); mode = va_arg(list, mode_t); va_end(list); }
    return open_common("open", path, flags, mode);
}

int open64(const char *path, int flags, ...) {
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) { va_list list; va_start(list, flags); mode = va_arg(list, mode_t); va_end(list); }
    return open_common("open64", path, flags, mode);
}

static int fd_is_targeted(int fd, int op) {
    return (config.files_ops & op) && fd >= 0 && fd < MAX_FAILING_FDS && config.failing_fds[fd] && draw(config.files_probability);
}

static size_t shortened(size_t count) {
    return count > 1 ? count / 2 : count;
}

ssize_t write(int fd, const void *buffer, size_t count) {
    static write_fn original;
    if (!original) original = (write_fn)real("write");
    if (fd_is_targeted(fd, 2)) {
        atomic_fetch_add(&chaotic_calls, 1);
        if (config.files_errno == 0) return original(fd, buffer, shortened(count));
        errno = config.files_errno;
        return -1;
    }
    return original(fd, buffer, count);
}

ssize_t read(int fd, void *buffer, size_t count) {
    static read_fn original;
    if (!original) original = (read_fn)real("read");
    if (fd_is_targeted(fd, 8)) {
        atomic_fetch_add(&chaotic_calls, 1);
        if (config.files_errno == 0) return original(fd, buffer, shortened(count));
        errno = config.files_errno;
        return -1;
    }
    return original(fd, buffer, count);
}

static int socket_chaos(void) {
    if (!config.sockets_errno && !config.sockets_latency_ns) return 0;
    wait_ns(config.sockets_latency_ns);
    if (config.sockets_errno && draw(config.sockets_probability)) {
        atomic_fetch_add(&chaotic_calls, 1);
        errno = config.sockets_errno;
        return 1;
    }
    return 0;
}

ssize_t send(int socket, const void *buffer, size_t count, int flags) {
    static send_fn original;
    if (!original) original = (send_fn)real("send");
    if (socket_chaos()) return -1;
    return original(socket, buffer, count, flags);
}

ssize_t recv(int socket, void *buffer, size_t count, int flags) {
    static recv_fn original;
    if (!original) original = (recv_fn)real("recv");
    if (socket_chaos()) return -1;
    return original(socket, buffer, count, flags);
}

int fsync(int fd) {
    static fsync_fn original;
    if (!original) original = (fsync_fn)real("fsync");
    if (fd_is_targeted(fd, 4)) {
        atomic_fetch_add(&chaotic_calls, 1);
        errno = config.files_errno;
        return -1;
    }
    return original(fd);
}

#else

unsigned long chaos_preload_chaotic_calls(void) { return 0; }

#endif

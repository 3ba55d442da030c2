// The control endpoint's connections: one poll loop on the endpoint thread serving every
// connection at once, the worker that carries out changes one at a time, and the answers
// owed when the program exits.
#define _GNU_SOURCE
#include "control.h"

#if defined(__linux__)

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// The program's exit while requests are in flight (see "The program's exit"); atomics
// shared by the program's exit handler and the endpoint thread.
struct ctl_exit ctl_exit;

// MARK: - Connections
//
// The endpoint thread serves every connection at once from one poll loop, so no client can
// hold up another: each request has REQUEST_LIMIT from its accept to arrive whole, and each
// answer ANSWER_LIMIT to be taken. At most MAX_CONNECTIONS are open; a new one beyond that
// turns away the oldest that is still sending its request or taking its answer (a slow
// client), with 503, or is itself turned away when every open one waits for the worker.
//
// Requests that change something (every method but GET) run on the worker thread, one at a
// time in the order they arrived, because they may touch the program's descriptors (virtual
// time re-arms the program's timerfds) and the endpoint thread has a descriptor table of its
// own. An advance runs there too, for as long as it takes, while the endpoint thread goes on
// answering reads; a second advance, a cancel, or the advancing client hanging up stops it.

#define MAX_CONNECTIONS 64
#define REQUEST_LIMIT_NS (5 * 1000000000LL)
#define ANSWER_LIMIT_NS (5 * 1000000000LL)
#define WORKER_POLL_MS 5

typedef enum phase { FREE, READING, QUEUED, WORKING, WRITING } phase;

typedef struct connection {
    int fd;
    phase phase;
    uint64_t order;   // accepted as the order-th connection: who is oldest, and queue order
    int64_t deadline; // real monotonic: the request's while READING, the answer's while WRITING
    char *in;         // what arrived, NUL-terminated
    size_t used, capacity, head_length;
    request r;
    answer a;
    buffer out;
    size_t sent;
    int half_closed; // the client shut its write side after a whole request (nc -N, socat)
} connection;

// The endpoint thread's own: the worker reaches one connection only, through worker.job.
static connection connections[MAX_CONNECTIONS];
static uint64_t accepted_count;

// The entry list and everything `route` changes, shared by the endpoint thread (reads) and
// the worker (changes).
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;

// What runs on the worker. `job` and `job_done` are under `worker.lock`; the connection's
// request and answer belong to the worker from the hand-over until `job_done`.
static struct {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    connection *job;
    int job_done;
} worker = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0};

static int64_t real_now(void) { return chaos_fault_real_ns(CLOCK_MONOTONIC); }

static int is_advance(const request *r) { return strcmp(r->path, "/v1/time/advance") == 0; }

/// POST /v1/time/advance: an advance to run.
static int starts_advance(const request *r) { return is_advance(r) && strcmp(r->method, "POST") == 0; }

/// DELETE /v1/time/advance: a stop of the advance running.
static int stops_advance(const request *r) { return is_advance(r) && strcmp(r->method, "DELETE") == 0; }

static void release(connection *c) {
    if (c->fd >= 0) ctl_close(c->fd);
    free(c->in);
    free(c->a.body.data);
    free(c->out.data);
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->phase = FREE;
}

static void write_some(connection *c);

/// Starts sending `c->a`, which is complete. Most answers fit the socket at once: sent now,
/// they never wait for the next round while a newcomer turns away the oldest connection
/// still taking its answer, which would take this prompt client for a slow one.
static void answer_now(connection *c) {
    ctl_render(&c->a, &c->out);
    c->sent = 0;
    c->phase = WRITING;
    c->deadline = real_now() + ANSWER_LIMIT_NS;
    write_some(c);
}

static void refuse_now(connection *c, int status, const char *kind, const char *subject, const char *message) {
    ctl_fail(&c->a, status, kind, subject, message);
    answer_now(c);
}

/// What arrived so far decides: more to wait for, a refusal, or a request to route.
static void received(connection *c) {
    if (!c->head_length) {
        size_t searched = c->used < MAX_HEAD ? c->used : MAX_HEAD;
        char *end = memmem(c->in, searched, "\r\n\r\n", 4);
        if (!end) {
            if (c->used >= MAX_HEAD) refuse_now(c, 400, "badRequest", NULL, "the request head is longer than 16 KiB");
            return;
        }
        c->head_length = (size_t)(end - c->in) + 4;
        if (!ctl_parse_head(c->in, c->head_length, &c->r, &c->a)) {
            answer_now(c);
            return;
        }
    }
    size_t want = c->r.content_length > 0 ? (size_t)c->r.content_length : 0;
    if (c->used - c->head_length < want) return;
    c->r.body = c->in + c->head_length;
    c->r.body_length = want;
    c->r.body[want] = 0; // bytes after the body are a pipelined request: Connection: close drops it
    if (strcmp(c->r.method, "GET") == 0) {
        pthread_mutex_lock(&state_lock);
        ctl_route(&c->a, &c->r);
        pthread_mutex_unlock(&state_lock);
        answer_now(c);
    } else if (atomic_load(&ctl_advancing.running) && starts_advance(&c->r)) {
        atomic_store(&ctl_advancing.stop, 1); // the new advance replaces the one running (and counts it stopped)
        c->phase = QUEUED;
    } else if (atomic_load(&ctl_advancing.running) && !stops_advance(&c->r)) {
        refuse_now(
            c, 409, "advancing", "virtual time",
            "an advance of virtual time is running; wait for it, or stop it with `chaos ctl advance PID --cancel`");
    } else {
        if (stops_advance(&c->r)) {
            c->r.stopped_before = atomic_load(&ctl_advancing.stopped);
            atomic_store(&ctl_advancing.stop, 1);
        }
        c->phase = QUEUED;
    }
}

static void read_some(connection *c) {
    if (c->capacity - c->used < 4096 && c->capacity < MAX_HEAD + MAX_BODY + 1) {
        size_t capacity = c->capacity ? c->capacity * 2 : 8192;
        if (capacity > MAX_HEAD + MAX_BODY + 1) capacity = MAX_HEAD + MAX_BODY + 1;
        char *grown = realloc(c->in, capacity + 1);
        if (!grown) {
            refuse_now(c, 500, "systemFailure", NULL, "out of memory while reading the request");
            return;
        }
        c->in = grown;
        c->capacity = capacity;
    }
    long got = syscall(SYS_recvfrom, c->fd, c->in + c->used, c->capacity - c->used, MSG_DONTWAIT, NULL, NULL);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (got <= 0) {
        release(c);
        return;
    } // gone, or half-closed before the request was whole
    c->used += (size_t)got;
    c->in[c->used] = 0;
    received(c);
}

static void write_some(connection *c) {
    if (c->out.failed) {
        release(c);
        return;
    }
    long wrote = syscall(SYS_sendto, c->fd, c->out.data + c->sent, c->out.length - c->sent, MSG_DONTWAIT | MSG_NOSIGNAL,
                         NULL, 0);
    if (wrote < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (wrote <= 0) {
        release(c);
        return;
    }
    c->sent += (size_t)wrote;
    if (c->sent == c->out.length) release(c);
}

/// Turns `c` away with 503, as far as its socket takes it at once.
/// Sends `a` on `fd` as far as the socket takes it at once, and frees it: for an answer that
/// is not the connection's own (`c->a` may be the worker's, or never used).
static void send_once(int fd, answer *a) {
    buffer out = {0};
    ctl_render(a, &out);
    if (!out.failed) syscall(SYS_sendto, fd, out.data, out.length, MSG_DONTWAIT | MSG_NOSIGNAL, NULL, 0);
    free(out.data);
    free(a->body.data);
}

/// Turns `c` away with 503.
static void turn_away(connection *c, const char *message) {
    answer a = {0};
    ctl_fail(&a, 503, "busy", NULL, message);
    send_once(c->fd, &a);
    release(c);
}

static void accept_all(int listener_fd) {
    for (;;) {
        int fd = (int)syscall(SYS_accept4, listener_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) return; // EAGAIN: all taken; EMFILE and the like: try again on the next round
        // Only this user's processes may talk to it (the directory is private too).
        struct ucred peer;
        socklen_t size = sizeof peer;
        if (syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || peer.uid != geteuid()) {
            ctl_close(fd);
            continue;
        }
        connection *slot = NULL, *oldest = NULL;
        for (int i = 0; i < MAX_CONNECTIONS && !slot; i++) {
            connection *c = &connections[i];
            if (c->phase == FREE)
                slot = c;
            else if ((c->phase == READING || c->phase == WRITING) && (!oldest || c->order < oldest->order))
                oldest = c;
        }
        if (!slot && oldest) {
            turn_away(oldest, "too many connections at once, and this one was the slowest; send the request whole and "
                              "read the answer");
            slot = oldest;
        }
        if (!slot) {
            connection refused = {.fd = fd};
            turn_away(&refused, "too many requests are waiting to be carried out; try again in a moment");
            continue;
        }
        slot->fd = fd;
        slot->phase = READING;
        slot->order = ++accepted_count;
        slot->deadline = real_now() + REQUEST_LIMIT_NS;
        // A client that sent its request whole is served now: left unread until the next
        // round, it would be the oldest connection still sending for the next newcomer.
        read_some(slot);
    }
}

/// Hands the oldest queued request to the worker when it is free, and takes its answer
/// when it is done.
static void exchange_with_worker(void) {
    pthread_mutex_lock(&worker.lock);
    if (worker.job && worker.job_done) {
        connection *c = worker.job;
        worker.job = NULL;
        worker.job_done = 0;
        if (c->fd >= 0)
            answer_now(c);
        else
            release(c); // its client hung up while it ran
    }
    if (!worker.job) {
        connection *next = NULL;
        for (int i = 0; i < MAX_CONNECTIONS; i++)
            if (connections[i].phase == QUEUED && (!next || connections[i].order < next->order)) next = &connections[i];
        if (next) {
            next->phase = WORKING;
            worker.job = next;
            pthread_cond_signal(&worker.ready);
        }
    }
    pthread_mutex_unlock(&worker.lock);
}

// MARK: - The program's exit
//
// An advance often lets the program finish: its client must learn that the advance did its
// work and the program exited, not find the connection closed without an answer. The
// program's exit handler (on_exit, which is given the status) hands the status to the
// endpoint thread and waits, briefly and only when requests are in flight, while it answers
// them: an advance with where virtual time got to and the status, a request still queued
// with 503 (nothing was changed). A change the worker is carrying out is answered when it
// is done, as usual.

static void answer_at_exit(void) {
    int busy = 0;
    for (int i = 0; i < MAX_CONNECTIONS; i++) {
        connection *c = &connections[i];
        if (c->fd < 0) continue;
        if (c->phase == QUEUED) {
            refuse_now(c, 503, "exiting", NULL, "the program is exiting; nothing was changed");
        } else if (c->phase == WORKING && starts_advance(&c->r)) {
            // The worker still owns c->a: this answer is the endpoint thread's own.
            answer a = {0};
            ctl_time_body(&a, (int64_t)chaos_vt_steps() - atomic_load(&ctl_advancing.from_steps), NULL);
            send_once(c->fd, &a);
            ctl_close(c->fd);
            c->fd = -1; // released when the worker hands the job back
        } else if (c->phase == WORKING) {
            busy = 1;
        }
    }
    if (!busy) atomic_store(&ctl_exit.answered, 1);
}

#if defined(__GLIBC__)
HIDDEN void ctl_at_exit(int status, void *unused) {
    (void)unused;
    if (!ctl_started || (pid_t)syscall(SYS_getpid) != ctl_owner_pid || !atomic_load(&ctl_exit.in_flight)) return;
    atomic_store(&ctl_exit.status, status & 0xFF);
    atomic_store(&ctl_exit.requested, 1);
    // The endpoint thread looks every WORKER_POLL_MS while requests are in flight.
    for (int waited = 0; waited < 500 && !atomic_load(&ctl_exit.answered); waited++) {
        struct timespec pause = {0, 1000000};
        syscall(SYS_nanosleep, &pause, NULL);
    }
}
#endif

HIDDEN void ctl_serve_connections(int listener_fd) {
    for (int i = 0; i < MAX_CONNECTIONS; i++) connections[i].fd = -1;
    struct pollfd fds[MAX_CONNECTIONS + 1];
    connection *owner[MAX_CONNECTIONS + 1];
    for (;;) {
        int count = 0, working = 0;
        int64_t now = real_now(), next_deadline = INT64_MAX;
        fds[count] = (struct pollfd){listener_fd, POLLIN, 0};
        owner[count++] = NULL;
        for (int i = 0; i < MAX_CONNECTIONS; i++) {
            connection *c = &connections[i];
            if (c->phase == FREE) continue;
            if (c->phase == QUEUED || c->phase == WORKING) {
                working = 1;
                if (c->fd < 0) continue;
                // A hang-up cancels its advance; a half-close only waits for the answer.
                fds[count] = (struct pollfd){c->fd, c->half_closed ? 0 : POLLRDHUP, 0};
            } else {
                if (c->deadline <= now) {
                    release(c);
                    continue;
                } // too slow: its deadline passed
                if (c->deadline < next_deadline) next_deadline = c->deadline;
                fds[count] = (struct pollfd){c->fd, c->phase == READING ? POLLIN : POLLOUT, 0};
            }
            owner[count++] = c;
        }
        atomic_store(&ctl_exit.in_flight, working);
        int64_t wait_ms = next_deadline == INT64_MAX ? -1 : (next_deadline - now) / 1000000 + 1;
        if (working && (wait_ms < 0 || wait_ms > WORKER_POLL_MS))
            wait_ms = WORKER_POLL_MS; // the worker cannot wake this poll
        struct timespec timeout = {wait_ms / 1000, wait_ms % 1000 * 1000000};
        long ready = syscall(SYS_ppoll, fds, (unsigned long)count, wait_ms < 0 ? NULL : &timeout, NULL, 0);
        if (ready < 0 && errno != EINTR) {
            struct timespec pause = {0, 10000000};
            syscall(SYS_nanosleep, &pause, NULL);
        }
        for (int i = 1; ready > 0 && i < count; i++) {
            connection *c = owner[i];
            short events = fds[i].revents;
            if (!events || c->fd != fds[i].fd) continue;
            if (c->phase == QUEUED || c->phase == WORKING) {
                if (!(events & (POLLRDHUP | POLLHUP | POLLERR))) continue;
                // HTTP/1.1 lets a client shut its write side once the request is sent: the
                // request is carried out and answered. (Over TCP a client that closed for
                // good looks the same until the answer is written; only an advance, which
                // may run for long, takes it for a hang-up.)
                if (!(events & (POLLHUP | POLLERR)) && !starts_advance(&c->r)) {
                    c->half_closed = 1;
                    continue;
                }
                if (starts_advance(&c->r) && c->phase == WORKING) atomic_store(&ctl_advancing.stop, 1);
                ctl_close(c->fd);
                c->fd = -1;
                if (c->phase == QUEUED) release(c);
            } else if (c->phase == READING) {
                read_some(c);
            } else if (c->phase == WRITING) {
                if (events & (POLLERR | POLLHUP))
                    release(c);
                else
                    write_some(c);
            }
        }
        if (ready > 0 && fds[0].revents) accept_all(listener_fd);
        exchange_with_worker();
        if (atomic_load(&ctl_exit.requested) && !atomic_load(&ctl_exit.answered)) answer_at_exit();
    }
}

/// POST /v1/time/advance on the worker, outside the state lock (reads go on meanwhile), and
/// shown in `status` while it runs.
static void worker_advance(connection *c) {
    atomic_store(&ctl_advancing.stop, 0);
    atomic_store(&ctl_advancing.from_steps, (int64_t)chaos_vt_steps());
    atomic_store(&ctl_advancing.target, INT64_MAX);
    atomic_store(&ctl_advancing.running, 1);
    ctl_route(&c->a, &c->r);
    atomic_store(&ctl_advancing.running, 0);
}

HIDDEN void *ctl_work(void *argument) {
    void (*quiet)(void) = (void (*)(void))(uintptr_t)argument;
    if (quiet) quiet();
    for (;;) {
        pthread_mutex_lock(&worker.lock);
        while (!worker.job || worker.job_done) pthread_cond_wait(&worker.ready, &worker.lock);
        connection *c = worker.job;
        pthread_mutex_unlock(&worker.lock);
        if (starts_advance(&c->r)) {
            worker_advance(c);
        } else {
            pthread_mutex_lock(&state_lock);
            ctl_route(&c->a, &c->r);
            pthread_mutex_unlock(&state_lock);
        }
        pthread_mutex_lock(&worker.lock);
        worker.job_done = 1;
        pthread_mutex_unlock(&worker.lock);
    }
    return NULL;
}

#endif

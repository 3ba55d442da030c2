// The parts of the control endpoint (chaos_control.c and control_*.c) and what they share:
// internal to libChaosPreload.so. One job per file: text and raw system calls
// (control_text.c), entries (control_entries.c), answers (control_answers.c), HTTP requests
// and routes (control_requests.c), connections and the worker (control_connections.c),
// starting and stopping (chaos_control.c). Each file-scope variable says what guards it
// where it is defined.
#ifndef CHAOS_CONTROL_PARTS_H
#define CHAOS_CONTROL_PARTS_H

#include "chaos_control.h"

#if defined(__linux__)

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HIDDEN __attribute__((visibility("hidden")))
#define MAX_BODY (1 << 20)
#define MAX_HEAD 16384

// MARK: - control_text.c

typedef struct buffer {
    char *data;
    size_t length, capacity;
    int failed;
} buffer;

HIDDEN void ctl_put_bytes(buffer *b, const char *bytes, size_t count);
HIDDEN void ctl_put(buffer *b, const char *format, ...) __attribute__((format(printf, 2, 3)));
HIDDEN void ctl_put_json(buffer *b, const char *text, size_t count);
HIDDEN void ctl_put_json_string(buffer *b, const char *text);
HIDDEN long ctl_write_all(int fd, const char *data, size_t count);
HIDDEN int ctl_close(int fd);
HIDDEN long ctl_read_small(const char *path, char *out, size_t capacity);

// MARK: - control_entries.c

typedef struct control_entry {
    int id;
    int point;
    int enabled;
    char *text;           // the entry's canonical plan lines, `entry …` first, each ending in \n
    char *label;          // the label, unescaped (NULL: none)
    int slot;             // its index in the installed plan, -1 when not installed
    int group;            // which plan brought it: later plans decide first
    chaos_counts *counts; // shared by every plan it is installed in (NULL: never installed)
} control_entry;

extern HIDDEN control_entry *ctl_entries;
extern HIDDEN int ctl_entry_count;
extern HIDDEN uint64_t ctl_plan_seed;

typedef struct answer {
    int status;
    buffer body;
    const char *allow;
} answer;

HIDDEN control_entry *ctl_find(int id);
HIDDEN void ctl_not_applied(answer *a, const char *text);
HIDDEN void ctl_apply(answer *a, const char *body, size_t length, const char *source);
/// Removes the entry `id`, or every entry (`id` 0) but those on system.clock unless
/// `include_clock`: a program on virtual time waits on them, and reverted mid-wait its
/// waits would go on in real time. The answer names the kept ones, and why.
HIDDEN void ctl_revert(answer *a, int id, const char *text, int include_clock);
/// The provider of `entry` as the profile wrote it (in `root` when it must be made).
HIDDEN const char *ctl_entry_provider(const control_entry *entry, char *root, size_t capacity);
/// A point's name as users write it (system.files …).
HIDDEN const char *ctl_point_display(int point);
HIDDEN void ctl_set_enabled(answer *a, int id, const char *text, int enabled);

// MARK: - control_answers.c

struct ctl_advancing {
    _Atomic int running, stop;
    _Atomic int64_t target, from_steps;
    _Atomic uint64_t stopped; ///< cancelled, replaced or abandoned by their client
};
extern HIDDEN struct ctl_advancing ctl_advancing;

HIDDEN void ctl_fail(answer *a, int status, const char *kind, const char *subject, const char *message);
HIDDEN void ctl_put_date(buffer *b, int64_t ns);
HIDDEN void ctl_put_entry(buffer *b, const control_entry *entry);
HIDDEN void ctl_status_body(answer *a);
HIDDEN void ctl_time_body(answer *a, int64_t steps, const char *stopped);
HIDDEN void ctl_advance(answer *a, const char *by, const char *steps_text);

// MARK: - control_requests.c

typedef struct request {
    char method[16];
    char path[1024];
    char query[1024];
    const char *host, *authorization, *content_type, *origin, *transfer_encoding, *fetch_site;
    long long content_length;
    uint64_t stopped_before; // DELETE /v1/time/advance: advances_stopped when it arrived
    char *body;
    size_t body_length;
} request;

HIDDEN int ctl_parse_head(char *head, size_t head_length, request *r, answer *a);
HIDDEN void ctl_route(answer *a, request *r);
HIDDEN void ctl_render(answer *a, buffer *out);

// MARK: - control_connections.c

struct ctl_exit {
    _Atomic int in_flight; ///< connections queued for or held by the worker
    _Atomic int requested, answered;
    _Atomic int status;
};
extern HIDDEN struct ctl_exit ctl_exit;

HIDDEN void ctl_serve_connections(int listener_fd);
HIDDEN void *ctl_work(void *argument);
#if defined(__GLIBC__)
HIDDEN void ctl_at_exit(int status, void *unused);
#endif

// MARK: - chaos_control.c

extern HIDDEN pid_t ctl_owner_pid, ctl_public_pid, ctl_runner_pid;
extern HIDDEN const char *ctl_kind;
extern HIDDEN char ctl_token[65], ctl_program[256];
extern HIDDEN int ctl_started;

#endif
#endif

// Text the control endpoint answers with (growing buffers, JSON strings), and its raw
// system calls: what every other part of the endpoint writes and reads with.
#define _GNU_SOURCE
#include "control.h"

#if defined(__linux__)

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

// MARK: - Text buffers

static void reserve(buffer *b, size_t more) {
    if (b->failed || b->length + more + 1 <= b->capacity) return;
    size_t capacity = b->capacity ? b->capacity : 256;
    while (capacity < b->length + more + 1) capacity *= 2;
    char *grown = realloc(b->data, capacity);
    if (!grown) {
        b->failed = 1;
        return;
    }
    b->data = grown;
    b->capacity = capacity;
}

HIDDEN void ctl_put_bytes(buffer *b, const char *bytes, size_t count) {
    reserve(b, count);
    if (b->failed) return;
    memcpy(b->data + b->length, bytes, count);
    b->length += count;
    b->data[b->length] = 0;
}

HIDDEN void ctl_put(buffer *b, const char *format, ...) {
    va_list list;
    va_start(list, format);
    char small[256];
    int need = vsnprintf(small, sizeof small, format, list);
    va_end(list);
    if (need < 0) {
        b->failed = 1;
        return;
    }
    if ((size_t)need < sizeof small) {
        ctl_put_bytes(b, small, (size_t)need);
        return;
    }
    reserve(b, (size_t)need);
    if (b->failed) return;
    va_start(list, format);
    vsnprintf(b->data + b->length, (size_t)need + 1, format, list);
    va_end(list);
    b->length += (size_t)need;
}

/// A JSON string (quotes included), always valid UTF-8 whatever `text` holds: each part
/// that is not UTF-8 (a request's bytes quoted in an error, a name cut at a byte count)
/// becomes one U+FFFD, as Swift's and Python's decoders would read it.
HIDDEN void ctl_put_json(buffer *b, const char *text, size_t count) {
    ctl_put_bytes(b, "\"", 1);
    for (size_t i = 0; i < count; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c >= 0x80) {
            int valid;
            size_t length = chaos_utf8_next(text + i, count - i, &valid);
            ctl_put_bytes(b, valid ? text + i : "\xEF\xBF\xBD", valid ? length : 3);
            i += length - 1;
        } else if (c == '"' || c == '\\') {
            char pair[2] = {'\\', (char)c};
            ctl_put_bytes(b, pair, 2);
        } else if (c == '\n') {
            ctl_put_bytes(b, "\\n", 2);
        } else if (c == '\t') {
            ctl_put_bytes(b, "\\t", 2);
        } else if (c < 0x20 || c == 0x7F) {
            ctl_put(b, "\\u%04x", c);
        } else {
            ctl_put_bytes(b, (const char *)&c, 1);
        }
    }
    ctl_put_bytes(b, "\"", 1);
}

HIDDEN void ctl_put_json_string(buffer *b, const char *text) { ctl_put_json(b, text, strlen(text)); }

// MARK: - Raw system calls

// Raw, so that neither the interposer nor anything else preloaded sees these calls.
HIDDEN long ctl_write_all(int fd, const char *data, size_t count) {
    size_t done = 0;
    while (done < count) {
        long wrote = syscall(SYS_sendto, fd, data + done, count - done, MSG_NOSIGNAL, NULL, 0);
        if (wrote < 0 && errno == ENOTSOCK) wrote = syscall(SYS_write, fd, data + done, count - done);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) return -1;
        done += (size_t)wrote;
    }
    return (long)done;
}

HIDDEN int ctl_close(int fd) { return (int)syscall(SYS_close, fd); }

/// The whole of a small file (such as /proc/self/comm) into `out`; its length or -1.
HIDDEN long ctl_read_small(const char *path, char *out, size_t capacity) {
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    long got = syscall(SYS_read, fd, out, capacity - 1);
    ctl_close(fd);
    if (got < 0) return -1;
    out[got] = 0;
    return got;
}

#endif

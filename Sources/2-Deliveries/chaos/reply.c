// How the supervisor answers a trapped call (reply.h). Below every part that answers:
// calls (answer.c), file times (file_times.c), held waits (waits.c) and the supervisor's
// own loop (supervise.c).
#define _GNU_SOURCE
#include "reply.h"

#include <linux/seccomp.h>
#include <sys/ioctl.h>

void chaos_reply(int listener, uint64_t id, int64_t value, int error, int go_on) {
    struct seccomp_notif_resp answer = {
        .id = id, .val = value, .error = error, .flags = go_on ? SECCOMP_USER_NOTIF_FLAG_CONTINUE : 0};
    ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &answer);
}

void chaos_reply_go_on(int listener, uint64_t id) { chaos_reply(listener, id, 0, 0, 1); }

// How a delivery describes a call to the engine, written once for every delivery: the
// interceptors (preload and in-process) and the seccomp supervisor of `chaos run`, which
// reads the same arguments out of another process.
#define _GNU_SOURCE
#include "internal.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>

int32_t chaos_call_family(int domain) {
    return domain == AF_INET    ? CHAOS_FAMILY_INET
           : domain == AF_INET6 ? CHAOS_FAMILY_INET6
           : domain == AF_UNIX  ? CHAOS_FAMILY_UNIX
                                : CHAOS_FAMILY_OTHER;
}

void chaos_call_describe_address(chaos_call *call, const void *address, size_t length) {
    call->port = -1;
    if (!address || length < sizeof(sa_family_t)) return;
    const struct sockaddr *any = address;
    call->family = chaos_call_family(any->sa_family);
    if (any->sa_family == AF_INET && length >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = address;
        call->address = (const uint8_t *)&in->sin_addr;
        call->address_length = 4;
        call->port = ntohs(in->sin_port);
    } else if (any->sa_family == AF_INET6 && length >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = address;
        call->address = (const uint8_t *)&in6->sin6_addr;
        call->address_length = 16;
        call->port = ntohs(in6->sin6_port);
    }
}

int32_t chaos_clock_source(int clock) {
    switch (clock) {
    case CLOCK_REALTIME: return CHAOS_CLOCKSRC_REALTIME;
    case CLOCK_REALTIME_COARSE: return CHAOS_CLOCKSRC_REALTIME_COARSE;
    case CLOCK_TAI: return CHAOS_CLOCKSRC_TAI;
    case CLOCK_REALTIME_ALARM: return CHAOS_CLOCKSRC_REALTIME_ALARM;
    case CLOCK_MONOTONIC:
    case CLOCK_MONOTONIC_RAW:
    case CLOCK_MONOTONIC_COARSE:
    case CLOCK_BOOTTIME:
    case CLOCK_BOOTTIME_ALARM: return CHAOS_CLOCKSRC_MONOTONIC;
    default: return 0;
    }
}

size_t chaos_outcome_short_count(const chaos_outcome *outcome, size_t count) {
    if (outcome->max_bytes > 0) return count < (size_t)outcome->max_bytes ? count : (size_t)outcome->max_bytes;
    return count > 1 ? count / 2 : count;
}

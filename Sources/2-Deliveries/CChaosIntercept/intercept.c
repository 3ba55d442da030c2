// The in-process delivery of the system fault engine: the interceptors of interceptors.inc
// (the same bodies as the LD_PRELOAD library) under hidden `chaos_in_<name>` names, which
// ChaosHooks rebinds GOT and data slots to, and the function that answers `ask` nodes.
// See include/CChaosIntercept.h.
#define _GNU_SOURCE
// glibc defines some stdio functions inline when optimizing; keep the same declarations
// as the preload library, which defines them.
#define __NO_INLINE__ 1
#include "CChaosIntercept.h"

#if defined(__linux__)

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timeb.h>
#include <sys/timerfd.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <mqueue.h>
#include <poll.h>
#include <semaphore.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/// The function answering `ask` nodes (NULL: the original).
static _Atomic(chaos_ask_fn) ix_ask_fn;

// In-process the slot is rebound and the symbol is not interposed, so the default lookup
// finds libc's own definition (a GOT slot may hold our own interceptor: never read it).
#define IX(name) chaos_in_##name
#define IX_FN __attribute__((visibility("hidden")))
#define IX_LOOKUP(name) dlsym(RTLD_DEFAULT, (name))
#define IX_INPROCESS 1
#include "interceptors.inc"

void chaos_fault_set_ask(chaos_ask_fn fn) { atomic_store_explicit(&ix_ask_fn, fn, memory_order_release); }

unsigned long chaos_intercept_chaotic_calls(void) { return atomic_load(&ix_chaotic_calls); }

#define IX_ELEMENT(name, point_, points_) {#name, (point_), (void *)IX(name), (points_)},
static const chaos_intercept table[] = {IX_INTERCEPTORS(IX_ELEMENT){NULL, -1, NULL, 0}};

#define IX_RESOLVE(name, point_, points_) (void)resolve(&real_slot_##name, #name);
static pthread_once_t resolved_once = PTHREAD_ONCE_INIT;
static void resolve_all(void) {
    IX_INTERCEPTORS(IX_RESOLVE)
    // The engine stamps acted calls with the real time: through the vDSO, not a system call.
    void *real_clock = atomic_load(&real_slot_clock_gettime);
    if (real_clock) chaos_fault_set_real_clock((chaos_real_clock_fn)real_clock);
    // libc's clock_gettime only calls the vDSO's; when the real one is libc's, the
    // interceptor calls the vDSO's itself (not under valgrind, which has no vDSO).
    Dl_info info;
    if (real_clock && dladdr(real_clock, &info) && info.dli_fname && strstr(info.dli_fname, "/libc.so")) {
        void *vdso = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
        void *vdso_clock = vdso ? dlsym(vdso, "__vdso_clock_gettime") : NULL;
        if (vdso_clock) atomic_store(&ix_vdso_clock_gettime, vdso_clock);
        if (vdso) dlclose(vdso);
    }
}

const chaos_intercept *chaos_intercepts(void) {
    pthread_once(&resolved_once, resolve_all);
    return table;
}

const chaos_intercept *chaos_intercept_find(const char *symbol) {
    if (!symbol) return NULL;
    const chaos_intercept *all = chaos_intercepts();
    for (const chaos_intercept *i = all; i->symbol; i++)
        if (strcmp(i->symbol, symbol) == 0) return i;
    return NULL;
}

#else

static const chaos_intercept table[] = {{0, -1, 0, 0}};
const chaos_intercept *chaos_intercepts(void) { return table; }
const chaos_intercept *chaos_intercept_find(const char *symbol) {
    (void)symbol;
    return 0;
}
void chaos_fault_set_ask(chaos_ask_fn fn) { (void)fn; }
unsigned long chaos_intercept_chaotic_calls(void) { return 0; }

#endif

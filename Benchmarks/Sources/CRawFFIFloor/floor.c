// The "floor" a ChaosHooks closure is benchmarked against: the cheapest possible libffi
// closure of `int32_t (int32_t, int32_t)` that calls the original function.
#include "CRawFFIFloor.h"
#include <stdlib.h>
#include <ffi.h>

typedef struct raw_forwarder {
    ffi_closure *closure;
    ffi_cif cif;
    ffi_type *arguments[2];
    void (*original)(void);
} raw_forwarder;

static void raw_forward(ffi_cif *cif, void *ret, void **args, void *user_data) {
    raw_forwarder *f = user_data;
    ffi_call(cif, f->original, ret, args);
}

void *chaos_bench_make_raw_forwarding_closure(void *original, void **code_out) {
    raw_forwarder *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->arguments[0] = &ffi_type_sint32;
    f->arguments[1] = &ffi_type_sint32;
    if (ffi_prep_cif(&f->cif, FFI_DEFAULT_ABI, 2, &ffi_type_sint32, f->arguments) != FFI_OK) {
        free(f);
        return NULL;
    }
    void *code = NULL;
    f->closure = ffi_closure_alloc(sizeof(ffi_closure), &code);
    if (!f->closure) {
        free(f);
        return NULL;
    }
    f->original = (void (*)(void))original;
    if (ffi_prep_closure_loc(f->closure, &f->cif, raw_forward, f, code) != FFI_OK) {
        ffi_closure_free(f->closure);
        free(f);
        return NULL;
    }
    *code_out = code;
    return f;
}

void chaos_bench_free_raw_forwarding_closure(void *handle) {
    raw_forwarder *f = handle;
    if (!f) return;
    ffi_closure_free(f->closure);
    free(f);
}

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t chaos_bench_real_monotonic_ns(void) {
    struct timespec now;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

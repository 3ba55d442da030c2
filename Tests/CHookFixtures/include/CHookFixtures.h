#ifndef CHAOSKIT_CHOOKFIXTURES_H
#define CHAOSKIT_CHOOKFIXTURES_H

// Test fixtures for ChaosHooks: a callbacks table called from C, and exported functions.

#include <stdint.h>
#include <stddef.h>

typedef struct chaos_fx_point {
    double x;
    double y;
} chaos_fx_point;

typedef struct chaos_fx_mixed {
    int32_t a;
    int8_t b;
    int64_t c;
} chaos_fx_mixed;

typedef struct chaos_fx_nested {
    chaos_fx_point point;
    int32_t tag;
} chaos_fx_nested;

typedef struct chaos_fx_callbacks {
    int32_t (*add)(int32_t a, int32_t b);
    double (*scale)(double value, double factor);
    chaos_fx_point (*move)(chaos_fx_point p, double dx, double dy);
    chaos_fx_nested (*tag)(chaos_fx_nested n, int32_t tag);
    int64_t (*sum_mixed)(chaos_fx_mixed m);
    int32_t (*fill)(int32_t *out, const char *name);
    void (*notify)(int32_t code);
    int32_t (*fail)(int32_t code);
    int8_t (*negate8)(int8_t v);
    float (*half)(float v);
} chaos_fx_callbacks;

/// The table the `chaos_fx_call_*` functions call through. Initialized with the
/// `chaos_fx_real_*` implementations; `chaos_fx_reset` puts them back.
extern chaos_fx_callbacks chaos_fx_table;
void chaos_fx_reset(void);
/// The address of `chaos_fx_table` (so Swift can take member addresses without copies).
chaos_fx_callbacks *chaos_fx_table_address(void);
/// Address of a function-pointer member of `chaos_fx_table`, by byte offset.
void **chaos_fx_table_slot(size_t offset);

int32_t chaos_fx_call_add(int32_t a, int32_t b);
double chaos_fx_call_scale(double value, double factor);
chaos_fx_point chaos_fx_call_move(chaos_fx_point p, double dx, double dy);
chaos_fx_nested chaos_fx_call_tag(chaos_fx_nested n, int32_t tag);
int64_t chaos_fx_call_sum_mixed(chaos_fx_mixed m);
int32_t chaos_fx_call_fill(int32_t *out, const char *name);
void chaos_fx_call_notify(int32_t code);
/// Calls `fail` and returns its result; the errno seen right after the call goes to `errno_out`.
int32_t chaos_fx_call_fail(int32_t code, int *errno_out);
int8_t chaos_fx_call_negate8(int8_t v);
float chaos_fx_call_half(float v);

/// The last code passed to the real `notify`.
int32_t chaos_fx_last_notified(void);

int32_t chaos_fx_real_add(int32_t a, int32_t b);
double chaos_fx_real_scale(double value, double factor);
chaos_fx_point chaos_fx_real_move(chaos_fx_point p, double dx, double dy);
chaos_fx_nested chaos_fx_real_tag(chaos_fx_nested n, int32_t tag);
int64_t chaos_fx_real_sum_mixed(chaos_fx_mixed m);
int32_t chaos_fx_real_fill(int32_t *out, const char *name);
void chaos_fx_real_notify(int32_t code);
int32_t chaos_fx_real_fail(int32_t code);
int8_t chaos_fx_real_negate8(int8_t v);
float chaos_fx_real_half(float v);

/// Calls libc's `getenv` from C (through this binary's PLT/GOT).
const char *chaos_fx_getenv(const char *name);

/// Layout facts from the C compiler, for cross-checking CType.
size_t chaos_fx_sizeof_mixed(void);
size_t chaos_fx_alignof_mixed(void);
size_t chaos_fx_sizeof_nested(void);
size_t chaos_fx_offsetof_nested_tag(void);

#endif

#include "CHookFixtures.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int32_t chaos_fx_real_add(int32_t a, int32_t b) { return a + b; }
double chaos_fx_real_scale(double value, double factor) { return value * factor; }
chaos_fx_point chaos_fx_real_move(chaos_fx_point p, double dx, double dy) {
    chaos_fx_point r = {p.x + dx, p.y + dy};
    return r;
}
chaos_fx_nested chaos_fx_real_tag(chaos_fx_nested n, int32_t tag) {
    n.tag = tag;
    return n;
}
int64_t chaos_fx_real_sum_mixed(chaos_fx_mixed m) { return (int64_t)m.a + m.b + m.c; }
int32_t chaos_fx_real_fill(int32_t *out, const char *name) {
    int32_t length = (int32_t)strlen(name);
    if (out) *out = length;
    return 0;
}
static volatile int32_t last_notified = -1;
void chaos_fx_real_notify(int32_t code) { last_notified = code; }
int32_t chaos_fx_real_fail(int32_t code) {
    errno = code;
    return -1;
}
int8_t chaos_fx_real_negate8(int8_t v) { return (int8_t)-v; }
float chaos_fx_real_half(float v) { return v / 2.0f; }
int32_t chaos_fx_last_notified(void) { return last_notified; }

static const chaos_fx_callbacks defaults = {
    chaos_fx_real_add,  chaos_fx_real_scale,  chaos_fx_real_move, chaos_fx_real_tag,     chaos_fx_real_sum_mixed,
    chaos_fx_real_fill, chaos_fx_real_notify, chaos_fx_real_fail, chaos_fx_real_negate8, chaos_fx_real_half,
};

chaos_fx_callbacks chaos_fx_table = {
    chaos_fx_real_add,  chaos_fx_real_scale,  chaos_fx_real_move, chaos_fx_real_tag,     chaos_fx_real_sum_mixed,
    chaos_fx_real_fill, chaos_fx_real_notify, chaos_fx_real_fail, chaos_fx_real_negate8, chaos_fx_real_half,
};

void chaos_fx_reset(void) { chaos_fx_table = defaults; }
chaos_fx_callbacks *chaos_fx_table_address(void) { return &chaos_fx_table; }
void **chaos_fx_table_slot(size_t offset) { return (void **)((char *)&chaos_fx_table + offset); }

// Each call reads the member anew, as a relaxed atomic load: concurrent rebinding is
// observed, and the read is well defined (ThreadSanitizer agrees) — the same 8-byte
// aligned load real C code and PLT stubs make.
#define SLOT(name) (__atomic_load_n(&chaos_fx_table.name, __ATOMIC_RELAXED))

int32_t chaos_fx_call_add(int32_t a, int32_t b) { return SLOT(add)(a, b); }
double chaos_fx_call_scale(double value, double factor) { return SLOT(scale)(value, factor); }
chaos_fx_point chaos_fx_call_move(chaos_fx_point p, double dx, double dy) { return SLOT(move)(p, dx, dy); }
chaos_fx_nested chaos_fx_call_tag(chaos_fx_nested n, int32_t tag) { return SLOT(tag)(n, tag); }
int64_t chaos_fx_call_sum_mixed(chaos_fx_mixed m) { return SLOT(sum_mixed)(m); }
int32_t chaos_fx_call_fill(int32_t *out, const char *name) { return SLOT(fill)(out, name); }
void chaos_fx_call_notify(int32_t code) { SLOT(notify)(code); }
int32_t chaos_fx_call_fail(int32_t code, int *errno_out) {
    errno = 0;
    int32_t result = SLOT(fail)(code);
    *errno_out = errno;
    return result;
}
int8_t chaos_fx_call_negate8(int8_t v) { return SLOT(negate8)(v); }
float chaos_fx_call_half(float v) { return SLOT(half)(v); }

const char *chaos_fx_getenv(const char *name) { return getenv(name); }

size_t chaos_fx_sizeof_mixed(void) { return sizeof(chaos_fx_mixed); }
size_t chaos_fx_alignof_mixed(void) { return _Alignof(chaos_fx_mixed); }
size_t chaos_fx_sizeof_nested(void) { return sizeof(chaos_fx_nested); }
size_t chaos_fx_offsetof_nested_tag(void) { return offsetof(chaos_fx_nested, tag); }

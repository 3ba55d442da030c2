// A plan written back as canonical text (chaos_plan_format): parsing it gives the same plan.
#define _GNU_SOURCE
#include "plan.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// MARK: - Format

typedef struct writer {
    char *buffer;
    size_t capacity;
    size_t used;
    bool failed;
} writer;

__attribute__((format(printf, 2, 3))) static void put(writer *w, const char *format, ...) {
    va_list list;
    va_start(list, format);
    char *at = w->used < w->capacity ? w->buffer + w->used : NULL;
    size_t room = w->used < w->capacity ? w->capacity - w->used : 0;
    int wrote = vsnprintf(at, room, format, list);
    va_end(list);
    if (wrote < 0)
        w->failed = true;
    else
        w->used += (size_t)wrote;
}

/// A quoted value; bytes that are not UTF-8 (a path or a variable's value may hold any) are
/// written as \xHH, so the canonical text is always UTF-8 and reads back the same bytes.
static void put_string(writer *w, const char *key, const char *value) {
    put(w, " %s=\"", key);
    size_t length = strlen(value);
    for (size_t i = 0; i < length;) {
        int valid;
        size_t count = chaos_utf8_next(value + i, length - i, &valid);
        for (size_t end = i + count; i < end; i++) {
            unsigned char c = (unsigned char)value[i];
            if (c == '"' || c == '\\')
                put(w, "\\%c", c);
            else if (c == '\n')
                put(w, "\\n");
            else if (c == '\t')
                put(w, "\\t");
            else if (c < 0x20 || c == 0x7f || !valid)
                put(w, "\\x%02x", c);
            else
                put(w, "%c", c);
        }
    }
    put(w, "\"");
}

static void put_double(writer *w, const char *key, double value) {
    char text[64];
    snprintf(text, sizeof text, "%.17g", value);
    for (char *c = text; *c; c++)
        if (*c == ',') *c = '.';
    put(w, " %s=%s", key, text);
}

static void put_set(writer *w, const char *key, uint32_t bits, const char *const *names, const uint32_t *values) {
    if (!bits) return;
    put(w, " %s=", key);
    bool first = true;
    for (int i = 0; names[i]; i++) {
        if (!(bits & values[i])) continue;
        put(w, "%s%s", first ? "" : ",", names[i]);
        first = false;
    }
}

long chaos_plan_format(const chaos_plan *plan, char *buffer, size_t capacity) {
    if (!plan) return -1;
    writer w = {buffer, capacity, 0, false};
    if (capacity) buffer[0] = 0;
    put(&w, "chaos-plan %d\nseed %llu\n", CHAOS_PLAN_VERSION, (unsigned long long)plan->seed);
    for (int32_t e = 0; e < plan->count; e++) {
        const cf_entry *entry = &plan->entries[e];
        put(&w, "entry %s", cf_point_names[entry->point]);
        if (entry->label) put_string(&w, "label", entry->label);
        if (entry->seed_given) put(&w, " seed=%llu", (unsigned long long)entry->seed);
        if (plan_default_families(entry->point))
            put_set(&w, "family", entry->families, cf_family_names, cf_family_bits);
        if (entry->point == CHAOS_POINT_CLOCK)
            put(&w, " monotonic=%s stat=%s sleep=%s", entry->monotonic ? "yes" : "no", entry->stat_times ? "yes" : "no",
                entry->sleeps ? "yes" : "no");
        put(&w, "\n");
        for (int32_t i = 0; i < entry->count; i++) {
            const cf_node *node = &entry->nodes[i];
            put(&w, "node %d %s", i, cf_kind_names[node->kind]);
            switch (node->kind) {
            case CHAOS_NODE_FAIL: {
                if (node->any_errno) {
                    put(&w, " errno=any");
                } else if (node->has_err) {
                    const char *name = chaos_fault_errno_name(node->err);
                    if (name)
                        put(&w, " errno=%s", name);
                    else
                        put(&w, " errno=%d", node->err);
                }
                const char *code = node->ret < 0 ? chaos_fault_errno_name((int32_t)node->ret) : NULL;
                if (entry->point == CHAOS_POINT_DNS && code)
                    put(&w, " ret=%s", code);
                else if (node->ret != -1)
                    put(&w, " ret=%lld", (long long)node->ret);
                break;
            }
            case CHAOS_NODE_SHORT:
                if (node->max) put(&w, " max=%lld", (long long)node->max);
                if (node->variation) put(&w, " variation=%lld", (long long)node->variation);
                break;
            case CHAOS_NODE_PACE: put(&w, " rate=%llu", (unsigned long long)node->n); break;
            case CHAOS_NODE_LINGER: put(&w, " by=%lld", (long long)node->ns); break;
            case CHAOS_NODE_LIMIT:
            case CHAOS_NODE_STALL:
                if (node->kind == CHAOS_NODE_LIMIT)
                    put(&w, " bytes=%llu", (unsigned long long)node->n);
                else
                    put(&w, " for=%lld", (long long)node->ns);
                put(&w, " then=%s", node->stream_end == CHAOS_STREAM_END_CLOSE ? "close" : "reset");
                break;
            case CHAOS_NODE_OFFSET: put(&w, " by=%lld", (long long)node->ns); break;
            case CHAOS_NODE_FROZEN: put(&w, " at=%lld", (long long)node->ns); break;
            case CHAOS_NODE_SPEED:
                put_double(&w, "factor", node->factor);
                if (node->anchor_start)
                    put(&w, " anchor=start");
                else
                    put(&w, " anchor=%lld", (long long)node->ns);
                break;
            case CHAOS_NODE_CORRUPT: {
                static const char *const ways[] = {"flip", "zero", "random"};
                if (node->n != 1) put(&w, " bytes=%llu", (unsigned long long)node->n);
                if (node->corrupt_offset >= 0) put(&w, " offset=%lld", (long long)node->corrupt_offset);
                if (node->corrupt_with > 0) put(&w, " with=%s", ways[node->corrupt_with]);
                break;
            }
            case CHAOS_NODE_ATTRIBUTES: {
                const chaos_attributes *a = &node->attributes;
                if (a->set & CHAOS_ATTRIBUTE_SIZE) put(&w, " size=%lld", (long long)a->size);
                if (a->set & CHAOS_ATTRIBUTE_MTIME) put(&w, " mtime=%lld", (long long)a->mtime_ns);
                if (a->set & CHAOS_ATTRIBUTE_MODE) put(&w, " mode=%o", (unsigned)a->mode);
                if (a->set & CHAOS_ATTRIBUTE_NLINK) put(&w, " nlink=%llu", (unsigned long long)a->nlink);
                break;
            }
            case CHAOS_NODE_POWER_LOSS:
                if (node->torn) put(&w, " torn=yes");
                break;
            case CHAOS_NODE_OMIT:
                if (node->value)
                    put_string(&w, "name", node->value);
                else
                    put(&w, " every=%llu", (unsigned long long)node->n);
                break;
            case CHAOS_NODE_VIRTUAL:
                if (node->ns) put(&w, " at=%lld", (long long)node->ns);
                if (node->anchor_start) put(&w, " flow=yes");
                break;
            case CHAOS_NODE_SET: put_string(&w, "value", node->value ? node->value : ""); break;
            case CHAOS_NODE_SEQUENTIAL:
                put(&w, " children=");
                for (int32_t c = 0; c < node->count; c++) {
                    put(&w, "%s%d", c ? "," : "", node->children[c]);
                    if (node->weights[c] != 1) put(&w, "*%llu", (unsigned long long)node->weights[c]);
                }
                break;
            case CHAOS_NODE_COMPOSITE:
                if (node->otherwise >= 0) put(&w, " otherwise=%d", node->otherwise);
                break;
            case CHAOS_NODE_PROBABILITY:
                put_double(&w, "p", node->p);
                put(&w, " child=%d salt=%llu", node->child, (unsigned long long)node->salt);
                break;
            case CHAOS_NODE_TIMES: put(&w, " n=%llu child=%d", (unsigned long long)node->n, node->child); break;
            case CHAOS_NODE_DELAY: put(&w, " by=%lld child=%d", (long long)node->ns, node->child); break;
            case CHAOS_NODE_ASK: put(&w, " id=%llu", (unsigned long long)node->n); break;
            case CHAOS_NODE_AT:
                put(&w, " calls=%s", node->count ? "" : "none");
                for (int32_t c = 0; c < node->count; c++)
                    put(&w, "%s%llu", c ? "," : "", (unsigned long long)node->weights[c]);
                put(&w, " child=%d", node->child);
                break;
            default: break;
            }
            put(&w, "\n");
            for (int32_t c = 0; node->kind == CHAOS_NODE_COMPOSITE && c < node->count; c++) {
                const cf_case *k = &node->cases[c];
                put(&w, "case %d", k->child);
                if (k->path) put_string(&w, "path", k->path);
                put_set(&w, "ops", k->ops, cf_op_names, cf_op_bits);
                if (k->fds) {
                    put(&w, " fd=");
                    for (int fd = 0, first = 1; fd < 64; fd++)
                        if (k->fds >> fd & 1) {
                            put(&w, "%s%d", first ? "" : ",", fd);
                            first = 0;
                        }
                }
                put_set(&w, "kind", k->descriptor_kinds, cf_descriptor_kind_names, cf_descriptor_kind_bits);
                if (k->has_address) {
                    char address[64];
                    inet_ntop(k->address_length == 4 ? AF_INET : AF_INET6, k->address, address, sizeof address);
                    put(&w, " host=%s/%d", address, k->prefix_bits);
                }
                if (k->host) put_string(&w, "host", k->host);
                if (k->port >= 0) put(&w, " port=%d", k->port);
                if (k->above) put(&w, " above=%llu", (unsigned long long)k->above);
                put_set(&w, "family", k->families, cf_family_names, cf_family_bits);
                put_set(&w, "role", k->roles, cf_role_names, cf_role_bits);
                put_set(&w, "clock", k->clocks, cf_clock_names, cf_clock_bits);
                if (k->name) put_string(&w, "name", k->name);
                put(&w, "\n");
            }
        }
    }
    if (w.failed) return -1;
    return (long)w.used;
}

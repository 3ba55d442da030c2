// Interned strings: getenv answers a program may keep pointers to, so they outlive every
// plan that made them.
#define _GNU_SOURCE
#include "internal.h"
#include "chaos_fast_clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef struct interned {
    struct interned *next;
    char text[];
} interned;
// Never freed, so a getenv answer outlives every plan; under intern_lock.
static interned *interned_strings;
static _Atomic int intern_lock;

const char *cf_intern(const char *text) {
    cf_spin_lock(&intern_lock);
    for (interned *i = interned_strings; i; i = i->next) {
        if (strcmp(i->text, text) == 0) {
            cf_spin_unlock(&intern_lock);
            return i->text;
        }
    }
    size_t n = strlen(text);
    interned *made = malloc(sizeof(interned) + n + 1);
    if (!made) {
        cf_spin_unlock(&intern_lock);
        return NULL;
    }
    memcpy(made->text, text, n + 1);
    made->next = interned_strings;
    interned_strings = made;
    cf_spin_unlock(&intern_lock);
    return made->text;
}

const char *chaos_fault_intern(const char *text) { return text ? cf_intern(text) : NULL; }

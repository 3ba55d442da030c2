// Path folding and matching.
//
// Folding is lexical, the fallback of physical.c: a relative path is joined to its base
// (the cwd, or the directory a dirfd was opened on), then empty components and `.` are
// dropped and `..` removes the component before it (never above `/`). Plans with a path
// selector compare physical paths instead (physical.c): folding ignores links, and a
// pattern and a call naming one file through different links must still meet. Without a
// selector a name only decides the /dev, /proc and /sys rule, which folding serves.
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// MARK: - Folding

/// Folds `input` (absolute) into `out`; -1 when it does not fit.
static int fold(const char *input, char *out, size_t capacity) {
    if (capacity < 2) return -1;
    size_t used = 0;
    const char *p = input;
    while (*p) {
        while (*p == '/') p++;
        if (!*p) break;
        const char *start = p;
        while (*p && *p != '/') p++;
        size_t length = (size_t)(p - start);
        if (length == 1 && start[0] == '.') continue;
        if (length == 2 && start[0] == '.' && start[1] == '.') {
            while (used > 0 && out[used - 1] != '/') used--;
            if (used > 0) used--; // the slash before it
            continue;
        }
        if (used + 1 + length + 1 > capacity) return -1;
        out[used++] = '/';
        memcpy(out + used, start, length);
        used += length;
    }
    if (used == 0) out[used++] = '/';
    out[used] = 0;
    return (int)used;
}

int chaos_path_resolve(int dirfd, const char *path, char *out, size_t capacity) {
    if (!path || !out || capacity < 2) return -1;
    if (path[0] == '/') return fold(path, out, capacity);
    char base[4096];
    if (dirfd == AT_FDCWD) {
        if (syscall(SYS_getcwd, base, sizeof base) <= 0 || base[0] != '/') return -1;
    } else {
        int special = 0, family = 0, role = 0;
        if (chaos_fd_lookup(dirfd, base, sizeof base, &special, &family, &role) != CHAOS_FD_FILE) return -1;
    }
    size_t base_length = strlen(base), path_length = strlen(path);
    if (base_length + 1 + path_length + 1 > 8192) return -1;
    char joined[8192];
    memcpy(joined, base, base_length);
    joined[base_length] = '/';
    memcpy(joined + base_length + 1, path, path_length + 1);
    return fold(joined, out, capacity);
}

// MARK: - Matching

bool cf_glob_component(const char *pattern, size_t plen, const char *text, size_t tlen, bool fold_case) {
    size_t p = 0, t = 0, star = (size_t)-1, mark = 0;
    while (t < tlen) {
        if (p < plen && pattern[p] == '*') {
            star = p++;
            mark = t;
        } else if (p < plen &&
                   (pattern[p] == '?' || (fold_case ? ((pattern[p] | 0x20) == (text[t] | 0x20) &&
                                                       ((pattern[p] | 0x20) >= 'a' && (pattern[p] | 0x20) <= 'z')) ||
                                                          pattern[p] == text[t]
                                                    : pattern[p] == text[t]))) {
            p++;
            t++;
        } else if (star != (size_t)-1) {
            p = star + 1;
            t = ++mark;
        } else {
            return false;
        }
    }
    while (p < plen && pattern[p] == '*') p++;
    return p == plen;
}

typedef struct component {
    const char *start;
    size_t length;
} component;

static int split(const char *path, component *out, int capacity) {
    int count = 0;
    const char *p = path;
    while (*p) {
        while (*p == '/') p++;
        if (!*p) break;
        if (count == capacity) return -1;
        out[count].start = p;
        while (*p && *p != '/') p++;
        out[count].length = (size_t)(p - out[count].start);
        count++;
    }
    return count;
}

static bool has_wildcard(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] == '*' || s[i] == '?') return true;
    return false;
}

static bool is_special_root(const component *first) {
    return (first->length == 3 && (memcmp(first->start, "dev", 3) == 0 || memcmp(first->start, "sys", 3) == 0)) ||
           (first->length == 4 && memcmp(first->start, "proc", 4) == 0);
}

#define MAX_COMPONENTS 1024

int chaos_path_match(const char *pattern, const char *path, int special) {
    if (!pattern || !path || pattern[0] != '/' || path[0] != '/') return 0;
    component pc[CHAOS_PLAN_MAX_STRING / 2 + 1];
    component tc[MAX_COMPONENTS];
    int np = split(pattern, pc, (int)(sizeof pc / sizeof pc[0]));
    int nt = split(path, tc, MAX_COMPONENTS);
    if (np < 0 || nt < 0) return 0;
    bool wild = has_wildcard(pattern, strlen(pattern));
    if (special) { // an inherited 0–2: only its exact path, named without wildcards
        return !wild && strcmp(pattern, path) == 0;
    }
    // /dev, /proc, /sys: only patterns whose first component names that directory.
    if (nt > 0 && is_special_root(&tc[0])) {
        if (np == 0 || pc[0].length != tc[0].length || memcmp(pc[0].start, tc[0].start, tc[0].length) != 0) return 0;
    }
    if (!wild) { // a prefix by whole components
        if (np > nt) return 0;
        for (int i = 0; i < np; i++)
            if (pc[i].length != tc[i].length || memcmp(pc[i].start, tc[i].start, pc[i].length) != 0) return 0;
        return 1;
    }
    // Globs: dynamic programming over components; `**` matches zero or more components.
    bool row[MAX_COMPONENTS + 1], next[MAX_COMPONENTS + 1];
    memset(row, 0, sizeof(bool) * (size_t)(nt + 1));
    row[0] = true;
    for (int i = 0; i < np; i++) {
        bool globstar = pc[i].length == 2 && pc[i].start[0] == '*' && pc[i].start[1] == '*';
        memset(next, 0, sizeof(bool) * (size_t)(nt + 1));
        for (int j = 0; j <= nt; j++) {
            if (globstar) {
                next[j] = row[j] || (j > 0 && next[j - 1]);
            } else if (j > 0 && row[j - 1]) {
                next[j] = cf_glob_component(pc[i].start, pc[i].length, tc[j - 1].start, tc[j - 1].length, false);
            }
        }
        memcpy(row, next, sizeof(bool) * (size_t)(nt + 1));
    }
    return row[nt] ? 1 : 0;
}

int chaos_path_pattern_check(const char *pattern, char *why, size_t capacity) {
    char scratch[2];
    if (!why) {
        why = scratch;
        capacity = sizeof scratch;
    }
    if (!pattern || pattern[0] != '/') {
        snprintf(why, capacity, "a path pattern must be absolute (start with /)");
        return -1;
    }
    size_t length = strlen(pattern);
    if (length >= CHAOS_PLAN_MAX_STRING) {
        snprintf(why, capacity, "the pattern is longer than %d bytes", CHAOS_PLAN_MAX_STRING - 1);
        return -1;
    }
    if (length > 1 && pattern[length - 1] == '/') {
        snprintf(why, capacity, "drop the trailing / (a pattern without wildcards already covers everything below it)");
        return -1;
    }
    int globstars = 0;
    const char *p = pattern;
    while (*p) {
        if (*p++ != '/') continue;
        const char *start = p;
        while (*p && *p != '/') p++;
        size_t n = (size_t)(p - start);
        if (n == 0 && *p) {
            snprintf(why, capacity, "'//' in the pattern: write one /");
            return -1;
        }
        if ((n == 1 && start[0] == '.') || (n == 2 && start[0] == '.' && start[1] == '.')) {
            snprintf(why, capacity,
                     "'%.*s' in the pattern: write the folded path (patterns are compared with folded paths)", (int)n,
                     start);
            return -1;
        }
        for (size_t i = 0; i + 1 < n; i++) {
            if (start[i] == '*' && start[i + 1] == '*' && n != 2) {
                snprintf(why, capacity, "'**' must be a whole component (/a/**/b), not part of '%.*s'", (int)n, start);
                return -1;
            }
        }
        if (n == 2 && start[0] == '*' && start[1] == '*') globstars++;
    }
    if (globstars > 8) {
        snprintf(why, capacity, "more than 8 '**' components");
        return -1;
    }
    return 0;
}

// Writing GOT and data slots of loaded ELF images. The protection of a page is asked of
// the kernel (PROCMAP_QUERY, Linux 6.11+; before that, one read of /proc/self/maps per
// batch: reading it costs ~0.5 ms in a process with a few hundred mappings, so never per
// slot), once per page while the set of loaded images stays the same. A page that is not
// writable is made writable for the writes and given its exact protection back.
#define _GNU_SOURCE 1
#include "CChaosELF.h"
#include "elf_internal.h"

#include <errno.h>

#if defined(__linux__)
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

// MARK: - Page protection

// PROCMAP_QUERY (include/uapi/linux/fs.h, Linux 6.11): the mapping containing an address,
// without formatting the whole of /proc/self/maps. Declared here for older headers.
struct chaos_procmap_query {
    uint64_t size;
    uint64_t query_flags;
    uint64_t query_addr;
    uint64_t vma_start;
    uint64_t vma_end;
    uint64_t vma_flags;
    uint64_t vma_page_size;
    uint64_t vma_offset;
    uint64_t inode;
    uint32_t dev_major;
    uint32_t dev_minor;
    uint32_t vma_name_size;
    uint32_t build_id_size;
    uint64_t vma_name_addr;
    uint64_t build_id_addr;
};
#define CHAOS_PROCMAP_QUERY _IOWR('f', 17, struct chaos_procmap_query)
enum { CHAOS_PROCMAP_READABLE = 1, CHAOS_PROCMAP_WRITABLE = 2, CHAOS_PROCMAP_EXECUTABLE = 4 };

/// 1: PROCMAP_QUERY works here; 0: it does not (read the text); -1: not tried yet.
static int procmap_works = -1;

static void seen_pages_forget(void);

void chaos_elf_use_maps_text(int always) {
    __atomic_store_n(&procmap_works, always ? 0 : -1, __ATOMIC_RELAXED);
    seen_pages_forget(); // so that the next writes ask the kernel the way chosen
}

typedef struct map_range {
    uintptr_t start, end;
    int protection;
} map_range;

/// What a batch knows of the address space: an open /proc/self/maps for queries, or its
/// text parsed once.
typedef struct protections {
    int fd;
    int parsed;
    map_range *ranges;
    size_t count;
} protections;

static void protections_open(protections *p) {
    memset(p, 0, sizeof *p);
    // Raw system calls: these functions may be what a hook just rebound.
    p->fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
}

static void protections_close(protections *p) {
    if (p->fd >= 0) syscall(SYS_close, p->fd);
    free(p->ranges);
    memset(p, 0, sizeof *p);
    p->fd = -1;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/// Reads and parses the whole of /proc/self/maps once (kernels without PROCMAP_QUERY).
static void protections_parse(protections *p) {
    p->parsed = 1;
    if (p->fd < 0) return;
    size_t capacity = 1 << 16, used = 0;
    char *text = malloc(capacity);
    while (text) {
        if (used == capacity) {
            char *grown = realloc(text, capacity * 2);
            if (!grown) {
                free(text);
                text = NULL;
                break;
            }
            text = grown;
            capacity *= 2;
        }
        long got = syscall(SYS_read, p->fd, text + used, capacity - used);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        used += (size_t)got;
    }
    if (!text) return;
    size_t lines = 0;
    for (size_t i = 0; i < used; i++) lines += text[i] == '\n';
    p->ranges = malloc((lines + 1) * sizeof(map_range));
    if (!p->ranges) {
        free(text);
        return;
    }
    // Each line: start-end perms offset dev inode [path]
    for (size_t i = 0; i < used;) {
        uintptr_t start = 0, end = 0;
        int digit;
        while (i < used && (digit = hex_digit(text[i])) >= 0) {
            start = start * 16 + (uintptr_t)digit;
            i++;
        }
        if (i < used && text[i] == '-') i++;
        while (i < used && (digit = hex_digit(text[i])) >= 0) {
            end = end * 16 + (uintptr_t)digit;
            i++;
        }
        if (i + 4 < used && text[i] == ' ') {
            int protection = PROT_NONE;
            if (text[i + 1] == 'r') protection |= PROT_READ;
            if (text[i + 2] == 'w') protection |= PROT_WRITE;
            if (text[i + 3] == 'x') protection |= PROT_EXEC;
            if (start < end) p->ranges[p->count++] = (map_range){start, end, protection};
        }
        while (i < used && text[i] != '\n') i++;
        i++;
    }
    free(text);
}

/// The PROT_* bits of the mapping containing `address`, or -1 when none does.
static int protection_of(protections *p, uintptr_t address) {
    if (!p->parsed && p->fd >= 0 && __atomic_load_n(&procmap_works, __ATOMIC_RELAXED) != 0) {
        struct chaos_procmap_query query;
        memset(&query, 0, sizeof query);
        query.size = sizeof query;
        query.query_addr = address;
        if (ioctl(p->fd, CHAOS_PROCMAP_QUERY, &query) == 0) {
            __atomic_store_n(&procmap_works, 1, __ATOMIC_RELAXED);
            if (address < query.vma_start || address >= query.vma_end) return -1;
            int protection = PROT_NONE;
            if (query.vma_flags & CHAOS_PROCMAP_READABLE) protection |= PROT_READ;
            if (query.vma_flags & CHAOS_PROCMAP_WRITABLE) protection |= PROT_WRITE;
            if (query.vma_flags & CHAOS_PROCMAP_EXECUTABLE) protection |= PROT_EXEC;
            return protection;
        }
        if (errno == ENOENT) return -1;                        // no mapping there
        __atomic_store_n(&procmap_works, 0, __ATOMIC_RELAXED); // ENOTTY (before 6.11), EINVAL…
    }
    if (!p->parsed) protections_parse(p);
    size_t low = 0, high = p->count; // the lines are in address order
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (p->ranges[middle].end <= address)
            low = middle + 1;
        else
            high = middle;
    }
    if (low < p->count && address >= p->ranges[low].start && address < p->ranges[low].end)
        return p->ranges[low].protection;
    return -1;
}

int chaos_elf_protection(const void *address) {
    protections p;
    protections_open(&p);
    int protection = protection_of(&p, (uintptr_t)address);
    protections_close(&p);
    return protection;
}

// MARK: - Writing

static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct pending {
    uintptr_t page;
    size_t index;
} pending;

static int pending_order(const void *a, const void *b) {
    const pending *x = a, *y = b;
    if (x->page != y->page) return x->page < y->page ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

// The protections seen, per page, while the set of loaded images stays the same. Slots
// live in RELRO and data pages, whose protection only the loader and these writes change
// (and the writes give each page its protection back), so the kernel is asked once per
// page rather than once per write. Under write_lock.
enum { SEEN_PAGES = 512 };
typedef struct seen_page {
    uintptr_t page;
    int protection;
    int own_mapping; ///< marked MADV_NOHUGEPAGE already (see give_own_mapping)
} seen_page;
static seen_page seen_pages[SEEN_PAGES];
static size_t seen_count;
static unsigned long long seen_adds, seen_subs;
static int seen_valid;

static int read_image_counters(struct dl_phdr_info *info, size_t size, void *data) {
    unsigned long long *counters = data;
    counters[2] = (unsigned long long)cx_image_counters(info, size, &counters[0], &counters[1]);
    return 1; // the first image carries the counters
}

static void seen_pages_forget(void) {
    pthread_mutex_lock(&write_lock);
    seen_valid = 0;
    seen_count = 0;
    pthread_mutex_unlock(&write_lock);
}

/// Forgets the protections seen when images were loaded or unloaded since.
static void seen_pages_check(void) {
    unsigned long long counters[3] = {0, 0, 0};
    dl_iterate_phdr(read_image_counters, counters);
    if (!counters[2] || !seen_valid || counters[0] != seen_adds || counters[1] != seen_subs) {
        seen_count = 0;
        seen_adds = counters[0];
        seen_subs = counters[1];
        seen_valid = counters[2] != 0;
    }
}

/// The protection of `page`, from what was seen or else from the kernel (opening
/// /proc/self/maps on first need). `seen` is set to the page's entry, or NULL when the
/// cache cannot keep it.
static int page_protection(protections *p, uintptr_t page, seen_page **seen) {
    *seen = NULL;
    for (size_t i = 0; i < seen_count; i++) {
        if (seen_pages[i].page != page) continue;
        *seen = &seen_pages[i];
        return seen_pages[i].protection;
    }
    if (p->fd == -2) protections_open(p);
    int protection = protection_of(p, page);
    if (protection >= 0 && seen_valid && seen_count < SEEN_PAGES) {
        *seen = &seen_pages[seen_count++];
        **seen = (seen_page){page, protection, 0};
    }
    return protection;
}

// A read-only page inside a larger mapping (a RELRO segment) costs the kernel a split of
// the mapping when it is made writable and a merge when it is given its protection back:
// ~7.7 µs a pair here. Marking the page MADV_NOHUGEPAGE, which changes nothing for a
// 4 KiB data page that could never be part of a huge page, makes it a mapping of its own
// that no neighbour merges with, so later pairs only change its flags: ~2.3 µs. Done once
// per page; /proc/self/maps then lists the page on its own line.
static void give_own_mapping(seen_page *seen, uintptr_t page_size) {
    if (!seen || seen->own_mapping) return;
    syscall(SYS_madvise, (void *)seen->page, page_size, MADV_NOHUGEPAGE); // EINVAL without THP: no matter
    seen->own_mapping = 1;
}

int chaos_elf_write_slots(chaos_elf_write *writes, size_t count) {
    if (count == 0) return 0;
    if (writes == NULL) return (int)(count > INT_MAX ? INT_MAX : count);
    uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
    pending one;
    pending *order = count == 1 ? &one : malloc(count * sizeof(pending));
    if (!order) {
        for (size_t i = 0; i < count; i++) writes[i].result = ENOMEM;
        return (int)(count > INT_MAX ? INT_MAX : count);
    }
    size_t valid = 0;
    for (size_t i = 0; i < count; i++) {
        writes[i].result = 0;
        writes[i].previous = NULL;
        if (writes[i].slot == NULL || ((uintptr_t)writes[i].slot % sizeof(void *)) != 0) {
            writes[i].result = EINVAL;
            continue;
        }
        order[valid].page = (uintptr_t)writes[i].slot & ~(page_size - 1);
        order[valid].index = i;
        valid++;
    }
    if (valid > 1) qsort(order, valid, sizeof(pending), pending_order);
    pthread_mutex_lock(&write_lock);
    seen_pages_check();
    protections p;
    memset(&p, 0, sizeof p);
    p.fd = -2; // not opened yet
    for (size_t first = 0; first < valid;) {
        size_t last = first;
        while (last < valid && order[last].page == order[first].page) last++;
        void *page = (void *)order[first].page;
        seen_page *seen;
        int protection = page_protection(&p, order[first].page, &seen);
        int failure = 0;
        int needs_unlock = protection >= 0 && !(protection & PROT_WRITE);
        if (needs_unlock) give_own_mapping(seen, page_size);
        if (protection < 0)
            failure = ENOENT;
        else if (needs_unlock && mprotect(page, page_size, protection | PROT_WRITE) != 0)
            failure = errno;
        if (!failure) {
            for (size_t i = first; i < last; i++) {
                chaos_elf_write *w = &writes[order[i].index];
                w->previous = __atomic_exchange_n(w->slot, w->value, __ATOMIC_SEQ_CST);
            }
            if (needs_unlock && mprotect(page, page_size, protection) != 0) {
                failure = errno;
                for (size_t i = first; i < last; i++) { // still writable: undo
                    chaos_elf_write *w = &writes[order[i].index];
                    __atomic_store_n(w->slot, w->previous, __ATOMIC_SEQ_CST);
                    w->previous = NULL;
                }
            }
        }
        if (failure)
            for (size_t i = first; i < last; i++) writes[order[i].index].result = failure;
        first = last;
    }
    if (p.fd != -2) protections_close(&p);
    pthread_mutex_unlock(&write_lock);
    if (order != &one) free(order);
    int failed = 0;
    for (size_t i = 0; i < count; i++) failed += writes[i].result != 0;
    return failed;
}

int chaos_elf_write_slot(void **slot, void *value, void **previous) {
    chaos_elf_write write = {slot, value, NULL, 0};
    chaos_elf_write_slots(&write, 1);
    if (write.result == 0 && previous) *previous = write.previous;
    return write.result;
}

void *chaos_elf_read_slot(void *const *slot) { return __atomic_load_n(slot, __ATOMIC_ACQUIRE); }

#endif

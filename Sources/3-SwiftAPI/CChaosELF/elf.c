// Finding and writing GOT and data slots of loaded ELF images. Kept deliberately small:
// which slots to patch, ownership and error messages are decided in Swift.
//
// Finding. Each loaded image's relocation tables are indexed once, by the hash of the
// symbol name each relocation names (only the kinds a hook rebinds: JUMP_SLOT, GLOB_DAT,
// pointer-sized absolute data relocations). The index lives until the set of loaded
// images changes, which dl_iterate_phdr reports with its dlpi_adds/dlpi_subs counters. A
// lookup is one dl_iterate_phdr call that stops at its first image (the loader's lock is
// held meanwhile, so nothing is unloaded under us), a counter check, and a binary search
// per image.
//
// Writing. The protection of a page is asked of the kernel (PROCMAP_QUERY, Linux 6.11+;
// before that, one read of /proc/self/maps per batch: reading it costs ~0.5 ms in a
// process with a few hundred mappings, so never per slot), once per page while the set of
// loaded images stays the same. A page that is not writable is made writable for the
// writes and given its exact protection back.
#define _GNU_SOURCE 1
#include "CChaosELF.h"

#include <errno.h>

#if defined(__linux__)
#include <dlfcn.h>
#include <elf.h>
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

#if defined(__x86_64__)
#define CHAOS_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define CHAOS_R_GLOB_DAT R_X86_64_GLOB_DAT
#define CHAOS_R_ABS R_X86_64_64
#elif defined(__aarch64__)
#define CHAOS_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define CHAOS_R_GLOB_DAT R_AARCH64_GLOB_DAT
#define CHAOS_R_ABS R_AARCH64_ABS64
#elif defined(__i386__)
#define CHAOS_R_JUMP_SLOT R_386_JMP_SLOT
#define CHAOS_R_GLOB_DAT R_386_GLOB_DAT
// R_386_32 keeps its addend in the slot (REL): after relocation it cannot be told from
// symbol + offset, so 32-bit x86 data relocations are not indexed.
#endif

#if defined(__LP64__)
#define CHAOS_R_SYM(i) ELF64_R_SYM(i)
#define CHAOS_R_TYPE(i) ELF64_R_TYPE(i)
#define CHAOS_ST_TYPE(i) ELF64_ST_TYPE(i)
#else
#define CHAOS_R_SYM(i) ELF32_R_SYM(i)
#define CHAOS_R_TYPE(i) ELF32_R_TYPE(i)
#define CHAOS_ST_TYPE(i) ELF32_ST_TYPE(i)
#endif

// MARK: - The image index

/// One indexed relocation: where its slot is (from the image base), the hash of the name
/// it names, and symbol index << 2 | kind.
typedef struct cx_reloc {
    uintptr_t offset;
    uint32_t hash;
    uint32_t sym_kind;
} cx_reloc;

typedef struct cx_image {
    // Identity: an image with the same base, headers, dynamic section and name after a
    // change of the loaded set is the same image (its index is kept).
    uintptr_t base;
    const ElfW(Phdr) * phdr;
    ElfW(Half) phnum;
    const ElfW(Dyn) * dynamic;
    char *name; ///< dlpi_name as given ("" for the main program)
    char *path; ///< what callbacks see: the name, or /proc/self/exe's target
    // Tables (absolute addresses).
    const ElfW(Sym) * symtab;
    const char *strtab;
    size_t strsz;
    uintptr_t jmprel, rela, rel, pltgot;
    size_t pltrelsz, relasz, relaent, relsz, relent;
    long pltrel;
    uintptr_t relro_start, relro_end; ///< PT_GNU_RELRO, absolute (0, 0: none)
    // The index, built on first use.
    int indexed;
    cx_reloc *relocs;
    size_t count;
} cx_image;

static struct {
    pthread_mutex_t lock;
    int built;
    unsigned long long adds, subs;
    cx_image **images;
    size_t count;
} cache = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, NULL, 0};

/// Nonzero while this thread is inside a find (its callbacks may not find again).
static __thread int finding;

static uint32_t name_hash(const char *name) {
    uint32_t h = 5381;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) h = h * 33 + *c;
    return h;
}

// glibc relocates most d_ptr entries in place; a read-only dynamic section (vDSO,
// some targets) keeps them as link-time addresses. Accept both.
static uintptr_t dyn_address(uintptr_t base, uintptr_t value) { return (value < base) ? value + base : value; }

static void image_free(cx_image *image) {
    if (!image) return;
    free(image->name);
    free(image->path);
    free(image->relocs);
    free(image);
}

/// Reads the dynamic section and headers of a loaded image (no index yet). NULL when out
/// of memory.
static cx_image *image_make(const struct dl_phdr_info *info) {
    cx_image *image = calloc(1, sizeof *image);
    if (!image) return NULL;
    image->base = info->dlpi_addr;
    image->phdr = info->dlpi_phdr;
    image->phnum = info->dlpi_phnum;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    image->name = strdup(name);
    if (name[0]) {
        image->path = strdup(name);
    } else {
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n > 0) exe[n] = '\0';
        image->path = strdup(n > 0 ? exe : "<main program>");
    }
    if (!image->name || !image->path) {
        image_free(image);
        return NULL;
    }
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_DYNAMIC) image->dynamic = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
        if (ph->p_type == PT_GNU_RELRO) {
            image->relro_start = info->dlpi_addr + ph->p_vaddr;
            image->relro_end = image->relro_start + ph->p_memsz;
        }
    }
    image->relaent = sizeof(ElfW(Rela));
    image->relent = sizeof(ElfW(Rel));
    image->pltrel = DT_RELA;
    uintptr_t base = info->dlpi_addr;
    for (const ElfW(Dyn) *dyn = image->dynamic; dyn && dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB: image->symtab = (const ElfW(Sym) *)dyn_address(base, dyn->d_un.d_ptr); break;
        case DT_STRTAB: image->strtab = (const char *)dyn_address(base, dyn->d_un.d_ptr); break;
        case DT_STRSZ: image->strsz = dyn->d_un.d_val; break;
        case DT_JMPREL: image->jmprel = dyn_address(base, dyn->d_un.d_ptr); break;
        case DT_PLTRELSZ: image->pltrelsz = dyn->d_un.d_val; break;
        case DT_PLTREL: image->pltrel = (long)dyn->d_un.d_val; break;
        case DT_PLTGOT: image->pltgot = dyn_address(base, dyn->d_un.d_ptr); break;
        case DT_RELA: image->rela = dyn_address(base, dyn->d_un.d_ptr); break;
        case DT_RELASZ: image->relasz = dyn->d_un.d_val; break;
        case DT_RELAENT: image->relaent = dyn->d_un.d_val; break;
        case DT_REL: image->rel = dyn_address(base, dyn->d_un.d_ptr); break;
        case DT_RELSZ: image->relsz = dyn->d_un.d_val; break;
        case DT_RELENT: image->relent = dyn->d_un.d_val; break;
        default: break;
        }
    }
    return image;
}

static int image_is(const cx_image *image, const struct dl_phdr_info *info) {
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    return image->base == info->dlpi_addr && image->phdr == info->dlpi_phdr && image->phnum == info->dlpi_phnum &&
           strcmp(image->name, name) == 0;
}

static int same_tables(const cx_image *a, const cx_image *b) {
    return a->dynamic == b->dynamic && a->symtab == b->symtab && a->strtab == b->strtab && a->strsz == b->strsz &&
           a->jmprel == b->jmprel && a->pltrelsz == b->pltrelsz && a->pltrel == b->pltrel && a->rela == b->rela &&
           a->relasz == b->relasz && a->relaent == b->relaent && a->rel == b->rel && a->relsz == b->relsz &&
           a->relent == b->relent && a->relro_start == b->relro_start && a->relro_end == b->relro_end &&
           a->pltgot == b->pltgot;
}

#if defined(CHAOS_R_JUMP_SLOT)
/// The kind a relocation gives its slot, or 0 for relocations a hook does not rebind.
static int reloc_kind(const cx_image *image, unsigned long type, size_t sym, uintptr_t offset, int has_addend,
                      int64_t addend) {
    if (sym == 0) return 0;
    if (type == CHAOS_R_JUMP_SLOT) return CHAOS_ELF_SLOT_JUMP;
    if (type == CHAOS_R_GLOB_DAT) {
        // The GOT lies in PT_GNU_RELRO (and .got.plt right after DT_PLTGOT); a GLOB_DAT
        // elsewhere in an image with RELRO is a pointer in its data.
        uintptr_t slot = image->base + offset;
        if (!image->relro_start) return CHAOS_ELF_SLOT_GLOB_DAT;
        if (slot >= image->relro_start && slot < image->relro_end) return CHAOS_ELF_SLOT_GLOB_DAT;
        size_t plt_slots = 3 + image->pltrelsz / (image->pltrel == DT_RELA ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel)));
        if (image->pltgot && slot >= image->pltgot && slot < image->pltgot + plt_slots * sizeof(void *))
            return CHAOS_ELF_SLOT_GLOB_DAT;
        return CHAOS_ELF_SLOT_DATA;
    }
#if defined(CHAOS_R_ABS)
    if (type == CHAOS_R_ABS && has_addend && addend == 0) {
        unsigned char st_type = CHAOS_ST_TYPE(image->symtab[sym].st_info);
        if (st_type == STT_OBJECT || st_type == STT_TLS || st_type == STT_SECTION || st_type == STT_COMMON) return 0;
        return CHAOS_ELF_SLOT_DATA;
    }
#else
    (void)has_addend;
    (void)addend;
#endif
    return 0;
}

typedef struct index_builder {
    cx_image *image;
    size_t count;     ///< relocations kept so far
    size_t max_sym;   ///< pass 1: the largest symbol index kept
    uint32_t *hashes; ///< pass 2: the name hash of each symbol index met so far…
    uint8_t *known;   ///< …and whether it is computed
    cx_reloc *out;
} index_builder;

static void keep(index_builder *b, size_t sym, uintptr_t offset, int kind) {
    if (!b->out) {
        if (sym > b->max_sym) b->max_sym = sym;
        b->count++;
        return;
    }
    cx_image *image = b->image;
    if (!b->known[sym]) {
        ElfW(Word) at = image->symtab[sym].st_name;
        b->hashes[sym] = (image->strsz && at >= image->strsz) ? 0 : name_hash(image->strtab + at);
        b->known[sym] = 1;
    }
    cx_reloc *r = &b->out[b->count++];
    r->offset = offset;
    r->hash = b->hashes[sym];
    r->sym_kind = (uint32_t)(sym << 2) | (uint32_t)kind;
}

/// One pass over every relocation table of the image.
static void walk_relocations(index_builder *b) {
    cx_image *image = b->image;
    if (image->jmprel && image->pltrelsz) {
        if (image->pltrel == DT_RELA) {
            for (size_t at = 0; at + sizeof(ElfW(Rela)) <= image->pltrelsz; at += sizeof(ElfW(Rela))) {
                const ElfW(Rela) *r = (const ElfW(Rela) *)(image->jmprel + at);
                int kind =
                    reloc_kind(image, CHAOS_R_TYPE(r->r_info), CHAOS_R_SYM(r->r_info), r->r_offset, 1, r->r_addend);
                if (kind) keep(b, CHAOS_R_SYM(r->r_info), r->r_offset, kind);
            }
        } else {
            for (size_t at = 0; at + sizeof(ElfW(Rel)) <= image->pltrelsz; at += sizeof(ElfW(Rel))) {
                const ElfW(Rel) *r = (const ElfW(Rel) *)(image->jmprel + at);
                int kind = reloc_kind(image, CHAOS_R_TYPE(r->r_info), CHAOS_R_SYM(r->r_info), r->r_offset, 0, 0);
                if (kind) keep(b, CHAOS_R_SYM(r->r_info), r->r_offset, kind);
            }
        }
    }
    if (image->rela && image->relasz && image->relaent >= sizeof(ElfW(Rela))) {
        for (size_t at = 0; at + image->relaent <= image->relasz; at += image->relaent) {
            const ElfW(Rela) *r = (const ElfW(Rela) *)(image->rela + at);
            int kind = reloc_kind(image, CHAOS_R_TYPE(r->r_info), CHAOS_R_SYM(r->r_info), r->r_offset, 1, r->r_addend);
            if (kind) keep(b, CHAOS_R_SYM(r->r_info), r->r_offset, kind);
        }
    }
    if (image->rel && image->relsz && image->relent >= sizeof(ElfW(Rel))) {
        for (size_t at = 0; at + image->relent <= image->relsz; at += image->relent) {
            const ElfW(Rel) *r = (const ElfW(Rel) *)(image->rel + at);
            int kind = reloc_kind(image, CHAOS_R_TYPE(r->r_info), CHAOS_R_SYM(r->r_info), r->r_offset, 0, 0);
            if (kind) keep(b, CHAOS_R_SYM(r->r_info), r->r_offset, kind);
        }
    }
}

static int reloc_order(const void *a, const void *b) {
    const cx_reloc *x = a, *y = b;
    if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return x->sym_kind < y->sym_kind ? -1 : x->sym_kind > y->sym_kind;
}
#endif

/// Builds the image's index (once). 0, or ENOMEM.
static int image_index(cx_image *image) {
    if (image->indexed) return 0;
#if defined(CHAOS_R_JUMP_SLOT)
    if (image->symtab && image->strtab) {
        index_builder b = {image, 0, 0, NULL, NULL, NULL};
        walk_relocations(&b); // pass 1: how many, and the largest symbol index
        if (b.count) {
            b.out = malloc(b.count * sizeof(cx_reloc));
            b.hashes = malloc((b.max_sym + 1) * sizeof(uint32_t));
            b.known = calloc(b.max_sym + 1, 1);
            if (!b.out || !b.hashes || !b.known) {
                free(b.out);
                free(b.hashes);
                free(b.known);
                return ENOMEM;
            }
            b.count = 0;
            walk_relocations(&b); // pass 2: fill
            free(b.hashes);
            free(b.known);
            qsort(b.out, b.count, sizeof(cx_reloc), reloc_order);
            // PLT and general tables may overlap: one slot is reported once per kind.
            size_t kept = 0;
            for (size_t i = 0; i < b.count; i++)
                if (!kept || reloc_order(&b.out[kept - 1], &b.out[i]) != 0) b.out[kept++] = b.out[i];
            image->relocs = b.out;
            image->count = kept;
        }
    }
#endif
    image->indexed = 1;
    return 0;
}

// MARK: - Finding

static int value_in_image(const cx_image *image, uintptr_t value) {
    for (ElfW(Half) i = 0; i < image->phnum; i++) {
        const ElfW(Phdr) *ph = &image->phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t start = image->base + ph->p_vaddr;
        if (value >= start && value < start + ph->p_memsz) return (ph->p_flags & PF_X) ? 2 : 1;
    }
    return 0;
}

// Whether `value` looks like the lazy-binding PLT entry a JUMP_SLOT holds before its
// first call: executable code of the same image starting the way PLT stubs start.
static int looks_like_plt_stub(const cx_image *image, uintptr_t value) {
    if (value_in_image(image, value) != 2) return 0;
    const unsigned char *code = (const unsigned char *)value;
#if defined(__x86_64__) || defined(__i386__)
    // push $index (68 imm32), optionally preceded by endbr64/endbr32 (f3 0f 1e fa/fb).
    if (code[0] == 0x68) return 1;
    if (code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && (code[3] == 0xfa || code[3] == 0xfb) &&
        code[4] == 0x68)
        return 1;
    return 0;
#elif defined(__aarch64__)
    // Lazy slots point at PLT0: stp x16, x30, [sp, #-16]! (optionally after bti c).
    uint32_t first, second;
    memcpy(&first, code, 4);
    memcpy(&second, code + 4, 4);
    return first == 0xa9bf7bf0u || (first == 0xd503245fu && second == 0xa9bf7bf0u);
#else
    (void)code;
    return 1;
#endif
}

typedef struct scan {
    const char *const *symbols;
    size_t count;
    const uint32_t *hashes;
    chaos_elf_image_fn on_image;
    chaos_elf_slot_fn on_slot;           ///< single-symbol callback, or
    chaos_elf_slot_many_fn on_slot_many; ///< the batch one
    void *context;
    int started;    ///< the first image was seen
    int rebuilding; ///< the cache is being rebuilt during this walk (its lock is held)
    int result;
    unsigned long long adds, subs;
    cx_image **fresh;
    size_t fresh_count, fresh_capacity;
} scan;

static void report(scan *s, const cx_image *image, size_t which, const cx_reloc *r) {
    chaos_elf_slot_info slot;
    int kind = (int)(r->sym_kind & 3);
    slot.slot = (void **)(image->base + r->offset);
    slot.image_path = image->path;
    slot.image_base = image->base;
    slot.kind = kind;
    slot.value_is_plt_stub =
        kind == CHAOS_ELF_SLOT_JUMP && looks_like_plt_stub(image, (uintptr_t)chaos_elf_read_slot(slot.slot));
    if (s->on_slot_many)
        s->on_slot_many(s->context, which, &slot);
    else
        s->on_slot(s->context, &slot);
}

/// Offers an image to `on_image`, then reports its slots for every symbol of the scan.
static void scan_image(scan *s, cx_image *image) {
    if (s->on_image && !s->on_image(s->context, image->path, image->base)) return;
    if (image_index(image) != 0) {
        s->result = ENOMEM;
        return;
    }
    for (size_t which = 0; which < s->count; which++) {
        uint32_t hash = s->hashes[which];
        size_t low = 0, high = image->count;
        while (low < high) { // the first relocation with this hash
            size_t middle = low + (high - low) / 2;
            if (image->relocs[middle].hash < hash)
                low = middle + 1;
            else
                high = middle;
        }
        for (size_t i = low; i < image->count && image->relocs[i].hash == hash; i++) {
            ElfW(Word) at = image->symtab[image->relocs[i].sym_kind >> 2].st_name;
            if (image->strsz && at >= image->strsz) continue;
            if (strcmp(image->strtab + at, s->symbols[which]) != 0) continue;
            report(s, image, which, &image->relocs[i]);
        }
    }
}

/// dl_iterate_phdr's counters of images loaded and unloaded so far, which every image's
/// info carries (0 and 0 with an older libc); whether it has them.
static int image_counters(const struct dl_phdr_info *info, size_t size, unsigned long long *adds,
                          unsigned long long *subs) {
    int counted = size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs;
    *adds = counted ? info->dlpi_adds : 0;
    *subs = counted ? info->dlpi_subs : 0;
    return counted;
}

static int visit_image(struct dl_phdr_info *info, size_t size, void *data) {
    scan *s = data;
    if (!s->started) {
        s->started = 1;
        int counted = image_counters(info, size, &s->adds, &s->subs);
        pthread_mutex_lock(&cache.lock);
        if (counted && cache.built && cache.adds == s->adds && cache.subs == s->subs) {
            for (size_t i = 0; i < cache.count; i++) scan_image(s, cache.images[i]);
            pthread_mutex_unlock(&cache.lock);
            return 1; // the cache answered: stop the walk
        }
        s->rebuilding = 1; // keep the lock for the rest of the walk
    }
    // Rebuilding: this image, reusing its index when it was loaded before (same place,
    // headers, name and tables).
    cx_image *image = image_make(info);
    if (!image) {
        s->result = ENOMEM;
        return 0;
    }
    for (size_t i = 0; i < cache.count; i++) {
        cx_image *old = cache.images[i];
        if (old && image_is(old, info) && same_tables(old, image)) {
            image->indexed = old->indexed;
            image->relocs = old->relocs;
            image->count = old->count;
            old->relocs = NULL;
            image_free(old);
            cache.images[i] = NULL;
            break;
        }
    }
    if (s->fresh_count == s->fresh_capacity) {
        size_t capacity = s->fresh_capacity ? s->fresh_capacity * 2 : 64;
        cx_image **grown = realloc(s->fresh, capacity * sizeof *grown);
        if (!grown) {
            image_free(image);
            s->result = ENOMEM;
            return 0;
        }
        s->fresh = grown;
        s->fresh_capacity = capacity;
    }
    s->fresh[s->fresh_count++] = image;
    scan_image(s, image);
    return 0;
}

static int find(scan *s) {
    if (finding) return EDEADLK;
    finding = 1;
    dl_iterate_phdr(visit_image, s);
    if (s->rebuilding) {
        // The walk saw every loaded image: they are the cache now. Images no longer loaded
        // (left in the old list) are dropped.
        for (size_t i = 0; i < cache.count; i++) image_free(cache.images[i]);
        free(cache.images);
        cache.images = s->fresh;
        cache.count = s->fresh_count;
        cache.adds = s->adds;
        cache.subs = s->subs;
        cache.built = s->result == 0;
        pthread_mutex_unlock(&cache.lock);
    }
    finding = 0;
    return s->result;
}

int chaos_elf_find_slots_many(const char *const *symbols, size_t count, chaos_elf_image_fn on_image,
                              chaos_elf_slot_many_fn on_slot, void *context) {
    if ((symbols == NULL && count) || on_slot == NULL) return EINVAL;
    for (size_t i = 0; i < count; i++)
        if (symbols[i] == NULL) return EINVAL;
    uint32_t small[16];
    uint32_t *hashes = count <= 16 ? small : malloc(count * sizeof(uint32_t));
    if (!hashes) return ENOMEM;
    for (size_t i = 0; i < count; i++) hashes[i] = name_hash(symbols[i]);
    scan s;
    memset(&s, 0, sizeof s);
    s.symbols = symbols;
    s.count = count;
    s.hashes = hashes;
    s.on_image = on_image;
    s.on_slot_many = on_slot;
    s.context = context;
    int result = find(&s);
    if (hashes != small) free(hashes);
    return result;
}

int chaos_elf_find_slots(const char *symbol, chaos_elf_image_fn on_image, chaos_elf_slot_fn on_slot, void *context) {
    if (symbol == NULL || on_slot == NULL) return EINVAL;
    uint32_t hash = name_hash(symbol);
    scan s;
    memset(&s, 0, sizeof s);
    s.symbols = &symbol;
    s.count = 1;
    s.hashes = &hash;
    s.on_image = on_image;
    s.on_slot = on_slot;
    s.context = context;
    return find(&s);
}

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
    counters[2] = (unsigned long long)image_counters(info, size, &counters[0], &counters[1]);
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

void *chaos_elf_dlsym_default(const char *name) { return dlsym(RTLD_DEFAULT, name); }

const char *chaos_elf_describe_address(const void *address, const char **image_path) {
    Dl_info info;
    memset(&info, 0, sizeof info);
    if (dladdr(address, &info) == 0) {
        if (image_path) *image_path = NULL;
        return NULL;
    }
    if (image_path) *image_path = info.dli_fname;
    return info.dli_saddr == address ? info.dli_sname : NULL;
}

#else // !__linux__

int chaos_elf_find_slots(const char *symbol, chaos_elf_image_fn on_image, chaos_elf_slot_fn on_slot, void *context) {
    (void)symbol;
    (void)on_image;
    (void)on_slot;
    (void)context;
    return ENOSYS;
}
int chaos_elf_find_slots_many(const char *const *symbols, size_t count, chaos_elf_image_fn on_image,
                              chaos_elf_slot_many_fn on_slot, void *context) {
    (void)symbols;
    (void)count;
    (void)on_image;
    (void)on_slot;
    (void)context;
    return ENOSYS;
}
// Without /proc/self/maps the slot must already be writable (callback tables are).
int chaos_elf_write_slot(void **slot, void *value, void **previous) {
    if (slot == 0 || ((uintptr_t)slot % sizeof(void *)) != 0) return EINVAL;
    void *old = __atomic_exchange_n(slot, value, __ATOMIC_SEQ_CST);
    if (previous) *previous = old;
    return 0;
}
int chaos_elf_write_slots(chaos_elf_write *writes, size_t count) {
    int failed = 0;
    for (size_t i = 0; writes && i < count; i++) {
        writes[i].result = chaos_elf_write_slot(writes[i].slot, writes[i].value, &writes[i].previous);
        failed += writes[i].result != 0;
    }
    return failed;
}
void *chaos_elf_read_slot(void *const *slot) { return __atomic_load_n(slot, __ATOMIC_ACQUIRE); }
int chaos_elf_protection(const void *address) {
    (void)address;
    return -1;
}
void chaos_elf_use_maps_text(int always) { (void)always; }
void *chaos_elf_dlsym_default(const char *name) {
    (void)name;
    return 0;
}
const char *chaos_elf_describe_address(const void *address, const char **image_path) {
    (void)address;
    if (image_path) *image_path = 0;
    return 0;
}

#endif

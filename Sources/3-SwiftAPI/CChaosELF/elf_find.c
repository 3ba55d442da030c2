// Finding the GOT and data slots of loaded ELF images that name a symbol. Kept deliberately
// small: which slots to patch, ownership and error messages are decided in Swift.
//
// Each loaded image's relocation tables are indexed once, by the hash of the symbol name
// each relocation names (only the kinds a hook rebinds: JUMP_SLOT, GLOB_DAT, pointer-sized
// absolute data relocations). The index lives until the set of loaded images changes, which
// dl_iterate_phdr reports with its dlpi_adds/dlpi_subs counters. A lookup is one
// dl_iterate_phdr call that stops at its first image (the loader's lock is held meanwhile,
// so nothing is unloaded under us), a counter check, and a binary search per image.
#define _GNU_SOURCE 1
#include "CChaosELF.h"
#include "elf_internal.h"

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

int cx_image_counters(const struct dl_phdr_info *info, size_t size, unsigned long long *adds,
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
        int counted = cx_image_counters(info, size, &s->adds, &s->subs);
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

#endif

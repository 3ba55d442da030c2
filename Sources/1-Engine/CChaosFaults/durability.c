// The undo log behind power loss (chaos_durability.h). Two kinds of change, undone in two
// passes at power loss:
//   - data (writes, truncations) belongs to a file, whichever names it has: undone
//     through a descriptor the log holds on the file itself, so a file renamed or removed
//     since is still reached;
//   - names (creates, removes, renames) belong to directories: undone after the data, so
//     a removed file that must come back by copy is copied with its durable contents.
// Data and names never touch each other's state, so the two passes give what one
// backwards replay would.
//
// A file's pure appends after its first undo record need none of their own: undoing the
// older records truncates back to the older size, and every byte below it that an append
// could reach is restored by the record of the truncation that made room for it.
#define _GNU_SOURCE
#include "chaos_durability.h"
#include "CChaosRules.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SECTOR 512
#define MOST_KEPT_OPEN 256 // descriptors held on files with nothing to undo, beyond which they are closed

/// A file the log has met, by its identity.
struct file {
    dev_t device;
    ino_t inode;
    int keeper;                       ///< a descriptor of the log's own on it (-1: closed)
    char *name;                       ///< its path when first met, for the report
    int pending;                      ///< its data records still live
    int references;                   ///< name records that may bring it back
    int64_t writes;                   ///< writes and truncations since its last sync (appends need no record each)
    int64_t last_offset, last_length; ///< its last write not yet durable (length 0: none)
};

enum record_kind { DATA, CREATE, REMOVE, RENAME };

/// One change not yet durable.
struct record {
    enum record_kind kind;
    int live;
    int file;                 ///< DATA: the file; REMOVE/RENAME: the file removed or renamed over (-1: none)
    int64_t offset, old_size; ///< DATA: where its old bytes go, the size before
    size_t length;
    unsigned char *old;
    char *path, *path2; ///< names: CREATE/REMOVE path; RENAME from, to
    dev_t parent_device[2];
    ino_t parent_inode[2];
    int parents, synced; ///< directories whose sync makes it durable; bits of those synced
    int exchange;        ///< RENAME: RENAME_EXCHANGE
    mode_t mode;         ///< REMOVE: what was removed (S_IFDIR, S_IFLNK, S_IFREG …) and its mode
    uid_t owner;
    gid_t group;
    char *target;       ///< a removed symbolic link's target
    dev_t moved_device; ///< REMOVE: what was removed; RENAME: what was renamed (the call
    ino_t moved_inode;  ///< may still fail: undone only when it is where the call put it)
};

// One thread at a time (chaos_durability.h): the caller's serialization guards all of these.
static struct file *files;
static int file_count, file_capacity;
static struct record *records;
static int record_count, record_capacity, dead_records;
static char shared_names[512];
static uint64_t shared_count;
static uint64_t keep_failures;
static char keep_failure[256];

static void note_keep_failure(const char *format, ...) {
    if (keep_failures++ == 0) {
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(keep_failure, sizeof keep_failure, format, arguments);
        va_end(arguments);
    }
}

static void free_record(struct record *r) {
    free(r->old);
    free(r->path);
    free(r->path2);
    free(r->target);
    if (r->file >= 0 && r->kind != DATA) files[r->file].references--;
    if (r->file >= 0 && r->kind == DATA) files[r->file].pending--;
    memset(r, 0, sizeof *r);
}

void chaos_durability_reset(void) {
    for (int i = 0; i < record_count; i++)
        if (records[i].live) free_record(&records[i]);
    for (int i = 0; i < file_count; i++) {
        if (files[i].keeper >= 0) close(files[i].keeper);
        free(files[i].name);
    }
    free(files);
    free(records);
    files = NULL;
    records = NULL;
    file_count = file_capacity = record_count = record_capacity = dead_records = 0;
    shared_names[0] = 0;
    shared_count = keep_failures = 0;
    keep_failure[0] = 0;
}

/// Closes the log's descriptors on files with nothing left to undo, once there are many.
static void close_idle(void) {
    int open = 0;
    for (int i = 0; i < file_count; i++) open += files[i].keeper >= 0;
    if (open < MOST_KEPT_OPEN) return;
    for (int i = 0; i < file_count; i++)
        if (files[i].keeper >= 0 && !files[i].pending && !files[i].references) {
            close(files[i].keeper);
            files[i].keeper = -1;
        }
}

/// The file `reopen` opens, met before or now (its size in `size`); -1 when it cannot be
/// opened for keeping.
static int file_of(const char *reopen, const char *name, int64_t *size) {
    struct stat info;
    if (stat(reopen, &info) != 0) return -1;
    if (size) *size = (int64_t)info.st_size;
    for (int i = 0; i < file_count; i++)
        if (files[i].device == info.st_dev && files[i].inode == info.st_ino) {
            if (files[i].keeper < 0) files[i].keeper = open(reopen, O_RDWR | O_CLOEXEC);
            return files[i].keeper >= 0 ? i : -1;
        }
    close_idle();
    if (file_count == file_capacity) {
        int capacity = file_capacity ? file_capacity * 2 : 16;
        struct file *grown = realloc(files, (size_t)capacity * sizeof *grown);
        if (!grown) return -1;
        files = grown;
        file_capacity = capacity;
    }
    int keeper = S_ISDIR(info.st_mode) ? -1 : open(reopen, O_RDWR | O_CLOEXEC);
    if (keeper < 0 && !S_ISDIR(info.st_mode)) return -1;
    files[file_count] = (struct file){
        .device = info.st_dev, .inode = info.st_ino, .keeper = keeper, .name = strdup(name ? name : reopen)};
    return file_count++;
}

static struct record *new_record(enum record_kind kind) {
    if (dead_records > 64 && dead_records * 2 > record_count) { // compact, keeping the order
        int kept = 0;
        for (int i = 0; i < record_count; i++)
            if (records[i].live) records[kept++] = records[i];
        record_count = kept;
        dead_records = 0;
    }
    if (record_count == record_capacity) {
        int capacity = record_capacity ? record_capacity * 2 : 64;
        struct record *grown = realloc(records, (size_t)capacity * sizeof *grown);
        if (!grown) return NULL;
        records = grown;
        record_capacity = capacity;
    }
    struct record *r = &records[record_count++];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->live = 1;
    r->file = -1;
    return r;
}

static void drop(struct record *r) {
    free_record(r);
    dead_records++;
}

/// Keeps the bytes of [offset, offset + length) that exist now, and the size.
static int keep_data(int file, int64_t offset, int64_t length, int64_t size) {
    struct record *r = new_record(DATA);
    if (!r) return -1;
    r->file = file;
    r->offset = offset;
    r->old_size = size;
    int64_t end = offset + length < size ? offset + length : size;
    if (end > offset) {
        r->length = (size_t)(end - offset);
        r->old = malloc(r->length);
        ssize_t got = r->old ? pread(files[file].keeper, r->old, r->length, offset) : -1;
        if (got < 0) {
            note_keep_failure("cannot keep what a write overwrites in %s: %s", files[file].name, strerror(errno));
            free(r->old);
            r->old = NULL;
            r->length = 0;
            r->live = 0;
            record_count--;
            return -1;
        }
        r->length = (size_t)got;
    }
    files[file].pending++;
    return 0;
}

int chaos_durability_file(const char *reopen, const char *name) {
    int file = file_of(reopen, name, NULL);
    if (file < 0)
        note_keep_failure("cannot open %s to keep what its writes overwrite: %s", name ? name : reopen,
                          strerror(errno));
    return file;
}

int chaos_durability_write_to(int file, const char *reopen, int64_t offset, int64_t length) {
    if (file < 0 || file >= file_count) return -1;
    struct file *f = &files[file];
    struct stat info;
    // Its size through the log's own descriptor: no path to walk. A descriptor closed while
    // the file had nothing to undo is opened again, if `reopen` is still this file.
    if (f->keeper < 0) {
        int keeper = open(reopen, O_RDWR | O_CLOEXEC);
        if (keeper >= 0 && (fstat(keeper, &info) != 0 || info.st_dev != f->device || info.st_ino != f->inode)) {
            close(keeper);
            keeper = -1;
            errno = ESTALE;
        }
        if (keeper < 0) {
            note_keep_failure("cannot open %s to keep what its writes overwrite: %s", f->name, strerror(errno));
            return -1;
        }
        f->keeper = keeper;
    }
    if (fstat(f->keeper, &info) != 0) {
        note_keep_failure("cannot keep what a write overwrites in %s: %s", f->name, strerror(errno));
        return -1;
    }
    int64_t size = (int64_t)info.st_size;
    if (offset < 0) offset = size;
    if (length <= 0) return 0;
    f->writes++;
    f->last_offset = offset;
    f->last_length = length;
    if (offset >= size && f->pending) return 0; // a pure append: the older records undo it
    return keep_data(file, offset, length, size);
}

int chaos_durability_write(const char *reopen, const char *name, int64_t offset, int64_t length) {
    int file = chaos_durability_file(reopen, name);
    return file < 0 ? -1 : chaos_durability_write_to(file, reopen, offset, length);
}

int chaos_durability_truncate(const char *reopen, const char *name, int64_t size) {
    int64_t now = 0;
    int file = file_of(reopen, name, &now);
    if (file < 0) {
        note_keep_failure("cannot open %s to keep what its truncation drops: %s", name ? name : reopen,
                          strerror(errno));
        return -1;
    }
    files[file].writes++;
    if (size >= now && files[file].pending) return 0; // growing: the older records undo it
    return keep_data(file, size < now ? size : now, size < now ? now - size : 0, now);
}

void chaos_durability_synced(const char *reopen) {
    struct stat info;
    if (stat(reopen, &info) != 0) return;
    for (int i = 0; i < record_count; i++) {
        struct record *r = &records[i];
        if (!r->live) continue;
        if (r->kind == DATA) {
            if (files[r->file].device == info.st_dev && files[r->file].inode == info.st_ino) drop(r);
            continue;
        }
        for (int p = 0; p < r->parents; p++)
            if (r->parent_device[p] == info.st_dev && r->parent_inode[p] == info.st_ino) r->synced |= 1 << p;
        if (r->synced == (1 << r->parents) - 1) drop(r);
    }
    if (!S_ISDIR(info.st_mode))
        for (int i = 0; i < file_count; i++)
            if (files[i].device == info.st_dev && files[i].inode == info.st_ino)
                files[i].last_length = files[i].writes = 0;
}

void chaos_durability_synced_all(void) {
    for (int i = 0; i < record_count; i++)
        if (records[i].live) drop(&records[i]);
    for (int i = 0; i < file_count; i++) files[i].last_length = files[i].writes = 0;
}

/// Notes the directory holding `path` as one whose sync makes `r` durable.
static void add_parent(struct record *r, const char *path) {
    char directory[PATH_MAX];
    snprintf(directory, sizeof directory, "%s", path);
    char *slash = strrchr(directory, '/');
    if (!slash) return;
    if (slash == directory)
        slash[1] = 0;
    else
        *slash = 0;
    struct stat info;
    if (stat(directory, &info) != 0) return;
    r->parent_device[r->parents] = info.st_dev;
    r->parent_inode[r->parents] = info.st_ino;
    r->parents++;
}

int chaos_durability_create(const char *path) {
    struct stat info;
    if (lstat(path, &info) == 0) return 0; // there already: nothing is created
    struct record *r = new_record(CREATE);
    if (!r || !(r->path = strdup(path))) return -1;
    add_parent(r, path);
    return 0;
}

/// Keeps what `path` is now in `r` (a file held open, a link's target, a directory's
/// mode), so that it can come back; 0 when there is nothing there.
static int keep_named(struct record *r, const char *path) {
    struct stat info;
    if (lstat(path, &info) != 0) return 0;
    r->mode = info.st_mode;
    r->owner = info.st_uid;
    r->group = info.st_gid;
    if (S_ISLNK(info.st_mode)) {
        char target[PATH_MAX];
        ssize_t length = readlink(path, target, sizeof target - 1);
        if (length < 0) return -1;
        target[length] = 0;
        r->target = strdup(target);
    } else if (S_ISREG(info.st_mode)) {
        r->file = file_of(path, path, NULL);
        if (r->file < 0) {
            note_keep_failure("cannot open %s to keep it while it is removed: %s", path, strerror(errno));
            return -1;
        }
        files[r->file].references++;
    } else if (!S_ISDIR(info.st_mode)) {
        note_keep_failure("%s is neither a file, a directory nor a symbolic link; its removal is not undone", path);
    }
    return 1;
}

int chaos_durability_remove(const char *path) {
    struct stat info;
    if (lstat(path, &info) != 0) return 0; // the call will fail: nothing to undo
    struct record *r = new_record(REMOVE);
    if (!r || !(r->path = strdup(path))) return -1;
    r->moved_device = info.st_dev;
    r->moved_inode = info.st_ino;
    add_parent(r, path);
    return keep_named(r, path) < 0 ? -1 : 0;
}

int chaos_durability_rename(const char *from, const char *to, unsigned flags) {
    struct stat source, target;
    if (lstat(from, &source) != 0) return 0;
    struct record *r = new_record(RENAME);
    if (!r || !(r->path = strdup(from)) || !(r->path2 = strdup(to))) return -1;
    add_parent(r, from);
    add_parent(r, to);
    if (r->parents == 2 && r->parent_device[0] == r->parent_device[1] && r->parent_inode[0] == r->parent_inode[1])
        r->parents = 1;
    r->exchange = (flags & 2) != 0; // RENAME_EXCHANGE
    r->moved_device = source.st_dev;
    r->moved_inode = source.st_ino;
    if (!r->exchange && lstat(to, &target) == 0 && !(target.st_dev == source.st_dev && target.st_ino == source.st_ino))
        return keep_named(r, to) < 0 ? -1 : 0;
    return 0;
}

void chaos_durability_missed(const char *name, const char *why) {
    note_keep_failure("changes to %s cannot be undone: %s", name, why);
}

int chaos_durability_shared_map(const char *name) {
    if (strstr(shared_names, name)) return 0;
    size_t used = strlen(shared_names);
    snprintf(shared_names + used, sizeof shared_names - used, "%s%s", used ? ", " : "", name);
    shared_count++;
    return 1;
}

// MARK: - Losing power

static void failed(chaos_power_summary *out, const char *format, ...) {
    if (out->failures++ == 0) {
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(out->first_failure, sizeof out->first_failure, format, arguments);
        va_end(arguments);
    }
}

static void clear_name(const char *path);

/// Removes what directory `path` holds. A directory whose own name was never durable is
/// gone at power loss with everything under it, whatever was synced inside it.
static void clear_contents(const char *path) {
    DIR *directory = opendir(path);
    if (!directory) return;
    struct dirent *item;
    char inner[PATH_MAX];
    while ((item = readdir(directory))) {
        if (strcmp(item->d_name, ".") == 0 || strcmp(item->d_name, "..") == 0) continue;
        if (snprintf(inner, sizeof inner, "%s/%s", path, item->d_name) >= (int)sizeof inner) continue;
        clear_name(inner);
    }
    closedir(directory);
}

/// Removes whatever is at `path` now (a file, a link, a directory with what it holds).
static void clear_name(const char *path) {
    struct stat info;
    if (lstat(path, &info) != 0) return;
    if (!S_ISDIR(info.st_mode)) {
        unlink(path);
        return;
    }
    if (rmdir(path) == 0 || errno != ENOTEMPTY) return;
    clear_contents(path);
    rmdir(path);
}

/// Whether `path` names the file `r` removed or renamed.
static int names_moved(const struct record *r, const char *path) {
    struct stat info;
    return lstat(path, &info) == 0 && info.st_dev == r->moved_device && info.st_ino == r->moved_inode;
}

/// Brings back what `r` kept of a removed name, at `path`.
static void restore_named(const struct record *r, const char *path, chaos_power_summary *out) {
    clear_name(path);
    if (S_ISDIR(r->mode)) {
        if (mkdir(path, r->mode & 07777) != 0)
            failed(out, "cannot make %s again: %s", path, strerror(errno));
        else if (lchown(path, r->owner, r->group) != 0 && errno != EPERM)
            failed(out, "cannot own %s: %s", path, strerror(errno));
        return;
    }
    if (S_ISLNK(r->mode)) {
        if (!r->target || symlink(r->target, path) != 0) failed(out, "cannot link %s again: %s", path, strerror(errno));
        return;
    }
    if (r->file < 0 || files[r->file].keeper < 0) return; // said when it was kept
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", files[r->file].keeper);
    if (linkat(AT_FDCWD, self, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0) return;
    // No name is left to link to: a copy with the file's contents, mode and owner.
    int copy = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, r->mode & 07777);
    if (copy < 0) {
        failed(out, "cannot make %s again: %s", path, strerror(errno));
        return;
    }
    char buffer[65536];
    int64_t at = 0;
    ssize_t got;
    while ((got = pread(files[r->file].keeper, buffer, sizeof buffer, at)) > 0) {
        if (write(copy, buffer, (size_t)got) != got) {
            failed(out, "cannot copy %s back: %s", path, strerror(errno));
            break;
        }
        at += got;
    }
    if (fchown(copy, r->owner, r->group) != 0 && errno != EPERM)
        failed(out, "cannot own %s: %s", path, strerror(errno));
    fchmod(copy, r->mode & 07777);
    close(copy);
}

/// The bytes of `f`'s last write that a torn write keeps: a prefix of its sectors drawn
/// from `seed` (none to all but the last); their contents now in `*kept` (malloc'd).
static size_t torn_prefix(const struct file *f, int index, uint64_t seed, unsigned char **kept) {
    int64_t first = f->last_offset / SECTOR, last = (f->last_offset + f->last_length + SECTOR - 1) / SECTOR;
    int64_t sectors = last - first;
    if (sectors < 1) return 0;
    uint64_t draw = chaos_rules_derive(seed, (uint64_t)index);
    int64_t keep = (int64_t)(draw % (uint64_t)sectors);
    int64_t end = (first + keep) * SECTOR;
    if (end > f->last_offset + f->last_length) end = f->last_offset + f->last_length;
    if (end <= f->last_offset) return 0;
    size_t length = (size_t)(end - f->last_offset);
    *kept = malloc(length);
    ssize_t got = *kept ? pread(f->keeper, *kept, length, f->last_offset) : -1;
    if (got <= 0) {
        free(*kept);
        *kept = NULL;
        return 0;
    }
    return (size_t)got;
}

void chaos_durability_lose_power(int torn, uint64_t seed, chaos_power_summary *out) {
    memset(out, 0, sizeof *out);
    if (keep_failures) failed(out, "%s", keep_failure);
    out->failures = keep_failures;
    // What torn writes keep, read before their bytes are undone.
    unsigned char **kept = calloc((size_t)(file_count ? file_count : 1), sizeof *kept);
    size_t *kept_length = calloc((size_t)(file_count ? file_count : 1), sizeof *kept_length);
    for (int i = 0; torn && kept && kept_length && i < file_count; i++)
        if (files[i].pending && files[i].last_length > 0 && files[i].keeper >= 0)
            kept_length[i] = torn_prefix(&files[i], i, seed, &kept[i]);
    // Data, newest first.
    for (int i = record_count - 1; i >= 0; i--) {
        struct record *r = &records[i];
        if (!r->live || r->kind != DATA) continue;
        struct file *f = &files[r->file];
        if (ftruncate(f->keeper, r->old_size) != 0 ||
            (r->length && pwrite(f->keeper, r->old, r->length, r->offset) != (ssize_t)r->length))
            failed(out, "cannot undo a write to %s: %s", f->name, strerror(errno));
    }
    for (int i = 0; i < file_count; i++)
        if (files[i].pending) {
            out->writes += (uint64_t)files[i].writes;
            out->files++;
        }
    for (int i = 0; kept && kept_length && i < file_count; i++) {
        if (!kept_length[i]) continue;
        if (pwrite(files[i].keeper, kept[i], kept_length[i], files[i].last_offset) != (ssize_t)kept_length[i])
            failed(out, "cannot keep the torn write of %s: %s", files[i].name, strerror(errno));
        out->torn++;
    }
    // Names, newest first.
    for (int i = record_count - 1; i >= 0; i--) {
        struct record *r = &records[i];
        if (!r->live) continue;
        switch (r->kind) {
        case DATA: break;
        case CREATE:
            if (!r->path) break; // out of memory when it was kept
            clear_name(r->path);
            out->creates++;
            break;
        case REMOVE:
            if (!r->path || names_moved(r, r->path)) break; // the removal failed
            restore_named(r, r->path, out);
            out->removes++;
            break;
        case RENAME:
            if (!r->path || !r->path2 || !names_moved(r, r->path2)) break; // the rename failed
            if (r->exchange ? renameat2(AT_FDCWD, r->path2, AT_FDCWD, r->path, 2) != 0 : rename(r->path2, r->path) != 0)
                failed(out, "cannot rename %s back to %s: %s", r->path2, r->path, strerror(errno));
            else if (r->mode)
                restore_named(r, r->path2, out);
            out->renames++;
            break;
        }
    }
    for (int i = 0; i < file_count; i++)
        if (files[i].keeper >= 0) fsync(files[i].keeper);
    if (kept)
        for (int i = 0; i < file_count; i++) free(kept[i]);
    free(kept);
    free(kept_length);
    out->shared_maps = shared_count;
    snprintf(out->shared_names, sizeof out->shared_names, "%s", shared_names);
    chaos_durability_reset();
}

static int plural(char *out, size_t capacity, int used, uint64_t count, const char *one, const char *many,
                  const char *joiner) {
    size_t at = (size_t)used < capacity ? (size_t)used : capacity;
    return used +
           snprintf(out + at, capacity - at, "%s%llu %s", joiner, (unsigned long long)count, count == 1 ? one : many);
}

int chaos_power_summary_sentence(const chaos_power_summary *s, char *out, size_t capacity) {
    int used = 0;
    const char *parts[4];
    uint64_t counts[4];
    const char *singular[4] = {"rename", "create", "removal", ""}, *plurals[4] = {"renames", "creates", "removals", ""};
    int n = 0;
    if (s->renames) counts[n] = s->renames, parts[n] = "r", n++;
    if (s->creates) counts[n] = s->creates, parts[n] = "c", n++;
    if (s->removes) counts[n] = s->removes, parts[n] = "x", n++;
    if (capacity) out[0] = 0;
    if (s->writes) {
        used = plural(out, capacity, used, s->writes, "write", "writes", "");
        used = plural(out, capacity, used, s->files, "file", "files", " in ");
    }
    for (int i = 0; i < n; i++) {
        int kind = parts[i][0] == 'r' ? 0 : parts[i][0] == 'c' ? 1 : 2;
        const char *joiner = used == 0 ? "" : i == n - 1 ? " and " : ", ";
        used = plural(out, capacity, used, counts[i], singular[kind], plurals[kind], joiner);
    }
    size_t at = (size_t)used < capacity ? (size_t)used : capacity;
    if (used == 0)
        used += snprintf(out + at, capacity - at, "nothing was left to roll back");
    else
        used += snprintf(out + at, capacity - at, " rolled back");
    if (s->torn) {
        at = (size_t)used < capacity ? (size_t)used : capacity;
        used += snprintf(out + at, capacity - at, "; %llu last write%s torn", (unsigned long long)s->torn,
                         s->torn == 1 ? "" : "s");
    }
    return used;
}

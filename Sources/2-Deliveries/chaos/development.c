// `swift run chaos …` builds only this launcher: SwiftPM has no way to say that an executable
// needs another executable or a dynamic library built beside it. So when the launcher still
// sits in the build folder of the checkout it was compiled from, it builds what it is about
// to use (`chaos-tool`, `libChaosPreload.so`) with `swift build` whenever that is missing or
// older than its sources, and tells the user so on standard error. The same holds in the
// build folder of a package that depends on the checkout: there `swift build --product`
// builds the dependency's products into that package's build. Anywhere else (an installed
// copy) it never builds: a missing file is an error.
#define _GNU_SOURCE
#include "development.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

// The checkout this file was compiled from (SwiftPM names sources by absolute path): the
// nearest folder above it that holds a Package.swift, wherever the layout puts this file.
static int checkout_root(char *out, size_t capacity) {
    const char *file = __FILE__;
    size_t length = strlen(file);
    if (file[0] != '/' || length >= capacity) return 0;
    memcpy(out, file, length + 1);
    for (char *slash = strrchr(out, '/'); slash && slash != out; slash = strrchr(out, '/')) {
        *slash = 0;
        char manifest[PATH_MAX];
        struct stat info;
        if (snprintf(manifest, sizeof manifest, "%s/Package.swift", out) < (int)sizeof manifest &&
            stat(manifest, &info) == 0)
            return 1;
    }
    return 0;
}

static void parent_of(char *path) {
    char *slash = strrchr(path, '/');
    if (slash && slash != path) *slash = 0;
}

int chaos_development_layout(const char *directory, struct chaos_development *layout) {
    // SwiftPM's layout: <root>/<scratch>/<triple>/<configuration>, the scratch folder named
    // .build or .build-NAME.
    if (!checkout_root(layout->root, sizeof layout->root)) return 0;
    const char *configuration = strrchr(directory, '/');
    if (!configuration) return 0;
    configuration++;
    if (strcmp(configuration, "debug") != 0 && strcmp(configuration, "release") != 0) return 0;
    snprintf(layout->configuration, sizeof layout->configuration, "%s", configuration);
    snprintf(layout->scratch, sizeof layout->scratch, "%s", directory);
    parent_of(layout->scratch);
    parent_of(layout->scratch);
    const char *name = strrchr(layout->scratch, '/');
    if (!name || strncmp(name + 1, ".build", 6) != 0) return 0;
    char owner[PATH_MAX];
    snprintf(owner, sizeof owner, "%s", layout->scratch);
    parent_of(owner);
    if (!realpath(owner, layout->package)) return 0;
    // This launcher was compiled into the owner's build from the checkout's sources, so the
    // owner is the checkout or depends on it.
    char manifest[PATH_MAX];
    struct stat info;
    return snprintf(manifest, sizeof manifest, "%s/Package.swift", layout->package) < (int)sizeof manifest &&
           stat(manifest, &info) == 0;
}

// The newest modification time of the regular files below `folder` (depth-first, bounded).
static void newest_below(const char *folder, struct timespec *newest, int depth) {
    if (depth > 8) return;
    DIR *listing = opendir(folder);
    if (!listing) return;
    struct dirent *entry;
    while ((entry = readdir(listing))) {
        if (entry->d_name[0] == '.') continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", folder, entry->d_name) >= (int)sizeof path) continue;
        struct stat info;
        if (lstat(path, &info) != 0) continue;
        if (S_ISDIR(info.st_mode)) {
            newest_below(path, newest, depth + 1);
        } else if (S_ISREG(info.st_mode)) {
            if (info.st_mtim.tv_sec > newest->tv_sec ||
                (info.st_mtim.tv_sec == newest->tv_sec && info.st_mtim.tv_nsec > newest->tv_nsec)) {
                *newest = info.st_mtim;
            }
        }
    }
    closedir(listing);
}

static int older_than(const struct stat *built, const struct timespec *source) {
    return built->st_mtim.tv_sec < source->tv_sec ||
           (built->st_mtim.tv_sec == source->tv_sec && built->st_mtim.tv_nsec < source->tv_nsec);
}

// Whether another SwiftPM process works in the scratch folder now (it writes its pid into
// `.lock` there). Building then would wait for it, and it may be `swift test` waiting for us.
static int scratch_busy(const struct chaos_development *layout) {
    char path[PATH_MAX], text[32] = {0};
    if (snprintf(path, sizeof path, "%s/.lock", layout->scratch) >= (int)sizeof path) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t got = read(fd, text, sizeof text - 1);
    close(fd);
    if (got <= 0) return 0;
    long pid = strtol(text, NULL, 10);
    if (pid <= 0 || (pid_t)pid == getpid() || kill((pid_t)pid, 0) != 0) return 0;
    char exe[PATH_MAX];
    snprintf(path, sizeof path, "/proc/%ld/exe", pid);
    ssize_t length = readlink(path, exe, sizeof exe - 1);
    if (length <= 0) return 1; // alive but not ours to inspect: assume it is SwiftPM
    exe[length] = 0;
    const char *base = strrchr(exe, '/');
    return strncmp(base ? base + 1 : exe, "swift", 5) == 0;
}

static int swift_build(const struct chaos_development *layout, const char *product) {
    char *arguments[] = {
        "swift",
        "build",
        "--package-path",
        (char *)layout->package,
        "--scratch-path",
        (char *)layout->scratch,
        "-c",
        (char *)layout->configuration,
        "--product",
        (char *)product,
        NULL,
    };
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    // The build's progress goes to standard error: standard output is the command's own.
    posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
    pid_t child;
    int error = posix_spawnp(&child, "swift", &actions, NULL, arguments, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (error != 0) {
        fprintf(stderr, "chaos: cannot start `swift build`: %s\n", strerror(error));
        return 0;
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int chaos_development_ensure(const struct chaos_development *layout, const char *path, const char *product,
                             const char *const *sources) {
    struct timespec newest = {0, 0};
    char folder[PATH_MAX];
    snprintf(folder, sizeof folder, "%s/Package.swift", layout->root);
    struct stat manifest;
    if (stat(folder, &manifest) == 0) newest = manifest.st_mtim;
    for (const char *const *source = sources; *source; source++) {
        if (snprintf(folder, sizeof folder, "%s/%s", layout->root, *source) < (int)sizeof folder) {
            newest_below(folder, &newest, 0);
        }
    }
    struct stat built;
    int exists = stat(path, &built) == 0;
    if (exists && !older_than(&built, &newest)) return 1;
    if (scratch_busy(layout)) {
        if (exists) return 1; // that build is the one bringing it up to date
        fprintf(stderr,
                "chaos: %s is not built, and another SwiftPM process is using %s; "
                "run `swift build --product %s` once it has finished\n",
                path, layout->scratch, product);
        return 0;
    }
    fprintf(stderr, "chaos: %s %s; building it (swift build --product %s)\n", path,
            exists ? "is older than its sources" : "is not built yet", product);
    if (!swift_build(layout, product)) {
        fprintf(stderr, "chaos: `swift build --product %s` failed; its output is above\n", product);
        return 0;
    }
    if (stat(path, &built) != 0) {
        fprintf(stderr, "chaos: `swift build --product %s` did not produce %s\n", product, path);
        return 0;
    }
    // SwiftPM found nothing to do (a source was touched, not changed): note that it is current,
    // so the next start does not ask again.
    if (older_than(&built, &newest)) utimensat(AT_FDCWD, path, NULL, 0);
    return 1;
}

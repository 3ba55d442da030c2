#ifndef CHAOS_DEVELOPMENT_H
#define CHAOS_DEVELOPMENT_H

#include <limits.h>

/// Where a launcher built from a checkout by SwiftPM sits: the checkout, the package whose
/// build made it (the checkout itself, or a package that depends on it), the scratch
/// folder and the configuration of that build.
struct chaos_development {
    char root[PATH_MAX];
    char package[PATH_MAX];
    char scratch[PATH_MAX];
    char configuration[16];
};

/// Whether the launcher in `directory` sits in a SwiftPM build folder (`.build` or
/// `.build-NAME`) of the checkout it was compiled from, or of a package that depends on
/// that checkout (`swift run chaos` there); fills `layout` when it does.
int chaos_development_layout(const char *directory, struct chaos_development *layout);

/// Makes sure `path`, which `swift build --product PRODUCT` makes, exists and is no older
/// than `Package.swift` and the files below every folder of `sources` (from the checkout's root,
/// NULL-terminated), building it when needed. Returns 0, having said why on standard
/// error, when it is still missing.
int chaos_development_ensure(const struct chaos_development *layout, const char *path, const char *product,
                             const char *const *sources);

#endif

// CChaosFaults: what a stat answer says instead of a file's own attributes (the stat
// point's `attributes` node), a part of the engine's contract kept in its own header.
// Include CChaosFaults.h, which includes this; chaos_outcome_attributes applies it.
#ifndef CCHAOS_FAULTS_ATTRIBUTES_H
#define CCHAOS_FAULTS_ATTRIBUTES_H

#include <stdint.h>

/// The fields an `attributes` node names (chaos_attributes.set).
enum { CHAOS_ATTRIBUTE_SIZE = 1, CHAOS_ATTRIBUTE_MTIME = 2, CHAOS_ATTRIBUTE_MODE = 4, CHAOS_ATTRIBUTE_NLINK = 8 };

/// What a stat answer says instead of the file's own attributes: the fields `set` names.
typedef struct chaos_attributes {
    uint32_t set;     ///< CHAOS_ATTRIBUTE_* bits
    uint32_t mode;    ///< permission bits (07777); the file type stays the file's
    int64_t size;     ///< bytes
    int64_t mtime_ns; ///< modification time, ns since 1970
    uint64_t nlink;   ///< hard links
} chaos_attributes;

#endif

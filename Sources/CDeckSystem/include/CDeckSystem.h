#ifndef DECK_CDECKSYSTEM_H
#define DECK_CDECKSYSTEM_H

/// syncfs(2): flush the file system that holds `fd`. Glibc declares it only under _GNU_SOURCE.
int deck_syncfs(int fd);

/// renameat2(2) with RENAME_NOREPLACE: rename, failing with EEXIST instead of replacing.
int deck_rename_noreplace(const char *from, const char *to);

#include <stddef.h>

/// malloc_usable_size(3): the usable size of the heap block at `pointer` (a Swift object's
/// allocation bounds the scan that finds a model's properties in it).
size_t deck_malloc_usable_size(void *pointer);

#include "CDeckStaging.h"
#include "CDeckThreadSlot.h"

#endif

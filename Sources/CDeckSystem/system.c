#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "CDeckSystem.h"

int deck_syncfs(int fd) { return syncfs(fd); }

size_t deck_malloc_usable_size(void *pointer) { return malloc_usable_size(pointer); }

int deck_rename_noreplace(const char *from, const char *to) {
#ifdef SYS_renameat2
    return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 1 /* RENAME_NOREPLACE */);
#else
    errno = ENOSYS;
    return -1;
#endif
}

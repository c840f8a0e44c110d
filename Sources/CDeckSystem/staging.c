#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "CDeckStaging.h"

// Everything the signal handler touches is static: no allocation, no locks, only system calls
// that signal-safety(7) lists (unlink, unlinkat, openat, close, getdents64, lseek, rmdir,
// pthread_kill, pthread_self, pthread_sigmask, sigaction, raise).

enum { slot_count = 64, path_capacity = 4096 };

// Each slot's state is (generation << 2) | phase; phase 0 = free, 1 = being written, 2 = active.
// The handler copies an active slot's path and uses the copy only if the state did not change
// meanwhile (another thread may reuse a slot while the handler runs on the main thread).
static _Atomic unsigned states[slot_count];
static char paths[slot_count][path_capacity];
static pthread_t main_thread;

int deck_staging_add(const char *path) {
    size_t length = strlen(path);
    if (length == 0 || length >= path_capacity) return -1;
    for (int slot = 0; slot < slot_count; slot++) {
        unsigned state = atomic_load(&states[slot]);
        if ((state & 3) != 0) continue;
        if (!atomic_compare_exchange_strong(&states[slot], &state, state | 1)) continue;
        memcpy(paths[slot], path, length + 1);
        atomic_store(&states[slot], (state & ~3u) | 2);
        return slot;
    }
    return -1;
}

void deck_staging_remove(int slot) {
    if (slot < 0 || slot >= slot_count) return;
    unsigned state = atomic_load(&states[slot]);
    // A new generation, free: a handler holding a copy of the old path sees the change.
    atomic_store(&states[slot], ((state >> 2) + 1) << 2);
}

struct dirent64_record {
    uint64_t inode;
    int64_t offset;
    unsigned short length;
    unsigned char type;
    char name[];
};

/// Removes everything inside the directory open at `fd`, never following links.
static void empty_directory(int fd, int depth) {
    if (depth > 8) return;
    // Entries removed while listing may shift the listing; start again until a pass removes nothing.
    for (int pass = 0; pass < 64; pass++) {
        char buffer[2048] __attribute__((aligned(8)));
        int removed = 0;
        if (lseek(fd, 0, SEEK_SET) < 0) return;
        for (;;) {
            long count = syscall(SYS_getdents64, fd, buffer, sizeof buffer);
            if (count <= 0) break;
            for (long offset = 0; offset < count;) {
                struct dirent64_record *entry = (struct dirent64_record *)(buffer + offset);
                offset += entry->length;
                const char *name = entry->name;
                if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
                if (unlinkat(fd, name, 0) == 0) {
                    removed++;
                    continue;
                }
                if (errno != EISDIR) continue;
                int child = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (child >= 0) {
                    empty_directory(child, depth + 1);
                    close(child);
                }
                if (unlinkat(fd, name, AT_REMOVEDIR) == 0) removed++;
            }
        }
        if (removed == 0) return;
    }
}

static int remove_path(const char *path) {
    if (unlink(path) == 0) return 1;
    if (errno != EISDIR) return 0;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        empty_directory(fd, 0);
        close(fd);
    }
    return rmdir(path) == 0;
}

int deck_staging_remove_tree(const char *path) { return remove_path(path) ? 0 : -1; }

int deck_staging_cleanup_under(const char *prefix) {
    int saved = errno;
    int removed = 0;
    for (int slot = 0; slot < slot_count; slot++) {
        unsigned state = atomic_load(&states[slot]);
        if ((state & 3) != 2) continue;
        char copy[path_capacity];
        size_t length = 0;
        while (length < path_capacity - 1 && paths[slot][length] != 0) {
            copy[length] = paths[slot][length];
            length++;
        }
        copy[length] = 0;
        if (atomic_load(&states[slot]) != state) continue;
        if (prefix != NULL) {
            size_t i = 0;
            while (prefix[i] != 0 && prefix[i] == copy[i]) i++;
            if (prefix[i] != 0) continue;
        }
        removed += remove_path(copy);
    }
    errno = saved;
    return removed;
}

int deck_staging_cleanup(void) { return deck_staging_cleanup_under(NULL); }

static const int handled_signals[] = {SIGINT, SIGTERM, SIGHUP};

static void handle_signal(int signal_number) {
    if (!pthread_equal(pthread_self(), main_thread)) {
        // The main thread is the one that creates staging files: stop it there, so nothing is
        // created while the cleanup runs.
        int saved = errno;
        pthread_kill(main_thread, signal_number);
        errno = saved;
        return;
    }
    deck_staging_cleanup();
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    sigaction(signal_number, &action, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signal_number);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    raise(signal_number);
    _exit(128 + signal_number);
}

void deck_staging_install_signal_handlers(void) {
    main_thread = pthread_self();
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handle_signal;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < sizeof handled_signals / sizeof handled_signals[0]; i++) {
        sigaddset(&action.sa_mask, handled_signals[i]);
    }
    sigset_t unblock;
    sigemptyset(&unblock);
    for (size_t i = 0; i < sizeof handled_signals / sizeof handled_signals[0]; i++) {
        struct sigaction previous;
        // A signal the parent made us ignore (nohup, a background job) stays ignored.
        if (sigaction(handled_signals[i], NULL, &previous) == 0 && previous.sa_handler == SIG_IGN) continue;
        sigaction(handled_signals[i], &action, NULL);
        sigaddset(&unblock, handled_signals[i]);
    }
    // A parent that starts us from a thread blocking signals (a libdispatch worker, say) passes
    // that mask on; a handled signal must still arrive.
    pthread_sigmask(SIG_UNBLOCK, &unblock, NULL);
}

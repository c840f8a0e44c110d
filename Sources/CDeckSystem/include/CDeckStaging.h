#ifndef DECK_CDECKSTAGING_H
#define DECK_CDECKSTAGING_H

/// A process-wide registry of staging paths (temporary files and directories that become a
/// result by rename), removed by `deck_staging_cleanup`, which is async-signal-safe.

/// Registers `path`; returns the slot to pass to `deck_staging_remove`, or -1 when the registry
/// is full or the path is too long (the path is then only removed by a later run's sweep).
int deck_staging_add(const char *path);

/// Forgets a slot returned by `deck_staging_add` (a negative slot is ignored).
void deck_staging_remove(int slot);

/// Removes every registered path: a file is unlinked, a directory removed with its contents,
/// never following a symbolic link. Async-signal-safe. Returns how many paths it removed.
int deck_staging_cleanup(void);

/// The cleanup of `deck_staging_cleanup`, for the registered paths that begin with `prefix`
/// only (tests run it on their own directory while other tests stage files of their own).
int deck_staging_cleanup_under(const char *prefix);

/// Removes `path` the way the cleanup does: a file is unlinked, a directory emptied through
/// descriptors (`openat` with `O_NOFOLLOW`, `unlinkat`), so that nothing outside it is reached
/// even if its contents are swapped for symbolic links meanwhile. Returns 0 when it is gone.
int deck_staging_remove_tree(const char *path);

/// Installs handlers for SIGINT, SIGTERM and SIGHUP (those not ignored) that run
/// `deck_staging_cleanup` on the thread that calls this function and then let the signal
/// terminate the process as it would have, and unblocks those signals on the calling thread
/// (a mask inherited from the parent would keep them from arriving). Call it once, from the main
/// thread.
void deck_staging_install_signal_handlers(void);

#endif

#ifndef DECK_FAULT_VFS_H
#define DECK_FAULT_VFS_H

/// A SQLite VFS for tests that passes every call to the default VFS, except that, when armed,
/// it fails the skip-th later matching call (read = 1, write = 2, sync = 3, truncate = 4) on a
/// file whose path contains `fragment`, with the SQLite error `code` (e.g. SQLITE_IOERR_WRITE,
/// SQLITE_FULL). Installed as the default VFS; unarmed it only forwards.
int deck_fault_vfs_install(void);
void deck_fault_vfs_arm(int operation, const char *fragment, int skip, int code);
/// Disarms; returns 1 if the fault fired.
int deck_fault_vfs_disarm(void);

#endif

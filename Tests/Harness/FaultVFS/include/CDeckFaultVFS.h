#ifndef DECK_FAULT_VFS_H
#define DECK_FAULT_VFS_H

/// A SQLite VFS for tests that passes every call to the default VFS, except that, when armed
/// for a path fragment, it fails the skip-th later matching call (read = 1, write = 2, sync = 3,
/// truncate = 4) on a file whose path contains that fragment, with the SQLite error `code` (e.g.
/// SQLITE_IOERR_WRITE, SQLITE_FULL). Installed as the default VFS; unarmed it only forwards.
///
/// Each fragment has its own plan, so tests that run in parallel, each arming the unique name of
/// its own directory, never disturb one another. A plan applies to calls on any thread.

/// Installs the VFS as the default (once; later calls return the first result).
int deck_fault_vfs_install(void);
/// Arms (or re-arms, resetting its count) the plan for `fragment`; SQLITE_OK, or SQLITE_MISUSE
/// for an empty fragment.
int deck_fault_vfs_arm(int operation, const char *fragment, int skip, int code);
/// Disarms the plan for `fragment`; returns 1 if its fault fired.
int deck_fault_vfs_disarm(const char *fragment);

#endif

#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include "CDeckFaultVFS.h"

typedef struct {
    sqlite3_file base;   /* must be first */
    const char *name;    /* valid until xClose, as SQLite guarantees */
    sqlite3_file *real;  /* the default VFS's file, allocated right after this struct */
} FaultFile;

static sqlite3_vfs *real_vfs;
static sqlite3_vfs fault_vfs;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_result = SQLITE_ERROR;

/* The armed plans, one per path fragment, so tests that run in parallel (each on its own
   directory) each have their own: arming one never resets or fires another's. A plan applies on
   every thread, since a test's SQLite I/O may run wherever its connection is used. */
typedef struct Plan {
    struct Plan *next;
    char *fragment;
    int operation, skip, code, calls, fired;
} Plan;

static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;
static Plan *plans;
/* How many plans are armed: unarmed, a call costs one atomic load and takes no lock. */
static _Atomic int plan_count;

/* Returns the error to inject for this call, or SQLITE_OK. */
static int should_fail(FaultFile *f, int operation) {
    int result = SQLITE_OK;
    if (!f->name || atomic_load_explicit(&plan_count, memory_order_acquire) == 0) return SQLITE_OK;
    pthread_mutex_lock(&plan_lock);
    for (Plan *plan = plans; plan; plan = plan->next) {
        if (plan->fired || plan->operation != operation || !strstr(f->name, plan->fragment)) continue;
        if (plan->calls++ >= plan->skip) {
            plan->fired = 1;
            result = plan->code;
        }
        break;
    }
    pthread_mutex_unlock(&plan_lock);
    return result;
}

/* Unlinks and returns the plan for `fragment`, or NULL. Called with plan_lock held. */
static Plan *take_plan(const char *fragment) {
    for (Plan **link = &plans; *link; link = &(*link)->next) {
        if (strcmp((*link)->fragment, fragment) == 0) {
            Plan *plan = *link;
            *link = plan->next;
            atomic_fetch_sub_explicit(&plan_count, 1, memory_order_release);
            return plan;
        }
    }
    return NULL;
}

static int f_close(sqlite3_file *file) {
    FaultFile *f = (FaultFile *)file;
    return f->real->pMethods ? f->real->pMethods->xClose(f->real) : SQLITE_OK;
}
static int f_read(sqlite3_file *file, void *buf, int amount, sqlite3_int64 offset) {
    FaultFile *f = (FaultFile *)file;
    int rc = should_fail(f, 1);
    return rc ? rc : f->real->pMethods->xRead(f->real, buf, amount, offset);
}
static int f_write(sqlite3_file *file, const void *buf, int amount, sqlite3_int64 offset) {
    FaultFile *f = (FaultFile *)file;
    int rc = should_fail(f, 2);
    return rc ? rc : f->real->pMethods->xWrite(f->real, buf, amount, offset);
}
static int f_truncate(sqlite3_file *file, sqlite3_int64 size) {
    FaultFile *f = (FaultFile *)file;
    int rc = should_fail(f, 4);
    return rc ? rc : f->real->pMethods->xTruncate(f->real, size);
}
static int f_sync(sqlite3_file *file, int flags) {
    FaultFile *f = (FaultFile *)file;
    int rc = should_fail(f, 3);
    return rc ? rc : f->real->pMethods->xSync(f->real, flags);
}
static int f_file_size(sqlite3_file *file, sqlite3_int64 *size) {
    FaultFile *f = (FaultFile *)file;
    return f->real->pMethods->xFileSize(f->real, size);
}
static int f_lock(sqlite3_file *file, int level) {
    FaultFile *f = (FaultFile *)file;
    return f->real->pMethods->xLock(f->real, level);
}
static int f_unlock(sqlite3_file *file, int level) {
    FaultFile *f = (FaultFile *)file;
    return f->real->pMethods->xUnlock(f->real, level);
}
static int f_check_reserved(sqlite3_file *file, int *out) {
    FaultFile *f = (FaultFile *)file;
    return f->real->pMethods->xCheckReservedLock(f->real, out);
}
static int f_file_control(sqlite3_file *file, int op, void *arg) {
    FaultFile *f = (FaultFile *)file;
    return f->real->pMethods->xFileControl(f->real, op, arg);
}
static int f_sector_size(sqlite3_file *file) {
    FaultFile *f = (FaultFile *)file;
    return f->real->pMethods->xSectorSize(f->real);
}
static int f_device_characteristics(sqlite3_file *file) {
    FaultFile *f = (FaultFile *)file;
    return f->real->pMethods->xDeviceCharacteristics(f->real);
}
static int f_shm_map(sqlite3_file *file, int page, int size, int extend, void volatile **out) {
    FaultFile *f = (FaultFile *)file;
    return f->real->pMethods->xShmMap(f->real, page, size, extend, out);
}
static int f_shm_lock(sqlite3_file *file, int offset, int n, int flags) {
    FaultFile *f = (FaultFile *)file;
    return f->real->pMethods->xShmLock(f->real, offset, n, flags);
}
static void f_shm_barrier(sqlite3_file *file) {
    FaultFile *f = (FaultFile *)file;
    f->real->pMethods->xShmBarrier(f->real);
}
static int f_shm_unmap(sqlite3_file *file, int delete_flag) {
    FaultFile *f = (FaultFile *)file;
    return f->real->pMethods->xShmUnmap(f->real, delete_flag);
}

/* Version 2 methods: no memory-mapped I/O, so every read goes through f_read. */
static const sqlite3_io_methods fault_methods = {
    2, f_close, f_read, f_write, f_truncate, f_sync, f_file_size, f_lock, f_unlock,
    f_check_reserved, f_file_control, f_sector_size, f_device_characteristics,
    f_shm_map, f_shm_lock, f_shm_barrier, f_shm_unmap, 0, 0,
};

static int f_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags) {
    (void)vfs;
    FaultFile *f = (FaultFile *)file;
    f->real = (sqlite3_file *)&f[1];
    f->name = name;
    int rc = real_vfs->xOpen(real_vfs, name, f->real, flags, out_flags);
    file->pMethods = rc == SQLITE_OK ? &fault_methods : 0;
    return rc;
}
static int f_delete(sqlite3_vfs *v, const char *n, int s) { (void)v; return real_vfs->xDelete(real_vfs, n, s); }
static int f_access(sqlite3_vfs *v, const char *n, int fl, int *o) { (void)v; return real_vfs->xAccess(real_vfs, n, fl, o); }
static int f_full_pathname(sqlite3_vfs *v, const char *n, int sz, char *o) {
    (void)v;
    return real_vfs->xFullPathname(real_vfs, n, sz, o);
}
static void *f_dlopen(sqlite3_vfs *v, const char *n) { (void)v; return real_vfs->xDlOpen(real_vfs, n); }
static void f_dlerror(sqlite3_vfs *v, int n, char *m) { (void)v; real_vfs->xDlError(real_vfs, n, m); }
static void (*f_dlsym(sqlite3_vfs *v, void *h, const char *s))(void) { (void)v; return real_vfs->xDlSym(real_vfs, h, s); }
static void f_dlclose(sqlite3_vfs *v, void *h) { (void)v; real_vfs->xDlClose(real_vfs, h); }
static int f_randomness(sqlite3_vfs *v, int n, char *o) { (void)v; return real_vfs->xRandomness(real_vfs, n, o); }
static int f_sleep(sqlite3_vfs *v, int us) { (void)v; return real_vfs->xSleep(real_vfs, us); }
static int f_current_time(sqlite3_vfs *v, double *t) { (void)v; return real_vfs->xCurrentTime(real_vfs, t); }
static int f_get_last_error(sqlite3_vfs *v, int n, char *o) {
    (void)v;
    return real_vfs->xGetLastError ? real_vfs->xGetLastError(real_vfs, n, o) : 0;
}
static int f_current_time_int64(sqlite3_vfs *v, sqlite3_int64 *t) {
    (void)v;
    return real_vfs->xCurrentTimeInt64(real_vfs, t);
}

static void install(void) {
    real_vfs = sqlite3_vfs_find(0);
    if (!real_vfs) return;
    fault_vfs.iVersion = 2;
    fault_vfs.szOsFile = (int)sizeof(FaultFile) + real_vfs->szOsFile;
    fault_vfs.mxPathname = real_vfs->mxPathname;
    fault_vfs.zName = "deck-fault";
    fault_vfs.xOpen = f_open;
    fault_vfs.xDelete = f_delete;
    fault_vfs.xAccess = f_access;
    fault_vfs.xFullPathname = f_full_pathname;
    fault_vfs.xDlOpen = f_dlopen;
    fault_vfs.xDlError = f_dlerror;
    fault_vfs.xDlSym = f_dlsym;
    fault_vfs.xDlClose = f_dlclose;
    fault_vfs.xRandomness = f_randomness;
    fault_vfs.xSleep = f_sleep;
    fault_vfs.xCurrentTime = f_current_time;
    fault_vfs.xGetLastError = f_get_last_error;
    fault_vfs.xCurrentTimeInt64 = f_current_time_int64;
    install_result = sqlite3_vfs_register(&fault_vfs, 1);
}

int deck_fault_vfs_install(void) {
    pthread_once(&install_once, install);
    return install_result;
}

int deck_fault_vfs_arm(int operation, const char *fragment, int skip, int code) {
    if (!fragment || !*fragment) return SQLITE_MISUSE;
    Plan *plan = calloc(1, sizeof(Plan));
    if (!plan || !(plan->fragment = strdup(fragment))) {
        free(plan);
        return SQLITE_NOMEM;
    }
    plan->operation = operation;
    plan->skip = skip;
    plan->code = code;
    pthread_mutex_lock(&plan_lock);
    Plan *old = take_plan(fragment);
    plan->next = plans;
    plans = plan;
    atomic_fetch_add_explicit(&plan_count, 1, memory_order_release);
    pthread_mutex_unlock(&plan_lock);
    if (old) {
        free(old->fragment);
        free(old);
    }
    return SQLITE_OK;
}

int deck_fault_vfs_disarm(const char *fragment) {
    pthread_mutex_lock(&plan_lock);
    Plan *plan = take_plan(fragment);
    pthread_mutex_unlock(&plan_lock);
    if (!plan) return 0;
    int fired = plan->fired;
    free(plan->fragment);
    free(plan);
    return fired;
}

#ifndef DECK_CSQLITE_SHIM_H
#define DECK_CSQLITE_SHIM_H
#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro around a function-pointer cast that Swift cannot import.
static inline sqlite3_destructor_type deck_sqlite_transient(void) { return SQLITE_TRANSIENT; }

// sqlite3_db_config is variadic.
static inline int deck_sqlite_db_config_int(sqlite3 *db, int op, int value, int *out) {
    return sqlite3_db_config(db, op, value, out);
}
#endif

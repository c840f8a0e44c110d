#ifndef DECK_CSQLITE_SHIM_H
#define DECK_CSQLITE_SHIM_H
#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro around a function-pointer cast that Swift cannot import.
static inline sqlite3_destructor_type deck_sqlite_transient(void) { return SQLITE_TRANSIENT; }

// sqlite3_db_config is variadic.
static inline int deck_sqlite_db_config_int(sqlite3 *db, int op, int value, int *out) {
    return sqlite3_db_config(db, op, value, out);
}

// deck_gid(): 16 bytes from SQLite's own generator (a ChaCha20 stream seeded from the operating
// system), shaped as a version 4 UUID (RFC 9562): the version nibble 4 and the variant bits 10.
// A record's global id (spec section 6.10).
static inline void deck_sqlite_gid_function(sqlite3_context *context, int argc, sqlite3_value **argv) {
    (void)argc;
    (void)argv;
    unsigned char bytes[16];
    sqlite3_randomness(16, bytes);
    bytes[6] = (unsigned char)((bytes[6] & 0x0F) | 0x40);
    bytes[8] = (unsigned char)((bytes[8] & 0x3F) | 0x80);
    sqlite3_result_blob(context, bytes, 16, SQLITE_TRANSIENT);
}

// Registers deck_gid() on a connection: direct use only, never from a trigger or view.
static inline int deck_sqlite_register_gid(sqlite3 *db) {
    return sqlite3_create_function_v2(
        db, "deck_gid", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY, 0, deck_sqlite_gid_function, 0, 0, 0);
}

// Fills bytes with a version 4 UUID from the same generator.
static inline void deck_sqlite_random_gid(unsigned char *bytes) {
    sqlite3_randomness(16, bytes);
    bytes[6] = (unsigned char)((bytes[6] & 0x0F) | 0x40);
    bytes[8] = (unsigned char)((bytes[8] & 0x3F) | 0x80);
}
#endif

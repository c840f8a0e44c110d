#ifndef DECK_CARCHIVE_SHIM_H
#define DECK_CARCHIVE_SHIM_H
#include <archive.h>
#include <archive_entry.h>

// archive_set_error is variadic; Swift passes a plain message.
static inline void deck_archive_set_error(struct archive *a, int code, const char *message) {
    archive_set_error(a, code, "%s", message);
}
#endif

#ifndef DECK_CZLIB_SHIM_H
#define DECK_CZLIB_SHIM_H
#include <zlib.h>

/// inflateInit2 is a macro; raw DEFLATE (no zlib or gzip header) is window bits -15.
static inline int deck_inflate_init_raw(z_streamp stream) {
    return inflateInit2(stream, -15);
}

/// deflateInit2 for raw DEFLATE at the default level (the tests write model caches with it).
static inline int deck_deflate_init_raw(z_streamp stream) {
    return deflateInit2(stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
}
#endif

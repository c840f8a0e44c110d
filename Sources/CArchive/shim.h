#ifndef DECK_CARCHIVE_SHIM_H
#define DECK_CARCHIVE_SHIM_H
#include <archive.h>
#include <archive_entry.h>
#endif

#ifndef DECK_CCRYPTO_SHIM_H
#define DECK_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#endif

#include <stddef.h>
#include "CDeckThreadSlot.h"

_Thread_local void *deck_thread_slots[DECK_THREAD_SLOT_COUNT];

static void (*deck_thread_slot_release)(void *);

void deck_thread_slot_set_release(void (*release)(void *value)) { deck_thread_slot_release = release; }

/// Releases what the ending thread left in its slots. A release may set slots again (an
/// object's deinit that uses one), so the loop runs until every slot is null, a few rounds at
/// most.
static void deck_thread_slot_end(void *unused) {
    (void)unused;
    for (int round = 0; round < 4; round++) {
        int released = 0;
        for (int slot = 0; slot < DECK_THREAD_SLOT_COUNT; slot++) {
            void *value = deck_thread_slots[slot];
            if (value == NULL) continue;
            deck_thread_slots[slot] = NULL;
            if (deck_thread_slot_release != NULL) deck_thread_slot_release(value);
            released = 1;
        }
        if (!released) return;
    }
}

#if defined(_WIN32)
#include <windows.h>

static DWORD deck_thread_slot_fls = FLS_OUT_OF_INDEXES;
static INIT_ONCE deck_thread_slot_once = INIT_ONCE_STATIC_INIT;

static void WINAPI deck_thread_slot_fls_end(void *value) { deck_thread_slot_end(value); }

static BOOL CALLBACK deck_thread_slot_make_key(PINIT_ONCE once, void *parameter, void **context) {
    (void)once;
    (void)parameter;
    (void)context;
    deck_thread_slot_fls = FlsAlloc(deck_thread_slot_fls_end);
    return TRUE;
}

static void deck_thread_slot_arrange_end(void) {
    InitOnceExecuteOnce(&deck_thread_slot_once, deck_thread_slot_make_key, NULL, NULL);
    if (deck_thread_slot_fls != FLS_OUT_OF_INDEXES) FlsSetValue(deck_thread_slot_fls, (void *)1);
}
#else
#include <pthread.h>

static pthread_key_t deck_thread_slot_key;
static pthread_once_t deck_thread_slot_once = PTHREAD_ONCE_INIT;
static int deck_thread_slot_key_made;

static void deck_thread_slot_make_key(void) {
    deck_thread_slot_key_made = pthread_key_create(&deck_thread_slot_key, deck_thread_slot_end) == 0;
}

static void deck_thread_slot_arrange_end(void) {
    pthread_once(&deck_thread_slot_once, deck_thread_slot_make_key);
    // A non-null value, so that the key's destructor runs when the thread ends.
    if (deck_thread_slot_key_made) pthread_setspecific(deck_thread_slot_key, (void *)1);
}
#endif

static _Thread_local int deck_thread_slot_end_arranged;

void deck_thread_slot_set(int slot, void *value) {
    deck_thread_slots[slot] = value;
    if (value != NULL && !deck_thread_slot_end_arranged) {
        deck_thread_slot_end_arranged = 1;
        deck_thread_slot_arrange_end();
    }
}

#ifndef DECK_CDECKTHREADSLOT_H
#define DECK_CDECKTHREADSLOT_H

/// A few pointer-sized slots per thread: C11 `_Thread_local` storage, which Swift has no
/// mutable equivalent of. DeckStore's `ThreadSlot` is the only user: it keeps a retained object
/// in a slot. Reading a slot is one thread-local load.

enum { DECK_THREAD_SLOT_COUNT = 8 };

extern _Thread_local void *deck_thread_slots[DECK_THREAD_SLOT_COUNT];

/// The calling thread's value of `slot` (0 ..< DECK_THREAD_SLOT_COUNT), null until set.
static inline void *deck_thread_slot_get(int slot) { return deck_thread_slots[slot]; }

/// Sets the calling thread's value of `slot`. The first non-null value a thread sets arranges
/// for `release` (see `deck_thread_slot_set_release`) to be called on each non-null slot when
/// the thread ends.
void deck_thread_slot_set(int slot, void *value);

/// The function called, at a thread's end, with each value it left in its slots. Set it once,
/// before any slot is set.
void deck_thread_slot_set_release(void (*release)(void *value));

#endif

package dev.strata.cache.kv;

/**
 * The open (running or preempted) sequences of a {@link KvBlockManager}: an intrusive doubly
 * linked list through {@link KvSequence#prev}/{@link KvSequence#next}, newest first, with its
 * length; O(1) add and remove, no allocation.
 *
 * <p>Invariant: {@link #size()} is the number of sequences reachable from {@link #first()}; a
 * sequence not in the list has null links.
 *
 * <p>Threads: the manager's scheduler thread.
 */
final class OpenSequences {
    private KvSequence first; // newest open sequence, null when none
    private int size; // length of the list

    /** The newest open sequence (follow {@code next} for the others), or null. */
    KvSequence first() {
        return first;
    }

    int size() {
        return size;
    }

    void add(KvSequence s) {
        s.prev = null;
        s.next = first;
        if (first != null) {
            first.prev = s;
        }
        first = s;
        size++;
    }

    void remove(KvSequence s) {
        if (s.prev != null) {
            s.prev.next = s.next;
        } else {
            first = s.next;
        }
        if (s.next != null) {
            s.next.prev = s.prev;
        }
        s.prev = null;
        s.next = null;
        size--;
    }

    /** Throws {@link IllegalStateException} if the length is not the count of linked sequences. */
    void checkInvariants() {
        int listed = 0;
        for (KvSequence s = first; s != null; s = s.next) {
            listed++;
        }
        if (listed != size) {
            throw new IllegalStateException(listed + " sequences listed but the count says " + size);
        }
    }
}

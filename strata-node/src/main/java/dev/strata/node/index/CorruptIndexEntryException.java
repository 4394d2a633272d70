package dev.strata.node.index;

/**
 * An entry of the pool's block index failed its check (per-entry checksum, an impossible state,
 * handle or length). The entry has been quarantined: it is never read or reused again, and the
 * other entries are unaffected.
 */
public final class CorruptIndexEntryException extends RuntimeException {
    private final long entry;

    public CorruptIndexEntryException(String poolName, long entry, String problem) {
        super("block index of pool '" + poolName + "': entry " + entry + " is corrupt and was quarantined: " + problem);
        this.entry = entry;
    }

    /** The index of the corrupt entry in the entry table. */
    public long entry() {
        return entry;
    }
}

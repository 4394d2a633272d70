package dev.strata.memory;

/**
 * An object's bytes failed their checksum: the copy is unusable and must be treated as missing.
 *
 * <p>Carries the tier, the handle and both checksums so that the report names the problem.
 */
public final class CorruptObjectException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String tier;
    private final long handle;

    public CorruptObjectException(String tier, long handle, long length, long expectedChecksum, long actualChecksum) {
        super("corrupt object in tier '" + tier + "' at handle " + handle + " (" + length + " bytes): checksum "
                + String.format("0x%x", actualChecksum) + " does not match stored "
                + String.format("0x%x", expectedChecksum));
        this.tier = tier;
        this.handle = handle;
    }

    public CorruptObjectException(String tier, long handle, String problem) {
        super("corrupt object in tier '" + tier + "' at handle " + handle + ": " + problem);
        this.tier = tier;
        this.handle = handle;
    }

    public String tier() {
        return tier;
    }

    public long handle() {
        return handle;
    }
}
